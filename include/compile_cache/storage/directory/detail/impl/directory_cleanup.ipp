// compile_cache: the definitions of storage/directory/detail/directory_cleanup.hpp's non-template functions; included by it
// alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>

#include <sys/file.h>

namespace compile_cache::detail::directory_storage_impl {

folder_counter::folder_counter(std::string const& ledger_path, unsigned file_mode, int exact_umask,
                               lock_events* events) noexcept
    : path_(ledger_path), events_(events) {
    fd_.fd = open_ledger(ledger_path, file_mode, exact_umask);
    if (!fd_) return;
    if (int const e = lock_fd(fd_.fd, ledger_lock_wait)) {
        if (e == EWOULDBLOCK && events_) events_->gave_up(path_, "so the size ledger's counts were not corrected");
        return;
    }
    sound_ = read_ledger(fd_.fd, before_); // a fresh ledger reads as zeros
    ::flock(fd_.fd, LOCK_UN);
    usable_ = true;
}

void folder_counter::before_scan(unsigned folder) noexcept {
    if (!sound_ || ::flock(fd_.fd, LOCK_EX | LOCK_NB) != 0) return;
    unsigned char slot[8];
    std::size_t const at = ledger_header + 16 * (folder & 0xff);
    if (retry_on_eintr([&] { return ::pread(fd_.fd, slot, sizeof slot, static_cast<off_t>(at)); }) ==
        static_cast<ssize_t>(sizeof slot)) {
        std::uint64_t const bytes = read_le<std::uint64_t>(slot);
        if (bytes <= ledger_sane_limit) before_[folder & 0xff].bytes = bytes;
    }
    ::flock(fd_.fd, LOCK_UN);
}

std::uint64_t folder_counter::save(std::int64_t now) noexcept {
    std::uint64_t total = std::numeric_limits<std::uint64_t>::max();
    if (!usable_ || seen_.none()) return total;
    if (int const e = lock_fd(fd_.fd, ledger_lock_wait)) {
        if (e == EWOULDBLOCK && events_) events_->gave_up(path_, "so the size ledger's counts were not corrected");
        return total;
    }
    ledger_slots slots;
    read_ledger(fd_.fd, slots);
    for (unsigned f = 0; f < 256; ++f) {
        if (!seen_[f]) continue;
        // now + (count - before), within [0, ledger_sane_limit]
        std::uint64_t const grown = slots[f].bytes > before_[f].bytes ? slots[f].bytes - before_[f].bytes : 0;
        std::uint64_t const shrunk = before_[f].bytes > slots[f].bytes ? before_[f].bytes - slots[f].bytes : 0;
        std::uint64_t const up = std::min(count_[f] + grown, ledger_sane_limit);
        slots[f] = {up >= shrunk ? up - shrunk : 0, now};
    }
    if (write_ledger(fd_.fd, slots)) {
        total = ledger_total(slots);
        before_ = slots;
        count_ = {};
        seen_.reset();
    }
    ::flock(fd_.fd, LOCK_UN);
    return total;
}

void cleanup_state::reset() noexcept {
    current = phase::idle;
    next = 0;
    keep_names = true;
    records.clear();
    samples.clear();
    surveyed_bytes = surveyed_entries = 0;
    cutoff = no_cutoff;
}

void cleanup_state::drop_names() {
    samples.reserve(samples.size() + records.size());
    for (auto const& r : records) samples.emplace_back(r.mtime, r.bytes);
    records.clear();
    records.shrink_to_fit();
    keep_names = false;
}

cleanup_totals cleanup_state::step(int root_fd, std::string const& ledger_path, unsigned file_mode, int exact_umask,
                                   std::uint64_t max_size, std::size_t budget) noexcept {
    cleanup_totals out;
    try {
        step_impl(root_fd, ledger_path, file_mode, exact_umask, max_size, budget, out);
    } catch (...) { // bad_alloc: give up this cleanup; the next one starts afresh
        reset();
    }
    evicted += out.evicted;
    evicted_bytes += out.evicted_bytes;
    temps_removed += out.temps_removed;
    ++steps;
    return out;
}

void cleanup_state::step_impl(int root_fd, std::string const& ledger_path, unsigned file_mode, int exact_umask,
                              std::uint64_t max_size, std::size_t budget, cleanup_totals& out) {
    std::int64_t const now = now_ns();
    folder_counter counter(ledger_path, file_mode, exact_umask, events);
    step_context c{root_fd, now / 1000000000, now - temp_stale_after_ns, max_size - max_size / 10, budget, counter};
    begin_or_resume(c.now_s);
    if (current == phase::survey) {
        survey_folders(c, out);
        if (next < 256) { // to be continued by a later step: names would be stale by then
            if (keep_names) drop_names();
            counter.save(c.now_s);
            return;
        }
        out.complete = true;
        out.entries = surveyed_entries;
        out.bytes = surveyed_bytes;
        if (max_size == 0 || surveyed_bytes <= max_size) {
            reset();
            counter.save(c.now_s);
            return;
        }
        if (keep_names) { // the whole cache was seen in this step: evict exactly, oldest first
            evict_oldest_named(c, out);
            reset();
            counter.save(c.now_s);
            return;
        }
        start_sweep(c.target);
    }
    if (current == phase::sweep) {
        sweep_folders(c, out);
        std::uint64_t const total = counter.save(c.now_s);
        if (next >= 256 || total <= c.target) reset();
    }
}

void cleanup_state::begin_or_resume(std::int64_t now_s) noexcept {
    if (current != phase::idle && (now_s - started_s > 600 || now_s < started_s)) reset();
    if (current != phase::idle) return;
    reset();
    current = phase::survey;
    started_s = now_s;
}

void cleanup_state::survey_folders(step_context& c, cleanup_totals& out) {
    while (next < 256 && c.cost < c.budget) {
        unsigned const folder = next;
        c.counter.before_scan(folder);
        folder_scan const fs =
            scan_folder(c.root_fd, folder, c.temps_before, no_cutoff,
                        [&](std::int64_t mtime, std::uint64_t bytes, std::string_view name, std::uint64_t) {
                            if (keep_names && records.size() < max_named_records)
                                records.push_back({mtime, bytes, folder, std::string(name)});
                            else {
                                if (keep_names) drop_names();
                                samples.emplace_back(mtime, bytes);
                            }
                        });
        c.counter.counted(folder, fs.bytes);
        c.cost += 4 + fs.visited;
        surveyed_bytes += fs.bytes;
        surveyed_entries += fs.entries;
        out.temps_removed += fs.temps_removed;
        out.add_failures(fs.not_removed, fs.error);
        ++next;
    }
}

void cleanup_state::evict_oldest_named(step_context& c, cleanup_totals& out) {
    std::sort(records.begin(), records.end(), [](record const& a, record const& b) { return a.mtime < b.mtime; });
    std::uint64_t total = surveyed_bytes;
    file_descriptor folder_fd;
    unsigned open_folder = 256;
    for (auto const& r : records) {
        if (total <= c.target) break;
        if (r.folder != open_folder) {
            if (folder_fd.fd >= 0) ::close(folder_fd.fd);
            folder_fd.fd = ::openat(c.root_fd, folder_name(r.folder), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            open_folder = r.folder;
        }
        if (folder_fd.fd < 0) {
            out.add_failures(1, errno);
            continue;
        }
        int const e = ::unlinkat(folder_fd.fd, r.name.c_str(), 0) == 0 ? 0 : errno;
        if (e != 0 && e != ENOENT) {
            out.add_failures(1, e);
            continue;
        }
        total -= r.bytes;
        c.counter.removed(r.folder, r.bytes);
        ++out.evicted;
        out.evicted_bytes += r.bytes;
    }
    out.entries -= out.evicted;
    out.bytes -= out.evicted_bytes;
}

void cleanup_state::start_sweep(std::uint64_t target) {
    std::sort(samples.begin(), samples.end());
    std::uint64_t total = surveyed_bytes;
    for (auto const& [mtime, bytes] : samples) {
        if (total <= target) break;
        total -= bytes;
        cutoff = mtime;
    }
    samples.clear();
    samples.shrink_to_fit();
    current = phase::sweep;
    next = 0;
}

void cleanup_state::sweep_folders(step_context& c, cleanup_totals& out) {
    while (next < 256 && c.cost < c.budget) {
        unsigned const folder = next;
        c.counter.before_scan(folder);
        folder_scan const fs = scan_folder(c.root_fd, folder, c.temps_before, cutoff, no_entry_callback{});
        c.counter.counted(folder, fs.bytes);
        c.cost += 4 + fs.visited;
        out.evicted += fs.evicted;
        out.evicted_bytes += fs.evicted_bytes;
        out.temps_removed += fs.temps_removed;
        out.add_failures(fs.not_removed, fs.error);
        ++next;
    }
    if (out.complete) {
        out.entries = out.entries >= out.evicted ? out.entries - out.evicted : 0;
        out.bytes = out.bytes >= out.evicted_bytes ? out.bytes - out.evicted_bytes : 0;
    }
}

} // namespace compile_cache::detail::directory_storage_impl

#endif // COMPILE_CACHE_INCLUDE_IMPL
