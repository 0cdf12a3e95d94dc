// tinyk: the lexer. Turns source text into tokens with their positions.
#pragma once

#include "diag.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace tinyk {

enum class tok {
    end, number, ident,
    kw_global, kw_kernel, kw_var, kw_if, kw_else, kw_while, kw_return, kw_assert,
    lparen, rparen, lbrace, rbrace, comma, semicolon,
    plus, minus, star, slash, assign,
    lt, le, gt, ge, eq, ne, and_and, or_or, bang,
};

struct token {
    tok kind = tok::end;
    source_pos pos;
    std::string text;   // the lexeme (identifiers, numbers)
    double number = 0.0;
};

/// A readable name for a token kind, used in "expected X" messages.
char const* describe(tok kind);

/// Splits `source` into tokens, ending with one `tok::end`. Throws compile_error on a
/// character that starts no token or a malformed number.
std::vector<token> lex(std::string_view source);

} // namespace tinyk
