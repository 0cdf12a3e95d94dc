// compile-cache explain: the entries recorded for a kernel (its identity records,
// explain.hpp), newest first, and what changed between them — on any cache; a signer's
// copy of a record is shown only while the trusted keys given trust its signer, as hosts do.
#include "command_support.hpp"
#include "entry_check.hpp"
#include "opened_cache.hpp"
#include "output.hpp"

#include <compile_cache/explain.hpp>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace compile_cache_tool {

namespace {

/// A kernel's identity record as read from the cache.
struct read_record {
    std::string record_key; ///< hex
    compile_cache::entry_metadata metadata;
    compile_cache::identity_record record;
    /// A signer's local copy (envelope flag 0x0200): a host uses it only while it trusts
    /// `signer_id`; shown here only when the trusted keys given do, or none were given.
    bool signer_copy = false;
    compile_cache::entry_signer_id signer_id{};
};

/// A signer's copy of a record of the kernel whose signer the trusted keys given do not
/// list: a host with those keys refuses it (refuse_untrusted_copy), so no history is shown.
struct refused_record {
    std::string record_key; ///< hex
    std::string origin_file;
    compile_cache::entry_signer_id signer_id{};
};

/// What explain found for a kernel: its records, those refused for their signer, and how
/// many records could not be read.
struct kernel_records {
    std::vector<read_record> found;
    std::vector<refused_record> refused;
    std::uint64_t unreadable = 0;
    std::uint64_t refused_reads = 0; ///< of the unreadable, those the storage refused to read (exit 3)
};

/// Step 1: the identity records that name `name`, read and checked, by origin file; with
/// trusted keys (`trusted` given), a signer's copy whose signer they do not list is refused.
kernel_records records_naming(opened_cache const& cache, cache_listing const& l, std::string const& name,
                              compile_cache::envelope_auth const& auth, trusted_signers const& trusted) {
    kernel_records out;
    for (listed_entry const& rk : l.records) {
        std::string bytes;
        compile_cache::read_result const rr = cache.read(rk.k, bytes, compile_cache::identity_record_max_size);
        if (rr.status == compile_cache::read_status::absent) continue; // removed since it was listed
        compile_cache::opened_envelope const env =
            rr.status == compile_cache::read_status::found ? compile_cache::inspect_envelope(bytes, auth)
                                                           : compile_cache::opened_envelope{};
        if (rr.status != compile_cache::read_status::found || env.status != compile_cache::envelope_status::ok ||
            !(env.stored_key == rk.k) || env.metadata.format_id != compile_cache::identity_record_format) {
            ++out.unreadable;
            out.refused_reads += rr.status == compile_cache::read_status::error ? 1 : 0;
            continue;
        }
        if (env.metadata.name != name) continue;
        if (env.signer_copy && trusted.given() && !trusted.trusts(env.signer_id)) {
            out.refused.push_back({rk.name, env.metadata.origin_file, env.signer_id});
            continue;
        }
        std::optional<compile_cache::identity_record> r = compile_cache::decode_identity_record(env.payload);
        if (!r) {
            ++out.unreadable;
            continue;
        }
        out.found.push_back({rk.name, env.metadata, std::move(*r), env.signer_copy, env.signer_id});
    }
    std::sort(out.found.begin(), out.found.end(), [](read_record const& a, read_record const& b) {
        return a.metadata.origin_file != b.metadata.origin_file ? a.metadata.origin_file < b.metadata.origin_file
                                                                : a.record_key < b.record_key;
    });
    std::sort(out.refused.begin(), out.refused.end(), [](refused_record const& a, refused_record const& b) {
        return a.origin_file != b.origin_file ? a.origin_file < b.origin_file : a.record_key < b.record_key;
    });
    return out;
}

/// "1 record refused: signed by key id 0123456789abcdef, not a trusted key (...)": the
/// refused records said apart, each signer once; empty when none was refused.
std::string refused_text(std::vector<refused_record> const& refused) {
    if (refused.empty()) return {};
    std::vector<std::string> signers;
    for (refused_record const& r : refused) {
        std::string id = signer_hex(r.signer_id);
        if (std::find(signers.begin(), signers.end(), id) == signers.end()) signers.push_back(std::move(id));
    }
    std::string t = std::to_string(refused.size()) + (refused.size() == 1 ? " record" : " records") +
                    " refused: signed by key id" + (signers.size() == 1 ? " " : "s ");
    for (std::size_t i = 0; i < signers.size(); ++i) t += (i == 0 ? "" : ", ") + signers[i];
    t += signers.size() == 1 ? ", not a trusted key" : ", not trusted keys";
    return t + " (a host that trusts these keys misses " + (refused.size() == 1 ? "it)" : "them)");
}

/// The line under a signer's copy's heading: its signer's key id, and whether and as
/// what the trusted keys given list it (as show's signer line says it).
std::string signer_line(read_record const& r, trusted_signers const& trusted) {
    std::string const id = "key id " + signer_hex(r.signer_id) + ", of the signed record this is a local copy of";
    if (!trusted.given())
        return id + " (not checked: give --trusted-keys-file; a host that does not trust it, or has no trusted keys, "
                    "misses this record)";
    return id + " (trusted key " + printable(trusted.name_of(r.signer_id)) + ")";
}

/// What changed from entry i + 1 (older) to entry i of a history.
compile_cache::miss_explanation changes(std::vector<compile_cache::recorded_entry> const& h, std::size_t i) {
    return compile_cache::compare_components(h[i + 1].components, h[i].components);
}

/// Step 2a: the kernels' histories as JSON.
void print_explain_json(opened_cache const& cache, std::string const& name, kernel_records const& k,
                        std::set<std::string> const& present, trusted_signers const& trusted) {
    json_writer j;
    begin_document(j, cache).field("name", name).key("kernels").begin_array();
    for (read_record const& r : k.found) {
        j.begin_object().field("identity", r.record.identity).field("origin_file", r.metadata.origin_file);
        j.field("record_key", r.record_key);
        // A signer's copy: its signer's key id, and whether the trusted keys given were asked
        // about it (then they trust it: else it is refused); its name when they list it.
        j.field("signer_copy", r.signer_copy).key("signer_key_id");
        if (r.signer_copy) j.value(signer_hex(r.signer_id)); else j.null();
        j.key("signer_key_name");
        std::string const signer_name = r.signer_copy ? trusted.name_of(r.signer_id) : std::string();
        if (signer_name.empty()) j.null(); else j.value(signer_name);
        j.field("signer_checked", r.signer_copy && trusted.given());
        j.key("entries").begin_array();
        auto const& h = r.record.history;
        for (std::size_t i = 0; i < h.size(); ++i) {
            j.begin_object().field("key", h[i].entry_key.hex()).field("created", utc_time(h[i].created_ns));
            j.field("created_ns", h[i].created_ns).field("compile_ns", h[i].compile_ns);
            j.field("present", present.count(h[i].entry_key.hex()) != 0);
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
    j.end_array().field("unreadable_records", k.unreadable);
    // Signer's copies the trusted keys given do not trust: no history, listed apart.
    j.key("untrusted_signer_records").begin_array();
    for (refused_record const& r : k.refused) {
        j.begin_object().field("record_key", r.record_key).field("origin_file", r.origin_file);
        j.field("signer_key_id", signer_hex(r.signer_id)).end_object();
    }
    j.end_array().end_object();
    std::fputs(j.str().c_str(), stdout);
}

/// Step 2b: the same for people; every name, file and component name is printable().
/// A signer's copy has a line under its heading (signer_line); the refused ones a line
/// after the histories (refused_text).
void print_explain_text(std::string const& name, kernel_records const& k, std::set<std::string> const& present,
                        trusted_signers const& trusted) {
    std::string out;
    for (read_record const& r : k.found) {
        auto const& h = r.record.history;
        out += printable(name) + " (" + printable(r.metadata.origin_file) + "): " + std::to_string(h.size()) +
               (h.size() == 1 ? " entry" : " entries") + " recorded, newest first\n";
        if (r.signer_copy) out += "  signer: " + signer_line(r, trusted) + "\n";
        for (std::size_t i = 0; i < h.size(); ++i) {
            bool const there = present.count(h[i].entry_key.hex()) != 0;
            out += "  " + std::to_string(i + 1) + ". " + local_time(h[i].created_ns) + "  key " +
                   h[i].entry_key.hex().substr(0, 16) + "  compiled in " + human_duration_ns(h[i].compile_ns) + "  " +
                   (there ? "present" : "gone (evicted or removed)") + "\n";
            // text() makes every component name printable.
            out += "     " + (i + 1 < h.size() ? "since " + std::to_string(i + 2) + ": " + changes(h, i).text()
                                               : std::string("the oldest recorded")) + "\n";
        }
    }
    if (!k.refused.empty()) out += refused_text(k.refused) + "\n";
    std::fputs(out.c_str(), stdout);
}

} // namespace

/// explain: the records that name the kernel, their histories and what changed between
/// entries; exit 2 when none is shown (none names it, or each was refused for its signer).
int run_explain(command_line const& c) {
    compile_cache::envelope_auth auth;
    if (!auth_from(c, auth)) return exit_usage;
    trusted_signers trusted;
    if (!trusted_from(c, trusted)) return exit_usage;
    progress_line progress = progress_for(c);
    listed_cache lc;
    if (int const s = open_and_list(c, c.cache, cache_use::read, progress, lc); s != exit_ok) return s;
    std::set<std::string> present;
    for (listed_entry const& e : lc.listing.entries) present.insert(e.name);
    kernel_records const k = records_naming(lc.cache, lc.listing, c.kernel_name, auth, trusted);
    // Records the storage would not let it read may be the kernel's: what is shown may be incomplete, and
    // "no record names it" would not be known (exit 3, as list and verify).
    auto const refused_reads = [&] {
        return fail(lc.cache.shown + ": could not read " + std::to_string(k.refused_reads) +
                        (k.refused_reads == 1 ? " identity record" : " identity records") +
                        " (the storage refused); the history shown may be incomplete",
                    exit_failed);
    };
    if (c.json) {
        print_explain_json(lc.cache, c.kernel_name, k, present, trusted);
        if (k.refused_reads != 0) return refused_reads();
        return k.found.empty() ? exit_usage : exit_ok;
    }
    if (k.refused_reads != 0 && k.found.empty()) return refused_reads();
    if (k.found.empty()) {
        std::string why = "no identity record";
        if (!k.refused.empty()) why += " a host that trusts these keys reads";
        why += " names a kernel \"" + printable(c.kernel_name) + "\" in " + printable(lc.cache.shown);
        if (!k.refused.empty()) why += ": " + refused_text(k.refused);
        if (k.unreadable != 0)
            why += " (" + std::to_string(k.unreadable) + " records could not be read; --secret-file?)";
        return fail(why, exit_usage);
    }
    print_explain_text(c.kernel_name, k, present, trusted);
    return k.refused_reads != 0 ? refused_reads() : exit_ok;
}

} // namespace compile_cache_tool
