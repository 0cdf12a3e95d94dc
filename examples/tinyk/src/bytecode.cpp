#include "bytecode.hpp"

#include "kernel.hpp"

#include <cstdio>

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
