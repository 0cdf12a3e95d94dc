// tinyk: the call graph's strongly connected components and the cache key of every
// kernel. See keying.cpp for what goes into a key.
#pragma once

#include "cache_glue.hpp"
#include "kernel.hpp"
#include "passes/passes.hpp"

#include <string>
#include <vector>

namespace tinyk {

/// Tarjan's algorithm over the direct-call graph. Sets kernel::scc and
/// kernel::recursive, and returns the components callees-first (every component
/// comes after all the components it calls), members in definition order.
std::vector<std::vector<kernel*>> strongly_connected_components(module& m);

struct key_context {
    opt_level level = opt_level::O1;
    std::string file_identity; // canonical absolute path; empty: no stable path
    std::string no_file_reason;
    std::string backend = "vm"; // "vm", or the native backend's key_id()
};

/// The key of every kernel, indexed like m.kernels.
std::vector<glue::key_result> compute_keys(module& m, std::vector<std::vector<kernel*>> const& sccs,
                                           glue::cache const& cache, key_context const& ctx);

} // namespace tinyk
