// compile-cache: the commands, one function each, over any cache (opened_cache.hpp):
// stats, list, show, verify, clear, explain and copy work alike on a directory, a
// SQLite file, a Redis server and an HTTP server; prune, zero and set are a directory's
// own (config reads the environment, and a directory's settings file).
#pragma once

#include "command_line.hpp"

namespace compile_cache_tool {

/// Runs `c.command`; its exit status. Throws usage_error.
int run_command(command_line const& c);

} // namespace compile_cache_tool
