// The envelope's integrity check (envelope.hpp, version 2): the last four bytes are
// the CRC-32C of everything before them, checked first; entries of version 1 (which
// ended with a SHA-256) read as foreign, not corrupt; the flags field is reserved for
// a keyed mode. The damage tests (every byte flipped, every truncation) are in
// envelope_test.cpp.
#include "catch2_compat.hpp"
#include "support/cpu_backends.hpp"

#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <cstdint>
#include <string>

namespace {

namespace cc = compile_cache;

std::string const format = "test-format 1";

cc::key test_key() { return cc::key(cc::sha256_digest("k", 1)); }

std::string sealed_entry(std::string const& payload) {
    cc::entry_metadata m;
    m.name = "axpy";
    m.origin_file = "blas.dsl";
    m.format_id = format;
    m.origin_line = 7;
    std::string entry;
    std::size_t const length_at = cc::begin_envelope(entry, test_key(), m);
    entry += payload;
    cc::seal_envelope(entry, length_at);
    return entry;
}

std::uint32_t le32(std::string const& s, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 4; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
    return v;
}

cc::envelope_status open_status(std::string const& entry) {
    return cc::open_envelope(entry, test_key(), format, 1 << 20).status;
}

} // namespace

TEST_CASE("an entry ends with the CRC-32C of everything before it", "[envelope][crc32c]") {
    std::string const entry = sealed_entry(std::string(3000, 'x'));
    REQUIRE(entry.size() > 3000 + cc::detail::envelope_check_size);
    std::size_t const body = entry.size() - cc::detail::envelope_check_size;
    CHECK(cc::detail::envelope_check_size == 4);
    CHECK(le32(entry, body) == cc::crc32c(entry.data(), body));
    CHECK(cc::envelope_version_plain == 3); // a plain entry: as earlier releases wrote it
    CHECK(cc::envelope_version == 4);       // signed or compressed entries
    CHECK(static_cast<unsigned char>(entry[8]) == 3); // version, little-endian
    CHECK(static_cast<unsigned char>(entry[9]) == 0);
    CHECK(entry[10] == 0); // flags: unkeyed CRC-32C
    CHECK(entry[11] == 0);
    CHECK(open_status(entry) == cc::envelope_status::ok);
}

TEST_CASE("entries written with one CRC implementation open with every other", "[envelope][crc32c]") {
    std::string const entry = sealed_entry(std::string(5000, 'y'));
    compile_cache_test::on_every_backend<cc::crc32c_backend>([&](cc::crc32c_backend) {
        CHECK(open_status(entry) == cc::envelope_status::ok);
        CHECK(sealed_entry(std::string(5000, 'y')) == entry);
    });
}

TEST_CASE("a sound version-2 entry reads as foreign_version, a damaged one as corrupt", "[envelope][crc32c]") {
    // Version 2 had the CRC-32C in the same place, and no key components: an entry
    // written by it is sound but foreign, and must not be mistaken for damage.
    std::string const v3 = sealed_entry("payload bytes");
    std::string v2 = v3.substr(0, v3.size() - cc::detail::envelope_check_size);
    v2[8] = 2;
    v2[9] = 0;
    cc::detail::append_envelope_check(v2);
    CHECK(open_status(v2) == cc::envelope_status::foreign_version);

    std::string damaged = v2;
    damaged[20] = static_cast<char>(damaged[20] ^ 1);
    CHECK(open_status(damaged) == cc::envelope_status::corrupt);
    CHECK(open_status(v2.substr(0, v2.size() - 1)) == cc::envelope_status::corrupt);
}

TEST_CASE("flags other than 0 are refused even under a valid check value", "[envelope][crc32c]") {
    // Bit 0 is reserved for keyed (HMAC-SHA256) entries: an unkeyed reader never takes
    // one on the strength of a CRC anyone can compute. Other bits are unassigned.
    std::string const entry = sealed_entry("payload");
    for (std::uint16_t flags : {std::uint16_t{1}, std::uint16_t{2}, std::uint16_t{0x8000}}) {
        INFO("flags " << flags);
        std::string forged = entry.substr(0, entry.size() - cc::detail::envelope_check_size);
        forged[10] = static_cast<char>(flags & 0xff);
        forged[11] = static_cast<char>(flags >> 8);
        cc::detail::append_envelope_check(forged);
        CHECK(open_status(forged) == cc::envelope_status::corrupt);
    }
}

TEST_CASE("every single-bit error in an entry is caught by the check", "[envelope][crc32c]") {
    std::string const entry = sealed_entry(std::string(600, 'z'));
    std::size_t missed = 0;
    for (std::size_t bit = 0; bit < entry.size() * 8; ++bit) {
        std::string damaged = entry;
        damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
        if (cc::detail::envelope_check_matches(reinterpret_cast<unsigned char const*>(damaged.data()), damaged.size()))
            ++missed;
    }
    CHECK(missed == 0);
}
