// tinyk: the parser and the checker (names, arity, duplicates, missing return,
// global initializers).
#pragma once

#include "ast.hpp"

#include <string>
#include <string_view>

namespace tinyk {

/// Parses a whole file. Throws compile_error on the first syntax error.
ast::program parse(std::string_view source, std::string file);

/// Resolves names and calls, evaluates the globals, and checks the rules the grammar
/// cannot: unknown names, wrong number of arguments, duplicate kernels or globals,
/// duplicate parameters or variables, assignment to a global, missing return.
/// Throws compile_error on the first violation.
void check(ast::program& prog);

/// The builtin named `name`, or builtin::none; `arity` receives its argument count.
ast::builtin find_builtin(std::string_view name, int* arity = nullptr);
char const* builtin_name(ast::builtin b);

} // namespace tinyk
