// tinyk pass: dead-code elimination (mark from the effects, sweep the rest).
#include "passes.hpp"

#include <unordered_set>
#include <vector>

namespace tinyk {

bool eliminate_dead_code(ir::function& f) {
    std::unordered_set<ir::instr const*> live;
    std::vector<ir::instr const*> work;
    for (auto const& b : f.blocks) {
        for (auto const& i : b->instrs) {
            // Roots: control flow, asserts, calls (a call may fail an assert or not
            // return, so it stays even when its value is unused), parameters.
            bool root = !ir::is_pure(i->op) && i->op != ir::opcode::phi;
            if (root && live.insert(i.get()).second) work.push_back(i.get());
        }
    }
    while (!work.empty()) {
        ir::instr const* i = work.back();
        work.pop_back();
        for (ir::instr const* a : i->args)
            if (live.insert(a).second) work.push_back(a);
    }
    return ir::erase_if(f, [&](ir::instr const& i) { return !live.count(&i); });
}

} // namespace tinyk
