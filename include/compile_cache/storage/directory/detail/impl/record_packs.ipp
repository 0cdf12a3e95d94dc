// compile_cache: the definitions of storage/directory/detail/record_packs.hpp's non-template functions; included by
// it alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once

#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/detail/endian.hpp>
#include <compile_cache/storage/directory/detail/directory_files.hpp>

#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <dirent.h>
#include <unistd.h>

namespace compile_cache::detail::directory_storage_impl {

key new_pack_key() {
    unsigned char bytes[record_key_size] = {};
    store_be<std::uint64_t>(bytes, static_cast<std::uint64_t>(now_ns()));
    static_assert(record_key_size == 8 + 3 * 8 + 1, "the time, 24 random bytes, the marker");
    for (std::size_t word = 0; word < 3; ++word) store_le<std::uint64_t>(bytes + 8 + 8 * word, unique_random_word());
    bytes[record_key_size - 1] = pack_key_marker;
    return key(bytes, record_key_size);
}

std::string encode_pack(std::vector<packed_record> const& records) {
    std::size_t const index = pack_header_size + pack_slot_size * records.size();
    std::size_t total = index;
    for (packed_record const& r : records) total += r.bytes.size();
    std::string out(total, '\0');
    auto* const p = reinterpret_cast<unsigned char*>(out.data());
    std::memcpy(p, pack_magic, sizeof pack_magic);
    store_le<std::uint32_t>(p + 8, static_cast<std::uint32_t>(records.size()));
    std::size_t offset = index;
    unsigned char* slot = p + pack_header_size;
    for (packed_record const& r : records) {
        std::memcpy(slot, r.k.data(), record_key_size);
        store_le<std::uint64_t>(slot + 40, static_cast<std::uint64_t>(r.version_ns));
        store_le<std::uint32_t>(slot + 48, static_cast<std::uint32_t>(offset));
        store_le<std::uint32_t>(slot + 52, static_cast<std::uint32_t>(r.bytes.size()));
        if (!r.bytes.empty()) std::memcpy(p + offset, r.bytes.data(), r.bytes.size());
        offset += r.bytes.size();
        slot += pack_slot_size;
    }
    std::uint32_t crc = crc32c(p, 12);
    crc = crc32c(p + pack_header_size, index - pack_header_size, crc);
    store_le<std::uint32_t>(p + 12, crc);
    return out;
}

std::size_t pack_index_size(std::string_view header) {
    if (header.size() < pack_header_size || std::memcmp(header.data(), pack_magic, sizeof pack_magic) != 0) return 0;
    auto const count = read_le<std::uint32_t>(reinterpret_cast<unsigned char const*>(header.data()) + 8);
    if (count > pack_max_records) return 0;
    return pack_header_size + pack_slot_size * count;
}

bool parse_pack_index(std::string_view head, std::uint64_t file_size, std::vector<pack_slot>& out) {
    out.clear();
    std::size_t const index = pack_index_size(head);
    if (index == 0 || head.size() < index || file_size < index) return false;
    auto const* const p = reinterpret_cast<unsigned char const*>(head.data());
    std::uint32_t crc = crc32c(p, 12);
    crc = crc32c(p + pack_header_size, index - pack_header_size, crc);
    if (crc != read_le<std::uint32_t>(p + 12)) return false;
    std::size_t const count = (index - pack_header_size) / pack_slot_size;
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        unsigned char const* slot = p + pack_header_size + i * pack_slot_size;
        pack_slot s;
        s.k = key(slot, record_key_size);
        s.version_ns = static_cast<std::int64_t>(read_le<std::uint64_t>(slot + 40));
        s.offset = read_le<std::uint32_t>(slot + 48);
        s.length = read_le<std::uint32_t>(slot + 52);
        bool const padded = std::all_of(slot + record_key_size, slot + 40, [](unsigned char c) { return c == 0; });
        if (!is_record_key(s.k) || !padded || s.offset < index || s.length > record_max_size ||
            std::uint64_t{s.offset} + s.length > file_size) {
            out.clear();
            return false;
        }
        out.push_back(s);
    }
    return true;
}

bool read_pack_index(int fd, std::uint64_t file_size, std::vector<pack_slot>& out) {
    out.clear();
    std::string head(pack_header_size, '\0');
    if (file_size < pack_header_size || !read_exactly_at(fd, head.data(), head.size(), 0)) return false;
    std::size_t const index = pack_index_size(head);
    if (index == 0 || file_size < index) return false;
    head.resize(index);
    if (!read_exactly_at(fd, head.data() + pack_header_size, index - pack_header_size, pack_header_size)) return false;
    return parse_pack_index(head, file_size, out);
}

bool list_markers(int folder_fd, std::vector<std::string>& names) {
    // A copy that keeps O_CLOEXEC (dup() drops it: a fork and exec by another thread
    // meanwhile would leak the folder into the new program).
    int const copy = ::fcntl(folder_fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return false;
    DIR* const d = ::fdopendir(copy);
    if (d == nullptr) {
        ::close(copy);
        return false;
    }
    std::unique_ptr<DIR, int (*)(DIR*)> const listing(d, ::closedir);
    errno = 0;
    while (dirent* e = ::readdir(d)) {
        if (is_pack_name(e->d_name)) names.emplace_back(e->d_name);
        errno = 0;
    }
    return errno == 0; // (readdir's end and its failure differ by errno alone)
}

std::uint64_t record_pack_index::fingerprint(key const& k) noexcept {
    return k.size() >= 8 ? read_le<std::uint64_t>(k.data()) : 0;
}

bool record_pack_index::may_hold(std::uint64_t fp) const noexcept {
    if (present.empty()) return false;
    return ((present[(fp >> 6) & (present.size() - 1)] >> (fp & 63)) & 1u) != 0;
}

void record_pack_index::mark_present(std::uint64_t fp) noexcept {
    present[(fp >> 6) & (present.size() - 1)] |= std::uint64_t{1} << (fp & 63);
    ++present_marks;
}

void record_pack_index::remake_present() {
    std::size_t words = 64; // 4,096 bits
    while (words * 64 < 16 * newest_of.size()) words *= 2;
    present.assign(words, 0);
    present_marks = 0;
    for (auto const& entry : newest_of) mark_present(entry.first);
}

std::optional<record_location> record_pack_index::find(std::uint64_t fp, bool hide_removed) const {
    if (!may_hold(fp)) return std::nullopt;
    auto const it = newest_of.find(fp);
    if (it == newest_of.end()) return std::nullopt;
    if (hide_removed && !removed.empty()) {
        auto const r = removed.find(fp);
        if (r != removed.end() && it->second.version_ns <= r->second) return std::nullopt;
    }
    for (pack const& p : packs)
        if (p.id == it->second.pack)
            return record_location{p.name, it->second.version_ns, it->second.offset, it->second.length};
    return std::nullopt;
}

bool record_pack_index::knows(key const& name) const {
    return std::any_of(packs.begin(), packs.end(), [&](pack const& p) { return p.name == name; });
}

void record_pack_index::add(key const& name, std::vector<pack_slot> const& slots) {
    if (knows(name)) return;
    pack p;
    p.name = name;
    p.id = next_id++;
    p.records.reserve(slots.size());
    for (pack_slot const& s : slots) {
        std::uint64_t const fp = fingerprint(s.k);
        p.records.push_back({fp, s.version_ns, s.offset, s.length});
        p.bytes += s.length;
        newest const here{p.id, s.offset, s.length, s.version_ns};
        auto const [it, added] = newest_of.try_emplace(fp, here);
        // (a tie goes to the pack indexed later)
        if (!added && s.version_ns >= it->second.version_ns) it->second = here;
    }
    std::sort(p.records.begin(), p.records.end(),
              [](record const& a, record const& b) { return a.fingerprint < b.fingerprint; });
    records += p.records.size();
    packs.push_back(std::move(p));
    // Made again when too small, or once the marks set since it was made are twice the
    // records indexed (merged and dropped packs leave theirs set): a making costs a mark
    // per record, so marking stays a constant cost per record added.
    if (present.empty() || present.size() * 64 < 16 * newest_of.size() || present_marks > 2 * newest_of.size()) {
        remake_present();
    } else {
        for (record const& r : packs.back().records) mark_present(r.fingerprint);
    }
}

void record_pack_index::drop(key const& name) {
    auto const gone = std::find_if(packs.begin(), packs.end(), [&](pack const& p) { return p.name == name; });
    if (gone == packs.end()) return;
    pack const dropped = std::move(*gone);
    packs.erase(gone);
    records -= dropped.records.size();
    for (record const& r : dropped.records) {
        auto const it = newest_of.find(r.fingerprint);
        if (it == newest_of.end() || it->second.pack != dropped.id) continue;
        // Its newest version was there: the newest of the other packs now, if any.
        std::optional<newest> best;
        for (pack const& p : packs) {
            auto const at = std::lower_bound(p.records.begin(), p.records.end(), r.fingerprint,
                                             [](record const& x, std::uint64_t f) { return x.fingerprint < f; });
            if (at != p.records.end() && at->fingerprint == r.fingerprint && (!best || at->version_ns >= best->version_ns))
                best = newest{p.id, at->offset, at->length, at->version_ns};
        }
        if (best)
            it->second = *best;
        else
            newest_of.erase(it);
    }
}

void record_pack_index::hide(std::uint64_t fp) {
    auto const it = newest_of.find(fp);
    if (it == newest_of.end()) return;
    if (removed.size() >= pack_index_max_records) removed.clear();
    removed[fp] = it->second.version_ns;
}

void record_pack_index::clear() noexcept {
    packs.clear();
    newest_of.clear();
    present.clear();
    present_marks = 0;
    records = 0;
    left_out.clear();
}

void record_pack_index::bound() {
    while (records > pack_index_max_records && packs.size() > 1) {
        // The oldest: its name starts with the time it was written (big-endian).
        auto const oldest = std::min_element(packs.begin(), packs.end(), [](pack const& a, pack const& b) {
            return std::memcmp(a.name.data(), b.name.data(), 8) < 0;
        });
        key const name = oldest->name;
        left_out.insert(name.hex());
        drop(name);
    }
}

} // namespace compile_cache::detail::directory_storage_impl

#endif // COMPILE_CACHE_INCLUDE_IMPL
