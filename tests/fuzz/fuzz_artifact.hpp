// The artifact the load fuzzer loads: what a real host caches for a kernel — bytecode,
// constants, a source map, the globals it read, references to the kernels it calls,
// to itself, to a type singleton and to a shared dialect set (relinked through the
// registry) — and the live objects those references resolve to. Shared by the fuzz
// target and the program that writes its seed corpus.
#pragma once

#include <compile_cache/cache.hpp>
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#include <compile_cache/storage/memory_storage.hpp>

#include <boost/serialization/map.hpp>
#include <boost/serialization/optional.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <boost/optional.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fuzzk {

namespace cc = compile_cache;

struct kernel {
    std::string name;
};
struct type_desc {
    std::string name;
};
struct dialect_set {
    std::vector<std::string> names;
};

/// One source position per instruction range: relocated when the kernel moved.
struct source_pos {
    std::uint32_t pc = 0;
    std::int32_t line = 0;
    std::int32_t column = 0;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & pc & line & column;
    }
};

struct artifact {
    std::string name;
    std::uint32_t nparams = 0;
    std::vector<std::uint8_t> bytecode;
    std::vector<double> constants;
    std::vector<source_pos> source_map;
    std::map<std::string, double> globals_read;
    std::vector<cc::ref<kernel>> callees;
    cc::ref<kernel> self;
    cc::ref<type_desc> result_type;
    cc::ref<dialect_set> dialects;
    boost::optional<std::string> doc; // Boost 1.74 serializes boost::optional, not std::optional

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & name & nparams & bytecode & constants & source_map & globals_read & callees & self & result_type &
            dialects & doc;
    }
};

/// The host's relocation: lines shift by delta (wrapping, as the host's own line
/// numbers are not the library's business).
inline void relocate_source(artifact& a, std::int64_t delta) {
    for (auto& p : a.source_map)
        p.line = static_cast<std::int32_t>(static_cast<std::uint32_t>(p.line) + static_cast<std::uint32_t>(delta));
}

template <class Serializer>
using memory_cache = cc::basic_cache<cc::sha256, Serializer, cc::registry, cc::memory_storage>;
template <class Serializer>
using directory_cache = cc::basic_cache<cc::sha256, Serializer, cc::registry, cc::directory_storage>;

/// The secret of keyed caches.
inline std::string const secret = "compile_cache load fuzzer secret, 32+ bytes";
inline cc::entry_info const info{"fuzzed", "fuzz.tk", 10};

/// The live world: kernels, a singleton type, a dialect set, and their keys.
struct world {
    kernel self{"fuzzed"};
    kernel callee_a{"callee_a"};
    kernel callee_b{"callee_b"};
    type_desc f64{"f64"};
    type_desc i32{"i32"};
    dialect_set core{{"arith", "func", "scf"}};

    cc::key_result key = cc::key_builder<>().add("ir", "fuzzed kernel").finish();
    cc::key_result key_a = cc::key_builder<>().add("ir", "callee a").finish();
    cc::key_result key_b = cc::key_builder<>().add("ir", "callee b").finish();

    /// Registers everything with `r`, as a host does before loading.
    void register_with(cc::registry& r) {
        r.bind(&self, key.value());
        r.bind(&callee_a, key_a.value());
        r.bind(&callee_b, key_b.value());
        r.add_singleton("fuzzk.type.f64", &f64);
        r.add_singleton("fuzzk.type.i32", &i32);
        r.add_shared("fuzzk.dialects.core", &core);
    }

    /// A typical artifact referring to the world.
    artifact sample() {
        artifact a;
        a.name = "fuzzed";
        a.nparams = 3;
        a.bytecode = {0x01, 0x00, 0x02, 0x01, 0x10, 0x00, 0x01, 0x20, 0x02, 0x30, 0x40, 0x00, 0xff};
        a.constants = {2.0, 0.5, -1.25, 1e300};
        a.source_map = {{0, 11, 5}, {4, 12, 9}, {9, 13, 2}};
        a.globals_read = {{"alpha", 2.0}, {"beta", 0.5}};
        a.callees = {&callee_a, &callee_b, &callee_a};
        a.self = &self;
        a.result_type = &f64;
        a.dialects = &core;
        a.doc = "y = a*x + y";
        return a;
    }

    /// Whether every reference in a loaded artifact is a live object of this world, of
    /// the right kind: a wrong relink would be a library bug, not a miss.
    bool relinked_soundly(artifact const& a) const {
        for (auto const& c : a.callees)
            if (c && c.get() != &callee_a && c.get() != &callee_b && c.get() != &self) return false;
        if (a.self && a.self.get() != &self && a.self.get() != &callee_a && a.self.get() != &callee_b) return false;
        if (a.result_type && a.result_type.get() != &f64 && a.result_type.get() != &i32) return false;
        if (a.dialects && a.dialects.get() != &core) return false;
        return true;
    }
};

/// The first byte of a fuzz input: how the rest is used.
enum mode_bits : unsigned {
    wrap_payload = 1u,     ///< the rest is a payload, wrapped in a valid envelope; else a raw entry
    keyed = 2u,            ///< the cache has a secret (and wraps with it)
    text_archive = 4u,     ///< boost_text instead of boost_binary
    moved = 8u,            ///< the kernel now starts on another line: relocation runs
    on_disk = 16u | 32u | 64u, ///< all three: directory_storage in a temp dir (1 input in 8: it is 4 times slower)
};

} // namespace fuzzk
