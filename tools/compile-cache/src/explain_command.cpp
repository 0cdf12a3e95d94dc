// compile-cache explain: the entries recorded for a kernel (its identity records,
// explain.hpp), newest first, and what changed between them — on any cache.
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
};

/// What explain found for a kernel: its records, and how many records could not be read.
struct kernel_records {
    std::vector<read_record> found;
    std::uint64_t unreadable = 0;
};

/// Step 1: the identity records that name `name`, read and checked, by origin file.
kernel_records records_naming(opened_cache const& cache, cache_listing const& l, std::string const& name,
                              compile_cache::envelope_auth const& auth) {
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
            continue;
        }
        if (env.metadata.name != name) continue;
        std::optional<compile_cache::identity_record> r = compile_cache::decode_identity_record(env.payload);
        if (!r) {
            ++out.unreadable;
            continue;
        }
        out.found.push_back({rk.name, env.metadata, std::move(*r)});
    }
    std::sort(out.found.begin(), out.found.end(), [](read_record const& a, read_record const& b) {
        return a.metadata.origin_file != b.metadata.origin_file ? a.metadata.origin_file < b.metadata.origin_file
                                                                : a.record_key < b.record_key;
    });
    return out;
}

/// What changed from entry i + 1 (older) to entry i of a history.
compile_cache::miss_explanation changes(std::vector<compile_cache::recorded_entry> const& h, std::size_t i) {
    return compile_cache::compare_components(h[i + 1].components, h[i].components);
}

/// Step 2a: the kernels' histories as JSON.
void print_explain_json(opened_cache const& cache, std::string const& name, kernel_records const& k,
                        std::set<std::string> const& present) {
    json_writer j;
    begin_document(j, cache).field("name", name).key("kernels").begin_array();
    for (read_record const& r : k.found) {
        j.begin_object().field("identity", r.record.identity).field("origin_file", r.metadata.origin_file);
        j.field("record_key", r.record_key).key("entries").begin_array();
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
    j.end_array().field("unreadable_records", k.unreadable).end_object();
    std::fputs(j.str().c_str(), stdout);
}

/// Step 2b: the same for people; every name, file and component name is printable().
void print_explain_text(std::string const& name, kernel_records const& k, std::set<std::string> const& present) {
    std::string out;
    for (read_record const& r : k.found) {
        auto const& h = r.record.history;
        out += printable(name) + " (" + printable(r.metadata.origin_file) + "): " + std::to_string(h.size()) +
               (h.size() == 1 ? " entry" : " entries") + " recorded, newest first\n";
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
    std::fputs(out.c_str(), stdout);
}

} // namespace

/// explain: the records that name the kernel, their histories and what changed between
/// entries.
int run_explain(command_line const& c) {
    compile_cache::envelope_auth auth;
    if (!auth_from(c, auth)) return exit_usage;
    progress_line progress = progress_for(c);
    listed_cache lc;
    if (int const s = open_and_list(c, c.cache, cache_use::read, progress, lc); s != exit_ok) return s;
    std::set<std::string> present;
    for (listed_entry const& e : lc.listing.entries) present.insert(e.name);
    kernel_records const k = records_naming(lc.cache, lc.listing, c.kernel_name, auth);
    if (c.json) {
        print_explain_json(lc.cache, c.kernel_name, k, present);
        return k.found.empty() ? exit_usage : exit_ok;
    }
    if (k.found.empty()) {
        std::string why = "no identity record names a kernel \"" + printable(c.kernel_name) + "\" in " +
                          printable(lc.cache.shown);
        if (k.unreadable != 0)
            why += " (" + std::to_string(k.unreadable) + " records could not be read; --secret-file?)";
        return fail(why, exit_usage);
    }
    print_explain_text(c.kernel_name, k, present);
    return exit_ok;
}

} // namespace compile_cache_tool
