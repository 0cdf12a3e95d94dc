// compile-cache: the commands, one function each, over any cache (opened_cache.hpp):
// stats, list, show, verify, clear, explain and copy work alike on a directory, a
// SQLite file and a Redis server; prune and zero are a directory's own.
#pragma once

#include "command_line.hpp"

namespace compile_cache_tool {

/// Runs `c.command`; its exit status. Throws usage_error.
int run_command(command_line const& c);

} // namespace compile_cache_tool
