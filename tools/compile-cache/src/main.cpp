// compile-cache: a command-line tool over a compile_cache directory — what is in it,
// whether it is sound, and making it smaller — the way `ccache -s` and friends work
// over theirs. Every command lists the directory once; only list, show and verify
// read entries, one read each. On a SQLite file or a Redis server (linked in when
// CMake found them: COMPILE_CACHE_TOOL_WITH_SQLITE / _REDIS), stats, list, show,
// verify and clear work through the storage's listing member (storage_commands.hpp).
#include "cache_directory.hpp"
#include "output.hpp"
#include "storage_commands.hpp"

#include <compile_cache/envelope.hpp>
#include <compile_cache/explain.hpp>
#include <compile_cache/secret_file.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/directory/directory_layout.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
#include <compile_cache/storage/redis/redis_storage.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>

namespace {

using namespace compile_cache_tool;
namespace layout = compile_cache::directory_layout;

char const* const help_text =
    "usage: compile-cache COMMAND DIR [OPTIONS]\n"
    "\n"
    "Looks at, checks and trims a compile_cache directory (what PREFIX_DIR names), or a\n"
    "SQLite file or Redis server in its place (see \"On another storage\" below).\n"
    "\n"
    "commands:\n"
    "  stats DIR                   entries, their size, the size limit, the oldest and newest\n"
    "                              use, and the counters the hosts recorded (hits, misses, ...)\n"
    "  list DIR [--sort KEY]       one line per entry: name, key prefix, size, time since its\n"
    "                              last use, origin file:line. KEY: name (default), size\n"
    "                              (largest first), age (least recently used first: the order\n"
    "                              in which eviction takes them)\n"
    "  show DIR KEY_PREFIX         one entry: its envelope (version, mode, key, sizes), metadata\n"
    "                              (name, origin, format, created, compile time) and the digests\n"
    "                              of its key's components. The prefix (hex, as list prints it)\n"
    "                              must name exactly one entry\n"
    "  verify DIR [--remove]       checks every entry's envelope and check value (CRC-32C; the\n"
    "                              HMAC with --secret-file) and that it is stored under its own\n"
    "                              key; reports the bad ones and, with --remove, deletes them.\n"
    "                              Keyed entries without --secret-file, and entries of another\n"
    "                              envelope version, are reported as not checked and kept, and\n"
    "                              make the exit status 4 unless --allow-unchecked is given\n"
    "  prune DIR --max-size SIZE   evicts least recently used entries until the directory is\n"
    "                              under 90% of SIZE (bytes, or with K, M, G: 48K, 500M, 2G;\n"
    "                              0 means no limit, so nothing is evicted), and removes temp\n"
    "                              files over an hour old\n"
    "  clear DIR                   removes every entry and temp file; other files stay\n"
    "  explain DIR NAME            the entries recorded for kernel NAME (its identity record),\n"
    "                              newest first, and which key components changed between\n"
    "                              each one and the one before it: why it was recompiled\n"
    "\n"
    "On another storage (CACHE instead of DIR), stats, list, show, verify, clear and explain work:\n"
    "  sqlite:FILE, or FILE        a SQLite database a compile_cache host made (what PREFIX_FILE\n"
    "                              names with sqlite_storage); an existing file that is an SQLite\n"
    "                              database is taken as one without the sqlite: prefix\n"
    "  redis://[[user][:password]@]host[:port][/db], redis+cluster://host:port[,...],\n"
    "  unix:///path.sock           a Redis server or cluster (what PREFIX_REMOTE names); the\n"
    "                              password is never printed\n"
    "  Entries are listed with the storage's listing (SQLite: one query; Redis: SCAN, and\n"
    "  OBJECT IDLETIME for the last use, unknown under an LFU policy); show and verify read\n"
    "  entries through the storage, which counts as a use there (SQLite refreshes a use time\n"
    "  at most hourly; Redis's LRU clock). Counters are recorded in directories only.\n"
    "\n"
    "options:\n"
    "  --json                      output for scripts: one JSON document on stdout\n"
    "  --namespace NS              (Redis) the namespace of the keys, as PREFIX_REMOTE_NAMESPACE;\n"
    "                              compile_cache by default\n"
    "  --secret-file F             (list, show, verify, explain) the file whose content is the secret of\n"
    "                              a cache with PREFIX_SECRET_FILE: checks HMACs under it\n"
    "  --password-file F           (Redis) the file holding the server's password, as\n"
    "                              PREFIX_REMOTE_PASSWORD_FILE (not on the command line, where\n"
    "                              every user can read it); a trailing newline is dropped\n"
    "  --allow-unchecked           (verify) entries that cannot be checked leave the exit status 0\n"
    "  -h, --help                  this text\n"
    "\n"
    "A directory of more than 10,000 entries gets a progress line on stderr.\n"
    "Identity records (DIR/ab/<66 hex digits ending 1d>: what a host writes beside each entry\n"
    "so that a miss can be explained) are not counted as entries; verify checks them too,\n"
    "prune evicts them like entries, clear removes them.\n"
    "Nothing but entries (DIR/ab/<hex key>) and the library's temp files (DIR/ab/.tmp- and\n"
    "32 hex digits) is ever deleted, and nothing is deleted in a directory that is not a\n"
    "compile_cache one; clear and prune exit 3 when they could not delete what they meant to.\n"
    "Reading an entry does not change its use time.\n"
    "\n";

char const* const exit_text =
    "exit status:\n"
    "  0  done (verify: no bad entry)\n"
    "  1  verify found bad entries (removed with --remove); show: the entry does not check\n"
    "  2  usage error; DIR missing, not a directory, or not a compile_cache directory (or\n"
    "     FILE not a compile_cache database; a bad Redis address; a storage this build lacks);\n"
    "     KEY_PREFIX unknown or ambiguous; the secret file cannot be used\n"
    "  3  the file system or the storage refused something (a folder that cannot be read, a\n"
    "     removal, a Redis server that does not answer or refuses the credentials)\n"
    "  4  verify found no bad entry but could not check some (keyed entries without\n"
    "     --secret-file, another envelope version); --allow-unchecked makes it 0\n";

struct command_line {
    std::string command;
    std::string dir;
    std::string key_prefix;
    std::string kernel_name; ///< explain's NAME
    bool json = false;
    bool remove = false;
    bool allow_unchecked = false;
    std::string sort = "name";
    std::optional<std::string> secret_file;
    std::optional<std::string> password_file; ///< --password-file (Redis)
    std::optional<std::string> max_size;
    std::optional<std::string> name_space; ///< --namespace (Redis)
};

struct usage_error {
    std::string message;
};

command_line parse(std::vector<std::string> const& args) {
    command_line c;
    std::vector<std::string> positional;
    auto const allowed = [&](std::string const& option, std::initializer_list<char const*> commands) {
        for (char const* name : commands)
            if (c.command == name) return;
        throw usage_error{option + " is not an option of " + (c.command.empty() ? "this command" : c.command)};
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        std::optional<std::string> inline_value;
        if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
            inline_value = arg.substr(arg.find('=') + 1);
            arg = arg.substr(0, arg.find('='));
        }
        auto const value = [&]() -> std::string {
            if (inline_value) return *inline_value;
            if (i + 1 >= args.size()) throw usage_error{arg + " needs a value"};
            return args[++i];
        };
        auto const no_value = [&] {
            if (inline_value) throw usage_error{arg + " takes no value"};
        };
        if (arg == "--json") {
            no_value();
            c.json = true;
        } else if (arg == "--remove") {
            no_value();
            c.remove = true;
        } else if (arg == "--allow-unchecked") {
            no_value();
            c.allow_unchecked = true;
        } else if (arg == "--password-file") {
            c.password_file = value();
        } else if (arg == "--sort") {
            c.sort = value();
            if (c.sort != "name" && c.sort != "size" && c.sort != "age")
                throw usage_error{"--sort takes name, size or age, not \"" + c.sort + "\""};
        } else if (arg == "--secret-file") {
            c.secret_file = value();
        } else if (arg == "--max-size") {
            c.max_size = value();
        } else if (arg == "--namespace") {
            c.name_space = value();
        } else if (arg.size() > 1 && arg[0] == '-') {
            throw usage_error{"unknown option " + arg};
        } else if (c.command.empty()) {
            c.command = arg;
        } else {
            positional.push_back(arg);
        }
    }
    static char const* const commands[] = {"stats", "list", "show", "verify", "prune", "clear", "explain"};
    if (c.command.empty()) throw usage_error{"no command given"};
    if (std::find(std::begin(commands), std::end(commands), c.command) == std::end(commands))
        throw usage_error{"unknown command \"" + c.command + "\""};
    // Options given to a command that does not take them are errors, not silently ignored.
    for (std::string const& arg : args) {
        std::string const name = arg.substr(0, arg.find('='));
        if (name == "--remove" || name == "--allow-unchecked") allowed(name, {"verify"});
        if (name == "--sort") allowed(name, {"list"});
        if (name == "--secret-file") allowed(name, {"list", "show", "verify", "explain"});
        if (name == "--max-size") allowed(name, {"prune"});
    }
    std::size_t const wanted = c.command == "show" || c.command == "explain" ? 2 : 1;
    if (positional.size() < wanted)
        throw usage_error{c.command + " needs " +
                          (wanted == 2 ? (c.command == "show" ? "DIR and KEY_PREFIX" : "DIR and NAME") : "DIR")};
    if (positional.size() > wanted) throw usage_error{"unexpected argument \"" + positional[wanted] + "\""};
    c.dir = positional[0];
    while (c.dir.size() > 1 && c.dir.back() == '/') c.dir.pop_back(); // "cache/" names "cache"
    if (wanted == 2 && c.command == "show") c.key_prefix = positional[1];
    if (wanted == 2 && c.command == "explain") c.kernel_name = positional[1];
    if (c.command == "prune" && !c.max_size) throw usage_error{"prune needs --max-size SIZE"};
    return c;
}

/// The directory, listed once, or the exit status of why it cannot be used.
struct opened_directory {
    directory_scan scan; ///< its entries are the kernels' only
    std::vector<entry_file> records; ///< kernels' identity records (explain.hpp), apart
    int status = exit_ok;
};

/// For the commands that delete (clear, prune, verify --remove): the directory must
/// carry what a compile_cache host writes there, its ledger or its counters, and not
/// only files that look like entries (another tool's content-addressed store may).
bool may_delete_in(command_line const& c, opened_directory& d) {
    if (d.scan.has_ledger || d.scan.has_counters || d.scan.entries.empty()) return true;
    d.status = fail(c.dir + ": it has entries but neither the ledger (.cc-stats) nor the counters (.cc-counters) "
                             "a compile_cache host writes; nothing is deleted in a directory that may be another "
                             "tool's",
                    exit_usage);
    return false;
}

opened_directory open_directory(command_line const& c, progress_line& progress) {
    opened_directory d;
    std::string message;
    directory_kind const kind =
        scan_directory(c.dir, d.scan, message, [&](std::uint64_t done, std::uint64_t total, std::uint64_t entries) {
            progress.update("listing folders", done, total, entries);
        });
    progress.finish();
    switch (kind) {
    case directory_kind::cache: break;
    case directory_kind::unreadable: d.status = fail(c.dir + ": " + message, exit_failed); return d;
    case directory_kind::foreign:
        d.status = fail(c.dir + ": " + message + " (see compile-cache --help for the rule)", exit_usage);
        return d;
    default: d.status = fail(c.dir + ": " + message, exit_usage); return d;
    }
    if (!d.scan.error.empty()) d.status = fail(c.dir + ": cannot list " + d.scan.error, exit_failed);
    auto const record = [](entry_file const& e) { return compile_cache::is_identity_record_name(e.name); };
    std::copy_if(d.scan.entries.begin(), d.scan.entries.end(), std::back_inserter(d.records), record);
    d.scan.entries.erase(std::remove_if(d.scan.entries.begin(), d.scan.entries.end(), record), d.scan.entries.end());
    return d;
}

/// The envelope_auth --secret-file asks for, read the way a cache reads
/// PREFIX_SECRET_FILE; false (after the message) when the file cannot be used.
bool auth_from(command_line const& c, compile_cache::envelope_auth& auth) {
    if (!c.secret_file) return true;
    std::string secret;
    std::string const why = compile_cache::read_secret_file(*c.secret_file, secret);
    if (!why.empty()) {
        fail("--secret-file " + *c.secret_file + ": " + why, exit_usage);
        return false;
    }
    auth = compile_cache::envelope_auth(secret);
    std::fill(secret.begin(), secret.end(), '\0');
    return true;
}

/// For the commands that read entries: the --secret-file's auth, then the directory
/// listed once; exit_ok, or the exit status of why either cannot be used.
int open_for_reading(command_line const& c, compile_cache::envelope_auth& auth, progress_line& progress,
                     opened_directory& d) {
    if (!auth_from(c, auth)) return exit_usage;
    d = open_directory(c, progress);
    return d.status;
}

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::int64_t age_s(std::int64_t use_ns) { return (now_ns() - use_ns) / 1000000000; }

// ---- stats -------------------------------------------------------------------

/// What a listing says about the entries: their sizes and last uses.
struct entry_totals {
    std::uint64_t bytes = 0, accounted = 0, record_bytes = 0;
    std::int64_t oldest = 0, newest = 0; ///< last uses, ns since the epoch; 0 when there is no entry
};

entry_totals totals_of(opened_directory const& d) {
    entry_totals t;
    for (entry_file const& e : d.scan.entries) {
        t.bytes += e.size;
        t.accounted += layout::accounted_size(e.size);
        if (t.oldest == 0 || e.use_ns < t.oldest) t.oldest = e.use_ns;
        if (t.newest == 0 || e.use_ns > t.newest) t.newest = e.use_ns;
    }
    for (entry_file const& e : d.records) t.record_bytes += e.size;
    return t;
}

/// The counters the hosts recorded in the directory, and what stats derives from them.
struct recorded_counters {
    std::map<std::string, std::uint64_t> all; ///< gauges included
    std::optional<std::uint64_t> limit;       ///< the size limit of the latest host to record
    std::optional<std::uint64_t> updated_s;   ///< when it recorded
    std::uint64_t hits = 0, misses = 0, remote_hits = 0, remote_misses = 0, hit_compile_ns = 0, load_ns = 0;

    /// What the hits saved: the compile times their entries recorded, less all the
    /// time spent loading (hits and misses).
    std::int64_t saved_ns() const {
        return static_cast<std::int64_t>(hit_compile_ns) - static_cast<std::int64_t>(load_ns);
    }
};

recorded_counters read_counters(std::string const& dir) {
    recorded_counters r;
    r.all = compile_cache::directory_storage(dir).recorded_counters();
    auto const gauge = [&](std::string_view name) -> std::optional<std::uint64_t> {
        auto const it = r.all.find(std::string(name));
        if (it == r.all.end()) return std::nullopt;
        return it->second;
    };
    r.limit = gauge(layout::gauge_max_size);
    r.updated_s = gauge(layout::gauge_updated_s);
    for (auto const& [name, n] : r.all) {
        if (name == "hits") r.hits = n;
        if (name.rfind("misses.", 0) == 0) r.misses += n;
        if (name == "remote.hits") r.remote_hits = n;
        if (name == "remote.misses") r.remote_misses = n;
        if (name == "hit-compile-ns") r.hit_compile_ns = n;
        if (name == "load-ns") r.load_ns = n;
    }
    return r;
}

void print_stats_json(command_line const& c, opened_directory const& d, entry_totals const& t,
                      recorded_counters const& rc) {
    bool const none = d.scan.entries.empty();
    json_writer j;
    j.begin_object().field("directory", c.dir).field("entries", std::uint64_t{d.scan.entries.size()});
    j.field("bytes", t.bytes).field("accounted_bytes", t.accounted).field("temp_files", d.scan.temp_files);
    j.field("other_files", d.scan.other_files);
    j.field("identity_records", std::uint64_t{d.records.size()}).field("identity_record_bytes", t.record_bytes);
    j.field("saved_ns", rc.saved_ns());
    j.key("size_limit");
    if (rc.limit) j.value(*rc.limit); else j.null();
    j.key("oldest_use");
    if (none) j.null(); else j.value(utc_time(t.oldest));
    j.key("oldest_use_ns");
    if (none) j.null(); else j.value(t.oldest);
    j.key("newest_use");
    if (none) j.null(); else j.value(utc_time(t.newest));
    j.key("newest_use_ns");
    if (none) j.null(); else j.value(t.newest);
    j.key("counters").begin_object();
    for (auto const& [name, n] : rc.all)
        if (!layout::is_gauge(name)) j.field(name, n);
    j.end_object();
    j.key("counters_updated");
    if (rc.updated_s) j.value(utc_time(static_cast<std::int64_t>(*rc.updated_s) * 1000000000)); else j.null();
    j.end_object();
    std::fputs(j.str().c_str(), stdout);
}

/// stats' first table: the directory's entries, sizes, limit and files.
std::string directory_summary_text(command_line const& c, opened_directory const& d, entry_totals const& tot,
                                   recorded_counters const& rc) {
    text_table t;
    t.add({"directory", printable(c.dir)});
    t.add({"entries", std::to_string(d.scan.entries.size())});
    t.add({"size", human_size(tot.bytes) + " (" + std::to_string(tot.bytes) + " bytes); " + human_size(tot.accounted) +
                       " counted against the limit (whole 4 KiB blocks)"});
    std::string limit_text = "not recorded (no host has recorded its counters here)";
    if (rc.limit && *rc.limit == 0) limit_text = "none (the latest host to record had no limit)";
    if (rc.limit && *rc.limit != 0) {
        char used[32];
        std::snprintf(used, sizeof used, "%.0f%%",
                      100.0 * static_cast<double>(tot.accounted) / static_cast<double>(*rc.limit));
        limit_text = human_size(*rc.limit) + " (" + used + " used), as the latest host to record set it";
    }
    t.add({"size limit", limit_text});
    t.add({"identity records", std::to_string(d.records.size()) + " (" + human_size(tot.record_bytes) +
                                   "): what explains a kernel's misses (compile-cache explain)"});
    t.add({"temp files", std::to_string(d.scan.temp_files)});
    if (d.scan.other_files != 0)
        t.add({"other files", std::to_string(d.scan.other_files) + " (not the cache's; left alone)"});
    if (!d.scan.entries.empty()) {
        t.add({"oldest use", local_time(tot.oldest) + " (" + human_age(age_s(tot.oldest)) + " ago)"});
        t.add({"newest use", local_time(tot.newest) + " (" + human_age(age_s(tot.newest)) + " ago)"});
    }
    return t.str();
}

/// "12.5%" of `part` in `whole` (not 0).
std::string percent(std::uint64_t part, std::uint64_t whole) {
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return rate;
}

/// stats' second part: the rates, the time saved and every counter that is not 0.
std::string counters_text(recorded_counters const& rc) {
    if (rc.all.empty()) return "no counters recorded yet (hosts record theirs when their cache is destroyed)\n";
    std::string out = "counters recorded by hosts";
    if (rc.updated_s) out += " (last at " + local_time(static_cast<std::int64_t>(*rc.updated_s) * 1000000000) + ")";
    out += ":\n";
    text_table ct;
    if (rc.hits + rc.misses != 0)
        ct.add({"  hit rate", percent(rc.hits, rc.hits + rc.misses),
                "(" + std::to_string(rc.hits) + " of " + std::to_string(rc.hits + rc.misses) + " lookups)"});
    if (rc.remote_hits + rc.remote_misses != 0)
        ct.add({"  remote hit rate", percent(rc.remote_hits, rc.remote_hits + rc.remote_misses),
                "(" + std::to_string(rc.remote_hits) + " of " + std::to_string(rc.remote_hits + rc.remote_misses) +
                    " lookups sent to the remote)"});
    if (rc.hits != 0) {
        std::int64_t const saved = rc.saved_ns();
        ct.add({"  time saved",
                (saved < 0 ? "-" : "") + human_duration_ns(static_cast<std::uint64_t>(saved < 0 ? -saved : saved)),
                "(the compile times the loaded entries recorded, " + human_duration_ns(rc.hit_compile_ns) +
                    ", less the time loading, " + human_duration_ns(rc.load_ns) + ")"});
    }
    std::size_t zero = 0;
    for (auto const& [name, n] : rc.all) {
        if (layout::is_gauge(name)) continue;
        if (n == 0) { // the many reasons that never happened would bury the ones that did
            ++zero;
            continue;
        }
        std::string note;
        if (name.size() > 3 && name.compare(name.size() - 3, 3, "-ns") == 0) note = "(" + human_duration_ns(n) + ")";
        if (name.rfind("bytes-", 0) == 0 || name.find(".bytes-") != std::string::npos) note = "(" + human_size(n) + ")";
        ct.add({"  " + name, std::to_string(n), note});
    }
    out += ct.str({false, true, false});
    if (zero != 0) out += "  (" + std::to_string(zero) + " other counters are 0; --json lists them all)\n";
    return out;
}

int run_stats(command_line const& c) {
    progress_line progress;
    opened_directory d = open_directory(c, progress);
    if (d.status != exit_ok) return d.status;
    entry_totals const totals = totals_of(d);
    recorded_counters const counters = read_counters(c.dir);
    if (c.json) {
        print_stats_json(c, d, totals, counters);
    } else {
        std::string const out = directory_summary_text(c, d, totals, counters) + counters_text(counters);
        std::fputs(out.c_str(), stdout);
    }
    return exit_ok;
}

// ---- list --------------------------------------------------------------------

struct listed_entry {
    entry_file file;
    checked_entry check;
};

std::vector<listed_entry> read_all(command_line const& c, std::vector<entry_file> const& files,
                                   compile_cache::envelope_auth const& auth, progress_line& progress) {
    std::vector<listed_entry> out;
    out.reserve(files.size());
    std::uint64_t done = 0;
    for (entry_file const& f : files) {
        out.push_back({f, check_entry(c.dir, f.name, auth)});
        // Not listed, and over 100,000 entries they would be most of the memory used.
        std::vector<compile_cache::component_digest>().swap(out.back().check.envelope.metadata.components);
        progress.update("reading entries", ++done, files.size(), files.size());
    }
    progress.finish();
    return out;
}

int run_list(command_line const& c) {
    compile_cache::envelope_auth auth;
    progress_line progress;
    opened_directory d;
    if (int const status = open_for_reading(c, auth, progress, d); status != exit_ok) return status;
    std::vector<listed_entry> entries = read_all(c, d.scan.entries, auth, progress);
    auto const by_name = [](listed_entry const& a, listed_entry const& b) {
        std::string const& an = a.check.envelope.metadata.name;
        std::string const& bn = b.check.envelope.metadata.name;
        return an != bn ? an < bn : a.file.name < b.file.name;
    };
    if (c.sort == "size")
        std::sort(entries.begin(), entries.end(), [&](listed_entry const& a, listed_entry const& b) {
            return a.file.size != b.file.size ? a.file.size > b.file.size : by_name(a, b);
        });
    else if (c.sort == "age")
        std::sort(entries.begin(), entries.end(), [&](listed_entry const& a, listed_entry const& b) {
            return a.file.use_ns != b.file.use_ns ? a.file.use_ns < b.file.use_ns : by_name(a, b);
        });
    else
        std::sort(entries.begin(), entries.end(), by_name);

    std::uint64_t total = 0;
    for (auto const& e : entries) total += e.file.size;
    if (c.json) {
        json_writer j;
        j.begin_object().field("directory", c.dir).field("sort", c.sort).key("entries").begin_array();
        for (auto const& e : entries) {
            j.begin_object().field("key", e.file.name).field("path", e.file.relative_path());
            j.field("size", e.file.size).field("last_use", utc_time(e.file.use_ns)).field("last_use_ns", e.file.use_ns);
            j.field("age_s", age_s(e.file.use_ns));
            check_fields(j, e.check);
            j.end_object();
        }
        j.end_array().field("total_bytes", total).end_object();
        std::fputs(j.str().c_str(), stdout);
        return exit_ok;
    }
    std::string const out = list_text(entries.size(), total, d.records.size(), [&](text_table& t) {
        for (auto const& e : entries)
            t.add({display_name(e.check), e.file.name.substr(0, 16), human_size(e.file.size),
                   human_age(age_s(e.file.use_ns)) + " ago", origin_column(e.check)});
    });
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

// ---- show --------------------------------------------------------------------

int run_show(command_line const& c) {
    compile_cache::envelope_auth auth;
    if (!auth_from(c, auth)) return exit_usage;
    std::string prefix;
    if (!key_prefix_from(c.key_prefix, prefix)) return exit_usage;
    progress_line progress;
    opened_directory d = open_directory(c, progress);
    if (d.status != exit_ok) return d.status;
    std::vector<entry_file const*> matches;
    for (entry_file const& e : d.scan.entries)
        if (e.name.compare(0, prefix.size(), prefix) == 0) matches.push_back(&e);
    if (matches.empty()) return fail("no entry's key starts with " + prefix + " in " + c.dir, exit_usage);
    if (matches.size() > 1) {
        std::string message = "KEY_PREFIX " + prefix + " is ambiguous: " + std::to_string(matches.size()) +
                              " entries start with it (";
        for (std::size_t i = 0; i < matches.size() && i < 3; ++i)
            message += (i ? ", " : "") + matches[i]->name.substr(0, std::max<std::size_t>(prefix.size() + 4, 16));
        message += matches.size() > 3 ? ", ...); give more digits" : "); give more digits";
        return fail(message, exit_usage);
    }
    entry_file const& f = *matches.front();
    checked_entry const e = check_entry(c.dir, f.name, auth);

    if (c.json) {
        json_writer j;
        j.begin_object().field("directory", c.dir).field("path", f.relative_path()).field("key", f.name);
        j.field("size", f.size).field("last_use", utc_time(f.use_ns)).field("last_use_ns", f.use_ns);
        show_fields(j, e);
        j.end_object();
        std::fputs(j.str().c_str(), stdout);
        return e.result == verdict::bad ? exit_bad_entries : exit_ok;
    }
    text_table t;
    t.add({"entry", printable(c.dir) + "/" + f.relative_path()});
    t.add({"size", std::to_string(f.size) + " bytes"});
    t.add({"last use", local_time(f.use_ns) + " (" + human_age(age_s(f.use_ns)) + " ago)"});
    show_rows(t, e, f.name, "its file name");
    std::fputs(t.str().c_str(), stdout);
    return e.result == verdict::bad ? exit_bad_entries : exit_ok;
}

// ---- verify ------------------------------------------------------------------

struct verified_entry {
    entry_file file;
    checked_entry check;
    bool removed = false;
    std::string remove_problem; ///< why --remove did not remove it
};

/// What verify found: the entries that do not check, apart from those it cannot judge.
struct verification {
    std::vector<verified_entry> bad, unchecked;
    std::uint64_t sound = 0, sound_records = 0;
    bool removal_failed = false;

    std::uint64_t removed() const {
        std::uint64_t n = 0;
        for (auto const& v : bad) n += v.removed ? 1 : 0;
        return n;
    }
};

/// Checks every entry and identity record (records are envelopes too: checked alike).
verification check_all(command_line const& c, opened_directory const& d, compile_cache::envelope_auth const& auth,
                       progress_line& progress) {
    verification out;
    std::vector<entry_file> files = d.scan.entries;
    files.insert(files.end(), d.records.begin(), d.records.end());
    std::uint64_t done = 0;
    for (entry_file const& f : files) {
        checked_entry check = check_entry(c.dir, f.name, auth);
        progress.update("verifying entries", ++done, files.size(), files.size());
        if (check.result == verdict::sound) {
            ++(compile_cache::is_identity_record_name(f.name) ? out.sound_records : out.sound);
            continue;
        }
        verified_entry v{f, std::move(check), false, {}};
        (v.check.result == verdict::unchecked ? out.unchecked : out.bad).push_back(std::move(v));
    }
    progress.finish();
    return out;
}

/// --remove: deletes the bad entries through the storage (so that its size ledger
/// stays right), each checked again just before, since a host may have replaced it
/// with a sound one meanwhile. With a secret under which not one entry verifies, the
/// likelier mistake is the secret: removing would empty a sound cache, so nothing is.
void remove_bad(command_line const& c, compile_cache::envelope_auth const& auth, verification& v) {
    if (auth.keyed() && v.sound + v.sound_records == 0 && !v.bad.empty()) {
        std::fprintf(stderr,
                     "compile-cache: no entry verifies under the secret of %s: is it the right one? Nothing "
                     "removed\n",
                     c.secret_file ? c.secret_file->c_str() : "--secret-file");
        for (verified_entry& e : v.bad) e.remove_problem = "kept: no entry verifies under this secret";
        return;
    }
    compile_cache::directory_storage storage(c.dir);
    for (verified_entry& e : v.bad) {
        auto const k = compile_cache::key::from_hex(e.file.name);
        if (check_entry(c.dir, e.file.name, auth).result == verdict::sound) {
            e.remove_problem = "replaced by a sound entry meanwhile; kept";
        } else if (!k) {
            e.remove_problem = "not a key's name";
        } else if (std::error_code const ec = storage.remove(*k)) {
            e.remove_problem = "cannot remove it: " + ec.message();
            v.removal_failed = true;
        } else {
            e.removed = true;
        }
    }
}

void print_verification_json(command_line const& c, opened_directory const& d, bool keyed, verification const& v) {
    json_writer j;
    j.begin_object().field("directory", c.dir).field("mode", keyed ? "hmac-sha256" : "crc32c");
    j.field("checked", std::uint64_t{d.scan.entries.size()}).field("sound", v.sound);
    j.field("identity_records", std::uint64_t{d.records.size()}).field("sound_identity_records", v.sound_records);
    // Kernels' entries and identity records in lists of their own.
    for (bool const records : {false, true}) {
        j.key(records ? "bad_identity_records" : "bad").begin_array();
        for (auto const& e : v.bad) {
            if (compile_cache::is_identity_record_name(e.file.name) != records) continue;
            j.begin_object().field("path", e.file.relative_path()).field("key", e.file.name);
            j.field("problem", e.check.problem).field("removed", e.removed);
            if (!e.remove_problem.empty()) j.field("remove_problem", e.remove_problem);
            j.end_object();
        }
        j.end_array().key(records ? "unchecked_identity_records" : "unchecked").begin_array();
        for (auto const& e : v.unchecked)
            if (compile_cache::is_identity_record_name(e.file.name) == records)
                j.begin_object().field("path", e.file.relative_path()).field("key", e.file.name).field("reason", e.check.problem).end_object();
        j.end_array();
    }
    j.field("removed", v.removed()).end_object();
    std::fputs(j.str().c_str(), stdout);
}

/// "3 sound, 1 bad, 1 removed, 2 not checked" for the kernels' entries or the records.
std::string tally(command_line const& c, verification const& v, bool records) {
    std::uint64_t n_bad = 0, n_removed = 0, n_unchecked = 0;
    for (auto const& e : v.bad)
        if (compile_cache::is_identity_record_name(e.file.name) == records) {
            ++n_bad;
            n_removed += e.removed ? 1 : 0;
        }
    for (auto const& e : v.unchecked) n_unchecked += compile_cache::is_identity_record_name(e.file.name) == records ? 1 : 0;
    std::string t = std::to_string(records ? v.sound_records : v.sound) + " sound, " + std::to_string(n_bad) + " bad";
    if (c.remove) t += ", " + std::to_string(n_removed) + " removed";
    std::vector<checked_entry const*> unchecked;
    for (auto const& e : v.unchecked)
        if (compile_cache::is_identity_record_name(e.file.name) == records) unchecked.push_back(&e.check);
    if (n_unchecked != 0) t += ", " + std::to_string(n_unchecked) + " not checked" + unchecked_causes(unchecked);
    return t;
}

void print_verification_text(command_line const& c, opened_directory const& d, bool keyed, verification const& v) {
    std::string out;
    for (auto const& e : v.bad) {
        out += "bad: " + e.file.relative_path() + ": " + e.check.problem;
        if (e.removed) out += " (removed)";
        if (!e.remove_problem.empty()) out += " (" + e.remove_problem + ")";
        out += "\n";
    }
    for (auto const& e : v.unchecked) out += "not checked: " + e.file.relative_path() + ": " + e.check.problem + "\n";
    std::size_t const n = d.scan.entries.size();
    out += "checked " + std::to_string(n) + (n == 1 ? " entry (" : " entries (") + (keyed ? "HMAC-SHA256" : "CRC-32C") +
           "): " + tally(c, v, false);
    if (!d.records.empty()) out += "; " + std::to_string(d.records.size()) + " identity records: " + tally(c, v, true);
    out += "\n";
    std::fputs(out.c_str(), stdout);
}

int run_verify(command_line const& c) {
    compile_cache::envelope_auth auth;
    progress_line progress;
    opened_directory d;
    if (int const status = open_for_reading(c, auth, progress, d); status != exit_ok) return status;
    if (c.remove && !may_delete_in(c, d)) return d.status;
    verification v = check_all(c, d, auth, progress);
    if (c.remove) remove_bad(c, auth, v);
    if (c.json)
        print_verification_json(c, d, auth.keyed(), v);
    else
        print_verification_text(c, d, auth.keyed(), v);
    if (v.removal_failed) return exit_failed;
    return verify_status(!v.bad.empty(), !v.unchecked.empty(), c.allow_unchecked);
}

// ---- explain -----------------------------------------------------------------

/// Where explain reads from: the identity records' keys, the kernels' entries present
/// (by key hex), and a read of one record. A cache directory (its files) or any other
/// storage the tool opens (through storage_access, as the other commands).
struct explain_source {
    std::string shown;                     ///< the cache as printed (a Redis password hidden)
    bool directory = false;                ///< a cache directory: JSON says "directory", else "storage"
    std::vector<compile_cache::key> records;
    std::set<std::string> present;
    std::function<compile_cache::read_result(compile_cache::key const&, std::string&, std::size_t)> read;
};

/// A kernel's identity record as read from the cache.
struct read_record {
    std::string record_key; ///< hex
    compile_cache::entry_metadata metadata;
    compile_cache::identity_record record;
};

/// explain on any cache: the records that name `c.kernel_name`, their histories and what
/// changed between entries. Every name, file and component name printed is printable().
int explain_kernel(command_line const& c, compile_cache::envelope_auth const& auth, explain_source const& source) {
    std::vector<read_record> found;
    std::uint64_t unreadable = 0;
    for (compile_cache::key const& rk : source.records) {
        std::string bytes;
        compile_cache::read_result const rr = source.read(rk, bytes, compile_cache::identity_record_max_size);
        if (rr.status == compile_cache::read_status::absent) continue; // removed since it was listed
        if (rr.status != compile_cache::read_status::found) {
            ++unreadable;
            continue;
        }
        compile_cache::opened_envelope const env = compile_cache::inspect_envelope(bytes, auth);
        if (env.status != compile_cache::envelope_status::ok || !(env.stored_key == rk) ||
            env.metadata.format_id != compile_cache::identity_record_format) {
            ++unreadable;
            continue;
        }
        if (env.metadata.name != c.kernel_name) continue;
        std::optional<compile_cache::identity_record> r = compile_cache::decode_identity_record(env.payload);
        if (!r) {
            ++unreadable;
            continue;
        }
        found.push_back({rk.hex(), env.metadata, std::move(*r)});
    }
    std::sort(found.begin(), found.end(), [](read_record const& a, read_record const& b) {
        return a.metadata.origin_file != b.metadata.origin_file ? a.metadata.origin_file < b.metadata.origin_file
                                                                : a.record_key < b.record_key;
    });
    // What changed from entry i + 1 (older) to entry i of a history.
    auto const changes = [](std::vector<compile_cache::recorded_entry> const& h, std::size_t i) {
        return compile_cache::compare_components(h[i + 1].components, h[i].components);
    };

    if (c.json) {
        json_writer j;
        j.begin_object().field(source.directory ? "directory" : "storage", source.shown);
        j.field("name", c.kernel_name).key("kernels").begin_array();
        for (read_record const& r : found) {
            j.begin_object().field("identity", r.record.identity).field("origin_file", r.metadata.origin_file);
            j.field("record_key", r.record_key).key("entries").begin_array();
            auto const& h = r.record.history;
            for (std::size_t i = 0; i < h.size(); ++i) {
                j.begin_object().field("key", h[i].entry_key.hex()).field("created", utc_time(h[i].created_ns));
                j.field("created_ns", h[i].created_ns).field("compile_ns", h[i].compile_ns);
                j.field("present", source.present.count(h[i].entry_key.hex()) != 0);
                j.key("changes_from_previous");
                if (i + 1 < h.size()) {
                    compile_cache::miss_explanation const m = changes(h, i);
                    j.begin_object();
                    for (auto const& [label, list] : {std::pair<char const*, std::vector<std::string> const*>{
                                                          "changed", &m.changed},
                                                      {"appeared", &m.appeared},
                                                      {"disappeared", &m.disappeared},
                                                      {"unchanged", &m.unchanged}}) {
                        j.key(label).begin_array();
                        for (std::string const& n : *list) j.value(n);
                        j.end_array();
                    }
                    j.end_object();
                } else {
                    j.null();
                }
                j.end_object();
            }
            j.end_array().end_object();
        }
        j.end_array().field("unreadable_records", unreadable).end_object();
        std::fputs(j.str().c_str(), stdout);
        return found.empty() ? exit_usage : exit_ok;
    }
    if (found.empty()) {
        std::string why =
            "no identity record names a kernel \"" + printable(c.kernel_name) + "\" in " + printable(source.shown);
        if (unreadable != 0) why += " (" + std::to_string(unreadable) + " records could not be read; --secret-file?)";
        return fail(why, exit_usage);
    }
    std::string out;
    for (read_record const& r : found) {
        auto const& h = r.record.history;
        out += printable(c.kernel_name) + " (" + printable(r.metadata.origin_file) + "): " + std::to_string(h.size()) +
               (h.size() == 1 ? " entry" : " entries") + " recorded, newest first\n";
        for (std::size_t i = 0; i < h.size(); ++i) {
            bool const there = source.present.count(h[i].entry_key.hex()) != 0;
            out += "  " + std::to_string(i + 1) + ". " + local_time(h[i].created_ns) + "  key " +
                   h[i].entry_key.hex().substr(0, 16) + "  compiled in " + human_duration_ns(h[i].compile_ns) + "  " +
                   (there ? "present" : "gone (evicted or removed)") + "\n";
            // text() makes every component name printable.
            out += "     " + (i + 1 < h.size() ? "since " + std::to_string(i + 2) + ": " + changes(h, i).text()
                                               : std::string("the oldest recorded")) + "\n";
        }
    }
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

/// explain on a cache directory: its record files, read as the other commands read them.
int run_explain(command_line const& c) {
    compile_cache::envelope_auth auth;
    progress_line progress;
    opened_directory d;
    if (int const status = open_for_reading(c, auth, progress, d); status != exit_ok) return status;
    explain_source source;
    source.shown = c.dir;
    source.directory = true;
    std::map<std::string, std::string> paths; // record key hex -> its file
    for (entry_file const& f : d.records)
        if (std::optional<compile_cache::key> const k = compile_cache::key::from_hex(f.name)) {
            source.records.push_back(*k);
            paths[f.name] = c.dir + "/" + f.relative_path();
        }
    for (entry_file const& e : d.scan.entries) source.present.insert(e.name);
    source.read = [&paths](compile_cache::key const& k, std::string& bytes, std::size_t) {
        std::string why;
        auto const path = paths.find(k.hex());
        if (path == paths.end() || !read_entry(path->second, bytes, why))
            return compile_cache::read_result{compile_cache::read_status::error, {}};
        return compile_cache::read_result{compile_cache::read_status::found, {}};
    };
    return explain_kernel(c, auth, source);
}

/// explain on a storage that is not a directory (a SQLite file, a Redis server or
/// cluster): its listing through storage_access, records and entries apart.
int explain_on_storage(command_line const& c, storage_request const& r, storage_access const& storage) {
    std::vector<compile_cache::stored_entry> listed;
    if (std::error_code const ec = storage.list(listed)) {
        std::string const more = storage.explain_failure ? storage.explain_failure(ec) : std::string();
        return fail(r.shown + ": cannot list its entries: " + ec.message() + (more.empty() ? "" : ": " + more),
                    exit_failed);
    }
    explain_source source;
    source.shown = r.shown;
    for (compile_cache::stored_entry const& e : listed) {
        if (compile_cache::is_identity_record_key(e.k))
            source.records.push_back(e.k);
        else
            source.present.insert(e.k.hex());
    }
    source.read = storage.read;
    return explain_kernel(c, r.auth, source);
}

// ---- prune and clear ---------------------------------------------------------

/// A cleanup that could not remove what it meant to (another user's folders, a
/// read-only mount) has failed, whatever it did remove: says so, exit_failed.
int not_removed_status(command_line const& c, compile_cache::cleanup_result const& r) {
    if (r.not_removed == 0) return exit_ok;
    return fail(c.dir + ": " + c.command + " could not remove " + std::to_string(r.not_removed) +
                    (r.not_removed == 1 ? " file" : " files") + " (" +
                    (r.removal_error ? r.removal_error.message() : std::string("unknown error")) + ")",
                exit_failed);
}

int report_cleanup(command_line const& c, compile_cache::cleanup_result const& r, std::uint64_t limit,
                   std::uint64_t other_files) {
    if (r.error) return fail(c.dir + ": " + c.command + " failed: " + r.error.message(), exit_failed);
    if (c.json) {
        json_writer j;
        j.begin_object().field("directory", c.dir).field("command", c.command);
        if (c.command == "prune") j.field("max_size", limit).field("entries", r.entries).field("accounted_bytes", r.bytes);
        j.field("removed", r.removed).field("removed_bytes", r.removed_bytes);
        j.field("temp_files_removed", r.temp_files_removed).field("other_files", other_files);
        j.field("not_removed", r.not_removed).end_object();
        std::fputs(j.str().c_str(), stdout);
        return not_removed_status(c, r);
    }
    std::string out = "removed " + std::to_string(r.removed) + (r.removed == 1 ? " entry" : " entries") + " (" +
                      human_size(r.removed_bytes) + ") and " + std::to_string(r.temp_files_removed) + " temp " +
                      (r.temp_files_removed == 1 ? "file" : "files") + "\n";
    if (c.command == "prune")
        out += "left " + std::to_string(r.entries) + (r.entries == 1 ? " entry" : " entries") + ", counting " +
               human_size(r.bytes) + " against the limit of " + (limit == 0 ? std::string("none") : human_size(limit)) +
               "\n";
    if (other_files != 0) out += "left alone " + std::to_string(other_files) + " other files in the fan-out folders\n";
    std::fputs(out.c_str(), stdout);
    return not_removed_status(c, r);
}

/// A cleanup counts every file it removed or left; identity records are no entries, so
/// those among `records` (as listed before it) are taken out of its counts. Sizes stay
/// whole: records count against the size limit as entries do.
compile_cache::cleanup_result without_records(compile_cache::cleanup_result r, command_line const& c,
                                              std::vector<entry_file> const& records) {
    for (entry_file const& e : records) {
        struct stat st;
        bool const left = ::lstat((c.dir + "/" + e.relative_path()).c_str(), &st) == 0;
        std::uint64_t& count = left ? r.entries : r.removed;
        if (count != 0) --count;
    }
    return r;
}

int run_prune(command_line const& c) {
    std::optional<std::uint64_t> const limit = compile_cache::parse_byte_size(*c.max_size);
    if (!limit)
        return fail("--max-size \"" + printable(*c.max_size) +
                        "\" is not a size (bytes, or a number with K, M or G: 48K, 500M, 2G)",
                    exit_usage);
    progress_line progress;
    opened_directory d = open_directory(c, progress);
    if (d.status != exit_ok || !may_delete_in(c, d)) return d.status;
    compile_cache::directory_options options;
    options.max_size = *limit;
    compile_cache::directory_storage storage(c.dir, options);
    return report_cleanup(c, without_records(storage.prune(), c, d.records), *limit, d.scan.other_files);
}

int run_clear(command_line const& c) {
    progress_line progress;
    opened_directory d = open_directory(c, progress);
    if (d.status != exit_ok || !may_delete_in(c, d)) return d.status;
    compile_cache::directory_storage storage(c.dir);
    return report_cleanup(c, without_records(storage.clear(), c, d.records), 0, d.scan.other_files);
}

} // namespace

/// stats, list, show, verify and clear on a SQLite file or a Redis server; nullopt when
/// `c.dir` names a directory.
std::optional<int> run_on_other_storage(command_line const& c) {
    std::string location;
    cache_kind const kind = kind_of(c.dir, location);
    if (kind == cache_kind::directory) {
        if (c.name_space) throw usage_error{"--namespace is an option for a Redis cache"};
        if (c.password_file) throw usage_error{"--password-file is an option for a Redis cache"};
        return std::nullopt;
    }
    if (c.password_file && kind != cache_kind::redis)
        throw usage_error{"--password-file is an option for a Redis cache"};
    if (c.command == "prune") throw usage_error{c.command + " works on a cache directory only"};
    if (c.name_space && kind != cache_kind::redis) throw usage_error{"--namespace is an option for a Redis cache"};
    storage_request r;
    r.command = c.command;
    r.key_prefix = c.key_prefix;
    r.sort = c.sort;
    r.json = c.json;
    r.remove = c.remove;
    r.allow_unchecked = c.allow_unchecked;
    if (!auth_from(c, r.auth)) return exit_usage;
    if (kind == cache_kind::sqlite) {
#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
        // Checked here, as sqlite_storage would move a file that is not a database aside.
        struct stat st {};
        if (::stat(location.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
            return fail(location + ": no such file (a SQLite cache is one file)", exit_usage);
        if (!is_sqlite_file(location)) return fail(location + ": not an SQLite database", exit_usage);
        compile_cache::sqlite_options options;
        options.max_size = 0; // the tool never evicts
        // A command that removes nothing never writes, moves or repairs the file.
        options.inspect_only = c.command != "clear" && !(c.command == "verify" && c.remove);
        options.logger = [](std::string_view line) {
            std::fprintf(stderr, "compile-cache: %.*s\n", static_cast<int>(line.size()), line.data());
        };
        compile_cache::sqlite_storage storage(location, options);
        if (!storage.usable()) return fail(location + ": " + storage.why_unusable(), exit_usage);
        r.shown = location;
        if (c.command == "explain") return explain_on_storage(c, r, storage_access::of(storage));
        return run_on_storage(storage_access::of(storage), r, !storage.read_only());
#else
        return fail("this compile-cache was built without SQLite support", exit_usage);
#endif
    }
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
    compile_cache::redis_options options;
    options.url = c.dir;
    if (c.name_space) options.name_space = *c.name_space;
    if (c.password_file) {
        // Read as the library reads PREFIX_REMOTE_PASSWORD_FILE.
        std::string const why = compile_cache::read_secret_file(*c.password_file, options.password);
        if (!why.empty()) return fail("--password-file " + *c.password_file + ": " + why, exit_usage);
        if (options.password.back() == '\n') options.password.pop_back();
        if (!options.password.empty() && options.password.back() == '\r') options.password.pop_back();
    }
    std::optional<compile_cache::redis_storage> storage;
    try {
        storage.emplace(options);
    } catch (std::invalid_argument const& e) {
        return fail(e.what(), exit_usage); // its message hides the password
    }
    std::fill(options.password.begin(), options.password.end(), '\0');
    r.shown = storage->describe();
    storage_access access = storage_access::of(*storage);
    access.explain_failure = [&storage](std::error_code const& ec) -> std::string {
        std::string const said = storage->last_failure().text; // the server's words or the I/O error; no password
        if (ec != compile_cache::redis_errc::auth) return said;
        return (said.empty() ? std::string() : "\"" + printable(said) + "\"; ") +
               "give the password with --password-file FILE (or in the URL), of a user allowed SCAN, OBJECT, "
               "STRLEN, GETRANGE and DEL (docs/remote.md)";
    };
    if (c.command == "explain") return explain_on_storage(c, r, access);
    return run_on_storage(access, r, true);
#else
    return fail("this compile-cache was built without Redis support", exit_usage);
#endif
}

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    for (std::string const& a : args)
        if (a == "--help" || a == "-h") {
            std::printf("%s%s\n%s", help_text, rule_text().c_str(), exit_text);
            return exit_ok;
        }
    try {
        command_line const c = parse(args);
        if (std::optional<int> const status = run_on_other_storage(c)) return *status;
        if (c.command == "stats") return run_stats(c);
        if (c.command == "list") return run_list(c);
        if (c.command == "show") return run_show(c);
        if (c.command == "verify") return run_verify(c);
        if (c.command == "prune") return run_prune(c);
        if (c.command == "explain") return run_explain(c);
        return run_clear(c);
    } catch (usage_error const& e) {
        std::fprintf(stderr, "compile-cache: %s\nusage: compile-cache COMMAND DIR [OPTIONS] (compile-cache --help)\n",
                     e.message.c_str());
        return exit_usage;
    } catch (std::exception const& e) {
        return fail(std::string("failed: ") + e.what(), exit_failed);
    }
}
