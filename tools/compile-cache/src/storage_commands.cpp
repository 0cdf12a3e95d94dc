// compile-cache: the commands on a SQLite file or a Redis server, and the entry
// output they share with the directory commands (storage_commands.hpp).
#include "storage_commands.hpp"

#include <compile_cache/storage/directory/directory_layout.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache_tool {

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

bool key_prefix_from(std::string const& given, std::string& prefix) {
    prefix.clear();
    for (char ch : given) prefix += static_cast<char>(ch >= 'A' && ch <= 'F' ? ch - 'A' + 'a' : ch);
    if (compile_cache::directory_layout::is_lower_hex(prefix)) return true;
    fail("KEY_PREFIX \"" + printable(given) + "\" is not hexadecimal (list prints the keys)", exit_usage);
    return false;
}

cache_kind kind_of(std::string const& arg, std::string& location) {
    location = arg;
    if (arg.rfind("sqlite:", 0) == 0) {
        location = arg.substr(7);
        return cache_kind::sqlite;
    }
    for (char const* scheme : {"redis://", "redis+cluster://", "unix://"})
        if (arg.rfind(scheme, 0) == 0) return cache_kind::redis;
    return is_sqlite_file(arg) ? cache_kind::sqlite : cache_kind::directory;
}

std::string display_name(checked_entry const& e) {
    if (e.result == verdict::sound) return printable(e.envelope.metadata.name);
    if (e.result == verdict::unchecked) return "(not checked)";
    return "(bad entry)";
}

std::string unchecked_cause(checked_entry const& e) {
    switch (e.envelope.status) {
    case compile_cache::envelope_status::unauthenticated: return "HMAC entries: give --secret-file";
    case compile_cache::envelope_status::foreign_version:
        return "entries of envelope version " + std::to_string(e.envelope.version) + ": use that version's tool";
    default: return "entries over 64 MiB: not read";
    }
}

std::string unchecked_causes(std::vector<checked_entry const*> const& entries) {
    std::vector<std::string> causes;
    for (checked_entry const* e : entries) {
        std::string cause = unchecked_cause(*e);
        if (std::find(causes.begin(), causes.end(), cause) == causes.end()) causes.push_back(std::move(cause));
    }
    std::string out;
    for (std::string const& c : causes) out += (out.empty() ? " (" : "; ") + c;
    return out.empty() ? out : out + ")";
}

int verify_status(bool bad, bool unchecked, bool allow_unchecked) {
    if (bad) return exit_bad_entries;
    return unchecked && !allow_unchecked ? exit_unchecked : exit_ok;
}

namespace {

std::string origin_of(compile_cache::entry_metadata const& m) {
    return m.origin_file + ":" + std::to_string(m.origin_line);
}

} // namespace

std::string origin_column(checked_entry const& e) {
    auto const& m = e.envelope.metadata;
    return e.result == verdict::sound ? printable(origin_of(m)) : e.problem;
}

std::string list_text(std::size_t entries, std::uint64_t bytes, std::size_t records,
                      std::function<void(text_table&)> const& add_rows) {
    text_table t;
    t.add({"NAME", "KEY", "SIZE", "LAST USE", "ORIGIN"});
    add_rows(t);
    std::string out = t.str({false, false, true, true, false});
    out += std::to_string(entries) + (entries == 1 ? " entry, " : " entries, ") + human_size(bytes);
    if (records != 0) out += " (and " + std::to_string(records) + " identity records, not listed)";
    return out + "\n";
}

void check_fields(json_writer& j, checked_entry const& e) {
    auto const& m = e.envelope.metadata;
    j.field("status", to_string(e.result));
    if (e.result == verdict::sound) {
        j.field("name", m.name).field("origin_file", m.origin_file).field("origin_line", m.origin_line);
        j.field("format_id", m.format_id);
    } else {
        j.field("problem", e.problem);
    }
}

void show_fields(json_writer& j, checked_entry const& e) {
    auto const& env = e.envelope;
    auto const& m = env.metadata;
    bool const parsed = e.result == verdict::sound || env.status == compile_cache::envelope_status::ok;
    char const* mode = env.keyed ? "hmac-sha256" : "crc32c";
    std::uint64_t const header = e.file_size - e.payload_size - e.check_size;
    j.field("status", to_string(e.result));
    if (!e.problem.empty()) j.field("problem", e.problem);
    if (parsed) {
        j.key("envelope").begin_object().field("version", std::uint64_t{env.version}).field("mode", mode);
        j.field("stored_key", env.stored_key.hex()).field("header_bytes", header);
        j.field("payload_bytes", e.payload_size).field("check_bytes", e.check_size).end_object();
        j.key("metadata").begin_object().field("name", m.name).field("origin_file", m.origin_file);
        j.field("origin_line", m.origin_line).field("format_id", m.format_id);
        j.field("created", utc_time(m.created_ns)).field("created_ns", m.created_ns);
        j.field("compile_ns", m.compile_ns).end_object();
        j.key("components").begin_array();
        for (auto const& comp : m.components)
            j.begin_object().field("name", comp.name).field("digest", comp.digest.hex()).end_object();
        j.end_array();
    }
}

void show_rows(text_table& t, checked_entry const& e, std::string const& name, char const* stored_as) {
    auto const& env = e.envelope;
    auto const& m = env.metadata;
    bool const parsed = e.result == verdict::sound || env.status == compile_cache::envelope_status::ok;
    char const* mode = env.keyed ? "hmac-sha256" : "crc32c";
    std::uint64_t const header = e.file_size - e.payload_size - e.check_size;
    t.add({"status", std::string(to_string(e.result)) + (e.problem.empty() ? "" : ": " + e.problem)});
    if (parsed) {
        t.add({"envelope", "version " + std::to_string(env.version) + ", mode " + mode + ", check value verified"});
        bool const own = env.stored_key.hex() == name;
        t.add({"key", env.stored_key.hex() + (own ? " (" : " (NOT ") + stored_as + ")"});
        t.add({"sizes", "header " + std::to_string(header) + " + payload " + std::to_string(e.payload_size) +
                            " + check " + std::to_string(e.check_size) + " bytes"});
        t.add({"name", printable(m.name)});
        t.add({"origin", printable(origin_of(m))});
        t.add({"format", printable(m.format_id)});
        t.add({"created", local_time(m.created_ns)});
        t.add({"compile time", human_duration_ns(m.compile_ns)});
        t.add({"components", std::to_string(m.components.size()) +
                                 (m.components.empty() ? " (the key was not made by key_builder)" : "")});
        for (auto const& comp : m.components) t.add({"  " + printable(comp.name), comp.digest.hex()});
    } else if (env.version != 0) {
        t.add({"envelope", "version " + std::to_string(env.version) + " (its header says; not verified)"});
    }
}

namespace {

std::int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string last_use_text(std::int64_t s) {
    if (s == 0) return "unknown";
    return human_age(now_s() - s) + " ago";
}

/// A listed entry and, once read, what checking it concluded.
struct storage_entry {
    compile_cache::stored_entry stored;
    std::string name; ///< its key in hex
    checked_entry check;
};

/// The storage's listing, kernels' entries and identity records apart, with their totals.
struct storage_listing {
    std::vector<storage_entry> entries, records;
    std::uint64_t bytes = 0, record_bytes = 0;
    std::int64_t oldest = 0, newest = 0; ///< last uses, seconds since the epoch; 0: none known
};

checked_entry read_and_check(storage_access const& storage, storage_entry const& e,
                             compile_cache::envelope_auth const& auth) {
    std::string bytes;
    compile_cache::read_result const r = storage.read(e.stored.k, bytes, max_entry_read);
    checked_entry c;
    switch (r.status) {
    case compile_cache::read_status::found: return check_bytes(bytes, e.name, auth);
    case compile_cache::read_status::absent: c.problem = "gone since it was listed (evicted or removed)"; break;
    case compile_cache::read_status::too_large:
        c.result = verdict::unchecked;
        c.problem = "larger than 64 MiB (the default bound on an entry), so not read";
        break;
    default: c.problem = "cannot read it: " + r.error.message(); break;
    }
    return c;
}

std::error_code list_storage(storage_access const& storage, storage_listing& l) {
    std::vector<compile_cache::stored_entry> listed;
    if (std::error_code const ec = storage.list(listed)) return ec;
    for (auto const& s : listed) {
        storage_entry e{s, s.k.hex(), {}};
        (compile_cache::is_identity_record_name(e.name) ? l.records : l.entries).push_back(std::move(e));
    }
    for (auto const& e : l.entries) {
        l.bytes += e.stored.size;
        if (e.stored.last_use_s == 0) continue;
        if (l.oldest == 0 || e.stored.last_use_s < l.oldest) l.oldest = e.stored.last_use_s;
        l.newest = std::max(l.newest, e.stored.last_use_s);
    }
    for (auto const& e : l.records) l.record_bytes += e.stored.size;
    return {};
}

int storage_stats(storage_request const& r, storage_listing const& l) {
    if (r.json) {
        json_writer j;
        j.begin_object().field("storage", r.shown).field("entries", std::uint64_t{l.entries.size()});
        j.field("bytes", l.bytes).field("identity_records", std::uint64_t{l.records.size()});
        j.field("identity_record_bytes", l.record_bytes);
        j.key("oldest_use");
        if (l.oldest == 0) j.null(); else j.value(utc_time(l.oldest * 1000000000));
        j.key("newest_use");
        if (l.newest == 0) j.null(); else j.value(utc_time(l.newest * 1000000000));
        j.end_object();
        std::fputs(j.str().c_str(), stdout);
        return exit_ok;
    }
    text_table t;
    t.add({"storage", printable(r.shown)});
    t.add({"entries", std::to_string(l.entries.size())});
    t.add({"size", human_size(l.bytes) + " (" + std::to_string(l.bytes) + " bytes)"});
    t.add({"identity records", std::to_string(l.records.size()) + " (" + human_size(l.record_bytes) +
                                   "): what explains a kernel's misses"});
    if (l.oldest != 0) {
        t.add({"oldest use", local_time(l.oldest * 1000000000) + " (" + last_use_text(l.oldest) + ")"});
        t.add({"newest use", local_time(l.newest * 1000000000) + " (" + last_use_text(l.newest) + ")"});
    }
    std::string out = t.str();
    out += "counters: hosts record theirs in a cache directory only\n";
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

int storage_list(storage_access const& storage, storage_request const& r, storage_listing& l) {
    auto& entries = l.entries;
    for (auto& e : entries) {
        e.check = read_and_check(storage, e, r.auth);
        std::vector<compile_cache::component_digest>().swap(e.check.envelope.metadata.components);
    }
    auto const by_name = [](storage_entry const& a, storage_entry const& b) {
        std::string const& an = a.check.envelope.metadata.name;
        std::string const& bn = b.check.envelope.metadata.name;
        return an != bn ? an < bn : a.name < b.name;
    };
    std::sort(entries.begin(), entries.end(), [&](storage_entry const& a, storage_entry const& b) {
        if (r.sort == "size" && a.stored.size != b.stored.size) return a.stored.size > b.stored.size;
        if (r.sort == "age" && a.stored.last_use_s != b.stored.last_use_s)
            return a.stored.last_use_s < b.stored.last_use_s;
        return by_name(a, b);
    });
    if (r.json) {
        json_writer j;
        j.begin_object().field("storage", r.shown).field("sort", r.sort).key("entries").begin_array();
        for (auto const& e : entries) {
            j.begin_object().field("key", e.name).field("size", e.stored.size).key("last_use");
            if (e.stored.last_use_s == 0) j.null(); else j.value(utc_time(e.stored.last_use_s * 1000000000));
            check_fields(j, e.check);
            j.end_object();
        }
        j.end_array().field("total_bytes", l.bytes).end_object();
        std::fputs(j.str().c_str(), stdout);
        return exit_ok;
    }
    std::string const out = list_text(entries.size(), l.bytes, l.records.size(), [&](text_table& t) {
        for (auto const& e : entries)
            t.add({display_name(e.check), e.name.substr(0, 16), human_size(e.stored.size),
                   last_use_text(e.stored.last_use_s), origin_column(e.check)});
    });
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

int storage_show(storage_access const& storage, storage_request const& r, storage_listing const& l) {
    std::string prefix;
    if (!key_prefix_from(r.key_prefix, prefix)) return exit_usage;
    std::vector<storage_entry const*> matches;
    for (auto const& e : l.entries)
        if (e.name.compare(0, prefix.size(), prefix) == 0) matches.push_back(&e);
    if (matches.empty()) return fail("no entry's key starts with " + prefix + " in " + r.shown, exit_usage);
    if (matches.size() > 1)
        return fail("KEY_PREFIX " + prefix + " is ambiguous: " + std::to_string(matches.size()) +
                        " entries start with it; give more digits",
                    exit_usage);
    storage_entry const& f = *matches.front();
    checked_entry const e = read_and_check(storage, f, r.auth);
    if (r.json) {
        json_writer j;
        j.begin_object().field("storage", r.shown).field("key", f.name).field("size", f.stored.size);
        j.key("last_use");
        if (f.stored.last_use_s == 0) j.null(); else j.value(utc_time(f.stored.last_use_s * 1000000000));
        show_fields(j, e);
        j.end_object();
        std::fputs(j.str().c_str(), stdout);
        return e.result == verdict::bad ? exit_bad_entries : exit_ok;
    }
    text_table t;
    t.add({"entry", f.name + " in " + printable(r.shown)});
    t.add({"size", std::to_string(f.stored.size) + " bytes"});
    t.add({"last use", last_use_text(f.stored.last_use_s)});
    show_rows(t, e, f.name, "the key it is stored under");
    std::fputs(t.str().c_str(), stdout);
    return e.result == verdict::bad ? exit_bad_entries : exit_ok;
}

/// clear: every entry and identity record (envelopes alike).
int storage_clear(storage_access const& storage, storage_request const& r, std::vector<storage_entry> const& all) {
    std::uint64_t removed = 0, removed_bytes = 0;
    std::error_code first;
    for (auto const& e : all) {
        if (std::error_code const ec = storage.remove(e.stored.k)) {
            if (!first) first = ec;
            continue;
        }
        removed_bytes += e.stored.size; // (sizes whole, as a directory's clear counts them)
        if (!compile_cache::is_identity_record_name(e.name)) ++removed; // a record is no entry
    }
    if (first) return fail(r.shown + ": clear failed: " + first.message(), exit_failed);
    // Rows the listing refused as no entry (their key is not a key) are not the cache's
    // to remove: left alone and said so, as a directory's other files are.
    std::uint64_t const foreign = storage.foreign_rows ? storage.foreign_rows() : 0;
    if (r.json) {
        json_writer j;
        j.begin_object().field("storage", r.shown).field("command", r.command).field("removed", removed);
        j.field("removed_bytes", removed_bytes).field("foreign_rows", foreign).end_object();
        std::fputs(j.str().c_str(), stdout);
    } else {
        std::string out = "removed " + std::to_string(removed) + (removed == 1 ? " entry" : " entries") + " (" +
                          human_size(removed_bytes) + ")\n";
        if (foreign != 0)
            out += "left alone " + std::to_string(foreign) + (foreign == 1 ? " row whose key is" : " rows whose key is") +
                   " not a compile_cache key (over 64 bytes, or none)\n";
        std::fputs(out.c_str(), stdout);
    }
    return exit_ok;
}

/// What verify found on a storage: a bad entry and what became of it ("removed", why
/// it was kept, or nothing without --remove).
struct storage_verification {
    std::uint64_t sound = 0, sound_records = 0, removed = 0;
    bool removal_failed = false;
    std::vector<std::pair<storage_entry const*, std::string>> bad;
    std::vector<storage_entry const*> unchecked;
};

/// With --remove, what becomes of a bad entry: checked again just before, since a
/// host may have replaced it with a sound one meanwhile.
std::string remove_bad_entry(storage_access const& storage, storage_request const& r, storage_entry const& e,
                             storage_verification& v) {
    if (r.auth.keyed() && v.sound + v.sound_records == 0) return "kept: no entry verified under this secret so far";
    if (read_and_check(storage, e, r.auth).result == verdict::sound) return "replaced by a sound entry meanwhile; kept";
    if (std::error_code const ec = storage.remove(e.stored.k)) {
        v.removal_failed = true;
        return "cannot remove it: " + ec.message();
    }
    ++v.removed;
    return "removed";
}

storage_verification verify_entries(storage_access const& storage, storage_request const& r,
                                    std::vector<storage_entry>& all) {
    storage_verification v;
    for (auto& e : all) {
        e.check = read_and_check(storage, e, r.auth);
        if (e.check.result == verdict::sound) {
            ++(compile_cache::is_identity_record_name(e.name) ? v.sound_records : v.sound);
        } else if (e.check.result == verdict::unchecked) {
            v.unchecked.push_back(&e);
            std::string const line = "not checked: " + e.name + ": " + e.check.problem + "\n";
            if (!r.json) std::fputs(line.c_str(), stdout);
        } else {
            v.bad.emplace_back(&e, r.remove ? remove_bad_entry(storage, r, e, v) : std::string());
        }
    }
    return v;
}

/// "3 sound, 1 bad, 1 removed, 2 not checked (HMAC entries: give --secret-file)" for
/// the kernels' entries, or for the identity records.
std::string storage_tally(storage_request const& r, storage_verification const& v, bool records) {
    std::uint64_t sound = 0, bad = 0, removed = 0;
    std::vector<checked_entry const*> unchecked;
    for (auto const& [e, fate] : v.bad)
        if (compile_cache::is_identity_record_name(e->name) == records) {
            ++bad;
            removed += fate == "removed" ? 1 : 0;
        }
    for (storage_entry const* e : v.unchecked)
        if (compile_cache::is_identity_record_name(e->name) == records) unchecked.push_back(&e->check);
    sound = records ? v.sound_records : v.sound;
    std::string t = std::to_string(sound) + " sound, " + std::to_string(bad) + " bad";
    if (r.remove) t += ", " + std::to_string(removed) + " removed";
    if (!unchecked.empty()) t += ", " + std::to_string(unchecked.size()) + " not checked" + unchecked_causes(unchecked);
    return t;
}

void print_storage_verification(storage_request const& r, std::size_t entries, std::size_t records,
                                storage_verification const& v) {
    if (r.json) {
        json_writer j;
        j.begin_object().field("storage", r.shown).field("mode", r.auth.keyed() ? "hmac-sha256" : "crc32c");
        j.field("checked", std::uint64_t{entries}).field("sound", v.sound);
        j.field("identity_records", std::uint64_t{records}).field("sound_identity_records", v.sound_records);
        j.key("unchecked").begin_array();
        for (storage_entry const* e : v.unchecked)
            j.begin_object().field("key", e->name).field("reason", e->check.problem).end_object();
        j.end_array();
        j.key("bad").begin_array();
        for (auto const& [e, fate] : v.bad) {
            j.begin_object().field("key", e->name).field("problem", e->check.problem).field("removed", fate == "removed");
            if (!fate.empty() && fate != "removed") j.field("remove_problem", fate);
            j.end_object();
        }
        j.end_array().field("removed", v.removed).end_object();
        std::fputs(j.str().c_str(), stdout);
        return;
    }
    std::string out;
    for (auto const& [e, fate] : v.bad)
        out += "bad: " + e->name + ": " + e->check.problem + (fate.empty() ? "" : " (" + fate + ")") + "\n";
    out += "checked " + std::to_string(entries) + (entries == 1 ? " entry (" : " entries (") +
           (r.auth.keyed() ? "HMAC-SHA256" : "CRC-32C") + "): " + storage_tally(r, v, false);
    if (records != 0) out += "; " + std::to_string(records) + " identity records: " + storage_tally(r, v, true);
    out += "\n";
    std::fputs(out.c_str(), stdout);
}

} // namespace

int run_on_storage(storage_access const& storage, storage_request const& r, bool can_remove) {
    storage_listing l;
    if (std::error_code const ec = list_storage(storage, l)) {
        std::string const more = storage.explain_failure ? storage.explain_failure(ec) : std::string();
        return fail(r.shown + ": cannot list its entries: " + ec.message() + (more.empty() ? "" : ": " + more),
                    exit_failed);
    }
    if (r.command == "stats") return storage_stats(r, l);
    if (r.command == "list") return storage_list(storage, r, l);
    if (r.command == "show") return storage_show(storage, r, l);

    // verify and clear go through identity records too (they are envelopes), but count
    // them apart: they are no entries.
    std::size_t const entries = l.entries.size(), records = l.records.size();
    std::vector<storage_entry> all = std::move(l.entries);
    all.insert(all.end(), l.records.begin(), l.records.end());
    if ((r.command == "clear" || r.remove) && !can_remove)
        return fail(r.shown + ": opened read-only, so nothing can be removed", exit_failed);
    if (r.command == "clear") return storage_clear(storage, r, all);
    storage_verification const v = verify_entries(storage, r, all);
    print_storage_verification(r, entries, records, v);
    if (v.removal_failed) return exit_failed;
    return verify_status(!v.bad.empty(), !v.unchecked.empty(), r.allow_unchecked);
}

} // namespace compile_cache_tool
