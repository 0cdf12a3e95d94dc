// compile-cache: stats, list, show, verify and clear on a storage that is not a
// directory (a SQLite file, a Redis server or cluster), through the Storage members
// `list` (key, size, last use; storage/concept.hpp), `read` and `remove`.
#pragma once

#include "cache_directory.hpp"
#include "output.hpp"

#include <compile_cache/envelope.hpp>
#include <compile_cache/explain.hpp>
#include <compile_cache/storage/concept.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

namespace compile_cache_tool {

// Exit statuses (also in --help).
inline constexpr int exit_ok = 0;
inline constexpr int exit_bad_entries = 1; ///< verify (or show) found an entry that does not check
inline constexpr int exit_usage = 2;       ///< a usage error, or the cache / KEY_PREFIX / the secret file is not usable
inline constexpr int exit_failed = 3;      ///< the storage refused: a folder that cannot be read, a removal, a server down
inline constexpr int exit_unchecked = 4;   ///< verify found no bad entry but could not check some (--allow-unchecked: 0)

/// Says `message` on stderr (after "compile-cache: "); returns `status`.
int fail(std::string const& message, int status);

/// Whether `path` is a regular file that starts as an SQLite database does.
bool is_sqlite_file(std::string const& path);

/// show's KEY_PREFIX in lower case; false (after the message) when it is not hexadecimal.
bool key_prefix_from(std::string const& given, std::string& prefix);

/// What the CACHE argument names.
enum class cache_kind { directory, sqlite, redis };

/// `sqlite:FILE`; `redis://...`, `redis+cluster://...`, `unix://...` (Redis); an existing
/// regular file that starts as an SQLite database does; anything else is a directory.
/// `location` is the file or the URL.
cache_kind kind_of(std::string const& arg, std::string& location);

/// A command on a storage: what main parsed, and the storage's name for the output.
struct storage_request {
    std::string command;
    std::string shown; ///< the storage as printed (a Redis password hidden)
    std::string key_prefix;
    std::string sort = "name";
    bool json = false;
    bool remove = false;
    bool allow_unchecked = false; ///< verify: entries not checked leave the exit status 0
    compile_cache::envelope_auth auth;
};

/// Why an entry could not be checked, as what was missing: "HMAC entries: give
/// --secret-file", ... (for verify's line).
std::string unchecked_cause(checked_entry const& e);

/// " (HMAC entries: give --secret-file; ...)": the causes of `entries` not checked, each
/// once; empty when there is none.
std::string unchecked_causes(std::vector<checked_entry const*> const& entries);

/// verify's exit status: bad entries 1, else entries not checked 4 (0 when allowed).
int verify_status(bool bad, bool unchecked, bool allow_unchecked);

/// What the name column says for an entry that does not check.
std::string display_name(checked_entry const& e);

/// The origin column of list: file:line when the entry is sound, else the problem.
std::string origin_column(checked_entry const& e);

/// list's table, its header and its last line (how many entries, their bytes, the
/// identity records left out); `add_rows(table)` adds a row per entry.
std::string list_text(std::size_t entries, std::uint64_t bytes, std::size_t records,
                      std::function<void(text_table&)> const& add_rows);

/// A listed entry's JSON fields from checking it: its status, then its kernel's name,
/// origin and format when sound, else the problem.
void check_fields(json_writer& j, checked_entry const& e);

/// show's JSON account of a checked entry: its status, and when its envelope parsed,
/// the envelope, the metadata and the digests of its key's components.
void show_fields(json_writer& j, checked_entry const& e);

/// show's rows for the same, of the entry stored under the key whose hex is `name`
/// (`stored_as` says where that name is: "its file name").
void show_rows(text_table& t, checked_entry const& e, std::string const& name, char const* stored_as);

/// A storage as the commands use it: the optional Storage member `list` (key, size,
/// last use; storage/concept.hpp), a read, and `remove`.
struct storage_access {
    std::function<std::error_code(std::vector<compile_cache::stored_entry>&)> list;
    /// The Storage member `peek` where there is one (it leaves the entry's place in the
    /// eviction order alone), else `read`.
    std::function<compile_cache::read_result(compile_cache::key const&, std::string&, std::size_t)> read;
    std::function<std::error_code(compile_cache::key const&)> remove;
    /// What to say about a failure of the storage, beyond the error's message (the
    /// server's own text, what to check); may be empty.
    std::function<std::string(std::error_code const&)> explain_failure;
    /// What the last listing left out as no entry of the cache (a SQLite row whose key
    /// is not a key: the Storage member `foreign_rows` where there is one), else 0.
    std::function<std::uint64_t()> foreign_rows;

    template <class Storage>
    static storage_access of(Storage& storage) {
        return {[&storage](std::vector<compile_cache::stored_entry>& out) { return storage.list(out); },
                [&storage](compile_cache::key const& k, std::string& bytes, std::size_t max_size) {
                    return read_untouched(storage, k, bytes, max_size, 0);
                },
                [&storage](compile_cache::key const& k) { return storage.remove(k); },
                {},
                [&storage] { return foreign_rows_of(storage, 0); }};
    }

private:
    template <class Storage>
    static auto foreign_rows_of(Storage& storage, int) -> decltype(std::uint64_t{storage.foreign_rows()}) {
        return storage.foreign_rows();
    }
    template <class Storage>
    static std::uint64_t foreign_rows_of(Storage&, long) {
        return 0;
    }

    template <class Storage>
    static auto read_untouched(Storage& storage, compile_cache::key const& k, std::string& out, std::size_t max_size,
                               int) -> decltype(storage.peek(k, out, max_size)) {
        return storage.peek(k, out, max_size);
    }
    template <class Storage>
    static compile_cache::read_result read_untouched(Storage& storage, compile_cache::key const& k, std::string& out,
                                                     std::size_t max_size, long) {
        return storage.read(k, out, max_size);
    }
};

/// Runs `r.command` (stats, list, show, verify, clear) on `storage`.
int run_on_storage(storage_access const& storage, storage_request const& r, bool can_remove);

} // namespace compile_cache_tool
