// compile-cache: opening a directory, a SQLite file or a Redis server as one storage
// (opened_cache.hpp).
#include "opened_cache.hpp"

#include "command_line.hpp"

#include <compile_cache/identity_record.hpp>
#include <compile_cache/secret_file.hpp>
#include <compile_cache/storage/directory/directory_layout.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#include <compile_cache/storage/http/http_address.hpp>
#include <compile_cache/storage/redis/redis_address.hpp>
#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
#include <compile_cache/storage/redis/redis_storage.hpp>
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_HTTP)
#include <compile_cache/storage/http/http_storage.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache_tool {

namespace layout = compile_cache::directory_layout;

int fail(std::string const& message, int status) {
    std::fprintf(stderr, "compile-cache: %s\n", message.c_str());
    return status;
}

bool is_sqlite_file(std::string const& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    char header[16] = {};
    static char const sqlite_header[16] = "SQLite format 3"; // and its '\0'
    bool const is_sqlite = ::read(fd, header, sizeof header) == sizeof header && std::equal(header, header + 16, sqlite_header);
    ::close(fd);
    return is_sqlite;
}

cache_kind kind_of(std::string const& arg, std::string& location) {
    location = arg;
    if (arg.rfind("sqlite:", 0) == 0) {
        location = arg.substr(7);
        return cache_kind::sqlite;
    }
    if (compile_cache::redis_address::is_redis_url(arg)) return cache_kind::redis; // (a scheme in any case)
    if (compile_cache::http_address::is_http_url(arg)) return cache_kind::http;
    return is_sqlite_file(arg) ? cache_kind::sqlite : cache_kind::directory;
}

std::uint64_t records_removed(std::string const& dir, directory_facts const& facts) {
    std::uint64_t n = 0;
    for (auto const* files : {&facts.earlier_record_files, &facts.packs, &facts.unmarked_packs})
        for (entry_file const& f : *files) {
            struct stat st {};
            n += ::lstat((dir + "/" + f.relative_path()).c_str(), &st) != 0 && errno == ENOENT ? 1 : 0;
        }
    return n;
}

std::string unlink_dangling_marker(std::string const& dir, std::string const& name) {
    std::string const folder = dir + "/" + std::string(layout::packs_folder_name);
    compile_cache::detail::file_descriptor const fd{
        ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    int e = errno;
    if (!fd && e == ENOENT) return {};
    if (!fd) return "cannot open its folder: " + std::error_code(e, std::generic_category()).message();
    struct stat st {};
    std::string const pack = dir + "/" + layout::entry_relative_path(name);
    if (::lstat(pack.c_str(), &st) == 0) return "kept: its pack is there now";
    if (errno != ENOENT)
        return "kept: cannot look at its pack: " + std::error_code(errno, std::generic_category()).message();
    if (::unlinkat(fd.fd, name.c_str(), 0) == 0) return {};
    e = errno;
    if (e == ENOENT) return {};
    return "cannot unlink it: " + std::error_code(e, std::generic_category()).message();
}

std::string opened_cache::entry_label(std::string const& name) const {
    return is_directory() ? layout::entry_relative_path(name) : name;
}

namespace {

listed_entry listed(compile_cache::key const& k, std::uint64_t size, std::int64_t use_ns) {
    return {k, k.hex(), size, use_ns};
}

/// Adds `e` to the entries or the records of `l`.
void file_under(cache_listing& l, listed_entry e) {
    (compile_cache::is_identity_record_name(e.name) ? l.records : l.entries).push_back(std::move(e));
}

/// clear on a storage with no clear of its own: each entry and record removed.
clear_result remove_each(opened_cache const& cache, cache_listing const& l) {
    clear_result r;
    for (auto const* list : {&l.entries, &l.records})
        for (listed_entry const& e : *list) {
            if (std::error_code const ec = cache.remove(e.k)) {
                ++r.not_removed;
                if (!r.removal_error) r.removal_error = ec;
                continue;
            }
            r.removed_bytes += e.size; // (sizes whole, as a directory's clear counts them)
            if (list == &l.entries) ++r.removed;
        }
    return r;
}

// ---- a directory -------------------------------------------------------------

/// The library's storage on the directory, made when first needed (looking at a cache
/// makes none): no size limit, since the tool never evicts but in prune. Its identity
/// records written are held until flush() or its destruction, then written in packs.
struct directory_handle {
    std::string path;
    std::optional<compile_cache::directory_storage> storage;
    std::optional<compile_cache::directory_storage> record_reader;

    compile_cache::directory_storage& get() {
        if (!storage) {
            compile_cache::directory_options options;
            options.max_size = 0;
            storage.emplace(path, options);
        }
        return *storage;
    }

    /// What reads identity records from packs: it trusts group-writable packs, as a
    /// shared directory's hosts write them (the tool reads every entry file so, unchecked
    /// for its owner: what it reads is checked as an envelope), and never writes.
    compile_cache::directory_storage& reader() {
        if (!record_reader) {
            compile_cache::directory_options options;
            options.max_size = 0;
            options.access = compile_cache::sharing::group;
            record_reader.emplace(path, options);
        }
        return *record_reader;
    }
};

/// The names of the markers in `dir`'s markers' folder (`.cc-records`), listed as a host lists
/// them: none where it is missing or no folder (hosts then read no pack); nullopt where this
/// user cannot list it (another user's cache: which packs hosts read is not known here).
std::optional<std::set<std::string>> list_pack_markers(std::string const& dir) {
    std::string const folder = dir + "/" + std::string(layout::packs_folder_name);
    compile_cache::detail::file_descriptor const fd{
        ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!fd) {
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return std::set<std::string>();
        return std::nullopt;
    }
    std::vector<std::string> names; // (as a host lists them: detail/record_packs.hpp)
    if (!compile_cache::detail::directory_storage_impl::list_markers(fd.fd, names)) return std::nullopt;
    return std::set<std::string>(names.begin(), names.end());
}

int list_directory(opened_cache& self, cache_listing& l, progress_line& progress) {
    directory_scan scan;
    std::string message;
    directory_kind const kind =
        scan_directory(self.directory, scan, message, [&](std::uint64_t done, std::uint64_t total, std::uint64_t entries) {
            progress.update("listing folders", done, total, entries);
        });
    progress.finish();
    switch (kind) {
    case directory_kind::cache: break;
    case directory_kind::unreadable: return fail(self.directory + ": " + message, exit_failed);
    case directory_kind::foreign:
        return fail(self.directory + ": " + message + " (see compile-cache --help for the rule)", exit_usage);
    default: return fail(self.directory + ": " + message, exit_usage);
    }
    if (!scan.error.empty()) return fail(self.directory + ": cannot list " + scan.error, exit_failed);
    self.facts = {scan.temp_files, scan.other_files, !scan.entries.empty(), scan.has_ledger, scan.has_counters,
                  scan.has_settings};
    self.facts.claim_files = scan.claim_files;
    // A pack of identity records is listed as its records; one that cannot be read or is
    // not sound stays an entry, which verify then reports bad (it is no envelope).
    std::vector<std::pair<entry_file const*, std::vector<layout::pack_slot>>> packs;
    for (entry_file const& f : scan.entries) {
        std::optional<compile_cache::key> const k = compile_cache::key::from_hex(f.name);
        if (!k) continue;
        std::vector<layout::pack_slot> slots;
        std::string why;
        if (layout::is_pack_name(f.name) &&
            layout::read_pack_slots(self.directory + "/" + f.relative_path(), slots, why)) {
            packs.emplace_back(&f, std::move(slots));
            continue;
        }
        // A record file of an earlier release: no host of this release reads it (hosts read
        // records from packs alone), so neither is it listed as a record; it is a file.
        if (compile_cache::is_identity_record_name(f.name)) {
            self.facts.earlier_record_files.push_back(f);
            continue;
        }
        file_under(l, listed(*k, f.size, f.use_ns));
    }
    // Hosts read the packs a marker names, and only those (every sound pack, where this user
    // cannot list the markers). They are listed after the entries, so that a pack written
    // meanwhile, whose marker follows its rename, has it.
    std::optional<std::set<std::string>> const markers = list_pack_markers(self.directory);
    // A marker whose pack is gone (looked at now: a pack written since the scan has its file).
    if (markers)
        for (std::string const& name : *markers) {
            struct stat st {};
            std::string const pack = self.directory + "/" + layout::entry_relative_path(name);
            if (::lstat(pack.c_str(), &st) != 0 && errno == ENOENT) self.facts.dangling_markers.push_back(name);
        }
    // The newest version of each record across the packs, the one a host reads: the slot
    // made last, a tie to the pack written later (a pack's name starts with that time).
    std::sort(packs.begin(), packs.end(), [](auto const& a, auto const& b) { return a.first->name < b.first->name; });
    std::map<std::string, listed_entry> newest;
    for (auto const& [f, slots] : packs) {
        if (markers && markers->count(f->name) == 0) {
            self.facts.unmarked_packs.push_back(*f);
            continue;
        }
        self.facts.packs.push_back(*f);
        for (layout::pack_slot const& s : slots) {
            listed_entry e = listed(s.k, s.length, s.version_ns);
            e.pack = f->name;
            auto const [it, added] = newest.try_emplace(e.name, e);
            if (!added && s.version_ns >= it->second.use_ns) it->second = std::move(e);
        }
    }
    for (auto& [name, e] : newest) l.records.push_back(std::move(e));
    return exit_ok;
}

/// One entry's bytes; an identity record's newest version in the packs as the library
/// reads it (directory_storage::read): absent when no pack holds it, whatever file of an
/// earlier release is under its key (no host reads that).
compile_cache::read_result read_directory_entry(std::string const& dir, directory_handle& handle,
                                                compile_cache::key const& k, std::string& bytes, std::size_t max_size) {
    if (compile_cache::is_identity_record_name(k.hex())) return handle.reader().read(k, bytes, max_size);
    std::string why;
    switch (layout::read_entry_file(dir + "/" + layout::entry_relative_path(k.hex()), max_size, bytes, why)) {
    case layout::entry_file_status::ok: return {compile_cache::read_status::found, {}};
    case layout::entry_file_status::too_large: return {compile_cache::read_status::too_large, {}};
    default: break;
    }
    int const e = errno;
    if (e == ENOENT) return {compile_cache::read_status::absent, {}};
    return {compile_cache::read_status::error, std::error_code(e != 0 ? e : EIO, std::generic_category())};
}

/// A cleanup counts every file it removed or left; identity records are no entries, so
/// the record files and the packs of records (as listed before it: each pack one file,
/// whatever it holds) it removed are taken out of its count. Sizes stay whole: records
/// count against the size limit as entries do.
clear_result directory_clear(std::string const& dir, directory_handle& handle, directory_facts const& facts) {
    compile_cache::cleanup_result const c = handle.get().clear();
    clear_result r{c.removed, c.removed_bytes, c.temp_files_removed, c.not_removed, c.removal_error, c.error};
    r.claim_files_removed = c.claim_files_removed;
    r.removed -= std::min(r.removed, records_removed(dir, facts));
    return r;
}

int open_directory(std::string const& dir, cache_use use, opened_cache& out) {
    out.shown = dir;
    out.directory = dir;
    if (use == cache_use::write) {
        std::error_code ec;
        // copy's destination: made when it is not there, of mode 0700 as a host makes it (directory_options)
        bool const made = std::filesystem::create_directories(dir, ec);
        if (ec) return fail(dir + ": cannot make it: " + ec.message(), exit_failed);
        if (made) std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
    }
    auto handle = std::make_shared<directory_handle>();
    handle->path = dir;
    out.storage = handle;
    opened_cache* self = &out;
    out.list = [self, use](cache_listing& l, progress_line& progress) {
        int const s = list_directory(*self, l, progress);
        if (s != exit_ok || use != cache_use::write) return s;
        // Nothing is written where clear and prune delete nothing: the ledger a write makes would let them.
        directory_facts const& f = self->facts;
        if (f.has_ledger || f.has_counters || f.has_settings || !f.any_entry) return exit_ok;
        return fail(self->directory + ": it has files named like entries but neither the ledger (.cc-stats) nor the "
                                      "counters (.cc-counters) a compile_cache host writes; nothing is written in a "
                                      "directory that may be another tool's",
                    exit_usage);
    };
    out.read = [dir, handle](compile_cache::key const& k, std::string& bytes, std::size_t max_size) {
        return read_directory_entry(dir, *handle, k, bytes, max_size);
    };
    out.write = [handle](compile_cache::key const& k, std::string_view bytes) { return handle->get().write(k, bytes); };
    out.flush = [handle] { return handle->storage ? handle->storage->flush_deferred() : std::error_code(); };
    out.remove = [handle](compile_cache::key const& k) { return handle->get().remove(k); };
    out.clear = [dir, handle, self](cache_listing const&) { return directory_clear(dir, *handle, self->facts); };
    // Files named like entries alone may be another tool's content-addressed store:
    // the cache deletes only where a host has written its ledger or its counters.
    out.may_remove = [self] {
        directory_facts const& f = self->facts;
        if (f.has_ledger || f.has_counters || f.has_settings || !f.any_entry) return exit_ok;
        return fail(self->directory + ": it has entries but neither the ledger (.cc-stats) nor the counters "
                                      "(.cc-counters) a compile_cache host writes; nothing is deleted in a directory "
                                      "that may be another tool's",
                    exit_usage);
    };
    return exit_ok;
}

// ---- any other storage -------------------------------------------------------

/// The functions of `out` over a Storage with the optional member `list`; the read is
/// `peek` where the Storage has one (it leaves the entry's place in the eviction order
/// alone). `explain` adds to a failure's message (the server's words), or is empty.
template <class Storage>
void use_storage(opened_cache& out, std::shared_ptr<Storage> storage,
                 std::function<std::string(std::error_code const&)> explain) {
    static_assert(compile_cache::storage_capabilities<Storage>::list, "the tool lists the storage's entries");
    Storage* s = storage.get();
    opened_cache* self = &out;
    out.storage = storage;
    out.list = [s, self, explain](cache_listing& l, progress_line&) {
        std::vector<compile_cache::stored_entry> entries;
        if (std::error_code const ec = s->list(entries)) {
            if (self->listing_optional && ec == std::errc::operation_not_supported) {
                self->unlisted = true; // copy writes every entry: it cannot see what is there
                return exit_ok;
            }
            std::string const more = explain ? explain(ec) : std::string();
            return fail(self->shown + ": cannot list its entries: " + ec.message() + (more.empty() ? "" : ": " + more),
                        exit_failed);
        }
        for (compile_cache::stored_entry const& e : entries) file_under(l, listed(e.k, e.size, e.last_use_s * 1000000000));
        return exit_ok;
    };
    out.read = [s](compile_cache::key const& k, std::string& bytes, std::size_t max_size) {
        if constexpr (compile_cache::storage_capabilities<Storage>::peek)
            return s->peek(k, bytes, max_size);
        else
            return s->read(k, bytes, max_size);
    };
    out.write = [s](compile_cache::key const& k, std::string_view bytes) { return s->write(k, bytes); };
    out.remove = [s](compile_cache::key const& k) { return s->remove(k); };
    out.clear = [self](cache_listing const& l) { return remove_each(*self, l); };
    out.may_remove = [] { return exit_ok; };
}

#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
/// Whether SQLite's own quick check finds the file sound, on a read-only connection
/// of the tool's (the storage's open for writing would copy a damaged file aside and
/// empty it: the tool never does that); `why` says what it found.
bool passes_quick_check(std::string const& file, std::string& why) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    std::string result;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 2000);
        sqlite3_stmt* s = nullptr;
        rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &s, nullptr);
        if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
            unsigned char const* text = sqlite3_column_text(s, 0);
            result = text ? reinterpret_cast<char const*>(text) : "";
            rc = SQLITE_OK;
        }
        sqlite3_finalize(s);
    }
    if (rc != SQLITE_OK) why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    else if (result != "ok") why = result;
    sqlite3_close(db);
    return why.empty();
}

int open_sqlite(std::string const& file, cache_use use, opened_cache& out) {
    out.shown = file;
    if (file.empty()) // (SQLite's temporary database, gone at exit: nothing read, all written lost)
        return fail("sqlite: names no file (sqlite:FILE)", exit_usage);
    // Checked here, as sqlite_storage would empty a file that is not a database.
    struct stat st {};
    bool const exists = ::stat(file.c_str(), &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) return fail(file + ": not a file (a SQLite cache is one file)", exit_usage);
    if (!exists && use != cache_use::write) return fail(file + ": no such file (a SQLite cache is one file)", exit_usage);
    if (exists && !is_sqlite_file(file)) return fail(file + ": not an SQLite database", exit_usage);
    std::string why;
    if (exists && use != cache_use::read && !passes_quick_check(file, why))
        return fail(file + ": damaged (SQLite's quick check: " + printable(why) +
                        "); nothing is removed or written: the tool never repairs a file (read what is left with "
                        "stats, list or copy; a host's cache copies it aside and empties it)",
                    exit_failed);
    compile_cache::sqlite_options options;
    options.max_size = 0; // the tool never evicts
    // A command that removes nothing never writes, copies or repairs the file; one that
    // removes or writes never copies or repairs it either: damage the quick check missed
    // is then the call's error.
    options.inspect_only = use == cache_use::read;
    options.repair = false;
    options.logger = [](std::string_view line) {
        std::fprintf(stderr, "compile-cache: %.*s\n", static_cast<int>(line.size()), line.data());
    };
    auto storage = std::make_shared<compile_cache::sqlite_storage>(file, options);
    if (!storage->usable()) return fail(file + ": " + storage->why_unusable(), exit_usage);
    use_storage(out, storage, {});
    compile_cache::sqlite_storage* s = storage.get();
    out.foreign_rows = [s] { return s->foreign_rows(); };
    opened_cache* self = &out;
    out.may_remove = [s, self] {
        if (!s->read_only()) return exit_ok;
        return fail(self->shown + ": opened read-only, so nothing can be removed", exit_failed);
    };
    return exit_ok;
}
#endif

#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
int open_redis(std::string const& url, reach_options const& reach, opened_cache& out) {
    compile_cache::redis_options options;
    options.url = url;
    if (reach.name_space) options.name_space = *reach.name_space;
    if (reach.password_file) {
        // Read as the library reads PREFIX_REMOTE_PASSWORD_FILE.
        std::string const why = compile_cache::read_redis_password_file(*reach.password_file, options.password);
        if (!why.empty()) return fail("--password-file " + *reach.password_file + ": " + why, exit_usage);
    }
    std::shared_ptr<compile_cache::redis_storage> storage;
    try {
        storage = std::make_shared<compile_cache::redis_storage>(options);
    } catch (std::invalid_argument const& e) {
        return fail(e.what(), exit_usage); // its message hides the password
    }
    std::fill(options.password.begin(), options.password.end(), '\0');
    out.shown = storage->describe();
    compile_cache::redis_storage* s = storage.get();
    use_storage(out, storage, [s](std::error_code const& ec) -> std::string {
        std::string const said = s->last_failure().text; // the server's words or the I/O error; no password
        if (ec != compile_cache::redis_errc::auth) return said;
        return (said.empty() ? std::string() : "\"" + printable(said) + "\"; ") +
               "give the password with --password-file FILE (or in the URL), of a user allowed SCAN, OBJECT, "
               "STRLEN, GETRANGE and DEL (docs/remote.md)";
    });
    return exit_ok;
}
#endif

#if defined(COMPILE_CACHE_TOOL_WITH_HTTP)
int open_http(std::string const& url, reach_options const& reach, opened_cache& out) {
    compile_cache::http_options options;
    options.url = url;
    // An operator's command, not a compile: longer bounds than a host's defaults.
    options.connect_timeout = std::chrono::milliseconds(5000);
    options.timeout = std::chrono::milliseconds(30000);
    if (reach.layout) {
        if (*reach.layout == "flat") options.layout = compile_cache::http_layout::flat;
        else if (*reach.layout == "fanout") options.layout = compile_cache::http_layout::fanout;
        else if (*reach.layout == "bazel") options.layout = compile_cache::http_layout::bazel;
        else throw usage_error{"--layout takes flat, fanout or bazel, not \"" + printable(*reach.layout) + "\""};
    }
    for (auto const& [given, into, name] :
         {std::tuple{&reach.ca_file, &options.ca_file, "--ca-file"}, {&reach.token_file, &options.token_file, "--token-file"}}) {
        if (!*given) continue;
        struct stat st {};
        if (::stat((*given)->c_str(), &st) != 0 || !S_ISREG(st.st_mode))
            return fail(std::string(name) + " " + printable(**given) + ": not a file that can be read", exit_usage);
        *into = **given;
    }
    if (reach.password_file) {
        std::string const why = compile_cache::read_secret_file(*reach.password_file, options.password);
        if (!why.empty()) return fail("--password-file " + *reach.password_file + ": " + why, exit_usage);
        while (!options.password.empty() && (options.password.back() == '\n' || options.password.back() == '\r'))
            options.password.pop_back();
    }
    std::shared_ptr<compile_cache::http_storage> storage;
    try {
        storage = std::make_shared<compile_cache::http_storage>(std::move(options));
    } catch (std::invalid_argument const& e) {
        return fail(e.what(), exit_usage); // its message never repeats the URL
    }
    out.shown = storage->address().base();
    // Its one line on credentials sent in clear text over http:// (set_logger) reaches the operator.
    storage->set_logger([](std::string_view line) {
        std::fprintf(stderr, "compile-cache: %.*s\n", static_cast<int>(line.size()), line.data());
    });
    compile_cache::http_storage* s = storage.get();
    use_storage(out, storage, [s](std::error_code const& ec) -> std::string {
        std::string const said = s->last_failure().text; // the method, the URL and the status; no credential
        if (ec == compile_cache::http_errc::auth)
            return (said.empty() ? std::string() : printable(said) + "; ") +
                   "give the password of the URL's user with --password-file FILE, or a bearer token with "
                   "--token-file FILE";
        if (ec == compile_cache::http_errc::cannot_list)
            return "it offers no WebDAV PROPFIND, so the tool cannot see its entries (nginx: dav_ext_methods "
                   "PROPFIND; docs/remote.md)";
        return said;
    });
    return exit_ok;
}
#endif

} // namespace

int open_cache(std::string const& arg, cache_use use, reach_options const& reach, opened_cache& out) {
    out.listing_optional = use == cache_use::write;
    std::string location;
    cache_kind const kind = kind_of(arg, location);
    if (kind != cache_kind::redis && reach.name_space) throw usage_error{"--namespace is an option for a Redis cache"};
    if (kind != cache_kind::redis && kind != cache_kind::http && reach.password_file)
        throw usage_error{"--password-file is an option for a Redis or HTTP cache"};
    for (auto const& [given, name] : {std::pair{&reach.layout, "--layout"}, {&reach.ca_file, "--ca-file"},
                                      {&reach.token_file, "--token-file"}})
        if (kind != cache_kind::http && *given) throw usage_error{std::string(name) + " is an option for an HTTP cache"};
    switch (kind) {
    case cache_kind::directory: return open_directory(location, use, out);
    case cache_kind::sqlite:
#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
        return open_sqlite(location, use, out);
#else
        return fail("this compile-cache was built without SQLite support", exit_usage);
#endif
    case cache_kind::redis:
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
        return open_redis(location, reach, out);
#else
        return fail("this compile-cache was built without Redis support", exit_usage);
#endif
    case cache_kind::http:
#if defined(COMPILE_CACHE_TOOL_WITH_HTTP)
        return open_http(location, reach, out);
#else
        return fail("this compile-cache was built without HTTP support", exit_usage);
#endif
    }
    return exit_usage;
}

} // namespace compile_cache_tool
