// tinyk pass: constant folding and CFG cleanup.
#include "passes.hpp"

#include "../semantics.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

namespace tinyk {

namespace {

using ir::opcode;

bool is_const(ir::instr const* i) { return i->op == opcode::constant; }
bool is_const(ir::instr const* i, double v) {
    // Bitwise, so that 0.0 and -0.0 are different constants.
    return is_const(i) && std::memcmp(&i->imm, &v, sizeof v) == 0;
}

std::optional<double> evaluate(ir::instr const& i) {
    for (ir::instr const* a : i.args)
        if (!is_const(a)) return std::nullopt;
    auto x = [&](std::size_t k) { return i.args[k]->imm; };
    switch (i.op) {
    case opcode::add: return sem::add(x(0), x(1));
    case opcode::sub: return sem::sub(x(0), x(1));
    case opcode::mul: return sem::mul(x(0), x(1));
    case opcode::div: return sem::div(x(0), x(1));
    case opcode::neg: return sem::neg(x(0));
    case opcode::not_: return sem::not_(x(0));
    case opcode::lt: return sem::lt(x(0), x(1));
    case opcode::le: return sem::le(x(0), x(1));
    case opcode::gt: return sem::gt(x(0), x(1));
    case opcode::ge: return sem::ge(x(0), x(1));
    case opcode::eq: return sem::eq(x(0), x(1));
    case opcode::ne: return sem::ne(x(0), x(1));
    case opcode::sqrt: return sem::sqrt(x(0));
    case opcode::abs: return sem::abs(x(0));
    case opcode::floor: return sem::floor(x(0));
    case opcode::min: return sem::min(x(0), x(1));
    case opcode::max: return sem::max(x(0), x(1));
    default: return std::nullopt;
    }
}

// x*1, 1*x, x/1 and x-0 are x for every x, signed zeros and NaNs included.
// (x+0 is not: -0 + 0 is +0.)
ir::instr* identity(ir::instr const& i) {
    switch (i.op) {
    case opcode::mul:
        if (is_const(i.args[1], 1.0)) return i.args[0];
        if (is_const(i.args[0], 1.0)) return i.args[1];
        return nullptr;
    case opcode::div: return is_const(i.args[1], 1.0) ? i.args[0] : nullptr;
    case opcode::sub: return is_const(i.args[1], 0.0) ? i.args[0] : nullptr;
    case opcode::neg: return i.args[0]->op == opcode::neg ? i.args[0]->args[0] : nullptr;
    default: return nullptr;
    }
}

// B ends with `br C`, C's only predecessor is B: move C into B.
bool merge_blocks(ir::function& f) {
    bool changed = false;
    for (bool again = true; again;) {
        again = false;
        for (auto& bp : f.blocks) {
            ir::block* b = bp.get();
            ir::instr* t = b->terminator();
            if (!t || t->op != opcode::br) continue;
            ir::block* c = t->succs[0];
            if (c == b || c == f.entry() || c->preds.size() != 1) continue;
            b->instrs.pop_back();
            for (auto& i : c->instrs) {
                i->parent = b;
                b->instrs.push_back(std::move(i));
            }
            c->instrs.clear();
            for (ir::block* s : b->succs())
                for (auto& p : s->preds)
                    if (p == c) p = b;
            f.blocks.erase(std::find_if(f.blocks.begin(), f.blocks.end(), [&](auto const& x) { return x.get() == c; }));
            again = changed = true;
            break;
        }
    }
    return changed;
}

} // namespace

bool fold_constants(ir::function& f) {
    bool changed = false;
    for (bool again = true; again;) {
        again = false;
        std::unordered_set<ir::instr const*> dead;
        for (auto& b : f.blocks) {
            for (auto& ip : b->instrs) {
                ir::instr& i = *ip;
                if (dead.count(&i)) continue;
                if (ir::is_pure(i.op) && i.op != opcode::constant) {
                    if (auto v = evaluate(i)) {
                        i.op = opcode::constant;
                        i.imm = *v;
                        i.args.clear();
                        again = true;
                    } else if (ir::instr* same = identity(i)) {
                        ir::replace_all_uses(f, &i, same);
                        dead.insert(&i);
                        again = true;
                    }
                } else if (i.op == opcode::assert_ && is_const(i.args[0]) && sem::is_true(i.args[0]->imm)) {
                    dead.insert(&i);
                    again = true;
                } else if (i.op == opcode::cond_br && is_const(i.args[0])) {
                    bool taken = sem::is_true(i.args[0]->imm);
                    ir::block* keep = i.succs[taken ? 0 : 1];
                    ir::block* drop = i.succs[taken ? 1 : 0];
                    ir::remove_pred(drop, b.get());
                    i.op = opcode::br;
                    i.args.clear();
                    i.succs = {keep};
                    again = true;
                }
            }
        }
        if (!dead.empty()) ir::erase_if(f, [&](ir::instr const& i) { return dead.count(&i) != 0; });
        if (ir::remove_unreachable_blocks(f)) again = true;
        if (ir::remove_trivial_phis(f)) again = true;
        if (merge_blocks(f)) again = true;
        changed |= again;
    }
    return changed;
}

} // namespace tinyk
