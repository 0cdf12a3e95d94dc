// tinyk: from source text to a module of lowered kernels, and from a lowered kernel
// to its artifact.
#pragma once

#include "kernel.hpp"
#include "passes/passes.hpp"

#include <string>

namespace tinyk {

/// Parses, checks and lowers every kernel; fills the call graph. Throws compile_error.
module build_module(std::string const& source, std::string const& file);

/// Runs the pass pipeline on a copy of k's lowered IR (what both backends generate
/// code from). Depends only on what k's key covers (its IR, its callees' IR, the level).
std::unique_ptr<ir::function> optimize_kernel(module const& m, kernel const& k, opt_level level);

/// Runs the pass pipeline on a copy of k's lowered IR and generates its bytecode.
/// Depends only on what k's key covers (its IR, its callees' IR, the level).
artifact compile_kernel(module const& m, kernel const& k, opt_level level, std::string* ir_dump = nullptr);

} // namespace tinyk
