#include "parser.hpp"

#include "lexer.hpp"

#include <utility>

namespace tinyk {

namespace {

using namespace ast;

class parser {
public:
    explicit parser(std::vector<token> toks) : toks_(std::move(toks)) {}

    program parse_program(std::string file) {
        program prog;
        prog.file = std::move(file);
        while (peek().kind != tok::end) {
            if (peek().kind == tok::kw_global) {
                prog.globals.push_back(parse_global());
            } else if (peek().kind == tok::kw_kernel) {
                prog.kernels.push_back(parse_kernel());
            } else {
                fail_expected("'global' or 'kernel'");
            }
        }
        return prog;
    }

private:
    token const& peek(std::size_t ahead = 0) const {
        std::size_t i = pos_ + ahead;
        return i < toks_.size() ? toks_[i] : toks_.back();
    }
    token const& take() {
        token const& t = toks_[pos_];
        if (pos_ + 1 < toks_.size()) ++pos_;
        return t;
    }
    bool accept(tok k) {
        if (peek().kind != k) return false;
        take();
        return true;
    }
    [[noreturn]] void fail_expected(std::string const& what) const {
        token const& t = peek();
        std::string found = t.kind == tok::ident || t.kind == tok::number ? "'" + t.text + "'"
                                                                          : describe(t.kind);
        throw compile_error(t.pos, "expected " + what + ", found " + found);
    }
    token const& expect(tok k) {
        if (peek().kind != k) fail_expected(describe(k));
        return take();
    }
    token const& expect_ident(char const* what) {
        if (peek().kind != tok::ident) fail_expected(what);
        return take();
    }

    global_decl parse_global() {
        take(); // global
        global_decl g;
        token const& name = expect_ident("a global name");
        g.name = name.text;
        g.pos = name.pos;
        expect(tok::assign);
        g.init = parse_expr();
        expect(tok::semicolon);
        return g;
    }

    kernel_decl parse_kernel() {
        kernel_decl k;
        k.pos = take().pos; // kernel
        k.name = expect_ident("a kernel name").text;
        expect(tok::lparen);
        if (peek().kind != tok::rparen) {
            do {
                token const& p = expect_ident("a parameter name");
                k.params.push_back(p.text);
                k.param_pos.push_back(p.pos);
            } while (accept(tok::comma));
        }
        expect(tok::rparen);
        expect(tok::lbrace);
        k.body = parse_block_body();
        k.end_pos = expect(tok::rbrace).pos;
        return k;
    }

    // Statements up to (not including) the closing brace.
    std::vector<stmt_ptr> parse_block_body() {
        std::vector<stmt_ptr> body;
        while (peek().kind != tok::rbrace) {
            if (peek().kind == tok::end) fail_expected("'}'");
            body.push_back(parse_stmt());
        }
        return body;
    }

    std::vector<stmt_ptr> parse_braced() {
        expect(tok::lbrace);
        auto body = parse_block_body();
        expect(tok::rbrace);
        return body;
    }

    stmt_ptr make_stmt(stmt_kind kind, source_pos pos) {
        auto s = std::make_unique<stmt>();
        s->kind = kind;
        s->pos = pos;
        return s;
    }

    stmt_ptr parse_stmt() {
        token const& t = peek();
        switch (t.kind) {
        case tok::kw_var: {
            auto s = make_stmt(stmt_kind::var, take().pos);
            token const& name = expect_ident("a variable name");
            s->name = name.text;
            s->pos = name.pos;
            expect(tok::assign);
            s->value = parse_expr();
            expect(tok::semicolon);
            return s;
        }
        case tok::ident: {
            auto s = make_stmt(stmt_kind::assign, t.pos);
            s->name = take().text;
            if (peek().kind != tok::assign) fail_expected("'=' (an expression is not a statement)");
            take();
            s->value = parse_expr();
            expect(tok::semicolon);
            return s;
        }
        case tok::kw_if: {
            auto s = make_stmt(stmt_kind::if_, take().pos);
            expect(tok::lparen);
            s->value = parse_expr();
            expect(tok::rparen);
            s->body = parse_braced();
            if (accept(tok::kw_else)) {
                s->has_else = true;
                if (peek().kind == tok::kw_if) {
                    s->else_body.push_back(parse_stmt()); // else if
                } else {
                    s->else_body = parse_braced();
                }
            }
            return s;
        }
        case tok::kw_while: {
            auto s = make_stmt(stmt_kind::while_, take().pos);
            expect(tok::lparen);
            s->value = parse_expr();
            expect(tok::rparen);
            s->body = parse_braced();
            return s;
        }
        case tok::kw_return: {
            auto s = make_stmt(stmt_kind::return_, take().pos);
            s->value = parse_expr();
            expect(tok::semicolon);
            return s;
        }
        case tok::kw_assert: {
            auto s = make_stmt(stmt_kind::assert_, take().pos);
            expect(tok::lparen);
            s->value = parse_expr();
            expect(tok::rparen);
            expect(tok::semicolon);
            return s;
        }
        default:
            fail_expected("a statement");
        }
    }

    expr_ptr make_binary(op_kind op, source_pos pos, expr_ptr lhs, expr_ptr rhs) {
        auto e = std::make_unique<expr>();
        e->kind = expr_kind::binary;
        e->op = op;
        e->pos = pos;
        e->args.push_back(std::move(lhs));
        e->args.push_back(std::move(rhs));
        return e;
    }

    expr_ptr parse_expr() { return parse_or(); }

    expr_ptr parse_or() {
        auto lhs = parse_and();
        while (peek().kind == tok::or_or) {
            source_pos pos = take().pos;
            lhs = make_binary(op_kind::or_, pos, std::move(lhs), parse_and());
        }
        return lhs;
    }
    expr_ptr parse_and() {
        auto lhs = parse_equality();
        while (peek().kind == tok::and_and) {
            source_pos pos = take().pos;
            lhs = make_binary(op_kind::and_, pos, std::move(lhs), parse_equality());
        }
        return lhs;
    }
    expr_ptr parse_equality() {
        auto lhs = parse_relational();
        while (peek().kind == tok::eq || peek().kind == tok::ne) {
            op_kind op = peek().kind == tok::eq ? op_kind::eq : op_kind::ne;
            source_pos pos = take().pos;
            lhs = make_binary(op, pos, std::move(lhs), parse_relational());
        }
        return lhs;
    }
    expr_ptr parse_relational() {
        auto lhs = parse_additive();
        while (true) {
            op_kind op;
            switch (peek().kind) {
            case tok::lt: op = op_kind::lt; break;
            case tok::le: op = op_kind::le; break;
            case tok::gt: op = op_kind::gt; break;
            case tok::ge: op = op_kind::ge; break;
            default: return lhs;
            }
            source_pos pos = take().pos;
            lhs = make_binary(op, pos, std::move(lhs), parse_additive());
        }
    }
    expr_ptr parse_additive() {
        auto lhs = parse_multiplicative();
        while (peek().kind == tok::plus || peek().kind == tok::minus) {
            op_kind op = peek().kind == tok::plus ? op_kind::add : op_kind::sub;
            source_pos pos = take().pos;
            lhs = make_binary(op, pos, std::move(lhs), parse_multiplicative());
        }
        return lhs;
    }
    expr_ptr parse_multiplicative() {
        auto lhs = parse_unary();
        while (peek().kind == tok::star || peek().kind == tok::slash) {
            op_kind op = peek().kind == tok::star ? op_kind::mul : op_kind::div;
            source_pos pos = take().pos;
            lhs = make_binary(op, pos, std::move(lhs), parse_unary());
        }
        return lhs;
    }
    expr_ptr parse_unary() {
        if (peek().kind == tok::minus || peek().kind == tok::bang) {
            auto e = std::make_unique<expr>();
            e->kind = expr_kind::unary;
            e->op = peek().kind == tok::minus ? op_kind::neg : op_kind::not_;
            e->pos = take().pos;
            e->args.push_back(parse_unary());
            return e;
        }
        return parse_primary();
    }
    expr_ptr parse_primary() {
        token const& t = peek();
        auto e = std::make_unique<expr>();
        e->pos = t.pos;
        switch (t.kind) {
        case tok::number:
            e->kind = expr_kind::number;
            e->number = take().number;
            return e;
        case tok::ident:
            e->name = take().text;
            if (accept(tok::lparen)) {
                e->kind = expr_kind::call;
                if (peek().kind != tok::rparen) {
                    do {
                        e->args.push_back(parse_expr());
                    } while (accept(tok::comma));
                }
                expect(tok::rparen);
            } else {
                e->kind = expr_kind::name;
            }
            return e;
        case tok::lparen: {
            take();
            auto inner = parse_expr();
            expect(tok::rparen);
            return inner;
        }
        default:
            fail_expected("an expression");
        }
    }

    std::vector<token> toks_;
    std::size_t pos_ = 0;
};

} // namespace

ast::program parse(std::string_view source, std::string file) {
    parser p(lex(source));
    return p.parse_program(std::move(file));
}

} // namespace tinyk
