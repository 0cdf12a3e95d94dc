// tinyk: the passes over the SSA IR and the pipeline that runs them.
#pragma once

#include "../ir.hpp"

#include <functional>
#include <string>

namespace tinyk {

enum class opt_level { O0 = 0, O1 = 1 };

struct pass_context {
    /// Number of parameters of kernel `index` (for the type check of calls).
    std::function<int(int index)> arity;
    /// The lowered IR of kernel `index` if it may be inlined (not recursive, small),
    /// else nullptr. Used at -O1 only.
    std::function<ir::function const*(int index)> inline_candidate;
};

/// Checks types by identity against the singletons, operand counts, and the shape of
/// blocks and edges. Throws internal_error: a failure is a bug in tinyk.
void typecheck(ir::function const& f, pass_context const& ctx);
/// Folds constant operations and branches, simplifies trivial phis and algebraic
/// identities, drops unreachable blocks and merges straight-line blocks.
bool fold_constants(ir::function& f);
/// Shares pure instructions that compute the same thing in a dominating block.
bool eliminate_common_subexpressions(ir::function& f);
/// Deletes pure instructions and phis whose values are never used.
bool eliminate_dead_code(ir::function& f);
/// Inlines calls to small non-recursive kernels.
bool inline_calls(ir::function& f, pass_context const& ctx);

/// The identity of the pipeline at a level; part of every key.
std::string pipeline_name(opt_level level);
void run_pipeline(ir::function& f, opt_level level, pass_context const& ctx);

inline constexpr std::size_t inline_max_callee_instrs = 40;
inline constexpr std::size_t inline_max_added_instrs = 240;
inline constexpr int inline_max_depth = 3;

} // namespace tinyk
