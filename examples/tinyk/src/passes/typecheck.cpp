// tinyk pass: type check. Every value's type must be the f64 singleton itself (compared
// by address), every effect-only instruction the void singleton.
#include "passes.hpp"

#include "../diag.hpp"

#include <algorithm>
#include <unordered_set>

namespace tinyk {

void typecheck(ir::function const& f, pass_context const& ctx) {
    auto fail = [&](ir::instr const* i, std::string const& what) {
        std::string where = "typecheck: kernel '" + f.name + "'";
        if (i) where += std::string(", ") + ir::name(i->op) + " at line " + std::to_string(i->line);
        throw internal_error(where + ": " + what);
    };
    if (f.blocks.empty()) fail(nullptr, "no blocks");
    std::unordered_set<ir::instr const*> defined;
    std::unordered_set<ir::block const*> blocks;
    for (auto const& b : f.blocks) {
        blocks.insert(b.get());
        for (auto const& i : b->instrs) defined.insert(i.get());
    }
    if (!f.entry()->preds.empty()) fail(nullptr, "the entry block has predecessors");
    for (auto const& b : f.blocks) {
        if (b->instrs.empty() || !ir::is_terminator(b->instrs.back()->op)) fail(nullptr, "a block without terminator");
        bool past_phis = false;
        for (std::size_t k = 0; k < b->instrs.size(); ++k) {
            ir::instr const* i = b->instrs[k].get();
            if (i->parent != b.get()) fail(i, "wrong parent block");
            if (ir::is_terminator(i->op) && k + 1 != b->instrs.size()) fail(i, "terminator in the middle of a block");
            if (i->op == ir::opcode::phi) {
                if (past_phis) fail(i, "phi after a non-phi");
                if (i->args.size() != b->preds.size()) fail(i, "phi arity differs from the predecessor count");
            } else {
                past_phis = true;
            }
            if (i->op == ir::opcode::param && b.get() != f.entry()) fail(i, "param outside the entry block");
            type const* expected = (i->op == ir::opcode::assert_ || ir::is_terminator(i->op)) ? void_type() : f64_type();
            if (i->ty != expected) fail(i, std::string("has type ") + (i->ty ? i->ty->name() : "null") +
                                               ", expected " + expected->name());
            int n = ir::arity(i->op);
            if (i->op == ir::opcode::call) {
                if (!ctx.arity) fail(i, "no arity information");
                n = ctx.arity(i->callee);
            }
            if (n >= 0 && static_cast<int>(i->args.size()) != n) fail(i, "wrong operand count");
            for (ir::instr const* a : i->args) {
                if (!defined.count(a)) fail(i, "operand defined outside the function");
                if (a->ty != f64_type()) fail(i, "operand is not f64");
            }
            std::size_t succs = i->op == ir::opcode::br ? 1 : i->op == ir::opcode::cond_br ? 2 : 0;
            if (i->succs.size() != succs) fail(i, "wrong successor count");
            for (ir::block const* s : i->succs) {
                if (!blocks.count(s)) fail(i, "successor outside the function");
                auto want = std::count(i->succs.begin(), i->succs.end(), s);
                auto have = std::count(s->preds.begin(), s->preds.end(), b.get());
                if (want != have) fail(i, "edge missing from the successor's predecessors");
            }
        }
        for (ir::block const* p : b->preds) {
            if (!blocks.count(p)) fail(nullptr, "predecessor outside the function");
            auto const& ps = p->succs();
            if (std::find(ps.begin(), ps.end(), b.get()) == ps.end()) fail(nullptr, "predecessor without the edge");
        }
    }
}

} // namespace tinyk
