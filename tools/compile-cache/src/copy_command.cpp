// compile-cache copy: every entry of one cache into another, byte for byte, each
// checked on the way — between any two of a directory, a SQLite file and a Redis
// server (the CI artifact: a directory into one SQLite file and back).
#include "command_support.hpp"
#include "entry_check.hpp"
#include "opened_cache.hpp"
#include "output.hpp"

#include <compile_cache/detail/held_batch_bounds.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache_tool {

namespace {

/// "30s", "15m", "12h", "7d" (or seconds alone) as seconds; nullopt when it is none.
std::optional<std::int64_t> parse_age(std::string const& text) {
    if (text.empty()) return std::nullopt;
    std::size_t digits = 0;
    std::int64_t n = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9' && digits < 12)
        n = n * 10 + (text[digits++] - '0');
    if (digits == 0) return std::nullopt;
    std::string const unit = text.substr(digits);
    if (unit.empty() || unit == "s") return n;
    if (unit == "m") return n * 60;
    if (unit == "h") return n * 3600;
    if (unit == "d") return n * 86400;
    return std::nullopt;
}

/// The identity records written to DST since its last flush: what a directory holds and
/// writes as one batch (a pack), all written or all refused by the flush.
struct held_records {
    std::uint64_t records = 0, bytes = 0;
    std::int64_t since_ns = 0; ///< when the first was written (steady_ns, the clock of held_batch_bounds)
};

/// What copy did with each entry.
struct copy_tally {
    std::uint64_t copied = 0, copied_records = 0, copied_bytes = 0;
    held_records held; ///< of copied_records and copied_bytes, those DST may still refuse
    std::uint64_t already = 0;  ///< in DST with the same bytes: not written again
    std::uint64_t filtered = 0; ///< left out by --name or --since
    std::uint64_t bad = 0, unchecked = 0;
    std::uint64_t unread = 0; ///< of the unchecked, those SRC refused to read
    std::uint64_t failed = 0, failed_records = 0; ///< refused by DST: entries and records; of them, records
    std::vector<std::string> unchecked_causes;
    std::error_code first_failure;
};

/// Makes the records DST holds (flush); when that fails, each of them is counted refused, not copied.
void flush_held(opened_cache const& dst, copy_tally& t) {
    std::error_code const ec = dst.flush();
    if (ec && t.held.records != 0) {
        t.failed += t.held.records;
        t.failed_records += t.held.records;
        t.copied_records -= t.held.records;
        t.copied_bytes -= t.held.bytes;
        if (!t.first_failure) t.first_failure = ec;
    }
    t.held = {};
}

/// Whether DST's batch is to be made before a record of `size` bytes is written: when that write
/// would make a directory's batch due (held_batch_bounds: its keys, its bytes, and half its age,
/// for the time the write takes), so that no write makes it and a batch's failure is a flush's.
bool batch_due_before(held_records const& h, std::size_t size) {
    if (h.records == 0) return false;
    return compile_cache::detail::held_batch_bounds::due(static_cast<std::size_t>(h.records) + 1,
                                                         static_cast<std::size_t>(h.bytes) + size,
                                                         2 * (compile_cache::detail::steady_ns() - h.since_ns));
}

/// Whether `path` (a cache directory or SQLite file) is this user's, and no one else may
/// write it: its owner is the effective user, and it is not group- or world-writable.
bool written_by_this_user_alone(std::string const& path) {
    struct ::stat st {};
    return ::stat(path.c_str(), &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/// Copies one entry or record of SRC into DST, byte for byte, once it checks. From a
/// cache others can write (`from_others`: a server, Redis or HTTP, or a directory or
/// SQLite file not written by this user alone), a signer's local copy is never copied: a
/// host takes only signed entries from a remote, and a copy is sealed by the local mode
/// alone (the secret every reader holds, or a CRC-32C), which anyone who can write there
/// can make, naming any signer.
void copy_one(command_line const& c, listed_cache const& src, opened_cache const& dst,
              std::unordered_map<std::string, std::uint64_t> const& in_dst, listed_entry const& e, bool record,
              compile_cache::envelope_auth const& auth, trusted_signers const& trusted, bool from_others,
              std::optional<std::int64_t> since_s, copy_tally& t) {
    if (since_s && (e.use_ns == 0 || age_s(e.use_ns) > *since_s)) {
        ++t.filtered;
        return;
    }
    std::string bytes;
    checked_entry check = read_and_check(src.cache, e, auth, bytes, trusted.given() ? &trusted : nullptr);
    if (from_others && check.envelope.signer_copy && check.result != verdict::bad) {
        check.result = verdict::unchecked;
        check.read_cause = "signers' local copies in a cache others can write: only signed entries are taken from it";
    }
    // A signer's local copy whose check value verifies is unchecked without trusted keys
    // (whether its signer is trusted), and copied all the same: the destination's hosts
    // ask their own trusted keys about its signer, as this directory's do.
    bool const signer_copy = check.result == verdict::unchecked && check.envelope.signer_copy &&
                             check.envelope.status == compile_cache::envelope_status::ok && !trusted.given() &&
                             !from_others;
    if (check.result != verdict::sound && !signer_copy) {
        if (check.result == verdict::bad) {
            ++t.bad;
            if (!c.json) std::printf("skipped: %s: %s\n", src.cache.entry_label(e.name).c_str(), check.problem.c_str());
        } else {
            ++t.unchecked;
            t.unread += check.read_failed ? 1 : 0;
            std::string cause = unchecked_cause(check);
            if (std::find(t.unchecked_causes.begin(), t.unchecked_causes.end(), cause) == t.unchecked_causes.end())
                t.unchecked_causes.push_back(std::move(cause));
        }
        return;
    }
    if (c.name_glob && ::fnmatch(c.name_glob->c_str(), check.envelope.metadata.name.c_str(), 0) != 0) {
        ++t.filtered;
        return;
    }
    // Idempotent: what DST already holds, byte for byte, is not written again.
    auto const there = in_dst.find(e.name);
    if (there != in_dst.end() && there->second == bytes.size()) {
        std::string theirs;
        compile_cache::read_result const r = dst.read(e.k, theirs, bytes.size());
        if (r.status == compile_cache::read_status::found && theirs == bytes) {
            ++t.already;
            return;
        }
    }
    if (record && batch_due_before(t.held, bytes.size())) flush_held(dst, t);
    if (record && t.held.records == 0) t.held.since_ns = compile_cache::detail::steady_ns();
    if (std::error_code const ec = dst.write(e.k, bytes)) { // (this one alone: its batch is not due)
        ++t.failed;
        t.failed_records += record ? 1 : 0;
        if (!t.first_failure) t.first_failure = ec;
        return;
    }
    ++(record ? t.copied_records : t.copied);
    t.copied_bytes += bytes.size();
    if (!record) return;
    ++t.held.records;
    t.held.bytes += bytes.size();
}

/// What DST refused, in words: "3 entries", "512 identity records", "1 entry and 2 identity records".
std::string refused_text(copy_tally const& t) {
    std::uint64_t const entries = t.failed - t.failed_records;
    std::string const e = std::to_string(entries) + (entries == 1 ? " entry" : " entries");
    std::string const r =
        std::to_string(t.failed_records) + (t.failed_records == 1 ? " identity record" : " identity records");
    if (t.failed_records == 0) return e;
    return entries == 0 ? r : e + " and " + r;
}

void print_copy_summary(command_line const& c, listed_cache const& src, opened_cache const& dst, copy_tally const& t) {
    if (c.json) {
        json_writer j;
        j.begin_object().field("source", src.cache.shown).field("destination", dst.shown);
        j.field("copied", t.copied).field("copied_identity_records", t.copied_records).field("copied_bytes", t.copied_bytes);
        j.field("already_there", t.already).field("filtered_out", t.filtered).field("skipped_bad", t.bad);
        j.field("skipped_unchecked", t.unchecked).field("failed", t.failed);
        j.field("failed_identity_records", t.failed_records); // (of the failed)
        j.field("destination_listed", !dst.unlisted).end_object();
        std::fputs(j.str().c_str(), stdout);
        return;
    }
    std::string out = "copied " + std::to_string(t.copied) + (t.copied == 1 ? " entry" : " entries") + " and " +
                      std::to_string(t.copied_records) + " identity records (" + human_size(t.copied_bytes) +
                      ") from " + printable(src.cache.shown) + " to " + printable(dst.shown) + "; " +
                      std::to_string(t.already) + " already there, " + std::to_string(t.bad) + " skipped as bad, " +
                      std::to_string(t.unchecked) + " not checked";
    for (std::size_t i = 0; i < t.unchecked_causes.size(); ++i) out += (i == 0 ? " (" : "; ") + t.unchecked_causes[i];
    if (!t.unchecked_causes.empty()) out += ")";
    if (c.name_glob || c.since) out += ", " + std::to_string(t.filtered) + " filtered out";
    if (t.failed != 0) out += ", " + refused_text(t) + " refused by the destination";
    if (dst.unlisted) out += " (the destination cannot list its entries, so none was taken as already there)";
    std::fputs((out + "\n").c_str(), stdout);
}

} // namespace

int run_copy(command_line const& c) {
    compile_cache::envelope_auth auth;
    if (!auth_from(c, auth)) return exit_usage;
    trusted_signers trusted;
    if (!trusted_from(c, trusted)) return exit_usage;
    std::optional<std::int64_t> since_s;
    if (c.since && !(since_s = parse_age(*c.since)))
        return fail("--since \"" + printable(*c.since) + "\" is not an age (30s, 15m, 12h, 7d)", exit_usage);
    std::string location, source;
    cache_kind const from = kind_of(c.cache, source), to = kind_of(c.destination, location);
    bool const from_others =
        from == cache_kind::redis || from == cache_kind::http || !written_by_this_user_alone(source);
    auto const either = [&](cache_kind k) { return from == k || to == k; };
    if (c.name_space && !either(cache_kind::redis)) throw usage_error{"--namespace is an option for a Redis cache"};
    if (c.password_file && !either(cache_kind::redis) && !either(cache_kind::http))
        throw usage_error{"--password-file is an option for a Redis or HTTP cache"};
    if ((c.layout || c.ca_file || c.token_file) && !either(cache_kind::http))
        throw usage_error{std::string(c.layout ? "--layout" : c.ca_file ? "--ca-file" : "--token-file") +
                          " is an option for an HTTP cache"};
    progress_line progress = progress_for(c);
    listed_cache src, dst;
    if (int const s = open_and_list(c, c.cache, cache_use::read, progress, src); s != exit_ok) return s;
    if (int const s = open_and_list(c, c.destination, cache_use::write, progress, dst); s != exit_ok) return s;
    std::unordered_map<std::string, std::uint64_t> in_dst;
    for (auto const* list : {&dst.listing.entries, &dst.listing.records})
        for (listed_entry const& e : *list) in_dst.emplace(e.name, e.size);
    copy_tally t;
    std::size_t const total = src.listing.entries.size() + src.listing.records.size();
    std::uint64_t done = 0;
    for (auto const* list : {&src.listing.entries, &src.listing.records})
        for (listed_entry const& e : *list) {
            copy_one(c, src, dst.cache, in_dst, e, list == &src.listing.records, auth, trusted, from_others, since_s,
                     t);
            progress.update("copying entries", ++done, total, total);
        }
    progress.finish();
    // A directory holds the identity records written until its batch is made a pack:
    // written now, before the summary says they were copied.
    flush_held(dst.cache, t);
    print_copy_summary(c, src, dst.cache, t);
    if (t.failed != 0)
        return fail(dst.cache.shown + ": refused " + refused_text(t) + ": " + t.first_failure.message(), exit_failed);
    if (t.unread != 0)
        return fail(src.cache.shown + ": could not read " + std::to_string(t.unread) +
                        (t.unread == 1 ? " entry or identity record" : " entries or identity records") +
                        ", so they were not copied",
                    exit_failed);
    if (t.bad != 0) return exit_bad_entries;
    return t.unchecked != 0 ? exit_unchecked : exit_ok;
}

} // namespace compile_cache_tool
