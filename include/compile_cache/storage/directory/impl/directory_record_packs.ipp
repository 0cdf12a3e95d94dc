// compile_cache: directory_storage's identity records in packs (storage/directory/detail/record_packs.hpp):
// holding them, writing them a pack per batch, reading them through the process's index; included by
// directory_storage.hpp alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache {

bool directory_storage::take_pack_index() const noexcept {
    return detail::directory_storage_impl::lock_by(state_->packs.mutex,
                                                   std::chrono::steady_clock::now() +
                                                       detail::directory_storage_impl::pack_index_wait);
}

std::string directory_storage::packs_folder_path() const {
    return directory_ + (directory_ == "/" ? "" : "/") + detail::directory_storage_impl::packs_folder;
}

int directory_storage::open_packs_folder() const {
    std::string const folder = packs_folder_path();
    return detail::retry_on_eintr(
        [&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
}

std::error_code directory_storage::hold_write(key const& k, std::string_view bytes, std::int64_t made_ns) noexcept {
    namespace impl = detail::directory_storage_impl;
    // (a pack holds no record over the bound: one would make the whole pack unsound)
    if (impl::is_record_key(k) && bytes.size() > detail::record_max_size)
        return std::make_error_code(std::errc::value_too_large);
    try {
        impl::deferred_writes& d = state_->deferred;
        std::int64_t const now = impl::now_ns();
        std::int64_t const steady_now = detail::steady_ns(); // (the batch's age: held_batch_bounds' clock)
        bool due = false;
        {
            std::lock_guard<std::mutex> const lock(d.mutex);
            unsigned const generation = impl::fork_generation();
            if (d.generation != generation) { // a forked child: what is held is the parent's
                d.held.clear();
                d.held_ns.clear();
                d.bytes = 0;
                d.generation = generation;
            }
            if (d.held.empty()) d.oldest_ns = steady_now;
            d.held_ns[k] = made_ns > 0 ? made_ns : now;
            auto const it = d.held.try_emplace(k).first;
            d.bytes -= it->second.size();
            it->second.assign(bytes.data(), bytes.size());
            d.bytes += bytes.size();
            d.any.store(true);
            due = impl::deferred_writes::due(d.held.size(), d.bytes, steady_now - d.oldest_ns);
        }
        return due ? flush_deferred() : std::error_code();
    } catch (...) { // bad_alloc
        if (impl::is_record_key(k)) return std::make_error_code(std::errc::not_enough_memory);
        return write(k, bytes);
    }
}

std::error_code directory_storage::write_held(std::unordered_map<key, std::string> const& held,
                                              std::unordered_map<key, std::int64_t>& times) noexcept {
    namespace impl = detail::directory_storage_impl;
    std::error_code first;
    try {
        // Each record with the time its file is to get (its newest entry's: write_made_at) for
        // now; write_pack gives it its version's time.
        std::vector<impl::packed_record> records;
        for (auto const& [k, bytes] : held) {
            if (impl::is_record_key(k)) {
                records.push_back({k, times[k], bytes});
                continue;
            }
            std::error_code const ec = write_made_at(k, bytes, times[k]);
            if (ec && !first) first = ec;
        }
        // Oldest first, so that a batch split over several packs puts its newest records last.
        std::sort(records.begin(), records.end(),
                  [](impl::packed_record const& a, impl::packed_record const& b) { return a.version_ns < b.version_ns; });
        std::size_t begin = 0;
        while (begin < records.size()) {
            std::size_t end = begin, bytes = 0;
            while (end < records.size() && end - begin < impl::pack_max_records &&
                   (end == begin || bytes + records[end].bytes.size() <= pack_bytes_bound()))
                bytes += records[end++].bytes.size();
            std::vector<impl::packed_record> part(records.begin() + static_cast<std::ptrdiff_t>(begin),
                                                  records.begin() + static_cast<std::ptrdiff_t>(end));
            std::int64_t file_ns = 0;
            for (impl::packed_record& r : part) {
                file_ns = std::max(file_ns, r.version_ns);
                r.version_ns = 0; // this batch's version: the time of its pack's write
            }
            std::error_code const ec = write_pack(std::move(part), file_ns);
            if (ec && !first) first = ec;
            begin = end;
        }
    } catch (...) {
        if (!first) first = std::make_error_code(std::errc::not_enough_memory);
    }
    return first;
}

void directory_storage::look_at_packs(bool now_only) {
    namespace impl = detail::directory_storage_impl;
    impl::record_pack_index& ix = state_->packs;
    if (impl::during_pack_listing_for_testing != nullptr) impl::during_pack_listing_for_testing();
    std::int64_t const now = detail::steady_ns();
    if (!now_only && !ix.stale && now - ix.looked_ns < impl::packs_looked_at_every_ns) return;
    ix.looked_ns = now;
    int const fd = open_packs_folder();
    if (fd < 0) { // no pack yet (or none this user can see)
        ix.clear();
        ix.folder_mtime_ns = -1;
        ix.stale = false;
        return;
    }
    impl::file_descriptor const guard{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return;
    std::int64_t const mtime = impl::mtime_ns(st);
    // A folder changed within the last two seconds is listed again at the next look: on a
    // file system whose times are coarse, a marker added in the same tick as the listing
    // leaves the time as it was.
    bool const recent = impl::now_ns() - mtime < 2 * impl::packs_looked_at_every_ns;
    if (!ix.stale && mtime == ix.folder_mtime_ns && !recent) return;
    std::vector<std::string> names;
    if (!impl::list_markers(fd, names)) return;
    // Newest first (a pack's name starts with its time), so that the bound leaves out the oldest.
    std::sort(names.begin(), names.end(), std::greater<>());
    // Packs gone from the folder are forgotten; new ones indexed, within the bound.
    std::unordered_set<std::string> const listed(names.begin(), names.end());
    std::vector<key> gone;
    for (impl::record_pack_index::pack const& p : ix.packs)
        if (listed.count(p.name.hex()) == 0) gone.push_back(p.name);
    for (key const& name : gone) ix.drop(name);
    std::unordered_set<std::string> left_out;
    std::vector<impl::pack_slot> slots;
    for (std::string const& name : names) {
        std::optional<key> const k = key::from_hex(name);
        if (!k || ix.knows(*k)) continue;
        if (ix.left_out.count(name) != 0 || ix.records >= impl::pack_index_max_records) {
            left_out.insert(name);
            continue;
        }
        switch (read_pack_slots(*k, slots)) {
        case pack_read::read: break;
        case pack_read::gone: (void)::unlinkat(fd, name.c_str(), 0); continue; // evicted, merged or cleared
        case pack_read::unsound:
            left_out.insert(name); // not read again at each listing (the tool's verify reports it)
            continue;
        case pack_read::failed: continue;
        }
        ix.add(*k, slots);
    }
    ix.left_out = std::move(left_out);
    ix.bound();
    ix.folder_mtime_ns = mtime;
    ix.stale = false;
}

directory_storage::pack_read directory_storage::read_pack_slots(
    key const& pack, std::vector<detail::directory_storage_impl::pack_slot>& slots) const {
    namespace impl = detail::directory_storage_impl;
    slots.clear();
    std::string path;
    impl::append_entry_path(path, directory_, pack);
    impl::file_descriptor const fd{detail::open_no_follow(AT_FDCWD, path.c_str())};
    if (!fd) return errno == ENOENT || errno == ENOTDIR ? pack_read::gone : pack_read::failed;
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode) || trust(st)) return pack_read::failed;
    return impl::read_pack_index(fd.fd, static_cast<std::uint64_t>(st.st_size), slots) ? pack_read::read
                                                                                        : pack_read::unsound;
}

void directory_storage::look_at_records_now() noexcept {
    namespace impl = detail::directory_storage_impl;
    if (directory_.empty()) return;
    try {
        if (!take_pack_index()) return;
        std::lock_guard<std::mutex> const lock(state_->packs.mutex, std::adopt_lock);
        look_at_packs(true);
    } catch (...) {
    }
}

void directory_storage::forget_pack(key const& name) noexcept {
    namespace impl = detail::directory_storage_impl;
    try {
        if (take_pack_index()) {
            std::lock_guard<std::mutex> const held(state_->packs.mutex, std::adopt_lock);
            state_->packs.drop(name);
            state_->packs.stale = true;
        }
        impl::file_descriptor const folder{open_packs_folder()};
        if (folder) (void)::unlinkat(folder.fd, name.hex().c_str(), 0);
    } catch (...) {
    }
}

read_result directory_storage::read_packed_record(key const& k, std::string& out, std::size_t max_size) noexcept {
    namespace impl = detail::directory_storage_impl;
    try {
        for (int attempt = 0; attempt < 2; ++attempt) {
            std::optional<impl::record_location> where;
            {
                if (!take_pack_index()) break;
                std::lock_guard<std::mutex> const lock(state_->packs.mutex, std::adopt_lock);
                look_at_packs(attempt != 0);
                where = state_->packs.find(impl::record_pack_index::fingerprint(k));
            }
            if (!where) break;
            if (where->length > max_size) {
                out.clear();
                return {read_status::too_large, {}};
            }
            std::string path;
            impl::append_entry_path(path, directory_, where->pack);
            int const fd = detail::open_no_follow(AT_FDCWD, path.c_str());
            if (fd < 0) {
                int const e = errno;
                if (e != ENOENT && e != ENOTDIR) {
                    out.clear();
                    return {read_status::error, impl::errno_code(e)};
                }
                forget_pack(where->pack); // merged into a newer pack, or evicted: look again, once
                continue;
            }
            impl::file_descriptor const guard{fd};
            struct stat st {};
            if (::fstat(fd, &st) != 0) {
                out.clear();
                return {read_status::error, impl::errno_code(errno)};
            }
            if (!S_ISREG(st.st_mode) ||
                static_cast<std::uint64_t>(st.st_size) < std::uint64_t{where->offset} + where->length) {
                out.clear();
                return {read_status::error, impl::errno_code(EINVAL)};
            }
            if (std::error_code const untrusted = trust(st)) {
                out.clear();
                return {read_status::error, untrusted};
            }
            out.resize(where->length);
            if (!detail::read_exactly_at(fd, out.data(), out.size(), where->offset)) {
                int const e = errno;
                out.clear();
                return {read_status::error, impl::errno_code(e)};
            }
            return {read_status::found, {}};
        }
    } catch (std::bad_alloc const&) {
        out.clear();
        return {read_status::error, std::make_error_code(std::errc::not_enough_memory)};
    } catch (...) {
        out.clear();
        return {read_status::error, std::make_error_code(std::errc::io_error)};
    }
    out.clear();
    return {read_status::absent, {}};
}

std::size_t directory_storage::pack_bytes_bound() const noexcept {
    namespace impl = detail::directory_storage_impl;
    if (options_.max_size == 0) return impl::pack_max_bytes;
    return static_cast<std::size_t>(std::min<std::uint64_t>(impl::pack_max_bytes, options_.max_size / 16));
}

std::error_code directory_storage::write_pack(std::vector<detail::directory_storage_impl::packed_record> records,
                                              std::int64_t file_ns) {
    namespace impl = detail::directory_storage_impl;
    using index = impl::record_pack_index;
    // Its marker's folder first: a pack no marker names is one no reader finds, so none is
    // written where the marker cannot be (a read-only directory, a file in the folder's place).
    std::string folder_path = packs_folder_path();
    bool created = false;
    (void)impl::make_directories(folder_path, options_.directory_mode, options_.umask, created);
    impl::file_descriptor const folder{open_packs_folder()};
    if (!folder) return impl::errno_code(errno != 0 ? errno : EIO);
    // The small packs to merge into this one, when the index holds too many. A record of
    // theirs is left out only for a newer version: the batch's, or a strictly newer one this
    // process knows. One at the newest version known is kept (once), though another pack may
    // hold a copy: another process may be merging that copy away, counting on this one
    // (docs/design.md, "Identity records in packs").
    struct candidate {
        key name;
        std::size_t records = 0; // as indexed
    };
    std::vector<candidate> merged;
    std::unordered_map<std::uint64_t, std::int64_t> newest_known; // by fingerprint
    std::unordered_set<std::uint64_t> batch, counted;
    std::size_t count = records.size(), bytes = 0;
    for (impl::packed_record const& r : records) bytes += r.bytes.size();
    if (take_pack_index()) {
        std::lock_guard<std::mutex> const lock(state_->packs.mutex, std::adopt_lock);
        look_at_packs(false);
        index& ix = state_->packs;
        if (ix.packs.size() > impl::packs_merged_above) {
            std::vector<index::pack const*> smallest;
            for (index::pack const& p : ix.packs) smallest.push_back(&p);
            std::sort(smallest.begin(), smallest.end(),
                      [](index::pack const* a, index::pack const* b) { return a->records.size() < b->records.size(); });
            for (impl::packed_record const& r : records) batch.insert(index::fingerprint(r.k));
            for (index::pack const* p : smallest) {
                if (merged.size() == impl::packs_merged_above) break;
                // Its records kept (at their newest version known, once each), and every record's
                // newest version.
                std::vector<std::uint64_t> kept;
                for (index::record const& r : p->records) {
                    if (batch.count(r.fingerprint) != 0) continue;
                    // (whatever this process removed: the merged pack is every process's)
                    std::optional<impl::record_location> const newest = ix.find(r.fingerprint, false);
                    std::int64_t const newest_ns = newest ? std::max(newest->version_ns, r.version_ns) : r.version_ns;
                    newest_known.emplace(r.fingerprint, newest_ns); // (the same, by any pack)
                    if (r.version_ns >= newest_ns && counted.count(r.fingerprint) == 0) kept.push_back(r.fingerprint);
                }
                std::sort(kept.begin(), kept.end());
                kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
                if (count + kept.size() > impl::pack_max_records || bytes + p->bytes > pack_bytes_bound()) break;
                counted.insert(kept.begin(), kept.end());
                count += kept.size();
                bytes += p->bytes;
                merged.push_back({p->name, p->records.size()});
            }
            // Fewer are not worth rewriting: each record is then rewritten about once in all.
            if (merged.size() < impl::packs_merged_at_least) merged.clear();
        }
    }
    if (!merged.empty() && impl::after_pack_merge_planned_for_testing != nullptr)
        impl::after_pack_merge_planned_for_testing();
    // The merged packs' records, read whole (each at most a pack's bytes).
    std::vector<std::string> contents;
    contents.reserve(merged.size());
    std::vector<impl::pack_slot> slots;
    std::unordered_set<std::uint64_t> taken;
    for (auto it = merged.begin(); it != merged.end();) {
        std::string path;
        impl::append_entry_path(path, directory_, it->name);
        std::string file;
        bool read = false;
        int const fd = detail::open_no_follow(AT_FDCWD, path.c_str());
        if (fd >= 0) {
            impl::file_descriptor const guard{fd};
            struct stat st {};
            read = detail::stat_regular_file(fd, impl::pack_max_bytes + impl::pack_header_size +
                                                     impl::pack_slot_size * impl::pack_max_records,
                                             st) == detail::file_read_status::read &&
                   !trust(st) && detail::read_file_bytes(fd, file, static_cast<std::size_t>(st.st_size)) &&
                   impl::parse_pack_index(file, file.size(), slots) && slots.size() == it->records;
            if (read) file_ns = std::max(file_ns, impl::mtime_ns(st)); // (its records' newest entry's time)
        }
        if (!read) { // gone meanwhile (another process merged it), or unreadable: left as it is
            it = merged.erase(it);
            continue;
        }
        contents.push_back(std::move(file));
        for (impl::pack_slot const& s : slots) {
            std::uint64_t const fp = index::fingerprint(s.k);
            auto const newest = newest_known.find(fp);
            if (newest == newest_known.end() || s.version_ns < newest->second || !taken.insert(fp).second) continue;
            records.push_back({s.k, s.version_ns, std::string_view(contents.back()).substr(s.offset, s.length)});
        }
        ++it;
    }
    // The batch's records are the newest versions (each merged by the cache with the one it
    // read just before): they get this write's time, merged ones keep theirs.
    key const name = impl::new_pack_key();
    std::int64_t const written = impl::now_ns();
    for (impl::packed_record& r : records)
        if (r.version_ns == 0) r.version_ns = written;
    std::string const pack = impl::encode_pack(records);
    if (std::error_code const ec = write_made_at(name, pack, file_ns)) return ec;
    // Its marker, by which other processes find it: a symlink to it, for an operator's eyes.
    // Without one, the pack goes (no reader would find it) and the merged packs stay.
    if (::symlinkat(("../" + layout_path_of(name)).c_str(), folder.fd, name.hex().c_str()) != 0) {
        int const e = errno;
        (void)remove(name);
        return impl::errno_code(e);
    }
    std::vector<impl::pack_slot> own;
    if (!impl::parse_pack_index(pack, pack.size(), own)) return {};
    if (take_pack_index()) {
        std::lock_guard<std::mutex> const lock(state_->packs.mutex, std::adopt_lock);
        state_->packs.add(name, own);
        for (candidate const& c : merged) state_->packs.drop(c.name);
        state_->packs.bound();
    }
    // The merged packs go once the new one holds their records.
    for (candidate const& c : merged) {
        (void)remove(c.name);
        (void)::unlinkat(folder.fd, c.name.hex().c_str(), 0);
    }
    return {};
}

void directory_storage::forget_gone_packs() noexcept {
    namespace impl = detail::directory_storage_impl;
    try {
        if (take_pack_index()) {
            std::lock_guard<std::mutex> const lock(state_->packs.mutex, std::adopt_lock);
            state_->packs.clear();
            state_->packs.stale = true;
        }
        impl::file_descriptor const fd{open_packs_folder()};
        if (!fd) return;
        std::vector<std::string> names, gone;
        if (!impl::list_markers(fd.fd, names)) return;
        for (std::string const& name : names) {
            std::optional<key> const k = key::from_hex(name);
            struct stat st {};
            if (k && ::lstat(entry_path(*k).c_str(), &st) != 0 && errno == ENOENT) gone.push_back(name);
        }
        for (std::string const& name : gone) (void)::unlinkat(fd.fd, name.c_str(), 0);
    } catch (...) {
    }
}

std::string directory_storage::layout_path_of(key const& k) {
    std::string path;
    std::string const hex = k.hex();
    detail::directory_storage_impl::append_entry_relative_path(path, hex);
    return path;
}

} // namespace compile_cache

#endif // COMPILE_CACHE_INCLUDE_IMPL
