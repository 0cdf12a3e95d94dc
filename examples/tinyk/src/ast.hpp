// tinyk: the syntax tree the parser builds and the checker annotates.
#pragma once

#include "diag.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tinyk::ast {

enum class expr_kind { number, name, call, unary, binary };

enum class builtin { none, sqrt, abs, floor, min, max };

/// Binary and unary operators; `neg` and `not_` are the unary ones.
enum class op_kind { add, sub, mul, div, lt, le, gt, ge, eq, ne, and_, or_, neg, not_ };

/// What a name expression refers to, filled in by the checker.
enum class name_ref { unresolved, param, local, global };

struct expr {
    expr_kind kind;
    source_pos pos;
    double number = 0.0;          // number
    std::string name;             // name, call (the callee)
    op_kind op = op_kind::add;    // unary, binary
    std::vector<std::unique_ptr<expr>> args; // call arguments; unary: 1, binary: 2

    // Set by the checker.
    name_ref ref = name_ref::unresolved;
    builtin callee_builtin = builtin::none; // call to a builtin
    int callee_kernel = -1;                 // call to a kernel: its index in the program
};
using expr_ptr = std::unique_ptr<expr>;

enum class stmt_kind { var, assign, if_, while_, return_, assert_ };

struct stmt {
    stmt_kind kind;
    source_pos pos;
    std::string name;           // var, assign
    expr_ptr value;             // var, assign, return, assert; condition of if/while
    std::vector<std::unique_ptr<stmt>> body;      // if-then, while
    std::vector<std::unique_ptr<stmt>> else_body; // if-else
    bool has_else = false;
};
using stmt_ptr = std::unique_ptr<stmt>;

struct global_decl {
    std::string name;
    source_pos pos;
    expr_ptr init;
    double value = 0.0; // evaluated by the checker
};

struct kernel_decl {
    std::string name;
    source_pos pos;      // of the `kernel` keyword; pos.line is the kernel's first line
    source_pos end_pos;  // of the closing brace
    std::vector<std::string> params;
    std::vector<source_pos> param_pos;
    std::vector<stmt_ptr> body;
};

struct program {
    std::string file; // as given on the command line
    std::vector<global_decl> globals;
    std::vector<kernel_decl> kernels;
};

} // namespace tinyk::ast
