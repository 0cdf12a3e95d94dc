#include "bytecode.hpp"

#include "kernel.hpp"

#include <cstdio>
#include <stdexcept>

namespace tinyk {

namespace bc {
char const* name(std::int32_t op) {
    static char const* const names[] = {"loadk", "mov", "add", "sub", "mul", "div", "lt", "le", "gt",
                                        "ge", "eq", "ne", "min", "max", "neg", "not", "sqrt", "abs",
                                        "floor", "jmp", "jz", "call", "ret", "assert"};
    static_assert(sizeof names / sizeof names[0] == op_count, "one name per op");
    return op >= 0 && op < op_count ? names[op] : "?";
}
} // namespace bc

void validate(artifact const& a) {
    auto bad = [](char const* what) { throw std::runtime_error(std::string("tinyk: invalid artifact: ") + what); };
    std::size_t n = a.size();
    if (a.code.size() != n * bc::words || n == 0) bad("code size");
    if (a.lines.size() != n || a.origins.size() != n) bad("source map size");
    if (a.nregs < 0 || a.nparams < 0 || a.nparams > a.nregs) bad("frame size");
    if (!a.dialects || !a.result_type || a.param_types.size() != static_cast<std::size_t>(a.nparams)) bad("references");
    for (auto const& t : a.param_types)
        if (!t) bad("parameter type");
    for (auto const& k : a.callees)
        if (!k) bad("callee");
    for (auto const& k : a.inlined)
        if (!k) bad("inlined origin");
    auto reg = [&](std::int32_t r) {
        if (r < 0 || r >= a.nregs) bad("register out of range");
    };
    for (std::size_t pc = 0; pc < n; ++pc) {
        std::int32_t const* w = &a.code[pc * bc::words];
        if (a.origins[pc] < 0 || static_cast<std::size_t>(a.origins[pc]) > a.inlined.size()) bad("source origin");
        switch (w[0]) {
        case bc::loadk:
            reg(w[1]);
            if (w[2] < 0 || static_cast<std::size_t>(w[2]) >= a.constants.size()) bad("constant index");
            break;
        case bc::mov: case bc::neg: case bc::not_: case bc::sqrt: case bc::abs: case bc::floor:
            reg(w[1]);
            reg(w[2]);
            break;
        case bc::add: case bc::sub: case bc::mul: case bc::div: case bc::lt: case bc::le: case bc::gt:
        case bc::ge: case bc::eq: case bc::ne: case bc::min: case bc::max:
            reg(w[1]);
            reg(w[2]);
            reg(w[3]);
            break;
        case bc::jmp:
            if (w[1] < 0 || static_cast<std::size_t>(w[1]) >= n) bad("jump target");
            break;
        case bc::jz:
            reg(w[1]);
            if (w[2] < 0 || static_cast<std::size_t>(w[2]) >= n) bad("jump target");
            break;
        case bc::call: {
            reg(w[1]);
            if (w[2] < 0 || static_cast<std::size_t>(w[2]) >= a.callees.size()) bad("callee index");
            int args = a.callees[static_cast<std::size_t>(w[2])]->nparams;
            if (w[3] < 0 || static_cast<std::int64_t>(w[3]) + args > a.nregs) bad("call arguments");
            break;
        }
        case bc::ret: case bc::assert_:
            reg(w[1]);
            break;
        default:
            bad("opcode");
        }
    }
    // The last instruction must not fall off the end.
    std::int32_t last = a.code[(n - 1) * bc::words];
    if (last != bc::ret && last != bc::jmp) bad("falls off the end");
}

void relocate_source(artifact& a, std::int64_t line_delta) {
    for (std::size_t pc = 0; pc < a.lines.size(); ++pc)
        if (pc < a.origins.size() && a.origins[pc] == 0)
            a.lines[pc] = static_cast<std::int32_t>(a.lines[pc] + line_delta);
}

std::string disassemble(artifact const& a) {
    std::string s;
    char buf[160];
    std::snprintf(buf, sizeof buf, "  ; %zu instructions, %d registers, %zu constants\n", a.size(),
                  a.nregs, a.constants.size());
    s += buf;
    for (std::size_t pc = 0; pc < a.size(); ++pc) {
        std::int32_t const* w = &a.code[pc * bc::words];
        std::snprintf(buf, sizeof buf, "  %4zu  %-7s %d, %d, %d", pc, bc::name(w[0]), w[1], w[2], w[3]);
        s += buf;
        if (w[0] == bc::loadk && w[2] >= 0 && static_cast<std::size_t>(w[2]) < a.constants.size()) {
            std::snprintf(buf, sizeof buf, "    ; %.17g", a.constants[static_cast<std::size_t>(w[2])]);
            s += buf;
        }
        if (w[0] == bc::call && w[2] >= 0 && static_cast<std::size_t>(w[2]) < a.callees.size()) {
            kernel const* k = a.callees[static_cast<std::size_t>(w[2])].get();
            s += "    ; @" + (k ? k->name : std::string("?"));
        }
        std::int32_t origin = pc < a.origins.size() ? a.origins[pc] : 0;
        if (origin == 0) {
            std::snprintf(buf, sizeof buf, "    ; line %d", a.lines[pc]);
        } else {
            kernel const* k = static_cast<std::size_t>(origin) <= a.inlined.size()
                                  ? a.inlined[static_cast<std::size_t>(origin - 1)].get()
                                  : nullptr;
            std::snprintf(buf, sizeof buf, "    ; %s+%d", k ? k->name.c_str() : "?", a.lines[pc]);
        }
        s += buf;
        s += "\n";
    }
    return s;
}

} // namespace tinyk
