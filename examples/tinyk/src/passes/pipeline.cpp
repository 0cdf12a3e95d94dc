// tinyk: the pass pipeline.
#include "passes.hpp"

namespace tinyk {

std::string pipeline_name(opt_level level) {
    if (level == opt_level::O0) return "typecheck";
    return "typecheck,inline(callee<=" + std::to_string(inline_max_callee_instrs) +
           ",added<=" + std::to_string(inline_max_added_instrs) + ",depth<" +
           std::to_string(inline_max_depth) + "),{constfold,cse,dce}*4,typecheck";
}

void run_pipeline(ir::function& f, opt_level level, pass_context const& ctx) {
    typecheck(f, ctx);
    if (level == opt_level::O0) return;
    inline_calls(f, ctx);
    for (int round = 0; round < 4; ++round) {
        bool changed = fold_constants(f);
        changed |= eliminate_common_subexpressions(f);
        changed |= eliminate_dead_code(f);
        if (!changed) break;
    }
    typecheck(f, ctx);
}

} // namespace tinyk
