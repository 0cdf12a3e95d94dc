// tinyk: the SSA IR. A function is a list of blocks (the first is the entry); a block
// is a list of instructions, phis first and one terminator last. Every instruction is
// a value whose type is a singleton (`f64_type()` or `void_type()`), compared by
// identity. A phi's arguments follow the order of its block's predecessors.
#pragma once

#include "types.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tinyk::ir {

enum class opcode {
    param, constant,
    add, sub, mul, div, neg, not_, lt, le, gt, ge, eq, ne,
    sqrt, abs, floor, min, max,
    call, phi, assert_,
    br, cond_br, ret,
};

char const* name(opcode op);
bool is_terminator(opcode op);
/// No side effect and a result that depends only on the operands: may be folded,
/// shared (CSE) or deleted when unused.
bool is_pure(opcode op);
int arity(opcode op); // operand count of fixed-arity ops; -1 for call and phi

struct block;

struct instr {
    opcode op;
    type const* ty = nullptr;
    std::vector<instr*> args;
    std::vector<block*> succs; // br: {target}; cond_br: {if true, if false}
    double imm = 0.0;          // constant
    int index = 0;             // param: its position
    int callee = -1;           // call: index of the kernel in the program
    std::string sym;           // call: the callee's name; constant: the global it came from
    int line = 0;              // absolute source line
    int origin = 0;            // 0: this kernel; k > 0: inlined from function::origins[k-1]
    block* parent = nullptr;
};

struct block {
    std::vector<std::unique_ptr<instr>> instrs;
    std::vector<block*> preds;

    instr* terminator() const { return instrs.empty() ? nullptr : instrs.back().get(); }
    /// Appends an instruction (sets its parent) and returns it.
    instr* append(std::unique_ptr<instr> i);
    /// Inserts before the terminator (or at the end if there is none).
    instr* insert_before_terminator(std::unique_ptr<instr> i);
    /// Inserts after the last phi.
    instr* insert_phi(std::unique_ptr<instr> i);
    std::vector<block*> const& succs() const;
};

struct function {
    std::string name;
    int kernel_index = -1;
    int nparams = 0;
    int first_line = 0;
    std::vector<std::unique_ptr<block>> blocks; // blocks[0] is the entry
    std::vector<int> origins;                   // kernel indices of inlined callees

    block* entry() const { return blocks.front().get(); }
    block* new_block();
    std::unique_ptr<function> clone() const;
    std::size_t instr_count() const;
};

std::unique_ptr<instr> make(opcode op, type const* ty, std::vector<instr*> args = {}, int line = 0);

/// Blocks reachable from the entry, in reverse post-order.
std::vector<block*> reverse_post_order(function const& f);
/// Every use of `from` becomes a use of `to`.
void replace_all_uses(function& f, instr const* from, instr* to);
/// Deletes blocks the entry cannot reach, and their edges and phi arguments.
/// Returns true if something was removed.
bool remove_unreachable_blocks(function& f);
/// Removes the edge pred->succ from succ's view: its predecessor entry and phi arguments.
void remove_pred(block* succ, block const* pred);
/// Replaces phis whose arguments are all one value (or the phi itself) by that value.
bool remove_trivial_phis(function& f);
/// Erases instructions for which `dead` is true (they must have no remaining uses).
template <class Pred>
bool erase_if(function& f, Pred dead);

/// The canonical text of a function: blocks in reverse post-order, values and blocks
/// numbered in visiting order (never by address or name), lines relative to the
/// kernel's first line, no columns. This is what goes into the key.
std::string canonical_text(function const& f);
/// The same with absolute lines and inlining origins, for humans (--dump-ir).
std::string debug_text(function const& f);

// ---------------------------------------------------------------------------------
template <class Pred>
bool erase_if(function& f, Pred dead) {
    bool changed = false;
    for (auto& b : f.blocks) {
        auto& v = b->instrs;
        std::size_t out = 0;
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (dead(*v[i])) {
                changed = true;
                continue;
            }
            if (out != i) v[out] = std::move(v[i]);
            ++out;
        }
        v.resize(out);
    }
    return changed;
}

} // namespace tinyk::ir
