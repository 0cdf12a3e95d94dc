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

/// The line a source map records for `i` of `f` (kernel m.kernels[f.kernel_index]):
/// absolute when `i` is the kernel's own, relative to the first line of the kernel it
/// was inlined from otherwise (see artifact::lines). Both backends' source maps use it.
std::int32_t source_map_line(ir::instr const& i, ir::function const& f, module const& m);

} // namespace tinyk
