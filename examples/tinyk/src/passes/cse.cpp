// tinyk pass: common-subexpression elimination over the dominator tree.
#include "passes.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tinyk {

namespace {

// Immediate dominators (Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm").
std::unordered_map<ir::block const*, ir::block*> dominators(std::vector<ir::block*> const& rpo) {
    std::unordered_map<ir::block const*, int> index;
    for (std::size_t k = 0; k < rpo.size(); ++k) index[rpo[k]] = static_cast<int>(k);
    std::vector<int> idom(rpo.size(), -1);
    idom[0] = 0;
    auto intersect = [&](int a, int b) {
        while (a != b) {
            while (a > b) a = idom[static_cast<std::size_t>(a)];
            while (b > a) b = idom[static_cast<std::size_t>(b)];
        }
        return a;
    };
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t k = 1; k < rpo.size(); ++k) {
            int nd = -1;
            for (ir::block const* p : rpo[k]->preds) {
                auto it = index.find(p);
                if (it == index.end() || idom[static_cast<std::size_t>(it->second)] < 0) continue;
                nd = nd < 0 ? it->second : intersect(it->second, nd);
            }
            if (nd >= 0 && idom[k] != nd) {
                idom[k] = nd;
                changed = true;
            }
        }
    }
    std::unordered_map<ir::block const*, ir::block*> out;
    for (std::size_t k = 1; k < rpo.size(); ++k) out[rpo[k]] = rpo[static_cast<std::size_t>(idom[k])];
    return out;
}

using expr_key = std::tuple<int, std::vector<ir::instr const*>, std::uint64_t>;

} // namespace

bool eliminate_common_subexpressions(ir::function& f) {
    auto rpo = ir::reverse_post_order(f);
    if (rpo.empty()) return false;
    auto idom = dominators(rpo);
    std::unordered_map<ir::block const*, std::vector<ir::block*>> children;
    for (ir::block* b : rpo)
        if (b != rpo[0]) children[idom.at(b)].push_back(b); // in RPO order: deterministic

    std::map<expr_key, ir::instr*> available;
    std::unordered_set<ir::instr const*> dead;
    bool changed = false;

    // Depth-first over the dominator tree; what a block defines is visible to the
    // blocks it dominates and withdrawn when the walk leaves it.
    struct frame {
        ir::block* b;
        std::size_t next_child;
        std::vector<expr_key> added;
    };
    std::vector<frame> stack;
    stack.push_back({rpo[0], 0, {}});
    auto visit = [&](frame& fr) {
        for (auto& ip : fr.b->instrs) {
            ir::instr* i = ip.get();
            if (!ir::is_pure(i->op)) continue;
            std::uint64_t bits = 0;
            if (i->op == ir::opcode::constant) std::memcpy(&bits, &i->imm, sizeof bits);
            expr_key k{static_cast<int>(i->op), {i->args.begin(), i->args.end()}, bits};
            auto it = available.find(k);
            if (it != available.end()) {
                ir::replace_all_uses(f, i, it->second);
                dead.insert(i);
                changed = true;
            } else {
                available.emplace(k, i);
                fr.added.push_back(std::move(k));
            }
        }
    };
    visit(stack.back());
    while (!stack.empty()) {
        frame& top = stack.back();
        auto const& kids = children[top.b];
        if (top.next_child < kids.size()) {
            ir::block* c = kids[top.next_child++];
            stack.push_back({c, 0, {}});
            visit(stack.back());
        } else {
            for (auto const& k : top.added) available.erase(k);
            stack.pop_back();
        }
    }
    if (!dead.empty()) ir::erase_if(f, [&](ir::instr const& i) { return dead.count(&i) != 0; });
    return changed;
}

} // namespace tinyk
