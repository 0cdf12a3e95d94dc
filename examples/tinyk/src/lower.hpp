// tinyk: lowering a checked kernel to SSA IR.
#pragma once

#include "ast.hpp"
#include "ir.hpp"

#include <map>
#include <memory>
#include <set>
#include <string>

namespace tinyk {

struct lowering_result {
    std::unique_ptr<ir::function> fn;
    std::map<std::string, double> globals_read; // name -> value, for the key
    std::set<int> callees;                      // kernel indices called directly
};

/// Lowers kernel `index` of a checked program. Phis at a join are created in the
/// order the variables were first defined (parameters first), never by hash order.
lowering_result lower(ast::program const& prog, int index);

} // namespace tinyk
