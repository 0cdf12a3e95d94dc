// tinyk pass: inlining of small, non-recursive callees (-O1).
#include "passes.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace tinyk {

namespace {

using ir::opcode;

std::vector<ir::instr*> calls_in(ir::function const& f) {
    std::vector<ir::instr*> out;
    for (auto const& b : f.blocks)
        for (auto const& i : b->instrs)
            if (i->op == opcode::call) out.push_back(i.get());
    return out;
}

int origin_id(ir::function& f, int kernel_index) {
    auto it = std::find(f.origins.begin(), f.origins.end(), kernel_index);
    if (it != f.origins.end()) return static_cast<int>(it - f.origins.begin()) + 1;
    f.origins.push_back(kernel_index);
    return static_cast<int>(f.origins.size());
}

// Replaces `call` (in f) by the body of `callee`; returns the calls the body brought in.
std::vector<ir::instr*> inline_one(ir::function& f, ir::instr* call, ir::function const& callee) {
    auto body = callee.clone();
    int origin = origin_id(f, callee.kernel_index);
    ir::block* b = call->parent;

    // Split b after the call: the rest, terminator included, goes to `cont`.
    ir::block* cont = f.new_block();
    auto pos = std::find_if(b->instrs.begin(), b->instrs.end(), [&](auto const& p) { return p.get() == call; });
    for (auto it = pos + 1; it != b->instrs.end(); ++it) {
        (*it)->parent = cont;
        cont->instrs.push_back(std::move(*it));
    }
    b->instrs.erase(pos + 1, b->instrs.end());
    for (ir::block* s : cont->succs())
        for (auto& p : s->preds)
            if (p == b) p = cont;

    // Parameters become the call's arguments.
    ir::block* entry = body->entry();
    for (auto const& i : entry->instrs)
        if (i->op == opcode::param) ir::replace_all_uses(*body, i.get(), call->args[static_cast<std::size_t>(i->index)]);
    entry->instrs.erase(std::remove_if(entry->instrs.begin(), entry->instrs.end(),
                                       [](auto const& i) { return i->op == opcode::param; }),
                        entry->instrs.end());

    // Returns become branches to `cont`.
    std::vector<ir::instr*> results;
    std::vector<ir::instr*> new_calls;
    for (auto& bb : body->blocks) {
        for (auto& i : bb->instrs) {
            if (i->origin == 0) i->origin = origin;
            if (i->op == opcode::call) new_calls.push_back(i.get());
        }
        ir::instr* t = bb->terminator();
        if (t->op == opcode::ret) {
            results.push_back(t->args[0]);
            t->op = opcode::br;
            t->args.clear();
            t->succs = {cont};
            cont->preds.push_back(bb.get());
        }
    }
    for (auto& bb : body->blocks) f.blocks.push_back(std::move(bb));

    // b now ends with the call: replace it by a branch into the body.
    ir::instr* result = results.size() == 1 ? results[0] : nullptr;
    if (!result) {
        auto phi = ir::make(opcode::phi, f64_type(), results, call->line);
        phi->origin = call->origin;
        result = cont->insert_phi(std::move(phi));
    }
    ir::replace_all_uses(f, call, result);
    int line = call->line, call_origin = call->origin;
    b->instrs.pop_back(); // the call
    auto br = ir::make(opcode::br, void_type(), {}, line);
    br->origin = call_origin;
    br->succs = {entry};
    b->append(std::move(br));
    entry->preds.push_back(b);
    return new_calls;
}

} // namespace

bool inline_calls(ir::function& f, pass_context const& ctx) {
    if (!ctx.inline_candidate) return false;
    std::vector<std::pair<ir::instr*, int>> work;
    for (ir::instr* c : calls_in(f)) work.push_back({c, 0});
    std::size_t added = 0;
    bool changed = false;
    for (std::size_t k = 0; k < work.size(); ++k) {
        auto [call, depth] = work[k];
        if (depth >= inline_max_depth) continue;
        ir::function const* callee = ctx.inline_candidate(call->callee);
        if (!callee) continue;
        std::size_t n = callee->instr_count();
        if (n > inline_max_callee_instrs || added + n > inline_max_added_instrs) continue;
        added += n;
        for (ir::instr* c : inline_one(f, call, *callee)) work.push_back({c, depth + 1});
        changed = true;
    }
    return changed;
}

} // namespace tinyk
