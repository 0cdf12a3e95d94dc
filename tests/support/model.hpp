// The small host compiler the tests cache for: the live objects a host keeps (kernels,
// dialect groups, type singletons) and the compiled kernel it caches, which refers to
// them through cc::ref and carries source positions the cache can move.
// No Catch2 here: helper programs use it too.
#pragma once

#include <compile_cache/resolver/reference.hpp>

#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace compile_cache_test::model {

/// A live kernel of the host: an artifact refers to it, never copies it.
struct kernel {
    std::string name;
};
struct dialect_group {
    std::string name;
};
/// Compared by identity in the host, so it must load as the same object.
struct type {
    std::string name;
};

struct source_position {
    std::int32_t line = 0;
    std::int32_t column = 0;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & line & column;
    }
    friend bool operator==(source_position const& a, source_position const& b) {
        return a.line == b.line && a.column == b.column;
    }
};

/// How often the cache moved a kernel's source positions, and by how much last.
struct relocation_log {
    int calls = 0;
    std::int64_t last_delta = 0;
};
inline relocation_log relocations;

/// How many times a compiled kernel's bytes reached Boost's loader.
inline int kernels_deserialized = 0;

struct compiled_kernel {
    std::string name;
    std::vector<std::uint8_t> bytecode;
    std::vector<double> constants;
    std::vector<std::int64_t> source_lines;              // one per instruction
    std::map<std::uint32_t, source_position> source_map; // bytecode offset -> source
    std::vector<compile_cache::ref<kernel>> callees;
    compile_cache::ref<dialect_group> dialects;
    compile_cache::ref<type> result_type;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        if (Archive::is_loading::value) ++kernels_deserialized;
        ar & name & bytecode & constants & source_lines & source_map & callees & dialects & result_type;
    }

    /// Found by the cache through ADL: lines were added above the kernel.
    friend void relocate_source(compiled_kernel& k, std::int64_t delta) {
        ++relocations.calls;
        relocations.last_delta = delta;
        for (auto& line : k.source_lines) line += delta;
        for (auto& entry : k.source_map) entry.second.line += static_cast<std::int32_t>(delta);
    }
};

/// Field by field (constants compared with ==: a NaN is never the same).
inline bool same_kernel(compiled_kernel const& a, compiled_kernel const& b) {
    return a.name == b.name && a.bytecode == b.bytecode && a.constants == b.constants &&
           a.source_lines == b.source_lines && a.source_map == b.source_map && a.callees == b.callees &&
           a.dialects == b.dialects && a.result_type == b.result_type;
}

/// A kernel without references: "axpy", seven bytes of bytecode, two constants.
inline compiled_kernel small_kernel() {
    compiled_kernel k;
    k.name = "axpy";
    k.bytecode = {0x01, 0x02, 0x10, 0x20, 0x21, 0x30, 0xff};
    k.constants = {2.0, 0.5};
    return k;
}

/// A kernel that is only its code: for the tests of settings and storages, where what
/// the artifact holds does not matter.
struct code_kernel {
    std::vector<int> code;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & code;
    }
};

} // namespace compile_cache_test::model
