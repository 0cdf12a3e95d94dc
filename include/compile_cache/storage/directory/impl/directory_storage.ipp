// compile_cache: the definitions of storage/directory/directory_storage.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <bitset>
#include <chrono>
#include <limits>
#include <new>

#include <fcntl.h>
#include <unistd.h>

namespace compile_cache {

std::string detail::directory_error_category::message(int code) const {
    switch (static_cast<directory_errc>(code)) {
    case directory_errc::foreign_owner: return "untrusted entry: owned by another user";
    case directory_errc::unsafe_permissions: return "untrusted entry: writable by other users";
    }
    return "unknown directory_storage error";
}

std::error_category const& directory_category() noexcept {
    return detail::error_category_object<detail::directory_error_category>.object;
}

directory_options directory_options_from_env(settings_reader const& env) {
    directory_options o;
    std::string const shared = env.value("_SHARED");
    if (!detail::is_off(shared)) {
        if (parse_switch(shared).value_or(false) || detail::lower(detail::trim_blanks(shared)) == "group")
            o = directory_options::shared();
        else
            env.report_value("_SHARED", shared,
                             "is not understood (expected 1, on, true, yes or group to share the directory with "
                             "a group; 0, off, false or no for a private one); the directory stays private");
    }
    o.max_size = env.byte_size("_MAX_SIZE", o.max_size, "1G");
    o.sync = env.choice<durability>(
        "_DURABILITY", {{"none", durability::none}, {"file", durability::file}, {"full", durability::full}},
        durability::none, "a durability");
    return o;
}

directory_storage::directory_storage(std::string directory, directory_options options)
    : directory_(std::move(directory)), options_(options), euid_(::geteuid()) {
    while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
    if (!directory_.empty()) {
        ledger_path_ = directory_ + (directory_.back() == '/' ? "" : "/") + detail::directory_storage_impl::ledger_name;
        state_ = std::make_shared<detail::directory_storage_impl::shared_state>(ledger_path_, options_.file_mode,
                                                                                options_.umask);
        state_->directory = directory_;
        state_->options = options_;
    }
}

namespace detail::directory_storage_impl {

// (The helpers below are inline, not in an unnamed namespace: every translation unit
// that includes this file must share one registry.)
fork_list<shared_state>& the_fork_registry() noexcept {
    static fork_list<shared_state> registry; // (constant-initialised: fork_list)
    return registry;
}

inline std::mutex* fork_mutex(shared_state& s, int i) noexcept {
    switch (i) {
    case 0: return &s.cleanup.mutex;
    case 1: return &s.deferred.mutex;
    case 2: return &s.ledger.mutex_for_fork();
    case 3: return &s.locks.mutex_for_fork();
    default: return &s.packs.mutex;
    }
}

// The fork's prepare (detail/fork_handlers.hpp, after the tier workers'): every storage's mutexes, in the order they nest, each
// within fork_lock_wait, but for the cleanup's, held through a whole prune: tried once.
inline void take_before_fork() noexcept {
    fork_list<shared_state>& r = the_fork_registry();
    r.held_for_fork = r.lock(std::chrono::steady_clock::now() + fork_lock_wait);
    if (!r.held_for_fork) return;
    for (shared_state* s = r.head(); s; s = s->fork_links.next)
        for (int i = 0; i < fork_mutexes; ++i)
            s->held_for_fork[i] = i == 0 ? fork_mutex(*s, i)->try_lock()
                                         : lock_by(*fork_mutex(*s, i), std::chrono::steady_clock::now() + fork_lock_wait);
}

// Its parent handler: what it took, given back.
inline void give_back_after_fork_in_parent() noexcept {
    fork_list<shared_state>& r = the_fork_registry();
    if (!r.held_for_fork) return;
    for (shared_state* s = r.head(); s; s = s->fork_links.next)
        for (int i = fork_mutexes - 1; i >= 0; --i)
            if (s->held_for_fork[i]) {
                s->held_for_fork[i] = false;
                fork_mutex(*s, i)->unlock();
            }
    r.held_for_fork = false;
    r.unlock();
}

// Its child handler, on the one thread there: what it took, given back. One it could not
// take (its holder is not in this process): the cleanup's stays held, so that this child
// never resumes a step another thread left half done (it skips cleaning, and prune() and
// clear() give up within their bound); the deferred writes' is made anew over an empty
// batch (the held writes were the parent's to make); the ledger's and the lock events'
// are made anew over what they guard, the ledger's changes being dropped by the child's
// first use anyway (fork_generation) and the lock events only read while held long; the
// index of record packs is made anew, empty (the child lists the packs again).
// Nothing here allocates.
inline void give_back_after_fork_in_child() noexcept {
    fork_list<shared_state>& r = the_fork_registry();
    if (!r.held_for_fork) { // (as before the fork, but the list: its lock's holder is not here)
        r.forget_all();
        return;
    }
    for (shared_state* s = r.head(); s; s = s->fork_links.next) {
        shared_state& state = *s;
        for (int i = fork_mutexes - 1; i >= 0; --i) {
            bool const taken = state.held_for_fork[i];
            state.held_for_fork[i] = false;
            if (taken) {
                fork_mutex(state, i)->unlock();
            } else if (i == 1) {
                deferred_writes& d = state.deferred;
                new (&d.held) std::unordered_map<key, std::string>; // the old nodes are left, unfreed
                new (&d.held_ns) std::unordered_map<key, std::int64_t>;
                d.bytes = 0;
                d.any.store(false);
                new (&d.mutex) std::mutex;
            } else if (i == 4) {
                new (&state.packs) record_pack_index; // the old one's memory is left, unfreed
            } else if (i != 0) {
                new (fork_mutex(state, i)) std::mutex;
            }
        }
    }
    r.held_for_fork = false;
    r.unlock();
}

void register_for_fork(shared_state* s) noexcept {
    fork_list<shared_state>& r = the_fork_registry();
    if (!r.install(fork_stage::directory_storages,
                   {&take_before_fork, &give_back_after_fork_in_parent, &give_back_after_fork_in_child}))
        return;
    (void)r.link(*s); // (past its bound, left out: its child may wait, as before)
}

void unregister_for_fork(shared_state* s) noexcept { the_fork_registry().unlink(*s); }

} // namespace detail::directory_storage_impl

detail::directory_storage_impl::shared_state::~shared_state() {
    unregister_for_fork(this); // first: a fork takes the mutexes below until then
    if (!deferred.any.load()) return;
    try {
        std::unordered_map<key, std::int64_t> times;
        auto held = take_deferred(deferred, &times);
        if (held.empty()) return;
        directory_storage writer(directory, options);
        (void)writer.write_held(held, times);
    } catch (...) {
        // Deferred writes are the ones a crash may lose: so may a failure here.
    }
}

std::unordered_map<key, std::string> detail::directory_storage_impl::take_deferred(
    deferred_writes& d, std::unordered_map<key, std::int64_t>* times) {
    std::unordered_map<key, std::string> out;
    std::lock_guard<std::mutex> const lock(d.mutex);
    if (d.generation == detail::directory_storage_impl::fork_generation()) {
        out.swap(d.held);
        if (times) times->swap(d.held_ns);
    }
    d.held.clear();
    d.held_ns.clear();
    d.bytes = 0;
    d.any.store(false);
    return out;
}

std::error_code directory_storage::write_made_at(key const& k, std::string_view bytes, std::int64_t made_ns) noexcept {
    if (detail::directory_storage_impl::is_record_key(k) && !directory_.empty())
        return hold_write(k, bytes, made_ns); // written in a pack with its batch
    std::error_code const ec = write(k, bytes);
    if (ec || made_ns <= 0) return ec;
    try {
        struct timespec times[2];
        times[0].tv_sec = times[1].tv_sec = static_cast<time_t>(made_ns / 1000000000);
        times[0].tv_nsec = times[1].tv_nsec = static_cast<long>(made_ns % 1000000000);
        // A time, no more: failure is harmless. Through the fan-out folder opened without
        // following a symlink, and not through one put in the entry's place meanwhile: a
        // shared directory's other writers could aim either at this user's files.
        std::string const path = entry_path(k);
        std::size_t const slash = path.rfind('/');
        int const folder = detail::retry_on_eintr(
            [&] { return ::open(path.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
        if (folder >= 0) {
            detail::directory_storage_impl::file_descriptor const guard{folder};
            (void)::utimensat(folder, path.c_str() + slash + 1, times, AT_SYMLINK_NOFOLLOW);
        }
    } catch (...) {
    }
    return ec;
}

std::error_code directory_storage::write_deferred(key const& k, std::string_view bytes) noexcept {
    if (directory_.empty() || k.empty()) return std::make_error_code(std::errc::invalid_argument);
    return hold_write(k, bytes, 0);
}

std::error_code directory_storage::flush_deferred() noexcept {
    if (directory_.empty() || !state_->deferred.any.load()) return {};
    try {
        std::unordered_map<key, std::int64_t> times;
        auto const held = detail::directory_storage_impl::take_deferred(state_->deferred, &times);
        return write_held(held, times);
    } catch (...) {
        return std::make_error_code(std::errc::not_enough_memory);
    }
}

std::optional<read_result> directory_storage::read_deferred(key const& k, std::string& out, std::size_t max_size) {
    detail::directory_storage_impl::deferred_writes& d = state_->deferred;
    std::lock_guard<std::mutex> const lock(d.mutex);
    if (d.generation != detail::directory_storage_impl::fork_generation()) return std::nullopt;
    auto const it = d.held.find(k);
    if (it == d.held.end()) return std::nullopt;
    if (it->second.size() > max_size) {
        out.clear();
        return read_result{read_status::too_large, {}};
    }
    out = it->second;
    return read_result{read_status::found, {}};
}

from_env_result<directory_storage> directory_storage::from_env(storage_settings const& settings) {
    settings_reader const& env = settings.env;
    std::string dir = env.value("_DIR");
    if (detail::is_off(dir)) return from_env_result<directory_storage>::not_configured();
    if (!settings.cache_off.empty()) return from_env_result<directory_storage>::off(settings.cache_off);
    directory_options options = directory_options_from_env(env);
    std::vector<kept_cache_setting> for_cache; // the cache's own settings DIR/.cc-settings holds
    detail::apply_directory_settings_file(dir, env, options, for_cache); // where the environment is silent
    // A directory that cannot be made (a file on the way, no permission, a
    // read-only parent) would make every store fail: say so now, once, and run
    // without a cache. An existing read-only directory is fine: loads work.
    if (int const e = usable_directory(dir, options))
        return from_env_result<directory_storage>::off(env.name("_DIR") + "=\"" + dir + "\" cannot be used (" +
                                                       std::generic_category().message(e) +
                                                       "); the cache is disabled");
    // `1` or `on` is a path here, not a switch: the directory `on` is used, and said so.
    if (detail::is_on(dir))
        env.report_value("_DIR", dir,
                         "is a path, not a switch: the cache is the directory \"" + dir +
                             "\" in the working directory");
    from_env_result<directory_storage> result(directory_storage(std::move(dir), options));
    for (kept_cache_setting& k : for_cache) result.keep_cache_setting(std::move(k));
    return result;
}

std::vector<environment_setting> directory_storage::environment_settings(std::string_view prefix) {
    std::string const p(prefix);
    return {
        {p + "_DIR", "the cache directory; unset, empty, 0, off, false or no disable the cache"},
        {p + "_MAX_SIZE", "size limit of the directory: bytes, or with K, M, G (powers of 1024); "
                          "default 1G; least recently used entries are evicted"},
        {p + "_DURABILITY", "none (default), file (fsync each entry) or full (also fsync its folder)"},
        {p + "_SHARED", "1 shares the directory with the group (group-writable entries trusted)"},
    };
}

int directory_storage::usable_directory(std::string directory, directory_options const& options) {
    while (directory.size() > 1 && directory.back() == '/') directory.pop_back();
    bool created = false;
    if (int const e =
            detail::directory_storage_impl::make_directories(directory, options.directory_mode, options.umask, created))
        return e;
    struct stat st;
    if (::stat(directory.c_str(), &st) != 0) return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

std::string directory_storage::entry_path(key const& k) const {
    std::string path;
    if (directory_.empty() || k.empty()) return path;
    detail::directory_storage_impl::append_entry_path(path, directory_, k);
    return path;
}

read_result directory_storage::read(key const& k, std::string& out, std::size_t max_size) noexcept {
    return read_entry(k, out, max_size, nullptr);
}

read_result directory_storage::read_view(key const& k, std::string& buffer, std::size_t max_size,
                                         entry_view& view) noexcept {
    view.reset();
    read_result const r = read_entry(k, buffer, max_size, &view);
    if (r.status != read_status::found)
        view.reset();
    else if (!view.mapped())
        view.bytes_ = buffer;
    return r;
}

read_result directory_storage::read_entry(key const& k, std::string& out, std::size_t max_size,
                                          entry_view* view) noexcept {
    namespace impl = detail::directory_storage_impl;
    // `out` is cleared on every path but a hit, where it is resized to the entry:
    // its old bytes spare that resize the zero-fill of what read() overwrites.
    if (directory_.empty() || k.empty()) {
        out.clear();
        return {read_status::absent, {}};
    }
    try {
        if (state_->deferred.any.load(std::memory_order_relaxed))
            if (std::optional<read_result> const held = read_deferred(k, out, max_size)) return *held;
        if (impl::is_record_key(k)) return read_packed_record(k, out, max_size);
        std::string own_path;
        std::string& path = impl::read_path_buffer(own_path);
        path.clear();
        impl::append_entry_path(path, directory_, k);
        int const fd = detail::open_no_follow(AT_FDCWD, path.c_str());
        if (fd < 0) {
            int const e = errno;
            out.clear();
            if (e == ENOENT || e == ENOTDIR) return {read_status::absent, {}};
            return {read_status::error, impl::errno_code(e)};
        }
        impl::file_descriptor const guard{fd};

        struct stat st;
        auto refused = [&out](read_status status, std::error_code ec) -> read_result {
            out.clear();
            return {status, ec};
        };
        detail::file_read_status const status = detail::stat_regular_file(fd, max_size, st);
        if (status == detail::file_read_status::error) return refused(read_status::error, impl::errno_code(errno));
        if (status == detail::file_read_status::not_regular)
            return refused(read_status::error, impl::errno_code(S_ISDIR(st.st_mode) ? EISDIR : EINVAL));
        if (std::error_code const untrusted = trust(st)) return refused(read_status::error, untrusted);
        if (status == detail::file_read_status::too_large) return refused(read_status::too_large, {});
        auto const size = static_cast<std::size_t>(st.st_size);
        // The use time, for eviction: refreshed at most once an hour per entry, so
        // a hit costs no system call beyond the open, fstat, read and close unless
        // the entry was last used over an hour ago. LRU order at an hour's
        // resolution is enough to pick what to evict; a finer clock made every
        // first hit after a minute dirty an inode (and, on ext4, a journal block).
        // A use time eviction does not believe (ranked_use_time: far ahead of now) is
        // refreshed too.
        std::int64_t const now = impl::now_s(), used = static_cast<std::int64_t>(st.st_mtime);
        bool refresh = now - used >= refresh_after_s || used - now > impl::future_use_slack_ns / 1000000000;
        bool mapped = false;
        if (view != nullptr && options_.map_min_size != 0 && size >= options_.map_min_size) {
            // Refreshed before the mapping, whose intact() takes any later change of the
            // file's times for a write in place.
            if (refresh) {
                ::futimens(fd, nullptr);
                refresh = false;
                if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != size) st.st_size = 0; // read
            }
            if (st.st_size > 0 && view->mapping_.map(fd, st)) {
                mapped = true;
                out.clear();
                if (impl::after_map_for_testing != nullptr) impl::after_map_for_testing(path.c_str());
            }
        }
        if (!mapped && !detail::read_file_bytes(fd, out, size)) return {read_status::error, impl::errno_code(errno)};
        if (refresh) ::futimens(fd, nullptr);
        return {read_status::found, {}};
    } catch (std::bad_alloc const&) {
        out.clear();
        return {read_status::error, std::make_error_code(std::errc::not_enough_memory)};
    } catch (...) {
        out.clear();
        return {read_status::error, std::make_error_code(std::errc::io_error)};
    }
}

std::error_code directory_storage::write(key const& k, std::string_view bytes) noexcept {
    namespace impl = detail::directory_storage_impl;
    if (directory_.empty() || k.empty()) return std::make_error_code(std::errc::invalid_argument);
    if (impl::is_record_key(k)) return hold_write(k, bytes, 0); // written in a pack with its batch
    try {
        if (state_->deferred.any.load(std::memory_order_relaxed)) { // this write supersedes a held one
            std::lock_guard<std::mutex> const lock(state_->deferred.mutex);
            auto const it = state_->deferred.held.find(k);
            if (it != state_->deferred.held.end()) {
                state_->deferred.bytes -= it->second.size();
                state_->deferred.held.erase(it);
                state_->deferred.held_ns.erase(k);
            }
        }
        std::string const entry = entry_path(k);
        std::string const folder = entry.substr(0, entry.rfind('/'));
        std::error_code through_claim;
        if (write_through_claim(k, bytes, entry, folder, through_claim)) return through_claim;
        std::string temp;
        bool created_folders = false;
        int fd = -1;
        if (std::error_code const ec = create_temp_file(entry, folder, temp, fd, created_folders)) return ec;
        impl::temp_file file{fd, temp.c_str()};
        if (std::error_code const ec = fill_temp_file(file, bytes)) return ec;
        std::uint64_t replaced_bytes = 0;
        if (std::error_code const ec = publish(temp, entry, replaced_bytes)) return ec;
        file.committed = true;
        if (std::error_code const ec = sync_directories(folder, created_folders)) return ec;
        after_change(k.data()[0], impl::accounted_size(bytes.size()), replaced_bytes, true);
        return {};
    } catch (std::bad_alloc const&) {
        return std::make_error_code(std::errc::not_enough_memory);
    } catch (...) {
        return std::make_error_code(std::errc::io_error);
    }
}

std::error_code directory_storage::remove(key const& k) noexcept {
    namespace impl = detail::directory_storage_impl;
    if (directory_.empty() || k.empty()) return {};
    try {
        if (state_->deferred.any.load(std::memory_order_relaxed)) {
            std::lock_guard<std::mutex> const lock(state_->deferred.mutex);
            auto const it = state_->deferred.held.find(k);
            if (it != state_->deferred.held.end()) {
                state_->deferred.bytes -= it->second.size();
                state_->deferred.held.erase(it);
                state_->deferred.held_ns.erase(k);
            }
        }
        if (impl::is_record_key(k) && take_pack_index()) {
            // In packs, for this process: a pack is never changed (a record file of an
            // earlier release is unlinked below).
            std::lock_guard<std::mutex> const lock(state_->packs.mutex, std::adopt_lock);
            look_at_packs(false);
            state_->packs.hide(impl::record_pack_index::fingerprint(k));
        }
        // Through the fan-out folder opened without following a symlink: in a
        // directory others may write (shared mode), `ab` swapped for a symlink must
        // not make this unlink a file elsewhere.
        std::string const path = entry_path(k);
        std::size_t const slash = path.rfind('/');
        std::string const folder = path.substr(0, slash), name = path.substr(slash + 1);
        int const fd = detail::retry_on_eintr(
            [&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
        if (fd < 0) {
            int const e = errno;
            if (e == ENOENT || e == ENOTDIR) return {}; // no folder, or a file there: no entry
            return impl::errno_code(e);                 // ELOOP: the folder is a symlink
        }
        impl::file_descriptor const guard{fd};
        struct stat st {};
        bool const counted = ::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
        if (::unlinkat(fd, name.c_str(), 0) == 0) {
            if (counted)
                after_change(k.data()[0], 0, impl::accounted_size(static_cast<std::uint64_t>(st.st_size)), false);
            return {};
        }
        int const e = errno;
        if (e == ENOENT) return {};
        return impl::errno_code(e);
    } catch (std::bad_alloc const&) {
        return std::make_error_code(std::errc::not_enough_memory);
    } catch (...) {
        return std::make_error_code(std::errc::io_error);
    }
}

std::error_code
directory_storage::record_counters(std::vector<std::pair<std::string, std::uint64_t>> const& delta) noexcept {
    if (directory_.empty()) return {};
    (void)flush_deferred(); // the cache is being destroyed or flushed: its records go too
    try {
        // This storage's own count, `lock-timeouts`, rides along.
        std::uint64_t const timeouts = state_->locks.timeouts();
        std::uint64_t const new_timeouts = timeouts - state_->lock_timeouts_recorded.load();
        bool any = new_timeouts != 0;
        for (auto const& counter : delta) any = any || counter.second != 0;
        if (!any) return {};
        auto all = delta;
        all.emplace_back("lock-timeouts", new_timeouts);
        int const e =
            detail::directory_storage_impl::add_counters(directory_, all, options_.max_size, options_.file_mode,
                                                         options_.directory_mode, options_.umask, &state_->locks);
        if (e != 0) return detail::directory_storage_impl::errno_code(e);
        state_->lock_timeouts_recorded.store(timeouts);
        return {};
    } catch (...) {
        return std::make_error_code(std::errc::not_enough_memory);
    }
}

std::map<std::string, std::uint64_t> directory_storage::recorded_counters() const noexcept {
    if (directory_.empty()) return {};
    try {
        return detail::directory_storage_impl::read_counters(directory_);
    } catch (...) {
        return {};
    }
}

std::error_code directory_storage::list(std::vector<stored_entry>& out) const noexcept {
    namespace impl = detail::directory_storage_impl;
    if (directory_.empty()) return {};
    impl::file_descriptor root{impl::open_root(directory_)};
    if (!root) return errno == ENOENT ? std::error_code() : impl::errno_code(errno);
    bool out_of_memory = false;
    std::vector<key> packs;
    for (unsigned f = 0; f < 256 && !out_of_memory; ++f)
        impl::scan_folder(root.fd, f, impl::no_cutoff, impl::no_cutoff,
                          [&](std::int64_t mtime_ns, std::uint64_t, std::string_view name, std::uint64_t size) {
                              try {
                                  if (auto k = key::from_hex(name))
                                      impl::is_pack_key(*k) ? packs.push_back(*k)
                                                            : out.push_back({*k, size, mtime_ns / 1000000000});
                              } catch (...) {
                                  out_of_memory = true;
                              }
                          });
    // A pack is listed as its records (the newest version of each), as record files were.
    try {
        std::unordered_map<key, impl::pack_slot> newest;
        std::vector<impl::pack_slot> slots;
        for (key const& p : packs) {
            if (read_pack_slots(p, slots) != pack_read::read) continue;
            for (impl::pack_slot const& s : slots) {
                auto const [it, added] = newest.try_emplace(s.k, s);
                if (!added && s.version_ns >= it->second.version_ns) it->second = s;
            }
        }
        for (auto const& [k, s] : newest) out.push_back({k, s.length, s.version_ns / 1000000000});
    } catch (...) {
        out_of_memory = true;
    }
    return out_of_memory ? std::make_error_code(std::errc::not_enough_memory) : std::error_code();
}

cleanup_result directory_storage::prune() noexcept {
    return run_cleanup([this](int root_fd, cleanup_result& r) {
        detail::directory_storage_impl::cleanup_totals const t =
            state_->cleanup.step(root_fd, ledger_path_, options_.file_mode, options_.umask, options_.max_size,
                                 detail::directory_storage_impl::whole_cleanup_budget);
        r.entries = t.entries;
        r.bytes = t.bytes;
        r.removed = t.evicted;
        r.removed_bytes = t.evicted_bytes;
        r.temp_files_removed = t.temps_removed;
        r.claim_files_removed = t.claims_removed;
        r.not_removed = t.not_removed;
        if (t.error != 0) r.removal_error = detail::directory_storage_impl::errno_code(t.error);
    });
}

cleanup_result directory_storage::clear() noexcept {
    // What this process holds back (identity records) is cleared too: written later, it
    // would come back after the clear.
    if (!directory_.empty() && state_) {
        try {
            (void)detail::directory_storage_impl::take_deferred(state_->deferred);
        } catch (...) {
        }
    }
    return run_cleanup([this](int root_fd, cleanup_result& r) {
        namespace impl = detail::directory_storage_impl;
        impl::folder_counter counter(ledger_path_, options_.file_mode, options_.umask, &state_->locks);
        for (unsigned f = 0; f < 256; ++f) {
            std::uint64_t const before = counter.before_scan(f);
            impl::folder_scan const fs =
                impl::scan_folder(root_fd, f, std::numeric_limits<std::int64_t>::max(),
                                  std::numeric_limits<std::int64_t>::max(), impl::no_entry_callback{});
            counter.counted(f, fs, before);
            r.removed += fs.evicted;
            r.removed_bytes += fs.evicted_bytes;
            r.temp_files_removed += fs.temps_removed;
            r.claim_files_removed += fs.claims_removed;
            r.not_removed += fs.not_removed;
            if (fs.error != 0 && !r.removal_error) r.removal_error = impl::errno_code(fs.error);
        }
        counter.save(impl::now_s());
        forget_gone_packs();
    });
}

std::uint64_t directory_storage::accounted_size() const noexcept {
    if (directory_.empty()) return 0;
    if (state_->ledger.has_changes()) {
        std::uint64_t total = 0;
        flush_ledger(detail::directory_storage_impl::now_s(), total);
    }
    if (::access(ledger_path_.c_str(), F_OK) != 0) return 0;
    detail::directory_storage_impl::ledger l;
    if (!l.open(ledger_path_, options_.file_mode, options_.umask, &state_->locks)) return 0;
    return l.total();
}

directory_counters directory_storage::counters() const noexcept {
    directory_counters c;
    if (!state_) return c;
    c.evicted = state_->cleanup.evicted.load();
    c.evicted_bytes = state_->cleanup.evicted_bytes.load();
    c.temp_files_removed = state_->cleanup.temps_removed.load();
    c.cleanup_steps = state_->cleanup.steps.load();
    c.cleanup_threads = state_->cleanup.threads.load();
    c.lock_timeouts = state_->locks.timeouts();
    c.claim_files_removed = state_->cleanup.claims_removed.load();
    return c;
}

std::error_code directory_storage::create_temp_file(std::string const& entry, std::string const& folder,
                                                    std::string& temp, int& fd, bool& created_folders) {
    namespace impl = detail::directory_storage_impl;
    // In a shared directory, in the fan-out folder opened without following a symlink: one
    // put in its place by another member of the group must not make this store write a
    // file elsewhere, where no cleanup ever sees it; the store fails then (ENOTDIR),
    // counted. A private directory's folders are this user's alone (0700), so its stores
    // skip that open (a symlink there is the user's own, and followed).
    bool const guarded = options_.access == sharing::group;
    auto open_folder = [&] {
        return detail::retry_on_eintr(
            [&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
    };
    auto make_folders = [&]() -> int {
        bool made = false;
        std::string path = folder;
        int const e = impl::make_directories(path, options_.directory_mode, options_.umask, made);
        created_folders = made;
        return e;
    };
    impl::file_descriptor dir{guarded ? open_folder() : -1};
    if (guarded && !dir && errno == ENOENT) { // first store in this folder
        if (int const e = make_folders()) return impl::errno_code(e);
        dir.fd = open_folder();
    }
    if (guarded && !dir) return impl::errno_code(errno);
    for (int attempt = 0; attempt < 4 && fd < 0; ++attempt) {
        temp.assign(entry, 0, folder.size() + 1);
        temp += impl::temp_prefix;
        if (char const* forced = impl::next_temp_suffix_for_testing) {
            impl::next_temp_suffix_for_testing = nullptr;
            temp += forced;
        } else {
            impl::append_temp_name(temp);
        }
        if (guarded) {
            char const* const name = temp.c_str() + folder.size() + 1;
            fd = detail::retry_on_eintr([&] {
                return ::openat(dir.fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                static_cast<mode_t>(options_.file_mode));
            });
        } else {
            fd = impl::open_exclusive(temp, options_.file_mode);
            if (fd < 0 && errno == ENOENT && !created_folders) { // first store in this folder
                if (int const e = make_folders()) return impl::errno_code(e);
                fd = impl::open_exclusive(temp, options_.file_mode);
            }
        }
        if (fd < 0 && errno != EEXIST) return impl::errno_code(errno);
    }
    return fd < 0 ? impl::errno_code(EEXIST) : std::error_code();
}

std::error_code directory_storage::fill_temp_file(detail::directory_storage_impl::temp_file& file,
                                                  std::string_view bytes) const {
    namespace impl = detail::directory_storage_impl;
    if (options_.umask >= 0 &&
        ::fchmod(file.fd, static_cast<mode_t>(options_.file_mode & ~static_cast<unsigned>(options_.umask))) != 0)
        return impl::errno_code(errno);
    if (int const e = impl::write_all(file.fd, bytes.data(), bytes.size())) return impl::errno_code(e);
    if (options_.sync != durability::none)
        if (int const e = impl::fsync_fd(file.fd)) return impl::errno_code(e);
    if (int const e = file.close()) return impl::errno_code(e);
    return {};
}

std::error_code directory_storage::publish(std::string const& temp, std::string const& entry,
                                           std::uint64_t& replaced_bytes) {
    namespace impl = detail::directory_storage_impl;
    int renamed = ENOSYS;
    if (!state_->no_rename_noreplace.load(std::memory_order_relaxed)) {
        renamed = impl::rename_no_replace(temp.c_str(), entry.c_str());
        if (renamed == ENOSYS || renamed == EINVAL) state_->no_rename_noreplace.store(true);
    }
    if (renamed == 0) return {};
    if (renamed != EEXIST && renamed != ENOSYS && renamed != EINVAL) return impl::errno_code(renamed);
    struct stat old {};
    if (::lstat(entry.c_str(), &old) == 0 && S_ISREG(old.st_mode))
        replaced_bytes = impl::accounted_size(static_cast<std::uint64_t>(old.st_size));
    if (::rename(temp.c_str(), entry.c_str()) != 0) return impl::errno_code(errno);
    return {};
}

std::error_code directory_storage::sync_directories(std::string const& folder, bool created_folders) const noexcept {
    namespace impl = detail::directory_storage_impl;
    if (options_.sync != durability::full) return {};
    if (int const e = impl::fsync_directory(folder.c_str())) return impl::errno_code(e);
    // (Taken before the sync: a claim that makes a folder meanwhile sets it again.)
    bool const owed = state_->claim_made_folder.exchange(false);
    if (created_folders || owed)
        if (int const e = impl::fsync_directory(directory_.c_str())) {
            if (owed) state_->claim_made_folder.store(true);
            return impl::errno_code(e);
        }
    return {};
}

std::error_code directory_storage::trust(struct stat const& st) const noexcept {
    if (options_.access == sharing::group)
        return (st.st_mode & S_IWOTH) ? make_error_code(directory_errc::unsafe_permissions) : std::error_code();
    if (st.st_uid != euid_) return make_error_code(directory_errc::foreign_owner);
    if (st.st_mode & (S_IWGRP | S_IWOTH)) return make_error_code(directory_errc::unsafe_permissions);
    return {};
}

void directory_storage::after_change(unsigned folder, std::uint64_t added, std::uint64_t removed,
                                     bool may_clean) noexcept {
    namespace impl = detail::directory_storage_impl;
    std::int64_t const now = impl::now_ns();
    if (!state_->ledger.add(folder, added, removed, options_.max_size, now)) return;
    std::uint64_t total = 0;
    if (!flush_ledger(now / 1000000000, total)) return;
    (void)state_->ledger.take_stores();
    if (!may_clean || options_.max_size == 0 || total <= options_.max_size) return;
    impl::file_descriptor root{impl::open_root(directory_)};
    if (!root) return;
    // One step of bounded work; skipped while another thread or process cleans.
    std::unique_lock<std::mutex> lock(state_->cleanup.mutex, std::try_to_lock);
    if (!lock.owns_lock() || impl::lock_fd(root.fd, std::chrono::milliseconds{0}) != 0) return;
    // The cleanup of a batch of stores (ledger_batch_stores), done by the one that wrote
    // it: fewer than 1% of stores clean, the others not at all.
    impl::cleanup_totals const done =
        state_->cleanup.step(root.fd, ledger_path_, options_.file_mode, options_.umask, options_.max_size,
                             impl::store_cleanup_budget, total, &state_->ledger);
    lock.unlock();
    // Unlocked before the close: a child forked (no exec) meanwhile has a copy of the
    // descriptor, which would keep the lock for the child's whole life.
    ::flock(root.fd, LOCK_UN);
    ::close(root.fd);
    root.fd = -1;
    // The evictions are written now, not with the next batch: a process killed before
    // that batch would leave the ledger over by what it evicted, and every store's
    // step after it would evict to a target the files on disk are already under.
    if (done.evicted != 0) (void)flush_ledger(now / 1000000000, total); // with any recount it makes due
}

bool directory_storage::flush_ledger(std::int64_t now, std::uint64_t& total) const noexcept {
    namespace impl = detail::directory_storage_impl;
    impl::ledger_batch::flushed const f = state_->ledger.flush(now);
    if (!f.ok) return false;
    total = f.total;
    if (f.due.none()) return true;
    impl::file_descriptor root{impl::open_root(directory_)};
    if (!root) return true;
    impl::folder_counter counter(ledger_path_, options_.file_mode, options_.umask, &state_->locks);
    std::int64_t const counted_at = impl::now_s();
    // At most ledger_recounts_per_flush of the due folders: folders counted together (by
    // a prune) fall due together, and the batch may have touched most of them; the others
    // stay due, and the next store into each recounts it.
    std::bitset<256> recounted_folders;
    for (unsigned folder = 0; folder < 256 && recounted_folders.count() < impl::ledger_recounts_per_flush; ++folder) {
        if (!f.due[folder]) continue;
        recounted_folders.set(folder);
        std::int64_t const temps_before = impl::now_ns() - impl::temp_stale_after_ns;
        std::uint64_t const before = counter.before_scan(folder);
        impl::folder_scan const fs =
            impl::scan_folder(root.fd, folder, temps_before, impl::no_cutoff, impl::no_entry_callback{},
                              impl::claim_sweep::left);
        counter.counted(folder, fs, before);
        state_->cleanup.temps_removed += fs.temps_removed;
    }
    std::uint64_t const recounted = counter.save(counted_at);
    if (recounted == std::numeric_limits<std::uint64_t>::max()) return false;
    total = recounted;
    state_->ledger.counted(recounted_folders, counted_at, total);
    return true;
}

} // namespace compile_cache

#endif // COMPILE_CACHE_INCLUDE_IMPL
