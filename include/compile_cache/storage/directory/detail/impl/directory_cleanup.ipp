// compile_cache: the definitions of storage/directory/detail/directory_cleanup.hpp's non-template functions; included by it
// alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <new>
#include <system_error>
#include <thread>

#include <sys/file.h>

namespace compile_cache::detail::directory_storage_impl {

folder_counter::folder_counter(std::string const& ledger_path, unsigned file_mode, int exact_umask,
                               lock_events* events) noexcept
    : path_(ledger_path), file_mode_(file_mode), exact_umask_(exact_umask), events_(events) {}

void folder_counter::open() noexcept {
    if (opened_) return;
    opened_ = true;
    fd_.fd = open_ledger(path_, file_mode_, exact_umask_);
    if (!fd_) return;
    if (int const e = lock_fd(fd_.fd, ledger_lock_wait)) {
        if (e == EWOULDBLOCK && events_) events_->gave_up(path_, "so the size ledger's counts were not corrected");
        return;
    }
    sound_ = read_ledger(fd_.fd, before_); // a fresh ledger reads as zeros
    ::flock(fd_.fd, LOCK_UN);
    usable_ = true;
}

std::uint64_t folder_counter::before_scan(unsigned folder) noexcept {
    open();
    if (!sound_ || ::flock(fd_.fd, LOCK_EX | LOCK_NB) != 0) return before_[folder & 0xff].bytes;
    unsigned char slot[8];
    std::size_t const at = ledger_header + 16 * (folder & 0xff);
    if (retry_on_eintr([&] { return ::pread(fd_.fd, slot, sizeof slot, static_cast<off_t>(at)); }) ==
        static_cast<ssize_t>(sizeof slot)) {
        std::uint64_t const bytes = read_le<std::uint64_t>(slot);
        if (bytes <= ledger_sane_limit) before_[folder & 0xff].bytes = bytes;
    }
    ::flock(fd_.fd, LOCK_UN);
    return before_[folder & 0xff].bytes;
}

void folder_counter::counted(unsigned folder, folder_scan const& found, std::uint64_t figure_before) noexcept {
    if (found.unlisted) return;
    open();
    // The figure when this folder's scan began, which may have been in an earlier
    // step: the stores that landed in the folder since are then in (now - before),
    // counted twice at worst if the listing saw them too, never lost.
    before_[folder & 0xff].bytes = figure_before;
    count_[folder & 0xff] = found.bytes;
    seen_.set(folder & 0xff);
}

std::uint64_t folder_counter::save(std::int64_t now) noexcept {
    std::uint64_t total = std::numeric_limits<std::uint64_t>::max();
    if (seen_.none() && shrunk_.none()) return total;
    open();
    if (!usable_) return total;
    if (int const e = lock_fd(fd_.fd, ledger_lock_wait)) {
        if (e == EWOULDBLOCK && events_) events_->gave_up(path_, "so the size ledger's counts were not corrected");
        return total;
    }
    ledger_slots slots;
    read_ledger(fd_.fd, slots);
    for (unsigned f = 0; f < 256; ++f) {
        if (shrunk_[f] && !seen_[f]) slots[f].bytes -= std::min(slots[f].bytes, minus_[f]);
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
        minus_ = {};
        shrunk_.reset();
    }
    ::flock(fd_.fd, LOCK_UN);
    return total;
}

void cleanup_state::reset() noexcept {
    current = phase::idle;
    next = 0;
    cursor.close();
    keep_names = false;
    std::vector<record>().swap(records); // (a million of them: not kept after a prune)
    names.clear();
    upper_names.clear();
    upper_half = 256;
    samples.clear();
    swept.clear();
    warm = false;
    surveyed_bytes = surveyed_entries = 0;
    cutoff = no_cutoff;
}

void cleanup_state::drop_names() {
    samples.reserve(samples.size() + records.size());
    for (auto const& r : records) samples.emplace_back(r.mtime, r.bytes);
    std::vector<record>().swap(records);
    names.clear();
    upper_names.clear();
    upper_half = 256;
    keep_names = false;
}

cleanup_totals cleanup_state::step(int root_fd, std::string const& ledger_path, unsigned file_mode, int exact_umask,
                                   std::uint64_t max_size, cleanup_budget budget, std::uint64_t total,
                                   ledger_batch* batch) noexcept {
    cleanup_totals out;
    try {
        step_impl(root_fd, ledger_path, file_mode, exact_umask, max_size, budget, total, batch, out);
    } catch (...) { // bad_alloc: give up this cleanup; the next one starts afresh
        reset();
    }
    evicted += out.evicted;
    evicted_bytes += out.evicted_bytes;
    temps_removed += out.temps_removed;
    claims_removed += out.claims_removed;
    ++steps;
    return out;
}

void cleanup_state::step_impl(int root_fd, std::string const& ledger_path, unsigned file_mode, int exact_umask,
                              std::uint64_t max_size, cleanup_budget budget, std::uint64_t total,
                              ledger_batch* batch, cleanup_totals& out) {
    std::int64_t const now = now_ns();
    folder_counter counter(ledger_path, file_mode, exact_umask, events);
    step_context c{root_fd, now, now / 1000000000, now - temp_stale_after_ns, max_size - max_size / 10, budget, counter,
                   batch, max_size};
    begin_or_resume(c.now_s, budget.whole, total, c.target);
    if (current == phase::survey) {
        survey_folders(c, out);
        if (next < 256) { // to be continued by a later step
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
        if (keep_names) { // every entry was named: evict exactly, oldest first, with no second pass
            evict_oldest_named(c, out);
            reset();
            counter.save(c.now_s);
            return;
        }
        start_sweep(surveyed_bytes, c.target);
    }
    if (current == phase::sweep) {
        sweep_folders(c, out);
        std::uint64_t now_total = counter.save(c.now_s);
        if (batch != nullptr && total != 0) // a store's step: the total it was given, less what it evicted
            now_total = total > out.evicted_bytes ? total - out.evicted_bytes : 0;
        if (next < 256) return;
        // A whole pass: what it kept is the survey of the next one. Still over the
        // target (stores went on meanwhile): sweep again at once; otherwise keep the
        // notes for when the cache next goes over its limit.
        samples = std::move(swept);
        swept.clear();
        started_s = c.now_s;
        if (now_total != std::numeric_limits<std::uint64_t>::max() && now_total > c.target) {
            start_sweep(now_total, c.target);
        } else {
            current = phase::idle;
            next = 0;
            warm = true;
        }
    }
}

void cleanup_state::begin_or_resume(std::int64_t now_s, bool whole, std::uint64_t total,
                                    std::uint64_t target) {
    bool const stale = now_s - started_s > 600 || now_s < started_s;
    if (whole || ((current != phase::idle || warm) && stale)) reset();
    if (current != phase::idle) return;
    if (warm && total != 0) {
        warm = false;
        started_s = now_s;
        start_sweep(total, target);
        return;
    }
    reset();
    current = phase::survey;
    started_s = now_s;
    keep_names = whole;
}

template <class OnEntry>
bool cleanup_state::scan_next(step_context& c, cleanup_totals& out, std::int64_t evict_up_to, OnEntry&& on_entry) {
    unsigned const folder = next;
    folder_scan was;
    bool const fresh = !cursor.open_on(folder);
    if (!fresh) {
        was = cursor.found;
    } else {
        cursor.close();
        if (c.batch == nullptr) cursor.before = c.counter.before_scan(folder);
        c.add(scan_progress{false, 1, 0});
    }
    scan_progress const p =
        scan_folder_part(c.root_fd, cursor, folder, c.temps_before, evict_up_to, c.left(), on_entry);
    c.add(p);
    folder_scan const& now = cursor.found;
    add_found(out, was, now);
    // A folder looked at in one step is counted (its figure corrected); one whose look
    // spans steps only has its evictions taken off its figure.
    bool const whole = fresh && p.finished && c.batch == nullptr;
    if (!whole && now.evicted_bytes != was.evicted_bytes) {
        if (c.batch != nullptr)
            c.batch->add(folder, 0, now.evicted_bytes - was.evicted_bytes, c.max_size, now_ns());
        else
            c.counter.evicted(folder, now.evicted_bytes - was.evicted_bytes);
    }
    if (!p.finished) return false;
    if (whole) c.counter.counted(folder, now, cursor.before);
    surveyed_bytes += current == phase::survey ? now.bytes : 0;
    surveyed_entries += current == phase::survey ? now.entries : 0;
    cursor.close();
    ++next;
    return true;
}

void cleanup_state::survey_folders(step_context& c, cleanup_totals& out) {
    if (survey_in_two(c, out)) return;
    std::size_t const limit = named_limit();
    while (next < 256 && !c.spent()) {
        unsigned const folder = next;
        auto const note = [&](std::int64_t use, std::uint64_t bytes, std::string_view name, std::uint64_t) {
            std::int64_t const mtime = ranked_use_time(use, c.now_ns);
            if (keep_names && records.size() < limit) {
                records.push_back({mtime, bytes, names.add(name), static_cast<std::uint8_t>(name.size()),
                                   static_cast<std::uint8_t>(folder)});
            } else {
                if (keep_names) drop_names();
                samples.emplace_back(mtime, bytes);
            }
        };
        if (!scan_next(c, out, no_cutoff, note)) break;
        // Keys spread evenly over the folders: the first tells how many entries the rest
        // hold, and room made for them now spares the copies of a growing vector (a
        // million records: 24 MB copied and touched again). Only a guess: it may fail.
        if (folder == 0 && keep_names) try {
                records.reserve(std::min(limit, records.size() * 256 * 5 / 4 + 1024));
            } catch (std::bad_alloc const&) {
            }
    }
}

std::size_t cleanup_state::named_limit() noexcept {
    return max_named_records_for_testing != 0 ? max_named_records_for_testing : max_named_records;
}

/// The second thread's half of a whole survey (cleanup_state::survey_in_two): folders
/// [from, 256), each looked at whole, its entries' records and names kept apart.
struct survey_half {
    unsigned from = 256;
    std::int64_t temps_before = 0;
    std::int64_t now = 0; ///< what use times are ranked against (ranked_use_time)
    std::size_t max_records = 0;
    std::vector<cleanup_state::record> records;
    entry_name_blocks names;
    std::vector<std::pair<std::int64_t, std::uint64_t>> samples; ///< past max_records: pairs only
    std::array<folder_scan, 256> found{};
    folder_cursor cursor; ///< the folder being looked at: what it found when the thread failed
    unsigned done_to = 256; ///< the folders before this one were looked at whole
    bool named = true;      ///< every entry it saw has its record
    bool failed = false;
    std::atomic<bool> stop{false}; ///< the first thread failed: no more folders

    void run(int root_fd) noexcept {
        try {
            for (done_to = from; done_to < 256 && !stop.load(std::memory_order_relaxed); ++done_to) {
                unsigned const folder = done_to;
                scan_folder_part(root_fd, cursor, folder, temps_before, no_cutoff, scan_limits{},
                                 [&](std::int64_t use, std::uint64_t bytes, std::string_view name, std::uint64_t) {
                                     std::int64_t const mtime = ranked_use_time(use, now);
                                     if (named && records.size() < max_records) {
                                         records.push_back({mtime, bytes, names.add(name),
                                                            static_cast<std::uint8_t>(name.size()),
                                                            static_cast<std::uint8_t>(folder)});
                                         return;
                                     }
                                     if (named) {
                                         named = false;
                                         for (auto const& r : records) samples.emplace_back(r.mtime, r.bytes);
                                         std::vector<cleanup_state::record>().swap(records);
                                         names.clear();
                                     }
                                     samples.emplace_back(mtime, bytes);
                                 });
                found[folder] = cursor.found;
                cursor.close();
                if (folder == from && named) try { // (as survey_folders does: keys spread evenly)
                        records.reserve(std::min(max_records, records.size() * (256 - from) * 5 / 4 + 1024));
                    } catch (std::bad_alloc const&) {
                    }
            }
        } catch (...) { // bad_alloc: the first thread looks at these folders itself
            failed = true;
        }
    }
};

/// The second thread of a survey, joined however the scope that holds it is left; left
/// early, it tells the thread to stop after its folder.
struct survey_thread {
    std::thread thread;
    std::atomic<bool>* stop = nullptr;
    survey_thread() = default;
    survey_thread(survey_thread const&) = delete;
    survey_thread& operator=(survey_thread const&) = delete;
    ~survey_thread() {
        if (!thread.joinable()) return;
        stop->store(true);
        thread.join();
    }
};

bool cleanup_state::survey_in_two(step_context& c, cleanup_totals& out) {
    if (!keep_names || !c.budget.whole || next != 0) return false;
    unsigned const split = second_thread_from;
    std::size_t const limit = named_limit();
    // The upper folders' ledger figures, read now: a store landing in one of them before
    // its look is counted twice until the next count (above the disk, never below it).
    std::array<std::uint64_t, 256> before{};
    for (unsigned f = split; f < 256; ++f) before[f] = c.counter.before_scan(f);
    std::unique_ptr<survey_half> half;
    survey_thread second; // (destroyed before `half`, which its thread uses)
    try {
        half = std::make_unique<survey_half>();
        half->from = split;
        half->temps_before = c.temps_before;
        half->now = c.now_ns;
        half->max_records = limit / 2;
        second.stop = &half->stop;
        second.thread = thread_without_signals([&h = *half, root_fd = c.root_fd] { h.run(root_fd); });
    } catch (...) { // no thread (or no memory) to be had: this one looks at every folder
        return false;
    }
    ++threads;
    // (A whole budget is never spent: each scan_next finishes its folder.)
    while (next < split) {
        unsigned const folder = next;
        scan_next(c, out, no_cutoff, [&](std::int64_t use, std::uint64_t bytes, std::string_view name, std::uint64_t) {
            std::int64_t const mtime = ranked_use_time(use, c.now_ns);
            if (keep_names && records.size() < limit / 2) {
                records.push_back({mtime, bytes, names.add(name), static_cast<std::uint8_t>(name.size()),
                                   static_cast<std::uint8_t>(folder)});
            } else {
                if (keep_names) drop_names();
                samples.emplace_back(mtime, bytes);
            }
        });
        if (folder == 0 && keep_names) try { // (room for the second thread's records too: merged below)
                records.reserve(std::min(limit, records.size() * 256 * 5 / 4 + 1024));
            } catch (std::bad_alloc const&) {
            }
    }
    second.thread.join();
    if (half->failed) {
        // What it removed is gone: counted here, as the look again will not see it.
        for (unsigned f = split; f < half->done_to && f < 256; ++f) {
            out.temps_removed += half->found[f].temps_removed;
            out.claims_removed += half->found[f].claims_removed;
        }
        out.temps_removed += half->cursor.found.temps_removed;
        out.claims_removed += half->cursor.found.claims_removed;
        return false;
    }
    for (unsigned f = split; f < 256; ++f) {
        folder_scan const& fs = half->found[f];
        add_found(out, folder_scan{}, fs);
        c.counter.counted(f, fs, before[f]);
        surveyed_bytes += fs.bytes;
        surveyed_entries += fs.entries;
    }
    next = 256;
    if (keep_names && half->named) {
        records.insert(records.end(), half->records.begin(), half->records.end());
        upper_names = std::move(half->names);
        upper_half = split;
        return true;
    }
    if (keep_names) drop_names(); // too many to name: (use time, size) pairs, and a sweep
    samples.reserve(samples.size() + half->records.size() + half->samples.size());
    for (auto const& r : half->records) samples.emplace_back(r.mtime, r.bytes);
    samples.insert(samples.end(), half->samples.begin(), half->samples.end());
    return true;
}

void cleanup_state::evict_oldest_named(step_context& c, cleanup_totals& out) {
    if (before_named_eviction_for_testing != nullptr) before_named_eviction_for_testing();
    std::sort(records.begin(), records.end(), [](record const& a, record const& b) { return a.mtime < b.mtime; });
    std::uint64_t total = surveyed_bytes;
    file_descriptor folder_fd;
    unsigned open_folder = 256;
    std::string name;
    std::uint64_t gone = 0, gone_bytes = 0; ///< found removed already by their unlink
    // The oldest entries that bring the total under the target, unlinked folder by
    // folder (one open of each folder, not one per entry: in age order consecutive
    // entries are in different folders); if some could not be unlinked or were used
    // since the survey, the next oldest make up for them, in a further round.
    for (std::size_t from = 0; from < records.size() && total > c.target;) {
        std::size_t to = from;
        for (std::uint64_t left = total; to < records.size() && left > c.target; ++to) left -= records[to].bytes;
        std::sort(records.begin() + static_cast<std::ptrdiff_t>(from), records.begin() + static_cast<std::ptrdiff_t>(to),
                  [](record const& a, record const& b) { return a.folder < b.folder; });
        for (std::size_t i = from; i < to; ++i) {
            record const& r = records[i];
            if (r.folder != open_folder) {
                if (folder_fd.fd >= 0) ::close(folder_fd.fd);
                folder_fd.fd =
                    ::openat(c.root_fd, folder_name(r.folder), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                open_folder = r.folder;
            }
            if (folder_fd.fd < 0) {
                out.add_failures(1, errno);
                continue;
            }
            (r.folder < upper_half ? names : upper_names).get(r.name_at, r.name_size, folder_name(r.folder), name);
            // Stored again or used since the survey (its use time moved): kept, and the
            // next oldest go instead.
            struct stat st {};
            if (::fstatat(folder_fd.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                ranked_use_time(mtime_ns(st), c.now_ns) != r.mtime)
                continue;
            int const e = ::unlinkat(folder_fd.fd, name.c_str(), 0) == 0 ? 0 : errno;
            total -= e == 0 || e == ENOENT ? r.bytes : 0;
            if (e == ENOENT) { // removed first by another process, which accounts for it: no eviction
                ++gone;
                gone_bytes += r.bytes;
                continue;
            }
            if (e != 0) {
                out.add_failures(1, e);
                continue;
            }
            c.counter.removed(r.folder, r.bytes);
            ++out.evicted;
            out.evicted_bytes += r.bytes;
        }
        from = to;
    }
    out.entries -= out.evicted + gone;
    out.bytes -= out.evicted_bytes + gone_bytes;
}

void cleanup_state::start_sweep(std::uint64_t total, std::uint64_t target) {
    std::sort(samples.begin(), samples.end());
    cutoff = no_cutoff;
    // The samples list every entry the last look saw (a survey, or a whole sweep's
    // notes): a ledger above their sum (left by processes killed between their
    // evictions and its update) must not make the sweep evict below the target what is
    // really there. Entries stored since are not in the sum: a sweep from the notes of
    // a pass that ended under the target evicts nothing, its own notes then count them.
    std::uint64_t seen = 0;
    for (auto const& sample : samples) seen += sample.second;
    total = std::min(total, seen);
    for (auto const& [mtime, bytes] : samples) {
        if (total <= target) break;
        total -= bytes;
        cutoff = mtime;
    }
    samples.clear();
    swept.clear();
    swept.reserve(static_cast<std::size_t>(surveyed_entries));
    current = phase::sweep;
    next = 0;
    cursor.close();
}

void cleanup_state::sweep_folders(step_context& c, cleanup_totals& out) {
    std::uint64_t const evicted_before = out.evicted, evicted_bytes_before = out.evicted_bytes;
    while (next < 256 && !c.spent())
        if (!scan_next(c, out, cutoff, [&](std::int64_t use, std::uint64_t bytes, std::string_view, std::uint64_t) {
                swept.emplace_back(ranked_use_time(use, c.now_ns), bytes);
            }))
            break;
    if (out.complete) {
        std::uint64_t const n = out.evicted - evicted_before, b = out.evicted_bytes - evicted_bytes_before;
        out.entries = out.entries >= n ? out.entries - n : 0;
        out.bytes = out.bytes >= b ? out.bytes - b : 0;
    }
}

} // namespace compile_cache::detail::directory_storage_impl

#endif // COMPILE_CACHE_INCLUDE_IMPL
