// tinyk: keying. What decides whether a cached kernel may be reused.
//
// A kernel's key covers everything its compiled artifact depends on:
//   - its canonical lowered IR (ir::canonical_text: values and blocks numbered in
//     visiting order, lines relative to the kernel's first line, no columns), which
//     already holds the values of the globals it reads; those values also go in as
//     components of their own ("const:NAME" each; "globals:KERNEL" for the members of
//     a recursive component) so that a miss names the global that changed;
//   - the keys of the kernels it calls (one component "callee:NAME" each, so that a
//     miss names the callee that changed), so a change in a callee re-keys every
//     caller transitively; a callee that bypassed makes its callers bypass too.
//     Inlining copies a callee's lowered IR into the caller, which is covered by the
//     callee's key; inlined source lines are stored relative to the
//     callee's first line (see artifact::lines), so moving the callee alone does not
//     invalidate the caller;
//   - the dialect group, the pass pipeline and the optimization level;
//   - the canonical path of the source file;
//   - the toolchain (preloaded by the cache's key builder: "tinyk <version>").
//
// Recursion. Keys of a cycle cannot be computed callee-first, so the call graph is
// cut into strongly connected components (Tarjan). A component of one kernel is keyed
// directly. A component of several kernels is keyed once as a unit: every member's
// IR and globals (members in name order) plus the keys of the callees outside it;
// then each member's key is hash(component key, member name). Editing any member
// re-keys the whole component and everything that calls into it, nothing else.
#include "keying.hpp"

#include <algorithm>
#include <set>

namespace tinyk {

std::vector<std::vector<kernel*>> strongly_connected_components(module& m) {
    std::size_t n = m.kernels.size();
    std::vector<int> index(n, -1), low(n, 0);
    std::vector<bool> on_stack(n, false);
    std::vector<int> stack;
    std::vector<std::vector<kernel*>> out;
    int counter = 0;

    // Iterative Tarjan: each call frame is (kernel, next callee position).
    std::vector<std::pair<int, std::size_t>> calls;
    for (std::size_t root = 0; root < n; ++root) {
        if (index[root] >= 0) continue;
        calls.push_back({static_cast<int>(root), 0});
        while (!calls.empty()) {
            auto& [v, next] = calls.back();
            std::size_t vi = static_cast<std::size_t>(v);
            if (next == 0 && index[vi] < 0) {
                index[vi] = low[vi] = counter++;
                stack.push_back(v);
                on_stack[vi] = true;
            }
            auto const& callees = m.kernels[vi]->callees;
            if (next < callees.size()) {
                int w = callees[next++];
                std::size_t wi = static_cast<std::size_t>(w);
                if (index[wi] < 0) {
                    calls.push_back({w, 0});
                } else if (on_stack[wi]) {
                    low[vi] = std::min(low[vi], index[wi]);
                }
                continue;
            }
            if (low[vi] == index[vi]) {
                std::vector<kernel*> comp;
                int w;
                do {
                    w = stack.back();
                    stack.pop_back();
                    on_stack[static_cast<std::size_t>(w)] = false;
                    comp.push_back(m.kernels[static_cast<std::size_t>(w)].get());
                } while (w != v);
                std::sort(comp.begin(), comp.end(), [](kernel const* a, kernel const* b) { return a->index < b->index; });
                bool self_call = std::binary_search(callees.begin(), callees.end(), v);
                for (kernel* k : comp) {
                    k->scc = static_cast<int>(out.size());
                    k->recursive = comp.size() > 1 || self_call;
                }
                out.push_back(std::move(comp));
            }
            int finished = v;
            calls.pop_back();
            if (!calls.empty()) {
                std::size_t parent = static_cast<std::size_t>(calls.back().first);
                low[parent] = std::min(low[parent], low[static_cast<std::size_t>(finished)]);
            }
        }
    }
    return out;
}

namespace {

char const* level_name(opt_level level) { return level == opt_level::O0 ? "-O0" : "-O1"; }

void add_common(glue::key_builder& kb, key_context const& ctx) {
    kb.add("dialects", core_dialects().describe());
    kb.add("pipeline", pipeline_name(ctx.level));
    kb.add("options", level_name(ctx.level));
    kb.add("file", ctx.file_identity);
    kb.add("backend", ctx.backend);
}

} // namespace

std::vector<glue::key_result> compute_keys(module& m, std::vector<std::vector<kernel*>> const& sccs,
                                           glue::cache const& cache, key_context const& ctx) {
    std::vector<glue::key_result> keys(m.kernels.size());
    for (auto const& comp : sccs) { // callees first
        std::vector<kernel*> members = comp;
        std::sort(members.begin(), members.end(), [](kernel const* a, kernel const* b) { return a->name < b->name; });
        int id = members.front()->scc;

        // Callees outside the component, in name order.
        std::set<std::pair<std::string, int>> outside;
        for (kernel const* k : members)
            for (int c : k->callees)
                if (m.kernels[static_cast<std::size_t>(c)]->scc != id)
                    outside.insert({m.kernels[static_cast<std::size_t>(c)]->name, c});

        // The first reason given is the one reported: a missing source path first,
        // then a callee that bypassed (the key_result overload of add turns it into
        // this component's bypass, naming the callee's component and its reason).
        glue::key_builder kb = cache.make_key_builder();
        if (ctx.file_identity.empty()) kb.fail(ctx.no_file_reason.empty() ? "no stable source path" : ctx.no_file_reason);
        for (auto const& [name, c] : outside) kb.add("callee:" + name, keys[static_cast<std::size_t>(c)]);
        if (members.size() == 1) {
            kernel const* k = members.front();
            kb.add("kernel", k->name);
            kb.add("ir", k->canonical_ir);
            for (auto const& [global, value] : k->globals_read) kb.add("const:" + global, value);
        } else {
            std::string names;
            for (kernel const* k : members) names += (names.empty() ? "" : ",") + k->name;
            kb.add("scc", names);
            for (kernel const* k : members) {
                kb.add("ir:" + k->name, k->canonical_ir);
                kb.add("globals:" + k->name, k->globals_read);
            }
        }
        add_common(kb, ctx);
        glue::key_result unit = kb.finish();

        if (members.size() == 1) {
            keys[static_cast<std::size_t>(members.front()->index)] = unit;
            continue;
        }
        for (kernel const* k : members) {
            glue::key_builder mk = cache.make_key_builder();
            if (!unit.ok()) mk.fail(unit.bypass_reason()); // every member gives the component's reason as is
            mk.add("scc", unit);
            mk.add("kernel", k->name);
            keys[static_cast<std::size_t>(k->index)] = mk.finish();
        }
    }
    return keys;
}

} // namespace tinyk
