// libFuzzer target over the whole load path of basic_cache: storage read, envelope
// check (unkeyed CRC-32C or keyed HMAC-SHA256), Boost deserialization of a realistic
// artifact (fuzz_artifact.hpp), relinking of its references through the registry, and
// relocation of its source positions.
//
// The first input byte selects the mode (fuzzk::mode_bits); the rest is either
//  - a raw entry (bit 0 clear): stored as it is under the key being loaded, so the
//    fuzzer attacks the envelope itself; or
//  - a payload (bit 0 set): wrapped here in a valid envelope for the key (with the
//    cache's secret when keyed), so that the bytes get past the check and reach Boost
//    and the resolver, which no random entry would.
// Every outcome must be a hit or a counted miss; a hit must hold only live objects of
// the registry. Crashes, sanitizer reports, leaks and allocations over
// -malloc_limit_mb are failures. Build and run: scripts/fuzz.sh.
#include "fuzz_artifact.hpp"

#include <compile_cache/envelope.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <unistd.h>

namespace {

using namespace fuzzk;

template <class Cache>
struct target {
    world w;
    Cache cache;
    cc::envelope_auth auth;

    template <class Storage>
    target(Storage storage, bool with_secret)
        : cache(std::move(storage), options(with_secret)), auth(with_secret ? secret : std::string()) {
        w.register_with(cache.resolver());
    }

    static cc::cache_options options(bool with_secret) {
        cc::cache_options o;
        o.max_entry_size = std::size_t{1} << 20;
        if (with_secret) o.secret = secret;
        return o;
    }

    void run(unsigned mode, std::string_view rest) {
        std::string entry;
        if (mode & wrap_payload) {
            cc::entry_metadata m;
            m.name = info.name;
            m.origin_file = info.origin_file;
            m.origin_line = info.origin_line;
            m.format_id = Cache::template entry_format_id<artifact>();
            std::size_t const at = cc::begin_envelope(entry, w.key.value(), m, auth);
            entry.append(rest.data(), rest.size());
            cc::seal_envelope(entry, at, auth);
        } else {
            entry.assign(rest.data(), rest.size());
        }
        if (cache.storage().write(w.key.value(), entry)) return; // storage full or broken: nothing to load
        cc::entry_info here = info;
        if (mode & moved) here.origin_line += 2;
        auto const before = cache.stats();
        std::optional<artifact> a = cache.template load<artifact>(w.key, here, &w.self);
        auto const after = cache.stats();
        // Exactly one outcome was counted: a hit, or a miss with a reason.
        if (after.hits + after.total_misses() != before.hits + before.total_misses() + 1) std::abort();
        if (a.has_value() != (after.hits == before.hits + 1)) std::abort();
        if (!a) return;
        if (!w.relinked_soundly(*a)) std::abort();
        // Touch everything, so that the sanitizers see any bad memory in it.
        std::size_t sum = a->name.size() + a->nparams;
        for (auto b : a->bytecode) sum += b;
        for (double c : a->constants) sum += static_cast<std::size_t>(c == c);
        for (auto const& p : a->source_map) sum += p.pc + static_cast<std::size_t>(p.line) + static_cast<std::size_t>(p.column);
        for (auto const& [name, value] : a->globals_read) sum += name.size() + static_cast<std::size_t>(value == value);
        for (auto const& c : a->callees) sum += c ? c->name.size() : 0;
        if (a->result_type) sum += a->result_type->name.size();
        if (a->dialects) sum += a->dialects->names.size();
        if (a->doc) sum += a->doc->size();
        volatile std::size_t sink = sum;
        (void)sink;
    }
};

/// A private temp directory for the on-disk mode, removed at exit.
struct temp_root {
    std::string path;
    temp_root() {
        char const* base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/cc-load-fuzzer-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) std::abort();
        path = pattern;
    }
    ~temp_root() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

template <class Serializer>
struct targets {
    target<memory_cache<Serializer>> memory_unkeyed{cc::memory_storage{}, false};
    target<memory_cache<Serializer>> memory_keyed{cc::memory_storage{}, true};
    target<directory_cache<Serializer>> disk_unkeyed;
    target<directory_cache<Serializer>> disk_keyed;

    explicit targets(std::string const& root)
        : disk_unkeyed{cc::directory_storage(root + "/unkeyed"), false},
          disk_keyed{cc::directory_storage(root + "/keyed"), true} {}

    void run(unsigned mode, std::string_view rest) {
        bool const k = (mode & keyed) != 0;
        if ((mode & on_disk) == on_disk)
            (k ? disk_keyed.run(mode, rest) : disk_unkeyed.run(mode, rest));
        else
            (k ? memory_keyed.run(mode, rest) : memory_unkeyed.run(mode, rest));
    }
};

struct everything {
    temp_root root;
    targets<cc::boost_binary> binary{root.path + "/binary"};
    targets<cc::boost_text> text{root.path + "/text"};

    // LOAD_FUZZER_STATS=1: what the inputs did, per target, at exit (to check that
    // the seeds are hits and see what the fuzzer reaches).
    ~everything() {
        if (std::getenv("LOAD_FUZZER_STATS") == nullptr) return;
        print("binary memory unkeyed", binary.memory_unkeyed.cache);
        print("binary memory keyed", binary.memory_keyed.cache);
        print("binary disk unkeyed", binary.disk_unkeyed.cache);
        print("binary disk keyed", binary.disk_keyed.cache);
        print("text memory unkeyed", text.memory_unkeyed.cache);
        print("text memory keyed", text.memory_keyed.cache);
        print("text disk unkeyed", text.disk_unkeyed.cache);
        print("text disk keyed", text.disk_keyed.cache);
    }
    template <class Cache>
    static void print(char const* name, Cache const& c) {
        std::fprintf(stderr, "load_fuzzer %s: %s\n", name, c.stats().summary().c_str());
    }
};

everything& state() {
    static everything e; // destroyed at exit, which removes the temp directory
    return e;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size == 0) return 0;
    unsigned const mode = data[0];
    std::string_view const rest(reinterpret_cast<char const*>(data + 1), size - 1);
    everything& e = state();
    if (mode & text_archive)
        e.text.run(mode, rest);
    else
        e.binary.run(mode, rest);
    return 0;
}
