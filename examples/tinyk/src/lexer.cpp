#include "lexer.hpp"

#include <cerrno>
#include <cstdlib>

namespace tinyk {

char const* describe(tok kind) {
    switch (kind) {
    case tok::end: return "end of file";
    case tok::number: return "number";
    case tok::ident: return "identifier";
    case tok::kw_global: return "'global'";
    case tok::kw_kernel: return "'kernel'";
    case tok::kw_var: return "'var'";
    case tok::kw_if: return "'if'";
    case tok::kw_else: return "'else'";
    case tok::kw_while: return "'while'";
    case tok::kw_return: return "'return'";
    case tok::kw_assert: return "'assert'";
    case tok::lparen: return "'('";
    case tok::rparen: return "')'";
    case tok::lbrace: return "'{'";
    case tok::rbrace: return "'}'";
    case tok::comma: return "','";
    case tok::semicolon: return "';'";
    case tok::plus: return "'+'";
    case tok::minus: return "'-'";
    case tok::star: return "'*'";
    case tok::slash: return "'/'";
    case tok::assign: return "'='";
    case tok::lt: return "'<'";
    case tok::le: return "'<='";
    case tok::gt: return "'>'";
    case tok::ge: return "'>='";
    case tok::eq: return "'=='";
    case tok::ne: return "'!='";
    case tok::and_and: return "'&&'";
    case tok::or_or: return "'||'";
    case tok::bang: return "'!'";
    }
    return "token";
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

tok keyword(std::string_view s) {
    if (s == "global") return tok::kw_global;
    if (s == "kernel") return tok::kw_kernel;
    if (s == "var") return tok::kw_var;
    if (s == "if") return tok::kw_if;
    if (s == "else") return tok::kw_else;
    if (s == "while") return tok::kw_while;
    if (s == "return") return tok::kw_return;
    if (s == "assert") return tok::kw_assert;
    return tok::ident;
}

} // namespace

std::vector<token> lex(std::string_view src) {
    std::vector<token> out;
    std::size_t i = 0;
    int line = 1, col = 1;
    auto advance = [&](std::size_t n) {
        for (std::size_t k = 0; k < n && i < src.size(); ++k, ++i) {
            if (src[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
    };
    while (true) {
        // Whitespace and comments.
        while (i < src.size()) {
            char c = src[i];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
                advance(1);
            } else if (c == '#') {
                while (i < src.size() && src[i] != '\n') advance(1);
            } else {
                break;
            }
        }
        token t;
        t.pos = {line, col};
        if (i >= src.size()) {
            t.kind = tok::end;
            out.push_back(std::move(t));
            return out;
        }
        char c = src[i];
        char next = i + 1 < src.size() ? src[i + 1] : '\0';
        if (is_digit(c) || (c == '.' && is_digit(next))) {
            std::size_t j = i;
            while (j < src.size() && is_digit(src[j])) ++j;
            if (j < src.size() && src[j] == '.') {
                ++j;
                while (j < src.size() && is_digit(src[j])) ++j;
            }
            if (j < src.size() && (src[j] == 'e' || src[j] == 'E')) {
                std::size_t k = j + 1;
                if (k < src.size() && (src[k] == '+' || src[k] == '-')) ++k;
                if (k >= src.size() || !is_digit(src[k]))
                    throw compile_error({line, col + static_cast<int>(k - i)},
                                        "malformed number: expected digits in the exponent");
                while (k < src.size() && is_digit(src[k])) ++k;
                j = k;
            }
            if (j < src.size() && is_ident_char(src[j]))
                throw compile_error({line, col + static_cast<int>(j - i)},
                                    "malformed number: unexpected '" + std::string(1, src[j]) + "'");
            t.kind = tok::number;
            t.text = std::string(src.substr(i, j - i));
            errno = 0;
            t.number = std::strtod(t.text.c_str(), nullptr); // overflow gives inf, as in C
            advance(j - i);
            out.push_back(std::move(t));
            continue;
        }
        if (is_ident_start(c)) {
            std::size_t j = i;
            while (j < src.size() && is_ident_char(src[j])) ++j;
            t.text = std::string(src.substr(i, j - i));
            t.kind = keyword(t.text);
            advance(j - i);
            out.push_back(std::move(t));
            continue;
        }
        std::size_t len = 1;
        switch (c) {
        case '(': t.kind = tok::lparen; break;
        case ')': t.kind = tok::rparen; break;
        case '{': t.kind = tok::lbrace; break;
        case '}': t.kind = tok::rbrace; break;
        case ',': t.kind = tok::comma; break;
        case ';': t.kind = tok::semicolon; break;
        case '+': t.kind = tok::plus; break;
        case '-': t.kind = tok::minus; break;
        case '*': t.kind = tok::star; break;
        case '/': t.kind = tok::slash; break;
        case '<':
            if (next == '=') { t.kind = tok::le; len = 2; } else { t.kind = tok::lt; }
            break;
        case '>':
            if (next == '=') { t.kind = tok::ge; len = 2; } else { t.kind = tok::gt; }
            break;
        case '=':
            if (next == '=') { t.kind = tok::eq; len = 2; } else { t.kind = tok::assign; }
            break;
        case '!':
            if (next == '=') { t.kind = tok::ne; len = 2; } else { t.kind = tok::bang; }
            break;
        case '&':
            if (next != '&') throw compile_error(t.pos, "unexpected character '&' (did you mean '&&'?)");
            t.kind = tok::and_and;
            len = 2;
            break;
        case '|':
            if (next != '|') throw compile_error(t.pos, "unexpected character '|' (did you mean '||'?)");
            t.kind = tok::or_or;
            len = 2;
            break;
        default: {
            std::string shown;
            unsigned char uc = static_cast<unsigned char>(c);
            if (uc >= 0x20 && uc < 0x7f) {
                shown = std::string("'") + c + "'";
            } else {
                char buf[8];
                static constexpr char hex[] = "0123456789abcdef";
                buf[0] = '0'; buf[1] = 'x'; buf[2] = hex[uc >> 4]; buf[3] = hex[uc & 15]; buf[4] = 0;
                shown = buf;
            }
            throw compile_error(t.pos, "unexpected character " + shown);
        }
        }
        advance(len);
        out.push_back(std::move(t));
    }
}

} // namespace tinyk
