// compile-cache: the commands (commands.hpp). Each lists the cache once through
// opened_cache and reads each entry at most once; what is a directory's own (its
// accounted sizes, temp and other files, the size limit and counters its hosts
// record, the settings it keeps, prune, zero) is added where the cache is one.
#include "commands.hpp"

#include "cache_directory.hpp"
#include "command_support.hpp"
#include "entry_check.hpp"
#include "opened_cache.hpp"
#include "output.hpp"

#include <compile_cache/envelope.hpp>
#include <compile_cache/explain.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/directory/directory_layout.hpp>
#include <compile_cache/storage/directory/directory_settings_file.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cxxabi.h>
#include <sys/stat.h>

namespace compile_cache_tool {

namespace {

namespace layout = compile_cache::directory_layout;

/// An entry of the listing and what checking it concluded.
struct read_entry {
    listed_entry const* listed;
    checked_entry check;
};

/// Reads and checks each of `entries`, keeping only what the output needs.
/// A signed entry is checked by signature when `trusted` has keys (as verify does).
std::vector<read_entry> read_all(opened_cache const& cache, std::vector<listed_entry> const& entries,
                                 compile_cache::envelope_auth const& auth, progress_line& progress, char const* what,
                                 trusted_signers const* trusted = nullptr) {
    std::vector<read_entry> out;
    out.reserve(entries.size());
    std::string bytes;
    for (listed_entry const& e : entries) {
        out.push_back({&e, read_and_check(cache, e, auth, bytes, trusted)});
        // Not shown, and over 100,000 entries they would be most of the memory used.
        std::vector<compile_cache::component_digest>().swap(out.back().check.envelope.metadata.components);
        progress.update(what, out.size(), entries.size(), entries.size());
    }
    progress.finish();
    return out;
}
// ---- stats -------------------------------------------------------------------

/// What a listing says about the entries: their sizes and last uses.
struct entry_totals {
    std::uint64_t bytes = 0, record_bytes = 0;
    /// (a directory) What its files count for against the size limit: the entries', the record
    /// files' of earlier releases and each pack of records' once (a marker naming it or not), in whole blocks.
    std::uint64_t accounted = 0;
    std::int64_t oldest = 0, newest = 0; ///< last uses known, ns since the epoch; 0: none
};

entry_totals totals_of(opened_cache const& cache, cache_listing const& l) {
    entry_totals t;
    for (listed_entry const& e : l.entries) {
        t.bytes += e.size;
        t.accounted += layout::accounted_size(e.size);
        if (e.use_ns == 0) continue;
        if (t.oldest == 0 || e.use_ns < t.oldest) t.oldest = e.use_ns;
        t.newest = std::max(t.newest, e.use_ns);
    }
    for (listed_entry const& e : l.records) t.record_bytes += e.size;
    for (auto const* files : {&cache.facts.earlier_record_files, &cache.facts.packs, &cache.facts.unmarked_packs})
        for (entry_file const& f : *files) t.accounted += layout::accounted_size(f.size);
    return t;
}

/// The counters the hosts recorded in a directory, and what stats derives from them.
struct recorded_counters {
    std::map<std::string, std::uint64_t> all; ///< gauges included
    std::optional<std::uint64_t> limit;       ///< the size limit of the latest host to record
    std::optional<std::uint64_t> updated_s;   ///< when it recorded
    std::map<std::string, std::string> kept;  ///< what the directory keeps (compile-cache set)
    std::uint64_t zeroed_s = 0;               ///< when `compile-cache zero` last ran; 0: never
    std::uint64_t hits = 0, misses = 0, remote_hits = 0, remote_misses = 0, hit_compile_ns = 0, load_ns = 0;

    /// What the hits saved: the compile times their entries recorded, less all the
    /// time spent loading (hits and misses).
    std::int64_t saved_ns() const {
        return static_cast<std::int64_t>(hit_compile_ns) - static_cast<std::int64_t>(load_ns);
    }
};

recorded_counters read_counters(std::string const& dir) {
    recorded_counters r;
    directory_counters const dc = read_directory_counters(dir);
    r.all = dc.all;
    r.zeroed_s = dc.zeroed_s;
    auto const gauge = [&](std::string_view name) -> std::optional<std::uint64_t> {
        auto const it = r.all.find(std::string(name));
        if (it == r.all.end()) return std::nullopt;
        return it->second;
    };
    compile_cache::directory_settings kept;
    std::string why;
    if (compile_cache::read_directory_settings(dir, compile_cache::sharing::group, kept, why) == 0) r.kept = kept.values;
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

/// A rate in [0, 1], or nothing when there was nothing to rate.
std::optional<double> rate(std::uint64_t part, std::uint64_t whole) {
    if (whole == 0) return std::nullopt;
    return static_cast<double>(part) / static_cast<double>(whole);
}

/// "12.5%" of `part` in `whole` (not 0); "100.0%" only for the whole and "0.0%" only for
/// none: ">99.9%" and "<0.1%" short of them.
std::string percent(std::uint64_t part, std::uint64_t whole) {
    double const p = 100.0 * *rate(part, whole);
    if (part != 0 && p < 0.05) return "<0.1%";
    if (part < whole && p >= 99.95) return ">99.9%";
    char text[64];
    std::snprintf(text, sizeof text, "%.1f%%", p);
    return text;
}

std::string seconds_text(std::uint64_t s) { return utc_time(static_cast<std::int64_t>(s) * 1000000000); }

void print_stats_json(opened_cache const& cache, cache_listing const& l, entry_totals const& t,
                      recorded_counters const* rc) {
    auto const time_or_null = [](json_writer& j, char const* name, std::int64_t ns) {
        j.key(name);
        if (ns == 0) j.null(); else j.value(utc_time(ns));
        j.key(std::string(name) + "_ns");
        if (ns == 0) j.null(); else j.value(ns);
    };
    json_writer j;
    begin_document(j, cache).field("entries", std::uint64_t{l.entries.size()}).field("bytes", t.bytes);
    j.field("identity_records", std::uint64_t{l.records.size()}).field("identity_record_bytes", t.record_bytes);
    if (cache.is_directory()) {
        j.field("identity_record_packs", std::uint64_t{cache.facts.packs.size()});
        j.field("unmarked_identity_record_packs", std::uint64_t{cache.facts.unmarked_packs.size()});
        j.field("earlier_identity_record_files", std::uint64_t{cache.facts.earlier_record_files.size()});
        j.field("dangling_identity_record_pack_markers", std::uint64_t{cache.facts.dangling_markers.size()});
    }
    time_or_null(j, "oldest_use", t.oldest);
    time_or_null(j, "newest_use", t.newest);
    if (cache.is_directory()) {
        j.field("accounted_bytes", t.accounted).field("temp_files", cache.facts.temp_files);
        j.field("other_files", cache.facts.other_files);
    }
    if (rc) {
        j.field("saved_ns", rc->saved_ns()).key("size_limit");
        if (rc->limit) j.value(*rc->limit); else j.null();
        for (auto const& [name, r] : {std::pair{"hit_rate", rate(rc->hits, rc->hits + rc->misses)},
                                      {"remote_hit_rate", rate(rc->remote_hits, rc->remote_hits + rc->remote_misses)}}) {
            j.key(name);
            if (r) j.raw_number(*r); else j.null();
        }
        j.key("kept_settings").begin_object();
        for (auto const& [name, value] : rc->kept) j.field(name, value);
        j.end_object();
        j.key("counters").begin_object();
        for (auto const& [name, n] : rc->all)
            if (!layout::is_gauge(name)) j.field(name, n);
        j.end_object();
        j.key("counters_updated");
        if (rc->updated_s) j.value(seconds_text(*rc->updated_s)); else j.null();
        j.key("counters_since");
        if (rc->zeroed_s != 0) j.value(seconds_text(rc->zeroed_s)); else j.null();
    }
    j.end_object();
    std::fputs(j.str().c_str(), stdout);
}

/// stats' first table: the cache's entries, sizes, limit and files.
std::string summary_text(opened_cache const& cache, cache_listing const& l, entry_totals const& tot,
                         recorded_counters const* rc) {
    text_table t;
    t.add({cache.is_directory() ? "directory" : "storage", printable(cache.shown)});
    t.add({"entries", std::to_string(l.entries.size())});
    t.add({"size", human_size(tot.bytes) + " (" + std::to_string(tot.bytes) + " bytes)" +
                       (cache.is_directory() ? "; " + human_size(tot.accounted) +
                                                   " counted against the limit (whole 4 KiB blocks)"
                                             : std::string())});
    if (rc) {
        std::string limit_text = "not recorded (no host has recorded its counters here)";
        if (rc->limit && *rc->limit == 0) limit_text = "none (the latest host to record had no limit)";
        if (rc->limit && *rc->limit != 0)
            limit_text = human_size(*rc->limit) + " (" + percent(tot.accounted, *rc->limit) +
                         " used), as the latest host to record set it";
        auto const kept = rc->kept.find("max-size");
        std::optional<std::uint64_t> const kept_limit =
            kept == rc->kept.end() ? std::nullopt : compile_cache::parse_byte_size(kept->second);
        if (kept_limit)
            limit_text = (*kept_limit == 0 ? std::string("none") : human_size(*kept_limit) + " (" + percent(tot.accounted, *kept_limit) + " used)") +
                         ", kept by the directory (compile-cache set; a host's PREFIX_MAX_SIZE wins)" +
                         (rc->limit && *rc->limit != *kept_limit
                              ? "; the latest host to record had " +
                                    (*rc->limit == 0 ? std::string("none") : human_size(*rc->limit))
                              : std::string());
        t.add({"size limit", limit_text});
    }
    std::size_t const packs = cache.facts.packs.size();
    std::string const in_packs =
        packs == 0 ? std::string() : ", in " + std::to_string(packs) + (packs == 1 ? " pack" : " packs");
    t.add({"identity records", std::to_string(l.records.size()) + " (" + human_size(tot.record_bytes) + in_packs +
                                   "): what explains a kernel's misses (compile-cache explain)"});
    // Files no host reads, which count against the limit as entries: their number and size, and why.
    auto const unread = [&t](char const* label, std::vector<entry_file> const& files, char const* why) {
        if (files.empty()) return;
        std::uint64_t bytes = 0;
        for (entry_file const& f : files) bytes += f.size;
        t.add({label, std::to_string(files.size()) + " (" + human_size(bytes) + "): " + why +
                          "; evicted, pruned and cleared as entries"});
    };
    unread("record packs without a marker", cache.facts.unmarked_packs,
           "no host reads their records (a host stopped between writing one and its marker)");
    unread("record files of an earlier release", cache.facts.earlier_record_files,
           "no host of this release reads them (it reads records from packs)");
    if (std::size_t const dangling = cache.facts.dangling_markers.size(); dangling != 0)
        t.add({"record pack markers without a pack",
               std::to_string(dangling) + " (in " + std::string(layout::packs_folder_name) +
                   "): their packs are gone (a merge or an eviction removes a pack before its marker); hosts unlink "
                   "them at their next look, and so does verify --remove"});
    if (cache.is_directory()) {
        t.add({"temp files", std::to_string(cache.facts.temp_files)});
        if (cache.facts.other_files != 0)
            t.add({"other files", std::to_string(cache.facts.other_files) + " (not the cache's; left alone)"});
    }
    if (tot.oldest != 0) {
        t.add({"oldest use", last_use_text(tot.oldest, true)});
        t.add({"newest use", last_use_text(tot.newest, true)});
    }
    return t.str();
}

/// stats' second part: the rates, the time saved and every counter that is not 0.
std::string counters_text(recorded_counters const* rc) {
    if (!rc) return "counters: hosts record theirs in a cache directory only\n";
    std::string const since = rc->zeroed_s != 0 ? " since " + local_time(static_cast<std::int64_t>(rc->zeroed_s) * 1000000000) + " (compile-cache zero)" : "";
    if (rc->all.empty()) return "no counters recorded yet (hosts record theirs when their cache is destroyed)\n";
    std::string out = "counters recorded by hosts" + since;
    if (rc->updated_s) out += " (last at " + local_time(static_cast<std::int64_t>(*rc->updated_s) * 1000000000) + ")";
    out += ":\n";
    text_table ct;
    if (rc->hits + rc->misses != 0)
        ct.add({"  hit rate", percent(rc->hits, rc->hits + rc->misses),
                "(" + std::to_string(rc->hits) + " of " + std::to_string(rc->hits + rc->misses) + " lookups)"});
    if (rc->remote_hits + rc->remote_misses != 0)
        ct.add({"  remote hit rate", percent(rc->remote_hits, rc->remote_hits + rc->remote_misses),
                "(" + std::to_string(rc->remote_hits) + " of " + std::to_string(rc->remote_hits + rc->remote_misses) +
                    " lookups sent to the remote)"});
    if (rc->hits != 0) {
        std::int64_t const saved = rc->saved_ns();
        ct.add({"  time saved",
                (saved < 0 ? "-" : "") + human_duration_ns(static_cast<std::uint64_t>(saved < 0 ? -saved : saved)),
                "(the compile times the loaded entries recorded, " + human_duration_ns(rc->hit_compile_ns) +
                    ", less the time loading, " + human_duration_ns(rc->load_ns) + ")"});
    }
    std::size_t zero = 0;
    for (auto const& [name, n] : rc->all) {
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

/// stats --format=openmetrics: the figures as Prometheus text exposition, one family
/// each with HELP and TYPE, labelled with the cache.
std::string stats_openmetrics(opened_cache const& cache, cache_listing const& l, entry_totals const& t,
                              recorded_counters const* rc) {
    std::string const label = "cache=" + openmetrics_label_value(cache.shown);
    openmetrics_writer m;
    m.family("compile_cache_entries", "gauge", "Entries in the cache (identity records not counted).");
    m.sample("compile_cache_entries", {label}, l.entries.size());
    m.family("compile_cache_entry_bytes", "gauge", "Bytes of the entries.");
    m.sample("compile_cache_entry_bytes", {label}, t.bytes);
    m.family("compile_cache_identity_records", "gauge", "Identity records, which explain a kernel's misses.");
    m.sample("compile_cache_identity_records", {label}, l.records.size());
    if (cache.is_directory()) {
        m.family("compile_cache_accounted_bytes", "gauge", "What the entries count for against the size limit.");
        m.sample("compile_cache_accounted_bytes", {label}, t.accounted);
        m.family("compile_cache_temp_files", "gauge", "Temp files of stores in progress or killed.");
        m.sample("compile_cache_temp_files", {label}, cache.facts.temp_files);
        m.family("compile_cache_identity_record_packs", "gauge", "Files that each hold many identity records.");
        m.sample("compile_cache_identity_record_packs", {label}, cache.facts.packs.size());
        m.family("compile_cache_unmarked_identity_record_packs", "gauge",
                 "Files of identity records no marker names: no host reads their records.");
        m.sample("compile_cache_unmarked_identity_record_packs", {label}, cache.facts.unmarked_packs.size());
        m.family("compile_cache_earlier_identity_record_files", "gauge",
                 "Identity record files of an earlier release: no host of this release reads them.");
        m.sample("compile_cache_earlier_identity_record_files", {label}, cache.facts.earlier_record_files.size());
        m.family("compile_cache_dangling_identity_record_pack_markers", "gauge",
                 "Markers of packs of identity records whose pack is gone: hosts unlink them at their next look.");
        m.sample("compile_cache_dangling_identity_record_pack_markers", {label}, cache.facts.dangling_markers.size());
    }
    if (!rc) return m.str();
    if (rc->limit) {
        m.family("compile_cache_size_limit_bytes", "gauge", "The size limit the latest host to record set (0: none).");
        m.sample("compile_cache_size_limit_bytes", {label}, *rc->limit);
    }
    std::uint64_t stores = 0;
    std::map<std::string, std::uint64_t> misses, remote_errors;
    for (auto const& [name, n] : rc->all) {
        if (name.rfind("misses.", 0) == 0) misses[name.substr(7)] = n;
        if (name.rfind("remote.errors.", 0) == 0) remote_errors[name.substr(14)] = n;
        if (name == "stores") stores = n;
    }
    m.family("compile_cache_hits_total", "counter", "Lookups answered from the cache.");
    m.sample("compile_cache_hits_total", {label}, rc->hits);
    m.family("compile_cache_misses_total", "counter", "Lookups not answered, by reason.");
    for (auto const& [reason, n] : misses)
        m.sample("compile_cache_misses_total", {label, "reason=" + openmetrics_label_value(reason)}, n);
    m.family("compile_cache_stores_total", "counter", "Entries stored.");
    m.sample("compile_cache_stores_total", {label}, stores);
    m.family("compile_cache_remote_hits_total", "counter", "Lookups the remote tier answered.");
    m.sample("compile_cache_remote_hits_total", {label}, rc->remote_hits);
    m.family("compile_cache_remote_misses_total", "counter", "Lookups sent to the remote tier it did not answer.");
    m.sample("compile_cache_remote_misses_total", {label}, rc->remote_misses);
    m.family("compile_cache_remote_errors_total", "counter", "Failures of the remote tier, by kind.");
    for (auto const& [kind, n] : remote_errors)
        m.sample("compile_cache_remote_errors_total", {label, "kind=" + openmetrics_label_value(kind)}, n);
    m.family("compile_cache_time_saved_seconds", "gauge",
             "The compile time the hits' entries recorded, less all the time spent loading.");
    m.sample_seconds("compile_cache_time_saved_seconds", {label}, rc->saved_ns());
    for (auto const& [name, n] : rc->all) {
        if (name.rfind("bytes-", 0) != 0 && name.find(".bytes-") == std::string::npos) continue;
        std::string metric = "compile_cache_";
        for (char ch : name) metric += (ch == '.' || ch == '-') ? '_' : ch;
        metric += "_total";
        m.family(metric, "counter", "The counter " + name + " the hosts recorded (bytes).");
        m.sample(metric, {label}, n);
    }
    return m.str();
}

int run_stats(command_line const& c) {
    progress_line progress = progress_for(c);
    listed_cache lc;
    if (int const s = open_and_list(c, c.cache, cache_use::read, progress, lc); s != exit_ok) return s;
    entry_totals const totals = totals_of(lc.cache, lc.listing);
    std::optional<recorded_counters> counters;
    if (lc.cache.is_directory()) counters = read_counters(lc.cache.directory);
    recorded_counters const* rc = counters ? &*counters : nullptr;
    if (c.format == "json") {
        print_stats_json(lc.cache, lc.listing, totals, rc);
    } else if (c.format == "openmetrics") {
        std::fputs(stats_openmetrics(lc.cache, lc.listing, totals, rc).c_str(), stdout);
    } else {
        std::string const out = summary_text(lc.cache, lc.listing, totals, rc) + counters_text(rc);
        std::fputs(out.c_str(), stdout);
    }
    return exit_ok;
}

// ---- list --------------------------------------------------------------------

/// Whether `e` is a signed entry whose signature was not checked (no trusted keys given).
bool signed_unchecked(checked_entry const& e) {
    return e.envelope.signed_entry && e.result == verdict::unchecked &&
           e.envelope.status == compile_cache::envelope_status::unauthenticated;
}

std::string display_name(checked_entry const& e) {
    if (e.result == verdict::sound) return printable(e.envelope.metadata.name);
    if (signed_unchecked(e)) return "(signed, not checked)";
    if (e.result == verdict::unchecked) return "(not checked)";
    if (e.result == verdict::untrusted) return "(untrusted signer)";
    return "(bad entry)";
}

/// The artifact type an entry's format names (a typeid name), as C++ spells it where the
/// name demangles; empty for an entry whose format names none.
std::string artifact_of(compile_cache::entry_metadata const& m) {
    std::string const name(compile_cache::detail::entry_artifact_type(m.format_id));
    if (name.empty()) return {};
    int status = -1;
    std::unique_ptr<char, void (*)(void*)> const demangled(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                          std::free);
    return status == 0 && demangled ? std::string(demangled.get()) : name;
}

std::string origin_of(compile_cache::entry_metadata const& m) {
    return m.origin_file + ":" + std::to_string(m.origin_line);
}

/// The origin column of list: file:line when the entry is sound, else the problem.
/// A signed entry not checked reads "signed (key id ...), not checked: ...", its signer first.
std::string origin_column(checked_entry const& e) {
    if (e.result == verdict::sound) return printable(origin_of(e.envelope.metadata));
    if (signed_unchecked(e))
        return "signed (key id " + signer_hex(e.envelope.signer_id) + "), not checked: give --trusted-keys-file";
    return e.problem;
}

/// A listed entry's JSON fields from checking it: its status, then its kernel's name,
/// origin and format when sound, else the problem.
void check_fields(json_writer& j, checked_entry const& e) {
    auto const& m = e.envelope.metadata;
    j.field("status", to_string(e.result));
    // A signed entry names its signer's key id (verified only when the status is sound), a
    // local copy of one its signer's.
    if (e.envelope.signed_entry || e.envelope.signer_copy) j.field("signer_id", signer_hex(e.envelope.signer_id));
    if (e.result == verdict::sound) {
        j.field("name", m.name).field("origin_file", m.origin_file).field("origin_line", m.origin_line);
        j.field("format_id", m.format_id);
    } else {
        j.field("problem", e.problem);
    }
}

/// The JSON fields that say where an entry is: its key, and its file in a directory (an
/// identity record in a pack: the file it would have, and the pack's, which holds it).
void place_fields(json_writer& j, opened_cache const& cache, listed_entry const& e) {
    j.field("key", e.name);
    if (cache.is_directory()) j.field("path", layout::entry_relative_path(e.name));
    if (!e.pack.empty()) j.field("pack", layout::entry_relative_path(e.pack));
}

void sort_for_list(std::vector<read_entry>& entries, std::string const& sort) {
    auto const by_name = [](read_entry const& a, read_entry const& b) {
        std::string const& an = a.check.envelope.metadata.name;
        std::string const& bn = b.check.envelope.metadata.name;
        return an != bn ? an < bn : a.listed->name < b.listed->name;
    };
    std::sort(entries.begin(), entries.end(), [&](read_entry const& a, read_entry const& b) {
        if (sort == "size" && a.listed->size != b.listed->size) return a.listed->size > b.listed->size;
        if (sort == "age" && a.listed->use_ns != b.listed->use_ns) return a.listed->use_ns < b.listed->use_ns;
        return by_name(a, b);
    });
}

/// list's status: exit_failed (said) when the storage refused to read some of `entries`, else exit_ok.
int unread_status(opened_cache const& cache, std::vector<read_entry> const& entries) {
    std::size_t const unread = static_cast<std::size_t>(
        std::count_if(entries.begin(), entries.end(), [](read_entry const& e) { return e.check.read_failed; }));
    if (unread == 0) return exit_ok;
    return fail(cache.shown + ": could not read " + std::to_string(unread) + (unread == 1 ? " entry" : " entries"),
                exit_failed);
}

int run_list(command_line const& c) {
    compile_cache::envelope_auth auth;
    if (!auth_from(c, auth)) return exit_usage;
    trusted_signers trusted;
    if (!trusted_from(c, trusted)) return exit_usage;
    progress_line progress = progress_for(c);
    listed_cache lc;
    if (int const s = open_and_list(c, c.cache, cache_use::read, progress, lc); s != exit_ok) return s;
    std::vector<read_entry> entries =
        read_all(lc.cache, lc.listing.entries, auth, progress, "reading entries", &trusted);
    sort_for_list(entries, c.sort);
    std::uint64_t const total = totals_of(lc.cache, lc.listing).bytes;
    if (c.json) {
        json_writer j;
        begin_document(j, lc.cache).field("sort", c.sort).key("entries").begin_array();
        for (read_entry const& e : entries) {
            j.begin_object();
            place_fields(j, lc.cache, *e.listed);
            j.field("size", e.listed->size);
            if (e.check.envelope.compressed) j.field("uncompressed_size", uncompressed_size(e.check));
            use_fields(j, e.listed->use_ns);
            check_fields(j, e.check);
            j.end_object();
        }
        j.end_array().field("total_bytes", total).end_object();
        std::fputs(j.str().c_str(), stdout);
        return unread_status(lc.cache, entries);
    }
    // Compressed entries (zstd) add a column: the size each entry would have uncompressed.
    bool const any_compressed = std::any_of(entries.begin(), entries.end(),
                                            [](read_entry const& e) { return e.check.envelope.compressed; });
    text_table t;
    if (any_compressed)
        t.add({"NAME", "KEY", "SIZE", "UNCOMPRESSED", "LAST USE", "ORIGIN"});
    else
        t.add({"NAME", "KEY", "SIZE", "LAST USE", "ORIGIN"});
    for (read_entry const& e : entries) {
        if (any_compressed)
            t.add({display_name(e.check), e.listed->name.substr(0, 16), human_size(e.listed->size),
                   e.check.envelope.compressed ? human_size(uncompressed_size(e.check)) : "-",
                   last_use_text(e.listed->use_ns, false), origin_column(e.check)});
        else
            t.add({display_name(e.check), e.listed->name.substr(0, 16), human_size(e.listed->size),
                   last_use_text(e.listed->use_ns, false), origin_column(e.check)});
    }
    std::string out = any_compressed ? t.str({false, false, true, true, true, false})
                                     : t.str({false, false, true, true, false});
    out += std::to_string(entries.size()) + (entries.size() == 1 ? " entry, " : " entries, ") + human_size(total);
    if (!lc.listing.records.empty())
        out += " (and " + std::to_string(lc.listing.records.size()) + " identity records, not listed)";
    out += "\n";
    std::fputs(out.c_str(), stdout);
    return unread_status(lc.cache, entries);
}

// ---- show --------------------------------------------------------------------

/// show's KEY_PREFIX in lower case; false (after the message) when it is not hexadecimal.
bool key_prefix_from(std::string const& given, std::string& prefix) {
    prefix.clear();
    for (char ch : given) prefix += static_cast<char>(ch >= 'A' && ch <= 'F' ? ch - 'A' + 'a' : ch);
    if (layout::is_lower_hex(prefix)) return true;
    fail("KEY_PREFIX \"" + printable(given) + "\" is not hexadecimal (list prints the keys)", exit_usage);
    return false;
}

/// The one entry whose key starts with `prefix`, or nullptr after saying why not.
listed_entry const* entry_by_prefix(listed_cache const& lc, std::string const& prefix) {
    std::vector<listed_entry const*> matches;
    for (listed_entry const& e : lc.listing.entries)
        if (e.name.compare(0, prefix.size(), prefix) == 0) matches.push_back(&e);
    if (matches.empty()) {
        fail("no entry's key starts with " + prefix + " in " + printable(lc.cache.shown), exit_usage);
        return nullptr;
    }
    if (matches.size() > 1) {
        std::string message = "KEY_PREFIX " + prefix + " is ambiguous: " + std::to_string(matches.size()) +
                              " entries start with it (";
        for (std::size_t i = 0; i < matches.size() && i < 3; ++i)
            message += (i ? ", " : "") + matches[i]->name.substr(0, std::max<std::size_t>(prefix.size() + 4, 16));
        message += matches.size() > 3 ? ", ...); give more digits" : "); give more digits";
        fail(message, exit_usage);
        return nullptr;
    }
    return matches.front();
}

/// show's JSON account of a checked entry: its status, and when its envelope parsed,
/// the envelope, the metadata and the digests of its key's components.
/// The envelope's mode as show names it.
char const* mode_name(compile_cache::opened_envelope const& env) {
    return env.signed_entry ? "ed25519" : env.keyed ? "hmac-sha256" : "crc32c";
}

/// show's account of a signed entry's signer (or a local copy's: the signer of the entry
/// it copies): its key id, and whether and as what the trusted keys given list it.
std::string signer_text(checked_entry const& e, trusted_signers const& trusted) {
    std::string const id = "key id " + signer_hex(e.envelope.signer_id);
    std::string const copy = e.envelope.signer_copy ? ", of the signed entry this is a local copy of" : "";
    if (!trusted.given()) return id + copy + " (not checked: give --trusted-keys-file)";
    std::string const name = trusted.name_of(e.envelope.signer_id);
    if (name.empty()) return id + copy + " (none of the trusted keys)";
    if (e.envelope.signer_copy) return id + copy + " (trusted key " + printable(name) + ")";
    return id + " (trusted key " + printable(name) + (e.result == verdict::sound ? ", signature verified)" : ")");
}

void show_fields(json_writer& j, checked_entry const& e, trusted_signers const& trusted) {
    auto const& env = e.envelope;
    auto const& m = env.metadata;
    bool const parsed = e.result == verdict::sound || env.status == compile_cache::envelope_status::ok;
    std::uint64_t const signer_bytes = env.signer_copy ? compile_cache::detail::envelope_signer_copy_size : 0;
    std::uint64_t const header = e.file_size - e.payload_size - signer_bytes - e.check_size;
    j.field("status", to_string(e.result));
    if (!e.problem.empty()) j.field("problem", e.problem);
    // The signer's key id (null: not a signed entry), from the header whether or not
    // the signature was checked; its name when a trusted key has that id.
    bool const signer = env.signed_entry || env.signer_copy;
    j.key("signer_key_id");
    if (signer) j.value(signer_hex(env.signer_id)); else j.null();
    j.key("signer_key_name");
    std::string const signer_name = signer ? trusted.name_of(env.signer_id) : std::string();
    if (signer_name.empty()) j.null(); else j.value(signer_name);
    if (!parsed) return;
    j.key("envelope").begin_object().field("version", std::uint64_t{env.version});
    j.field("mode", mode_name(env)).field("signer_copy", env.signer_copy);
    j.field("stored_key", env.stored_key.hex()).field("header_bytes", header);
    j.field("payload_bytes", e.payload_size).field("signer_bytes", signer_bytes).field("check_bytes", e.check_size);
    j.field("compressed", env.compressed ? "zstd" : "none");
    if (env.compressed) j.field("uncompressed_payload_bytes", env.uncompressed_size);
    j.end_object();
    j.key("metadata").begin_object().field("name", m.name).field("origin_file", m.origin_file);
    j.field("origin_line", m.origin_line).field("format_id", m.format_id).field("artifact", artifact_of(m));
    j.field("created", utc_time(m.created_ns)).field("created_ns", m.created_ns);
    j.field("compile_ns", m.compile_ns).end_object();
    j.key("components").begin_array();
    for (auto const& comp : m.components)
        j.begin_object().field("name", comp.name).field("digest", comp.digest.hex()).end_object();
    j.end_array();
}

/// show's rows for the same.
void show_rows(text_table& t, checked_entry const& e, std::string const& name, char const* stored_as,
               trusted_signers const& trusted) {
    auto const& env = e.envelope;
    auto const& m = env.metadata;
    bool const parsed = e.result == verdict::sound || env.status == compile_cache::envelope_status::ok;
    std::uint64_t const signer_bytes = env.signer_copy ? compile_cache::detail::envelope_signer_copy_size : 0;
    std::uint64_t const header = e.file_size - e.payload_size - signer_bytes - e.check_size;
    t.add({"status", std::string(to_string(e.result)) + (e.problem.empty() ? "" : ": " + e.problem)});
    if (env.signed_entry || env.signer_copy) t.add({"signer", signer_text(e, trusted)});
    if (parsed) {
        t.add({"envelope", "version " + std::to_string(env.version) + ", mode " + mode_name(env) +
                               ", check value verified"});
        bool const own = env.stored_key.hex() == name;
        t.add({"key", env.stored_key.hex() + (own ? " (" : " (NOT ") + stored_as + ")"});
        t.add({"sizes", "header " + std::to_string(header) + " + payload " + std::to_string(e.payload_size) +
                            (signer_bytes != 0 ? " + signer's key id " + std::to_string(signer_bytes) : "") +
                            " + check " + std::to_string(e.check_size) + " bytes"});
        if (env.compressed)
            t.add({"compressed", "zstd: payload " + std::to_string(e.payload_size) + " bytes stored, " +
                                     std::to_string(env.uncompressed_size) + " uncompressed; the entry " +
                                     std::to_string(e.file_size) + " bytes stored, " +
                                     std::to_string(uncompressed_size(e)) + " uncompressed"});
        t.add({"name", printable(m.name)});
        t.add({"origin", printable(origin_of(m))});
        t.add({"format", printable(m.format_id)});
        if (std::string const artifact = artifact_of(m); !artifact.empty()) t.add({"artifact", printable(artifact)});
        t.add({"created", local_time(m.created_ns)});
        t.add({"compile time", human_duration_ns(m.compile_ns)});
        t.add({"components", std::to_string(m.components.size()) +
                                 (m.components.empty() ? " (the key was not made by key_builder)" : "")});
        for (auto const& comp : m.components) t.add({"  " + printable(comp.name), comp.digest.hex()});
    } else if (env.version != 0) {
        t.add({"envelope", "version " + std::to_string(env.version) + " (its header says; not verified)"});
    }
}

int run_show(command_line const& c) {
    compile_cache::envelope_auth auth;
    if (!auth_from(c, auth)) return exit_usage;
    trusted_signers trusted;
    if (!trusted_from(c, trusted)) return exit_usage;
    std::string prefix;
    if (!key_prefix_from(c.key_prefix, prefix)) return exit_usage;
    progress_line progress = progress_for(c);
    listed_cache lc;
    if (int const s = open_and_list(c, c.cache, cache_use::read, progress, lc); s != exit_ok) return s;
    listed_entry const* f = entry_by_prefix(lc, prefix);
    if (f == nullptr) return exit_usage;
    std::string bytes;
    checked_entry const e = read_and_check(lc.cache, *f, auth, bytes, &trusted);
    // (an entry the storage would not let it read: said by its status row, and exit 3, as list)
    int const status = e.result == verdict::bad ? exit_bad_entries : e.read_failed ? exit_failed : exit_ok;
    if (c.json) {
        json_writer j;
        begin_document(j, lc.cache);
        place_fields(j, lc.cache, *f);
        j.field("size", f->size);
        use_fields(j, f->use_ns);
        show_fields(j, e, trusted);
        j.end_object();
        std::fputs(j.str().c_str(), stdout);
        return status;
    }
    bool const dir = lc.cache.is_directory();
    text_table t;
    t.add({"entry", dir ? printable(lc.cache.directory) + "/" + lc.cache.entry_label(f->name)
                        : f->name + " in " + printable(lc.cache.shown)});
    t.add({"size", std::to_string(f->size) + " bytes"});
    t.add({"last use", last_use_text(f->use_ns, true)});
    show_rows(t, e, f->name, dir ? "its file name" : "the key it is stored under", trusted);
    std::fputs(t.str().c_str(), stdout);
    return status;
}

// ---- verify ------------------------------------------------------------------

struct verified_entry {
    listed_entry const* listed;
    checked_entry check;
    bool record = false; ///< an identity record, not a kernel's entry
    bool removed = false;
    std::string remove_problem; ///< why --remove did not remove it
};

/// What verify found: the entries that do not check, apart from those it cannot judge
/// and those signed by a key that is not trusted.
struct verification {
    std::vector<verified_entry> bad, unchecked, untrusted;
    std::uint64_t sound = 0, sound_records = 0;
    /// Evicted or removed between the listing and their check (a busy cache): neither
    /// checked nor bad, and no reason for an exit status.
    std::uint64_t gone = 0, gone_records = 0;
    bool removal_failed = false;
    /// (a directory) Each marker whose pack is gone (directory_facts::dangling_markers), and
    /// whether it is gone too by the end: unlinked by --remove, or by the library's look at the
    /// packs when verify read records (as a host's look does), or by a host. Nothing wrong: no
    /// reason for an exit status.
    struct dangling_marker {
        std::string name;
        bool unlinked = false;
        std::string problem; ///< why --remove did not unlink it
    };
    std::vector<dangling_marker> dangling_markers;

    std::uint64_t removed() const {
        std::uint64_t n = 0;
        for (auto const& v : bad) n += v.removed ? 1 : 0;
        return n;
    }
    /// Whether the check value (CRC-32C or HMAC) of anything was checked, and whether a
    /// signature was (so that naming the mode is true).
    bool plain_checked = false, signature_checked = false;

    /// Notes what checked `e` (sound, or read and found bad by its check).
    void note_mode(checked_entry const& e, trusted_signers const& trusted) {
        if (e.result != verdict::sound && (e.result != verdict::bad || e.file_size == 0)) return;
        (e.envelope.signed_entry && trusted.given() ? signature_checked : plain_checked) = true;
    }
    bool checked_any() const { return plain_checked; }
};

/// Checks every entry and identity record (records are envelopes too: checked alike).
verification check_all(opened_cache const& cache, cache_listing const& l, compile_cache::envelope_auth const& auth,
                       trusted_signers const& trusted, progress_line& progress) {
    verification out;
    for (std::string const& name : cache.facts.dangling_markers) out.dangling_markers.push_back({name, false, {}});
    std::size_t const total = l.entries.size() + l.records.size();
    std::uint64_t done = 0;
    std::string bytes;
    for (auto const* list : {&l.entries, &l.records})
        for (listed_entry const& e : *list) {
            checked_entry check = read_and_check(cache, e, auth, bytes, &trusted);
            progress.update("verifying entries", ++done, total, total);
            out.note_mode(check, trusted);
            bool const record = list == &l.records;
            if (check.result == verdict::sound) {
                ++(record ? out.sound_records : out.sound);
                continue;
            }
            if (check.gone) {
                ++(record ? out.gone_records : out.gone);
                continue;
            }
            verified_entry v{&e, std::move(check), record, false, {}};
            (v.check.result == verdict::unchecked   ? out.unchecked
             : v.check.result == verdict::untrusted ? out.untrusted
                                                    : out.bad)
                .push_back(std::move(v));
        }
    progress.finish();
    return out;
}

/// A marker's path in the directory: `.cc-records/<hex>`.
std::string marker_path(std::string const& name) { return std::string(layout::packs_folder_name) + "/" + name; }

/// Each marker whose pack is gone: with --remove, unlinked as a host unlinks it at its next look
/// (it names nothing: whatever the secret, it is no entry); else whether it is gone by now.
void settle_dangling_markers(bool remove, opened_cache const& cache, verification& v) {
    for (verification::dangling_marker& m : v.dangling_markers) {
        if (remove) {
            m.problem = unlink_dangling_marker(cache.directory, m.name);
            m.unlinked = m.problem.empty();
            continue;
        }
        struct stat st {};
        std::string const path = cache.directory + "/" + marker_path(m.name);
        m.unlinked = ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
    }
}

/// --remove: deletes the bad entries through the storage (so that a directory's size
/// ledger stays right), each checked again just before, since a host may have replaced
/// it with a sound one meanwhile. With a secret under which not one entry verifies, the
/// likelier mistake is the secret: removing would empty a sound cache, so nothing is.
void remove_bad(command_line const& c, opened_cache const& cache, compile_cache::envelope_auth const& auth,
                trusted_signers const& trusted, verification& v) {
    if (auth.keyed() && v.sound + v.sound_records == 0 && !v.bad.empty()) {
        std::fprintf(stderr, "compile-cache: no entry verifies under the secret of %s: is it the right one? Nothing removed\n",
                     c.secret_file ? c.secret_file->c_str() : "--secret-file");
        for (verified_entry& e : v.bad) e.remove_problem = "kept: no entry verifies under this secret";
        return;
    }
    std::string bytes;
    for (verified_entry& e : v.bad) {
        if (!e.listed->pack.empty()) { // a pack is written whole, never changed
            e.remove_problem = "kept: it is in the pack " + cache.entry_label(e.listed->pack) +
                               " with other records (a host skips a record that does not check)";
            continue;
        }
        if (read_and_check(cache, *e.listed, auth, bytes, &trusted).result != verdict::bad) {
            e.remove_problem = "replaced by a sound (or an unchecked) entry meanwhile; kept";
        } else if (std::error_code const ec = cache.remove(e.listed->k)) {
            e.remove_problem = "cannot remove it: " + ec.message();
            v.removal_failed = true;
        } else {
            e.removed = true;
        }
    }
}

void print_verification_json(opened_cache const& cache, cache_listing const& l, bool keyed, bool signatures,
                             verification const& v) {
    json_writer j;
    begin_document(j, cache).key("mode");
    if (v.checked_any()) j.value(keyed ? "hmac-sha256" : "crc32c"); else j.null();
    j.field("signatures_checked", signatures && v.signature_checked);
    j.field("checked", std::uint64_t{l.entries.size()}).field("sound", v.sound);
    j.field("identity_records", std::uint64_t{l.records.size()}).field("sound_identity_records", v.sound_records);
    j.field("gone", v.gone).field("gone_identity_records", v.gone_records);
    // Packs no marker names: files whose records no host reads (a directory's alone).
    j.key("unmarked_identity_record_packs").begin_array();
    for (entry_file const& f : cache.facts.unmarked_packs)
        j.begin_object().field("key", f.name).field("path", f.relative_path()).end_object();
    // Record files of an earlier release: files no host of this release reads (not read here either).
    j.end_array().key("earlier_identity_record_files").begin_array();
    for (entry_file const& f : cache.facts.earlier_record_files)
        j.begin_object().field("key", f.name).field("path", f.relative_path()).end_object();
    // Markers whose pack is gone, for a moment (a merge removes a pack before its marker): not bad.
    j.end_array().key("dangling_identity_record_pack_markers").begin_array();
    for (auto const& m : v.dangling_markers) {
        j.begin_object().field("key", m.name).field("path", marker_path(m.name));
        j.field("pack", layout::entry_relative_path(m.name)).field("unlinked", m.unlinked);
        if (!m.problem.empty()) j.field("remove_problem", m.problem);
        j.end_object();
    }
    j.end_array();
    // Kernels' entries and identity records in lists of their own.
    for (bool const records : {false, true}) {
        j.key(records ? "bad_identity_records" : "bad").begin_array();
        for (auto const& e : v.bad) {
            if (e.record != records) continue;
            j.begin_object();
            place_fields(j, cache, *e.listed);
            j.field("problem", e.check.problem).field("removed", e.removed);
            if (!e.remove_problem.empty()) j.field("remove_problem", e.remove_problem);
            j.end_object();
        }
        j.end_array().key(records ? "unchecked_identity_records" : "unchecked").begin_array();
        for (auto const& e : v.unchecked)
            if (e.record == records) {
                j.begin_object();
                place_fields(j, cache, *e.listed);
                j.field("reason", e.check.problem).end_object();
            }
        // Signed by a key none of the trusted keys is: listed with that key's id, kept.
        j.end_array().key(records ? "untrusted_signer_identity_records" : "untrusted_signer").begin_array();
        for (auto const& e : v.untrusted)
            if (e.record == records) {
                j.begin_object();
                place_fields(j, cache, *e.listed);
                j.field("signer_key_id", signer_hex(e.check.envelope.signer_id)).end_object();
            }
        j.end_array();
    }
    j.field("removed", v.removed()).end_object();
    std::fputs(j.str().c_str(), stdout);
}

/// "3 sound, 1 bad, 1 removed, 2 not checked (HMAC entries: give --secret-file)" for
/// the kernels' entries or the records.
std::string tally(bool remove, verification const& v, bool records) {
    std::uint64_t bad = 0, removed = 0;
    std::vector<std::string> causes;
    std::uint64_t unchecked = 0;
    for (auto const& e : v.bad)
        if (e.record == records) {
            ++bad;
            removed += e.removed ? 1 : 0;
        }
    for (auto const& e : v.unchecked) {
        if (e.record != records) continue;
        ++unchecked;
        std::string cause = unchecked_cause(e.check);
        if (std::find(causes.begin(), causes.end(), cause) == causes.end()) causes.push_back(std::move(cause));
    }
    std::string t = std::to_string(records ? v.sound_records : v.sound) + " sound, " + std::to_string(bad) + " bad";
    if (remove) t += ", " + std::to_string(removed) + " removed";
    if (std::uint64_t const gone = records ? v.gone_records : v.gone; gone != 0)
        t += ", " + std::to_string(gone) + " gone since the listing";
    if (unchecked != 0) {
        t += ", " + std::to_string(unchecked) + " not checked";
        for (std::size_t i = 0; i < causes.size(); ++i) t += (i == 0 ? " (" : "; ") + causes[i];
        if (!causes.empty()) t += ")";
    }
    std::uint64_t untrusted = 0;
    std::vector<std::string> signers;
    for (auto const& e : v.untrusted) {
        if (e.record != records) continue;
        ++untrusted;
        std::string id = signer_hex(e.check.envelope.signer_id);
        if (std::find(signers.begin(), signers.end(), id) == signers.end()) signers.push_back(std::move(id));
    }
    if (untrusted != 0) {
        t += ", " + std::to_string(untrusted) + " signed by untrusted keys (key id";
        t += signers.size() == 1 ? " " : "s ";
        for (std::size_t i = 0; i < signers.size() && i < 4; ++i) t += (i == 0 ? "" : ", ") + signers[i];
        t += signers.size() > 4 ? ", ...; kept)" : "; kept)";
    }
    return t;
}

void print_verification_text(bool remove, opened_cache const& cache, cache_listing const& l, bool keyed,
                             bool signatures, verification const& v) {
    std::string out;
    for (auto const& e : v.bad) {
        out += "bad: " + cache.entry_label(e.listed->name) + ": " + e.check.problem;
        if (e.removed) out += " (removed)";
        if (!e.remove_problem.empty()) out += " (" + e.remove_problem + ")";
        out += "\n";
    }
    for (auto const& e : v.unchecked)
        out += "not checked: " + cache.entry_label(e.listed->name) + ": " + e.check.problem + "\n";
    for (auto const& e : v.untrusted)
        out += "untrusted signer: " + cache.entry_label(e.listed->name) + ": " + e.check.problem + " (kept)\n";
    for (entry_file const& f : cache.facts.unmarked_packs)
        out += "unmarked pack: " + f.relative_path() + ": no marker names it, so no host reads its records (a host "
               "stopped between writing it and its marker in " + std::string(layout::packs_folder_name) +
               "); kept: evicted, pruned and cleared as any entry\n";
    // Maybe one per kernel an earlier release recorded: one line for them all (--json lists each).
    if (std::size_t const earlier = cache.facts.earlier_record_files.size(); earlier != 0)
        out += "earlier record files: " + std::to_string(earlier) +
               (earlier == 1 ? " identity record file" : " identity record files") +
               " of an earlier release (ab/<hex ending 1d>), which no host of this release reads (it reads records "
               "from packs), not checked; kept: evicted, pruned and cleared as any entry\n";
    for (auto const& m : v.dangling_markers) {
        out += "dangling marker: " + marker_path(m.name) + ": its pack " + layout::entry_relative_path(m.name) +
               " is gone (a merge or an eviction removes a pack before its marker); not bad: hosts unlink it at "
               "their next look";
        if (!m.problem.empty()) out += " (" + m.problem + ")";
        else if (m.unlinked) out += remove ? " (unlinked)" : " (unlinked now, by a look at the packs, as hosts do)";
        out += "\n";
    }
    std::size_t const n = l.entries.size();
    // The mode is named only when some check value was checked in it.
    std::string mode = v.checked_any() ? std::string(keyed ? "HMAC-SHA256" : "CRC-32C") : std::string();
    if (signatures && v.signature_checked) mode += mode.empty() ? "Ed25519 signatures" : "; Ed25519 signatures of signed ones";
    if (!mode.empty()) mode = " (" + mode + ")";
    out += "checked " + std::to_string(n) + (n == 1 ? " entry" : " entries") + mode + ": " + tally(remove, v, false);
    if (!l.records.empty())
        out += "; " + std::to_string(l.records.size()) + " identity records: " + tally(remove, v, true);
    out += "\n";
    std::fputs(out.c_str(), stdout);
}

int verify_status(bool bad, bool unchecked, bool allow_unchecked) {
    if (bad) return exit_bad_entries;
    return unchecked && !allow_unchecked ? exit_unchecked : exit_ok;
}

int run_verify(command_line const& c) {
    compile_cache::envelope_auth auth;
    if (!auth_from(c, auth)) return exit_usage;
    trusted_signers trusted;
    if (!trusted_from(c, trusted)) return exit_usage;
    progress_line progress = progress_for(c);
    listed_cache lc;
    cache_use const use = c.remove ? cache_use::remove : cache_use::read;
    if (int const s = open_and_list(c, c.cache, use, progress, lc); s != exit_ok) return s;
    if (c.remove)
        if (int const s = lc.cache.may_remove(); s != exit_ok) return s;
    verification v = check_all(lc.cache, lc.listing, auth, trusted, progress);
    if (c.remove) remove_bad(c, lc.cache, auth, trusted, v);
    settle_dangling_markers(c.remove, lc.cache, v);
    if (c.json)
        print_verification_json(lc.cache, lc.listing, auth.keyed(), trusted.given(), v);
    else
        print_verification_text(c.remove, lc.cache, lc.listing, auth.keyed(), trusted.given(), v);
    if (v.removal_failed) return exit_failed;
    // Entries the storage would not let it read are not checked: a failure, which --allow-unchecked does not
    // make a success.
    std::uint64_t const unread = static_cast<std::uint64_t>(std::count_if(
        v.unchecked.begin(), v.unchecked.end(), [](verified_entry const& e) { return e.check.read_failed; }));
    if (unread != 0)
        return fail(lc.cache.shown + ": could not read " + std::to_string(unread) +
                        (unread == 1 ? " entry or identity record" : " entries or identity records") +
                        ", so verify did not check them",
                    exit_failed);
    // An untrusted signer's entry is one the keys given cannot check: as unchecked.
    return verify_status(!v.bad.empty(), !v.unchecked.empty() || !v.untrusted.empty(), c.allow_unchecked);
}

// ---- clear and prune ---------------------------------------------------------

/// prune's figures besides what it removed.
struct prune_figures {
    std::uint64_t limit = 0, entries_left = 0, accounted_left = 0;
};

/// A cleanup's report (clear, prune): what went, what stayed, and exit 3 when it could
/// not remove what it meant to (another user's folders, a read-only mount), whatever
/// it did remove.
int report_cleanup(command_line const& c, opened_cache const& cache, clear_result const& r,
                   prune_figures const* prune) {
    if (r.error) return fail(cache.shown + ": " + c.command + " failed: " + r.error.message(), exit_failed);
    bool const dir = cache.is_directory();
    std::uint64_t const foreign = dir ? 0 : cache.foreign_rows();
    if (c.json) {
        json_writer j;
        begin_document(j, cache).field("command", c.command);
        if (prune) j.field("max_size", prune->limit).field("entries", prune->entries_left).field("accounted_bytes", prune->accounted_left);
        j.field("removed", r.removed).field("removed_bytes", r.removed_bytes);
        if (dir)
            j.field("temp_files_removed", r.temp_files_removed)
                .field("claim_files_removed", r.claim_files_removed)
                .field("other_files", cache.facts.other_files);
        else j.field("foreign_rows", foreign);
        j.field("not_removed", r.not_removed).end_object();
        std::fputs(j.str().c_str(), stdout);
    } else {
        // Its bytes are every file's it removed, identity records' too; a directory's as they counted against
        // the limit (whole blocks), which stats names so, as it does the entries' own bytes.
        std::string out = "removed " + std::to_string(r.removed) + (r.removed == 1 ? " entry" : " entries") + " (" +
                          human_size(r.removed_bytes) +
                          (dir ? " counted against the limit, identity records included)"
                               : ", identity records included)");
        if (dir)
            out += " and " + std::to_string(r.temp_files_removed) + " temp " + (r.temp_files_removed == 1 ? "file" : "files");
        out += "\n";
        if (r.claim_files_removed != 0)
            out += "removed " + std::to_string(r.claim_files_removed) +
                   (r.claim_files_removed == 1 ? " claim file whose owner is gone (or past its bound)\n"
                                               : " claim files whose owners are gone (or past their bound)\n");
        if (prune)
            out += "left " + std::to_string(prune->entries_left) + (prune->entries_left == 1 ? " entry" : " entries") +
                   ", counting " + human_size(prune->accounted_left) + " against the limit of " +
                   (prune->limit == 0 ? std::string("none") : human_size(prune->limit)) + "\n";
        if (cache.facts.other_files != 0)
            out += "left alone " + std::to_string(cache.facts.other_files) + " other files in the fan-out folders\n";
        if (foreign != 0)
            out += "left alone " + std::to_string(foreign) + (foreign == 1 ? " row whose key is" : " rows whose key is") +
                   " not a compile_cache key (over 64 bytes, or none)\n";
        std::fputs(out.c_str(), stdout);
    }
    if (r.not_removed == 0) return exit_ok;
    return fail(cache.shown + ": " + c.command + " could not remove " + std::to_string(r.not_removed) +
                    (r.not_removed == 1 ? (dir ? " file" : " entry") : (dir ? " files" : " entries")) + " (" +
                    (r.removal_error ? r.removal_error.message() : std::string("unknown error")) + ")",
                exit_failed);
}

int run_clear(command_line const& c) {
    progress_line progress = progress_for(c);
    listed_cache lc;
    if (int const s = open_and_list(c, c.cache, cache_use::remove, progress, lc); s != exit_ok) return s;
    // A namespace named on the command line that holds nothing is likelier a typo than a
    // cache already empty: said, and exit 2, rather than "removed 0 entries" and 0.
    if (c.name_space && lc.listing.entries.empty() && lc.listing.records.empty())
        return fail(lc.cache.shown + ": no such namespace: no key on the server is \"" + printable(*c.name_space) +
                        ":\" and a key; nothing was removed (hosts use PREFIX_REMOTE_NAMESPACE's, compile_cache "
                        "by default; compile-cache stats shows a namespace's entries)",
                    exit_usage);
    if (int const s = lc.cache.may_remove(); s != exit_ok) return s;
    return report_cleanup(c, lc.cache, lc.cache.clear(lc.listing), nullptr);
}

/// The commands that are a directory's own refuse any other cache, before opening it.
void directory_only(command_line const& c) {
    std::string location;
    if (kind_of(c.cache, location) != cache_kind::directory)
        throw usage_error{c.command + " works on a cache directory only"};
}

/// prune's limit: --max-size, else the max-size the directory keeps (compile-cache set).
std::optional<std::uint64_t> prune_limit(command_line const& c) {
    if (c.max_size) {
        std::optional<std::uint64_t> const limit = compile_cache::parse_byte_size(*c.max_size);
        if (!limit)
            fail("--max-size \"" + printable(*c.max_size) +
                     "\" is not a size (bytes, or a number with K, M or G: 48K, 500M, 2G)",
                 exit_usage);
        return limit;
    }
    compile_cache::directory_settings kept;
    std::string why;
    std::string const file = c.cache + "/" + compile_cache::directory_settings_file_name;
    if (compile_cache::read_directory_settings(c.cache, compile_cache::sharing::group, kept, why) != 0) {
        fail(file + " " + why + "; give --max-size SIZE", exit_usage);
        return std::nullopt;
    }
    auto const it = kept.values.find("max-size");
    std::optional<std::uint64_t> const limit =
        it == kept.values.end() ? std::nullopt : compile_cache::parse_byte_size(it->second);
    if (it == kept.values.end())
        throw usage_error{"prune needs --max-size SIZE: " + printable(c.cache) + " keeps no max-size (compile-cache set)"};
    if (!limit) fail(file + ": max-size \"" + printable(it->second) + "\" is not a size; give --max-size SIZE", exit_usage);
    return limit;
}

int run_prune(command_line const& c) {
    directory_only(c);
    std::optional<std::uint64_t> const limit = prune_limit(c);
    if (!limit) return exit_usage;
    progress_line progress = progress_for(c);
    listed_cache lc;
    if (int const s = open_and_list(c, c.cache, cache_use::remove, progress, lc); s != exit_ok) return s;
    if (int const s = lc.cache.may_remove(); s != exit_ok) return s;
    compile_cache::directory_options options;
    options.max_size = *limit;
    compile_cache::cleanup_result const p = compile_cache::directory_storage(lc.cache.directory, options).prune();
    clear_result r{p.removed, p.removed_bytes, p.temp_files_removed, p.not_removed, p.removal_error, p.error};
    r.claim_files_removed = p.claim_files_removed;
    prune_figures figures{*limit, p.entries, p.bytes};
    // Identity records are no entries: the record files of earlier releases and packs of
    // records (each one file, a marker naming it or not) it evicted or left come out of its counts.
    directory_facts const& f = lc.cache.facts;
    std::uint64_t const gone = records_removed(lc.cache.directory, f);
    std::uint64_t const left = f.earlier_record_files.size() + f.packs.size() + f.unmarked_packs.size() - gone;
    r.removed -= std::min(r.removed, gone);
    figures.entries_left -= std::min(figures.entries_left, left);
    return report_cleanup(c, lc.cache, r, &figures);
}

// ---- zero --------------------------------------------------------------------

int run_zero(command_line const& c) {
    std::string location;
    if (kind_of(c.cache, location) != cache_kind::directory)
        return fail("zero: " + printable(c.cache) +
                        " keeps no counters to zero: hosts record theirs in their local cache directory (the "
                        "tier's local one, PREFIX_DIR), so zero that: compile-cache zero DIR",
                    exit_usage);
    progress_line progress = progress_for(c);
    listed_cache lc;
    if (int const s = open_and_list(c, c.cache, cache_use::read, progress, lc); s != exit_ok) return s;
    if (int const e = zero_directory_counters(lc.cache.directory))
        return fail(c.cache + ": cannot zero its counters: " + std::error_code(e, std::generic_category()).message(),
                    exit_failed);
    if (c.json) {
        json_writer j;
        begin_document(j, lc.cache).field("command", c.command).field("zeroed", true).end_object();
        std::fputs(j.str().c_str(), stdout);
    } else {
        std::fputs(("zeroed the counters of " + printable(c.cache) + "; the entries stay\n").c_str(), stdout);
    }
    return exit_ok;
}

} // namespace

int run_command(command_line const& c) {
    static std::pair<char const*, int (*)(command_line const&)> const table[] = {
        {"stats", run_stats}, {"list", run_list},   {"show", run_show},       {"verify", run_verify},
        {"prune", run_prune}, {"clear", run_clear}, {"explain", run_explain}, {"zero", run_zero},
        {"copy", run_copy},   {"config", run_config}, {"set", run_set},   {"keygen", run_keygen},
    };
    for (auto const& [name, run] : table)
        if (c.command == name) return run(c);
    throw usage_error{"unknown command \"" + c.command + "\""};
}

} // namespace compile_cache_tool