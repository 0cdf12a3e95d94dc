// The toy host of docs/tutorial.md: a compiler for arithmetic expressions in one
// variable x ("x * (x + 3) - 7", "helper(x) + 5") to code for a small stack machine,
// and the machine that runs it. It stands in for your compiler: compile() is the
// expensive call the cache saves, and program is the artifact the cache stores.
#pragma once

#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace toy {

namespace cc = compile_cache;

struct kernel;

// [tutorial:artifact]
enum class opcode : std::uint8_t { push, load_x, add, sub, mul, call };

struct instruction {
    opcode op = opcode::push;
    std::int64_t value = 0; // push: the constant
    cc::ref<kernel> callee; // call: the kernel called, by reference, never a copy (step 2)

    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        ar & op & value & callee;
    }
};

// What compiling produces, and what the cache stores: Boost serialization is all
// the default serializer asks of it.
struct program {
    std::vector<instruction> code;

    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        ar & code;
    }
};

struct kernel {
    std::string name;
    std::string source;
    program compiled;
};
// [tutorial:artifact]

/// How many times compile() ran in this process: what the cache saves.
inline int compiler_runs = 0;

/// Finds the kernel a call names; null when there is none.
using kernel_lookup = std::function<kernel*(std::string const& name)>;

namespace detail {

class parser {
public:
    parser(std::string_view source, kernel_lookup const& lookup) : s_(source), lookup_(lookup) {}

    program parse() {
        expression();
        skip_spaces();
        if (at_ < s_.size()) fail("unexpected '" + std::string(1, s_[at_]) + "'");
        return std::move(out_);
    }

private:
    void expression() {
        term();
        for (char c = peek(); c == '+' || c == '-'; c = peek()) {
            ++at_;
            term();
            emit(c == '+' ? opcode::add : opcode::sub);
        }
    }

    void term() {
        factor();
        while (peek() == '*') {
            ++at_;
            factor();
            emit(opcode::mul);
        }
    }

    void factor() {
        char const c = peek();
        if (c == '(') {
            ++at_;
            expression();
            expect(')');
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            std::int64_t n = 0;
            while (at_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[at_])))
                n = n * 10 + (s_[at_++] - '0');
            out_.code.push_back({opcode::push, n, {}});
        } else if (std::isalpha(static_cast<unsigned char>(c))) {
            std::string name;
            while (at_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[at_]))) name += s_[at_++];
            if (name == "x") return emit(opcode::load_x);
            kernel* callee = lookup_ ? lookup_(name) : nullptr;
            if (!callee) fail("no kernel named '" + name + "'");
            expect('(');
            expression();
            expect(')');
            out_.code.push_back({opcode::call, 0, callee});
        } else {
            fail(at_ < s_.size() ? "unexpected '" + std::string(1, c) + "'" : "unexpected end");
        }
    }

    void emit(opcode op) { out_.code.push_back({op, 0, {}}); }
    void skip_spaces() {
        while (at_ < s_.size() && s_[at_] == ' ') ++at_;
    }
    char peek() {
        skip_spaces();
        return at_ < s_.size() ? s_[at_] : '\0';
    }
    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++at_;
    }
    [[noreturn]] void fail(std::string const& what) const {
        throw std::runtime_error("toy: " + what + " at column " + std::to_string(at_ + 1));
    }

    std::string_view s_;
    kernel_lookup const& lookup_;
    std::size_t at_ = 0;
    program out_;
};

inline std::int64_t apply(opcode op, std::int64_t a, std::int64_t b) {
    switch (op) {
    case opcode::add: return a + b;
    case opcode::sub: return a - b;
    default: return a * b;
    }
}

/// Folds `push a; push b; op` into `push (a op b)` until nothing changes.
inline void fold_constants(program& p) {
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t i = 0; i + 2 < p.code.size(); ++i) {
            instruction const& a = p.code[i];
            instruction const& b = p.code[i + 1];
            opcode const op = p.code[i + 2].op;
            if (a.op != opcode::push || b.op != opcode::push ||
                (op != opcode::add && op != opcode::sub && op != opcode::mul))
                continue;
            std::int64_t const folded = apply(op, a.value, b.value);
            p.code.erase(p.code.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                         p.code.begin() + static_cast<std::ptrdiff_t>(i) + 3);
            p.code[i].value = folded;
            changed = true;
        }
    }
}

} // namespace detail

/// Compiles `source`; throws std::runtime_error on a syntax error or an unknown call.
/// In a real compiler this is where the milliseconds to seconds go.
inline program compile(std::string const& source, kernel_lookup const& lookup = {}) {
    ++compiler_runs;
    program p = detail::parser(source, lookup).parse();
    detail::fold_constants(p);
    return p;
}

/// The names of the kernels `source` calls, in order of first appearance, so that
/// a host can key a kernel on its callees before compiling it.
inline std::vector<std::string> calls_in(std::string const& source) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < source.size();) {
        if (!std::isalpha(static_cast<unsigned char>(source[i]))) {
            ++i;
            continue;
        }
        std::size_t const start = i;
        while (i < source.size() && std::isalnum(static_cast<unsigned char>(source[i]))) ++i;
        std::string name = source.substr(start, i - start);
        std::size_t next = i;
        while (next < source.size() && source[next] == ' ') ++next;
        bool const is_call = next < source.size() && source[next] == '(';
        bool const seen = std::find(names.begin(), names.end(), name) != names.end();
        if (is_call && !seen) names.push_back(std::move(name));
    }
    return names;
}

/// Runs a program on x.
inline std::int64_t run(program const& p, std::int64_t x) {
    std::vector<std::int64_t> stack;
    for (instruction const& in : p.code) {
        switch (in.op) {
        case opcode::push: stack.push_back(in.value); break;
        case opcode::load_x: stack.push_back(x); break;
        case opcode::call: stack.back() = run(in.callee->compiled, stack.back()); break;
        default: {
            std::int64_t const b = stack.back();
            stack.pop_back();
            stack.back() = detail::apply(in.op, stack.back(), b);
        }
        }
    }
    return stack.back();
}

} // namespace toy
