#include "vm.hpp"

#include "diag.hpp"
#include "semantics.hpp"

namespace tinyk {

namespace {

struct frame {
    kernel const* k;
    artifact const* a;
    std::size_t base;    // first register of the frame in the register file
    std::size_t pc;      // next instruction
    std::size_t ret_to;  // absolute register receiving the result (caller's frame)
};

artifact const& code_of(kernel const& k) {
    if (!k.code) throw internal_error("kernel '" + k.name + "' has no code");
    return *k.code;
}

[[noreturn]] void fail(char const* what, frame const& f, std::size_t pc) {
    artifact const& a = *f.a;
    int line = pc < a.lines.size() ? a.lines[pc] : 0;
    int origin = pc < a.origins.size() ? a.origins[pc] : 0;
    std::string name = f.k->name;
    if (origin > 0 && static_cast<std::size_t>(origin) <= a.inlined.size()) {
        kernel const* from = a.inlined[static_cast<std::size_t>(origin - 1)].get();
        if (from) {
            line += from->first_line;
            name = from->name;
        }
    }
    throw runtime_failure(what, line, name);
}

} // namespace

double execute(kernel const& entry, std::vector<double> const& args) {
    std::vector<double> regs(1024);
    std::vector<frame> frames;
    frames.reserve(64);
    artifact const* a = &code_of(entry);
    if (regs.size() < static_cast<std::size_t>(a->nregs)) regs.resize(static_cast<std::size_t>(a->nregs));
    for (std::size_t k = 0; k < args.size(); ++k) regs[k] = args[k];
    frames.push_back({&entry, a, 0, 0, 0});

    frame* f = &frames.back();
    std::int32_t const* code = a->code.data();
    double const* K = a->constants.data();
    double* r = regs.data();
    std::size_t pc = 0;

    for (;;) {
        std::int32_t const* w = code + pc * bc::words;
        ++pc;
        switch (w[0]) {
        case bc::loadk: r[w[1]] = K[w[2]]; break;
        case bc::mov: r[w[1]] = r[w[2]]; break;
        case bc::add: r[w[1]] = sem::add(r[w[2]], r[w[3]]); break;
        case bc::sub: r[w[1]] = sem::sub(r[w[2]], r[w[3]]); break;
        case bc::mul: r[w[1]] = sem::mul(r[w[2]], r[w[3]]); break;
        case bc::div: r[w[1]] = sem::div(r[w[2]], r[w[3]]); break;
        case bc::lt: r[w[1]] = sem::lt(r[w[2]], r[w[3]]); break;
        case bc::le: r[w[1]] = sem::le(r[w[2]], r[w[3]]); break;
        case bc::gt: r[w[1]] = sem::gt(r[w[2]], r[w[3]]); break;
        case bc::ge: r[w[1]] = sem::ge(r[w[2]], r[w[3]]); break;
        case bc::eq: r[w[1]] = sem::eq(r[w[2]], r[w[3]]); break;
        case bc::ne: r[w[1]] = sem::ne(r[w[2]], r[w[3]]); break;
        case bc::min: r[w[1]] = sem::min(r[w[2]], r[w[3]]); break;
        case bc::max: r[w[1]] = sem::max(r[w[2]], r[w[3]]); break;
        case bc::neg: r[w[1]] = sem::neg(r[w[2]]); break;
        case bc::not_: r[w[1]] = sem::not_(r[w[2]]); break;
        case bc::sqrt: r[w[1]] = sem::sqrt(r[w[2]]); break;
        case bc::abs: r[w[1]] = sem::abs(r[w[2]]); break;
        case bc::floor: r[w[1]] = sem::floor(r[w[2]]); break;
        case bc::jmp: pc = static_cast<std::size_t>(w[1]); break;
        case bc::jz:
            if (!sem::is_true(r[w[1]])) pc = static_cast<std::size_t>(w[2]);
            break;
        case bc::assert_:
            if (!sem::is_true(r[w[1]])) fail("assertion failed", *f, pc - 1);
            break;
        case bc::call: {
            kernel const* callee = a->callees[static_cast<std::size_t>(w[2])].get();
            if (frames.size() >= max_call_depth) fail("call depth limit exceeded", *f, pc - 1);
            artifact const* ca = &code_of(*callee);
            f->pc = pc;
            std::size_t base = f->base + static_cast<std::size_t>(w[3]);
            std::size_t ret_to = f->base + static_cast<std::size_t>(w[1]);
            std::size_t need = base + static_cast<std::size_t>(ca->nregs);
            if (regs.size() < need) regs.resize(std::max(need, regs.size() * 2));
            frames.push_back({callee, ca, base, 0, ret_to});
            f = &frames.back();
            a = ca;
            code = a->code.data();
            K = a->constants.data();
            r = regs.data() + base;
            pc = 0;
            break;
        }
        case bc::ret: {
            double v = r[w[1]];
            std::size_t ret_to = f->ret_to;
            frames.pop_back();
            if (frames.empty()) return v;
            regs[ret_to] = v;
            f = &frames.back();
            a = f->a;
            code = a->code.data();
            K = a->constants.data();
            r = regs.data() + f->base;
            pc = f->pc;
            break;
        }
        default:
            throw internal_error("vm: bad opcode in '" + f->k->name + "'");
        }
    }
}

} // namespace tinyk
