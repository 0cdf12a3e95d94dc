#include "compiler.hpp"

#include "codegen.hpp"
#include "lower.hpp"
#include "parser.hpp"

namespace tinyk {

module build_module(std::string const& source, std::string const& file) {
    module m;
    m.file = file;
    m.prog = parse(source, file);
    check(m.prog);
    for (std::size_t i = 0; i < m.prog.kernels.size(); ++i) {
        ast::kernel_decl const& d = m.prog.kernels[i];
        auto k = std::make_unique<kernel>();
        k->name = d.name;
        k->index = static_cast<int>(i);
        k->first_line = d.pos.line;
        k->nparams = static_cast<int>(d.params.size());
        lowering_result r = lower(m.prog, static_cast<int>(i));
        k->lowered = std::move(r.fn);
        k->canonical_ir = ir::canonical_text(*k->lowered);
        k->globals_read = std::move(r.globals_read);
        k->callees.assign(r.callees.begin(), r.callees.end());
        m.kernels.push_back(std::move(k));
    }
    return m;
}

std::unique_ptr<ir::function> optimize_kernel(module const& m, kernel const& k, opt_level level) {
    pass_context ctx;
    ctx.arity = [&](int i) { return m.kernels.at(static_cast<std::size_t>(i))->nparams; };
    ctx.inline_candidate = [&](int i) -> ir::function const* {
        kernel const& c = *m.kernels.at(static_cast<std::size_t>(i));
        if (c.recursive || c.lowered->instr_count() > inline_max_callee_instrs) return nullptr;
        return c.lowered.get();
    };
    auto f = k.lowered->clone();
    run_pipeline(*f, level, ctx);
    return f;
}

artifact compile_kernel(module const& m, kernel const& k, opt_level level, std::string* ir_dump) {
    auto f = optimize_kernel(m, k, level);
    if (ir_dump) *ir_dump = ir::debug_text(*f);
    return generate(*f, m);
}

} // namespace tinyk
