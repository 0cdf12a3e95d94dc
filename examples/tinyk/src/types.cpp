#include "types.hpp"

namespace tinyk {

namespace {
type the_f64("f64");
type the_void("void");
} // namespace

type const* f64_type() { return &the_f64; }
type const* void_type() { return &the_void; }

char const* stable_name(type const* t) {
    if (t == &the_f64) return "tinyk.type.f64";
    if (t == &the_void) return "tinyk.type.void";
    return "tinyk.type.unknown";
}

std::string dialect_group::describe() const {
    std::string s = name_ + "{";
    bool first_dialect = true;
    for (auto const& d : dialects_) {
        if (!first_dialect) s += ';';
        first_dialect = false;
        s += d.name + ':';
        for (std::size_t i = 0; i < d.ops.size(); ++i) {
            if (i) s += ',';
            s += d.ops[i];
        }
    }
    return s + "}";
}

dialect_group& core_dialects() {
    static dialect_group group("tinyk.dialects.core",
                               {
                                   {"arith", {"const", "add", "sub", "mul", "div", "neg", "not",
                                              "lt", "le", "gt", "ge", "eq", "ne"}},
                                   {"math", {"sqrt", "abs", "floor", "min", "max"}},
                                   {"cf", {"phi", "br", "cond_br"}},
                                   {"func", {"param", "call", "ret"}},
                                   {"check", {"assert"}},
                               });
    return group;
}

} // namespace tinyk
