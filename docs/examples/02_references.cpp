// Step 2 of docs/tutorial.md: kernels that call kernels. A caller's artifact holds a
// ref<kernel> to its callee, relinked to the live callee when loaded, and the
// callee's key is part of the caller's key, so changing the callee re-keys its callers.
#include "scratch_dir.hpp"
#include "toy_compiler.hpp"

#include <compile_cache/compile_cache.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace cc = compile_cache;

// [tutorial:session]
// One process's worth of work: a module of kernels, compiled through a cache over
// `directory`. Callees come before their callers, so their keys are known.
cc::key_result compile_module(std::string const& directory, std::map<std::string, std::string> const& sources,
                              std::vector<std::string> const& order) {
    cc::default_cache cache{cc::directory_storage(directory)};
    std::map<std::string, toy::kernel> kernels;
    std::map<std::string, cc::key_result> keys;
    auto lookup = [&](std::string const& name) -> toy::kernel* {
        auto it = kernels.find(name);
        return it == kernels.end() ? nullptr : &it->second;
    };

    for (std::string const& name : order) {
        toy::kernel& k = kernels[name];
        k.name = name;
        k.source = sources.at(name);

        cc::key_builder<cc::sha256> builder = cache.make_key_builder("toyc 1.0");
        builder.add("source", k.source);
        for (std::string const& callee : toy::calls_in(k.source)) builder.add("callee", keys.at(callee));
        keys[name] = builder.finish();

        // The registry maps live kernels to keys: a ref<kernel> to a bound kernel is
        // written as its key, and read back as whichever live kernel has that key.
        // bind_self(&k) binds k to its key, then compiles or loads it as `self`.
        cc::cached<toy::program> r = cache.get_or_compile<toy::program>(
            keys[name], {name, "module.toy", 1}, [&] { return toy::compile(k.source, lookup); }, cc::bind_self(&k));
        k.compiled = std::move(r.value);
        std::printf("  %s: %s", name.c_str(), cc::to_string(r.outcome));
        for (toy::instruction const& in : k.compiled.code)
            if (in.op == toy::opcode::call)
                std::printf(", calls %s (the live kernel: %s)", in.callee->name.c_str(),
                            in.callee.get() == lookup(in.callee->name) ? "yes" : "no");
        std::printf("\n");
    }
    std::printf("  main(5) = %lld\n", static_cast<long long>(toy::run(kernels.at("main").compiled, 5)));
    return keys.at("main");
}
// [tutorial:session]

int main() {
    scratch_dir dir;
    std::vector<std::string> const order = {"helper", "main"};

    // [tutorial:main]
    std::printf("run 1:\n");
    compile_module(dir.path(), {{"helper", "x * 2"}, {"main", "helper(x) + 5"}}, order);

    std::printf("run 2, nothing changed:\n");
    cc::key_result const before = compile_module(dir.path(), {{"helper", "x * 2"}, {"main", "helper(x) + 5"}}, order);

    std::printf("run 3, helper changed, main's source did not:\n");
    cc::key_result const after = compile_module(dir.path(), {{"helper", "x * 3"}, {"main", "helper(x) + 5"}}, order);

    std::printf("main's key changed in:");
    for (std::string const& component : after.differing_components(before)) std::printf(" %s", component.c_str());
    std::printf("\n");
    // [tutorial:main]
    return 0;
}
