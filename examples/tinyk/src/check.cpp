// tinyk: the checker. Name resolution, arity, duplicates, missing return, and the
// evaluation of global initializers.
#include "parser.hpp"
#include "semantics.hpp"

#include <map>
#include <string>
#include <vector>

namespace tinyk {

using namespace ast;

ast::builtin find_builtin(std::string_view name, int* arity) {
    struct entry { char const* name; builtin b; int arity; };
    static constexpr entry table[] = {
        {"sqrt", builtin::sqrt, 1}, {"abs", builtin::abs, 1}, {"floor", builtin::floor, 1},
        {"min", builtin::min, 2},   {"max", builtin::max, 2},
    };
    for (auto const& e : table) {
        if (name == e.name) {
            if (arity) *arity = e.arity;
            return e.b;
        }
    }
    return builtin::none;
}

char const* builtin_name(ast::builtin b) {
    switch (b) {
    case builtin::sqrt: return "sqrt";
    case builtin::abs: return "abs";
    case builtin::floor: return "floor";
    case builtin::min: return "min";
    case builtin::max: return "max";
    case builtin::none: break;
    }
    return "?";
}

namespace {


class checker {
public:
    explicit checker(program& p) : prog_(p) {}

    void run() {
        // Globals: unique names, initializers over earlier globals only.
        for (std::size_t i = 0; i < prog_.globals.size(); ++i) {
            global_decl& g = prog_.globals[i];
            if (find_builtin(g.name) != builtin::none)
                throw compile_error(g.pos, "'" + g.name + "' is a builtin and cannot be redefined");
            auto [it, fresh] = globals_.emplace(g.name, i);
            if (!fresh)
                throw compile_error(g.pos, "duplicate global '" + g.name + "' (first defined at line " +
                                               std::to_string(prog_.globals[it->second].pos.line) + ")");
            g.value = eval_global(*g.init, i);
        }
        // Kernels: unique names, distinct from globals and builtins.
        for (std::size_t i = 0; i < prog_.kernels.size(); ++i) {
            kernel_decl& k = prog_.kernels[i];
            if (find_builtin(k.name) != builtin::none)
                throw compile_error(k.pos, "'" + k.name + "' is a builtin and cannot be redefined");
            if (auto g = globals_.find(k.name); g != globals_.end())
                throw compile_error(k.pos, "duplicate definition of '" + k.name +
                                               "' (defined as a global at line " +
                                               std::to_string(prog_.globals[g->second].pos.line) + ")");
            auto [it, fresh] = kernels_.emplace(k.name, i);
            if (!fresh)
                throw compile_error(k.pos, "duplicate kernel '" + k.name + "' (first defined at line " +
                                               std::to_string(prog_.kernels[it->second].pos.line) + ")");
        }
        for (auto& k : prog_.kernels) check_kernel(k);
    }

private:
    // ---- globals ---------------------------------------------------------------
    double eval_global(expr& e, std::size_t self) {
        switch (e.kind) {
        case expr_kind::number:
            return e.number;
        case expr_kind::name: {
            auto it = globals_.find(e.name);
            if (it == globals_.end() || it->second >= self) {
                if (it != globals_.end() && it->second == self)
                    throw compile_error(e.pos, "global '" + e.name + "' is used in its own initializer");
                if (it != globals_.end())
                    throw compile_error(e.pos, "global '" + e.name + "' is used before its definition");
                for (std::size_t later = self + 1; later < prog_.globals.size(); ++later)
                    if (prog_.globals[later].name == e.name)
                        throw compile_error(e.pos, "global '" + e.name + "' is used before its definition (line " +
                                                       std::to_string(prog_.globals[later].pos.line) + ")");
                throw compile_error(e.pos, "unknown name '" + e.name + "' in a global initializer");
            }
            e.ref = name_ref::global;
            return prog_.globals[it->second].value;
        }
        case expr_kind::call: {
            int arity = 0;
            builtin b = find_builtin(e.name, &arity);
            if (b == builtin::none)
                throw compile_error(e.pos, "a global initializer can only call builtins, not '" + e.name + "'");
            check_arity(e, arity);
            e.callee_builtin = b;
            double a = eval_global(*e.args[0], self);
            switch (b) {
            case builtin::sqrt: return sem::sqrt(a);
            case builtin::abs: return sem::abs(a);
            case builtin::floor: return sem::floor(a);
            case builtin::min: return sem::min(a, eval_global(*e.args[1], self));
            case builtin::max: return sem::max(a, eval_global(*e.args[1], self));
            case builtin::none: break;
            }
            throw internal_error("unhandled builtin");
        }
        case expr_kind::unary: {
            double a = eval_global(*e.args[0], self);
            return e.op == op_kind::neg ? sem::neg(a) : sem::not_(a);
        }
        case expr_kind::binary: {
            double a = eval_global(*e.args[0], self);
            if (e.op == op_kind::and_)
                return sem::is_true(a) ? sem::truth(sem::is_true(eval_global(*e.args[1], self))) : 0.0;
            if (e.op == op_kind::or_)
                return sem::is_true(a) ? 1.0 : sem::truth(sem::is_true(eval_global(*e.args[1], self)));
            double b = eval_global(*e.args[1], self);
            switch (e.op) {
            case op_kind::add: return sem::add(a, b);
            case op_kind::sub: return sem::sub(a, b);
            case op_kind::mul: return sem::mul(a, b);
            case op_kind::div: return sem::div(a, b);
            case op_kind::lt: return sem::lt(a, b);
            case op_kind::le: return sem::le(a, b);
            case op_kind::gt: return sem::gt(a, b);
            case op_kind::ge: return sem::ge(a, b);
            case op_kind::eq: return sem::eq(a, b);
            case op_kind::ne: return sem::ne(a, b);
            default: break;
            }
            throw internal_error("unhandled binary operator");
        }
        }
        throw internal_error("unhandled expression");
    }

    // ---- kernels ---------------------------------------------------------------
    void check_kernel(kernel_decl& k) {
        scopes_.clear();
        scopes_.emplace_back();
        for (std::size_t i = 0; i < k.params.size(); ++i) {
            std::string const& p = k.params[i];
            if (lookup_local(p))
                throw compile_error(k.param_pos[i], "duplicate parameter '" + p + "'");
            scopes_.back().push_back(p);
        }
        check_block(k.body, false);
        if (!returns(k.body))
            throw compile_error(k.end_pos, "missing return at the end of kernel '" + k.name + "'");
    }

    bool lookup_local(std::string const& name) const {
        for (auto const& s : scopes_)
            for (auto const& n : s)
                if (n == name) return true;
        return false;
    }

    void check_block(std::vector<stmt_ptr>& body, bool new_scope) {
        if (new_scope) scopes_.emplace_back();
        for (auto& s : body) check_stmt(*s);
        if (new_scope) scopes_.pop_back();
    }

    void check_stmt(stmt& s) {
        switch (s.kind) {
        case stmt_kind::var:
            check_expr(*s.value); // the initializer cannot see the new variable
            if (lookup_local(s.name))
                throw compile_error(s.pos, "redefinition of variable '" + s.name + "'");
            if (kernels_.count(s.name))
                throw compile_error(s.pos, "variable '" + s.name + "' has the name of a kernel");
            if (find_builtin(s.name) != builtin::none)
                throw compile_error(s.pos, "variable '" + s.name + "' has the name of a builtin");
            scopes_.back().push_back(s.name);
            return;
        case stmt_kind::assign:
            if (!lookup_local(s.name)) {
                if (globals_.count(s.name))
                    throw compile_error(s.pos, "cannot assign to global '" + s.name + "'");
                throw compile_error(s.pos, "unknown variable '" + s.name + "' (declare it with 'var')");
            }
            check_expr(*s.value);
            return;
        case stmt_kind::if_:
            check_expr(*s.value);
            check_block(s.body, true);
            check_block(s.else_body, true);
            return;
        case stmt_kind::while_:
            check_expr(*s.value);
            check_block(s.body, true);
            return;
        case stmt_kind::return_:
        case stmt_kind::assert_:
            check_expr(*s.value);
            return;
        }
    }

    static bool returns(std::vector<stmt_ptr> const& body) {
        for (auto const& s : body) {
            if (s->kind == stmt_kind::return_) return true;
            if (s->kind == stmt_kind::if_ && s->has_else && returns(s->body) && returns(s->else_body))
                return true;
        }
        return false;
    }

    void check_arity(expr const& e, int expected) {
        if (static_cast<int>(e.args.size()) != expected)
            throw compile_error(e.pos, "wrong number of arguments to '" + e.name + "': expected " +
                                           std::to_string(expected) + ", found " +
                                           std::to_string(e.args.size()));
    }

    void check_expr(expr& e) {
        switch (e.kind) {
        case expr_kind::number:
            return;
        case expr_kind::name:
            if (lookup_local(e.name)) {
                e.ref = name_ref::local;
            } else if (globals_.count(e.name)) {
                e.ref = name_ref::global;
            } else if (kernels_.count(e.name)) {
                throw compile_error(e.pos, "'" + e.name + "' is a kernel, not a value; call it as " +
                                               e.name + "(...)");
            } else {
                throw compile_error(e.pos, "unknown name '" + e.name + "'");
            }
            return;
        case expr_kind::call: {
            int arity = 0;
            if (builtin b = find_builtin(e.name, &arity); b != builtin::none) {
                check_arity(e, arity);
                e.callee_builtin = b;
            } else if (auto it = kernels_.find(e.name); it != kernels_.end()) {
                check_arity(e, static_cast<int>(prog_.kernels[it->second].params.size()));
                e.callee_kernel = static_cast<int>(it->second);
            } else if (lookup_local(e.name) || globals_.count(e.name)) {
                throw compile_error(e.pos, "'" + e.name + "' is not a kernel and cannot be called");
            } else {
                throw compile_error(e.pos, "unknown kernel '" + e.name + "'");
            }
            for (auto& a : e.args) check_expr(*a);
            return;
        }
        case expr_kind::unary:
        case expr_kind::binary:
            for (auto& a : e.args) check_expr(*a);
            return;
        }
    }

    program& prog_;
    std::map<std::string, std::size_t> globals_;
    std::map<std::string, std::size_t> kernels_;
    std::vector<std::vector<std::string>> scopes_;
};

} // namespace

void check(ast::program& prog) { checker(prog).run(); }

} // namespace tinyk
