// tinyk: bytecode for the register VM, and the compiled artifact that the cache
// stores: code, constants, source map, and references (never copies) to the kernels
// it calls, the dialect group and the type singletons.
#pragma once

#include "ref.hpp"
#include "types.hpp"

#include <boost/serialization/split_member.hpp>
#include <boost/serialization/vector.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tinyk {

struct kernel;

namespace bc {

// Every instruction is four 32-bit words: op, a, b, c. Registers are frame-relative.
enum op : std::int32_t {
    loadk,  // r[a] = K[b]
    mov,    // r[a] = r[b]
    add, sub, mul, div, lt, le, gt, ge, eq, ne, min, max, // r[a] = r[b] OP r[c]
    neg, not_, sqrt, abs, floor,                          // r[a] = OP r[b]
    jmp,    // pc = a
    jz,     // if r[a] == 0: pc = b
    call,   // r[a] = callees[b](r[c], r[c+1], ...)
    ret,    // return r[a]
    assert_, // if r[a] == 0: assertion failure at this instruction's source position
    op_count
};

char const* name(std::int32_t op);
inline constexpr int words = 4;

} // namespace bc

struct artifact;
/// Throws std::runtime_error unless every register, constant, jump target and callee
/// index is in range, calls pass the callee's parameter count inside the frame, the
/// source map covers the code, and the references are set.
void validate(artifact const& a);

struct artifact {
    std::vector<std::int32_t> code;   // bc::words per instruction
    std::vector<double> constants;
    // Source map, one entry per instruction. origins[pc] == 0: lines[pc] is an absolute
    // line of this kernel (shifted by relocate_source when the kernel moves);
    // origins[pc] == k > 0: the instruction was inlined from inlined[k-1] and lines[pc]
    // is relative to that kernel's first line, so it follows that kernel wherever it is.
    std::vector<std::int32_t> lines;
    std::vector<std::int32_t> origins;
    std::int32_t nregs = 0;
    std::int32_t nparams = 0;
    std::vector<ref<kernel>> callees;  // bc::call operand b indexes this
    std::vector<ref<kernel>> inlined;  // origins of inlined code
    ref<dialect_group> dialects;
    ref<type const> result_type;
    std::vector<ref<type const>> param_types;

    std::size_t size() const { return code.size() / bc::words; }

    template <class Ar>
    void save(Ar& ar, unsigned /*version*/) const {
        ar & code & constants & lines & origins & nregs & nparams;
        ar & callees & inlined & dialects & result_type & param_types;
    }
    /// Loading checks the artifact (validate) before the VM may run it; a bad one
    /// throws, which the cache counts as a miss.
    template <class Ar>
    void load(Ar& ar, unsigned /*version*/) {
        ar & code & constants & lines & origins & nregs & nparams;
        ar & callees & inlined & dialects & result_type & param_types;
        validate(*this);
    }
    BOOST_SERIALIZATION_SPLIT_MEMBER()
};

/// Shifts the absolute lines of the artifact's own instructions (called by the cache
/// when the kernel now starts `line_delta` lines further down than when compiled).
void relocate_source(artifact& a, std::int64_t line_delta);

/// A listing for humans (--dump-bytecode).
std::string disassemble(artifact const& a);

} // namespace tinyk
