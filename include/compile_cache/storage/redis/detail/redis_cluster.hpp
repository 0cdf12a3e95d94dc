// compile_cache: Redis Cluster key routing (part of the optional redis_storage, which
// needs hiredis; this header alone needs only the standard library).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace compile_cache::detail {

/// The CRC16 of one byte value, bit by bit: the table below, and its reference.
constexpr std::uint16_t redis_crc16_byte(unsigned byte) noexcept {
    auto crc = static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit)
        crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    return crc;
}

struct redis_crc16_table {
    std::uint16_t entry[256] = {};
    constexpr redis_crc16_table() noexcept {
        for (unsigned i = 0; i < 256; ++i) entry[i] = redis_crc16_byte(i);
    }
};
inline constexpr redis_crc16_table redis_crc16_lookup{};

/// CRC16 as Redis Cluster uses it: CCITT polynomial 0x1021, initial value 0, no
/// reflection, no final xor (the XMODEM variant). "123456789" gives 0x31C3.
constexpr std::uint16_t redis_crc16(std::string_view bytes) noexcept {
    std::uint16_t crc = 0;
    for (char c : bytes)
        crc = static_cast<std::uint16_t>(
            (crc << 8) ^ redis_crc16_lookup.entry[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xff]);
    return crc;
}

constexpr std::size_t redis_cluster_slots = 16384;

/// The slot of a key: CRC16 mod 16384 of the key, or of its hash tag — what lies
/// between the first `{` and the first `}` after it, when that is not empty.
constexpr std::uint16_t redis_hash_slot(std::string_view key) noexcept {
    std::size_t const open = key.find('{');
    if (open != std::string_view::npos) {
        std::size_t const close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return static_cast<std::uint16_t>(redis_crc16(key) % redis_cluster_slots);
}

/// A `MOVED slot host:port` or `ASK slot host:port` error reply, parsed.
struct redis_redirection {
    bool ask = false; ///< ASK (one command, after ASKING); otherwise MOVED (the slot's new owner)
    std::uint16_t slot = 0;
    std::string host;
    int port = 0;
};

inline std::optional<redis_redirection> parse_redis_redirection(std::string_view error) {
    redis_redirection r;
    if (error.substr(0, 6) == "MOVED ")
        error.remove_prefix(6);
    else if (error.substr(0, 4) == "ASK ")
        r.ask = true, error.remove_prefix(4);
    else
        return std::nullopt;
    std::size_t const space = error.find(' ');
    if (space == std::string_view::npos || space == 0) return std::nullopt;
    unsigned slot = 0;
    for (char c : error.substr(0, space)) {
        if (c < '0' || c > '9') return std::nullopt;
        slot = slot * 10 + static_cast<unsigned>(c - '0');
        if (slot >= redis_cluster_slots) return std::nullopt;
    }
    r.slot = static_cast<std::uint16_t>(slot);
    std::string_view endpoint = error.substr(space + 1);
    std::size_t const colon = endpoint.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == endpoint.size()) return std::nullopt;
    int port = 0;
    for (char c : endpoint.substr(colon + 1)) {
        if (c < '0' || c > '9') return std::nullopt;
        port = port * 10 + (c - '0');
        if (port > 65535) return std::nullopt;
    }
    std::string_view host = endpoint.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    r.host.assign(host);
    r.port = port;
    return r;
}

} // namespace compile_cache::detail
