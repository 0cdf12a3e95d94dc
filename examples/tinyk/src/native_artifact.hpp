// tinyk: the artifact of the native backend (native_backend.hpp), as the cache stores
// it: an object file, the symbol it defines, a source map of its run-time failure
// sites, and references (never copies) to the kernels its code calls, the kernels
// inlined into it, the dialect group and the type singletons. No LLVM header: the
// cache side (native_glue.cpp) serializes it; native_backend.cpp makes and checks it.
#pragma once

#include "ref.hpp"
#include "types.hpp"

#include <boost/serialization/split_member.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tinyk {

struct kernel;

struct native_artifact;
/// Throws std::runtime_error unless the artifact is one the JIT may link: references
/// set, the symbol is `self`'s, the source map is consistent, and the object file
/// parses as one for this machine's architecture, defines the kernel's symbols and
/// refers to no kernel but its callees and to nothing outside the tinyk runtime and
/// libm. Defined by the native backend (it parses the object with LLVM).
void validate(native_artifact const& a);

struct native_artifact {
    /// A relocatable object file for the target in the key (host triple, CPU, features).
    std::string object;
    /// The kernel's function, `tk.NAME` (double(double...)); the object also defines
    /// `tk.NAME$entry` (double(double const* args)), which the driver calls.
    std::string symbol;
    /// Source map of the code's failure sites (asserts, calls that may hit the depth
    /// limit), by site number, which the code passes to the runtime when one fails.
    /// origins[s] == 0: lines[s] is an absolute line of this kernel (shifted by
    /// relocate_source); origins[s] == k > 0: inlined from inlined[k-1], lines[s]
    /// relative to that kernel's first line (as in the bytecode artifact).
    std::vector<std::int32_t> lines;
    std::vector<std::int32_t> origins;
    std::int32_t nparams = 0;
    ref<kernel> self;                  // the kernel this is the code of (written as `self`)
    std::vector<ref<kernel>> callees;  // the kernels whose symbols the object refers to
    std::vector<ref<kernel>> inlined;  // origins of inlined code
    ref<dialect_group> dialects;
    ref<type const> result_type;
    std::vector<ref<type const>> param_types;

    template <class Ar>
    void save(Ar& ar, unsigned /*version*/) const {
        ar & object & symbol & lines & origins & nparams;
        ar & self & callees & inlined & dialects & result_type & param_types;
    }
    /// Loading checks the artifact (validate) before the JIT may link it; a bad one
    /// throws, which the cache counts as a miss.
    template <class Ar>
    void load(Ar& ar, unsigned /*version*/) {
        ar & object & symbol & lines & origins & nparams;
        ar & self & callees & inlined & dialects & result_type & param_types;
        validate(*this);
    }
    BOOST_SERIALIZATION_SPLIT_MEMBER()
};

/// Shifts the absolute lines of the artifact's own failure sites (called by the cache
/// when the kernel now starts `line_delta` lines further down than when compiled).
inline void relocate_source(native_artifact& a, std::int64_t line_delta) {
    for (std::size_t s = 0; s < a.lines.size(); ++s)
        if (s < a.origins.size() && a.origins[s] == 0)
            a.lines[s] = static_cast<std::int32_t>(a.lines[s] + line_delta);
}

} // namespace tinyk
