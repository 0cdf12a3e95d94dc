// tinyk: code generation, SSA IR -> register bytecode with a source map.
#pragma once

#include "bytecode.hpp"
#include "ir.hpp"
#include "kernel.hpp"

namespace tinyk {

/// Emits the artifact of `f` (kernel m.kernels[f.kernel_index]). Every SSA value gets
/// a register; phis are resolved by (parallel) moves on the incoming edges; call
/// arguments go to the top of the frame, where the callee's frame begins.
artifact generate(ir::function const& f, module const& m);

} // namespace tinyk
