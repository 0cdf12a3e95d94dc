// Key computation for a tinyk-like kernel of 100 IR statements, per kernel: build the
// canonical text (values numbered in visiting order with an ordinal_map, never by
// address or name) and hash it with the other components through key_builder — the
// toolchain (computed once per process, as a host does), the IR, the globals read,
// the keys of three callees, the dialect set, the pass pipeline, the options and the
// source file. Also the parts: the canonical text alone, the key_builder alone on a
// ready text, and make_key_builder (which computes the toolchain each time). And
// toolchain::of_code over a library with a GNU build-id (libc) and one without (named by
// its file, as first seen: /proc/self/maps is read when it is first named), each after
// its first call and, for the one without, named anew: given a new time, loaded, named
// and unloaded, beside the same without the naming.
#include "bench_common.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/ordinal_map.hpp>
#include <compile_cache/key/toolchain.hpp>

#include <benchmark/benchmark.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

namespace cc = compile_cache;

// A small SSA IR, as tinyk lowers to: every statement an opcode, operands that are
// earlier statements or arguments, and sometimes a constant; a source line.
struct value {
    std::string debug_name; // not part of the key: renaming must not re-key
};
struct statement : value {
    std::string op;
    std::vector<value const*> operands;
    double constant = 0;
    bool has_constant = false;
    int line = 0;
};
struct kernel_ir {
    std::vector<std::unique_ptr<value>> arguments;
    std::vector<std::unique_ptr<statement>> body;
    int first_line = 0;
};

kernel_ir make_kernel(std::size_t statements) {
    kernel_ir k;
    k.first_line = 120;
    for (int i = 0; i < 4; ++i) {
        k.arguments.push_back(std::make_unique<value>());
        k.arguments.back()->debug_name = "arg" + std::to_string(i);
    }
    char const* ops[] = {"add", "mul", "sub", "load", "store", "cmp.lt", "select", "fma", "const", "call"};
    std::vector<value const*> defined;
    for (auto const& a : k.arguments) defined.push_back(a.get());
    for (std::size_t i = 0; i < statements; ++i) {
        auto s = std::make_unique<statement>();
        s->op = ops[(i * 7) % 10];
        s->debug_name = "t" + std::to_string(i);
        s->line = k.first_line + 1 + static_cast<int>(i / 2);
        if (s->op == "const") {
            s->has_constant = true;
            s->constant = 0.5 * static_cast<double>(i);
        } else {
            s->operands.push_back(defined[(i * 13) % defined.size()]);
            s->operands.push_back(defined[(i * 5 + 1) % defined.size()]);
            if (s->op == "fma" || s->op == "select") s->operands.push_back(defined[i % defined.size()]);
        }
        defined.push_back(s.get());
        k.body.push_back(std::move(s));
    }
    return k;
}

/// The canonical text: "%3 = mul %0, %2  ; +5" per statement, numbered in visiting order.
std::string canonical_text(kernel_ir const& k) {
    cc::ordinal_map<value> number;
    std::string out;
    out.reserve(k.body.size() * 32);
    for (auto const& a : k.arguments) {
        out += "arg %";
        out += std::to_string(number(a.get()));
        out += '\n';
    }
    for (auto const& s : k.body) {
        out += '%';
        out += std::to_string(number(s.get()));
        out += " = ";
        out += s->op;
        for (std::size_t i = 0; i < s->operands.size(); ++i) {
            out += i == 0 ? " %" : ", %";
            out += std::to_string(number(s->operands[i]));
        }
        if (s->has_constant) {
            out += ' ';
            out += std::to_string(s->constant);
        }
        out += "  ; +";
        out += std::to_string(s->line - k.first_line);
        out += '\n';
    }
    return out;
}

struct inputs {
    kernel_ir ir = make_kernel(100);
    cc::toolchain toolchain = cc::toolchain::current("tinyk 0.3", cc::boost_binary::format_id());
    std::map<std::string, double> globals{{"alpha", 2.5}, {"beta", -1.0}, {"n", 1024.0}};
    std::vector<cc::key> callees;
    std::set<std::string> dialects{"tinyk.core", "tinyk.math", "tinyk.mem"};
    std::string pipeline = "inline,constfold,cse,dce,regalloc";
    std::map<std::string, std::int64_t> options{{"opt_level", 2}, {"unroll", 4}, {"vector_width", 8}};
    std::string source = "/home/user/project/kernels/saxpy.tk";

    inputs() {
        for (int i = 0; i < 3; ++i) callees.push_back(cc::key_builder<>().add("callee", i).finish().value());
    }
};

inputs const& the_inputs() {
    static inputs const in;
    return in;
}

cc::key_result key_from(inputs const& in, std::string const& ir_text) {
    cc::key_builder<> kb;
    kb.add("toolchain", in.toolchain);
    kb.add("ir", ir_text);
    kb.add("globals", in.globals);
    for (auto const& c : in.callees) kb.add("callee", c);
    kb.add("dialects", in.dialects);
    kb.add("pipeline", in.pipeline);
    kb.add("options", in.options);
    kb.add("source", in.source);
    return kb.finish();
}

void BM_key_100_statements(benchmark::State& state) {
    inputs const& in = the_inputs();
    for (auto _ : state) {
        cc::key_result k = key_from(in, canonical_text(in.ir));
        benchmark::DoNotOptimize(k.value().data());
    }
    state.SetLabel("IR text " + std::to_string(canonical_text(in.ir).size()) + " B");
}

void BM_key_part_canonical_text(benchmark::State& state) {
    inputs const& in = the_inputs();
    for (auto _ : state) {
        std::string text = canonical_text(in.ir);
        benchmark::DoNotOptimize(text.data());
    }
}

void BM_key_part_builder(benchmark::State& state) {
    inputs const& in = the_inputs();
    std::string const text = canonical_text(in.ir);
    for (auto _ : state) {
        cc::key_result k = key_from(in, text);
        benchmark::DoNotOptimize(k.value().data());
    }
}

void BM_key_part_make_key_builder(benchmark::State& state) {
    cc::default_cache disabled;
    for (auto _ : state) {
        cc::key_builder<> kb = disabled.make_key_builder("tinyk 0.3");
        benchmark::DoNotOptimize(&kb);
    }
}

void const* no_build_id_function(void* library) {
    return library ? dlsym(library, "compile_cache_test_no_build_id") : nullptr;
}

void of_code_loop(benchmark::State& state, void const* code) {
    if (!code) {
        state.SkipWithError("the library without a build-id cannot be loaded");
        return;
    }
    (void)cc::toolchain::of_code({code}); // (first named before the loop)
    for (auto _ : state) {
        cc::toolchain t = cc::toolchain::of_code({code});
        benchmark::DoNotOptimize(t.host_build_id.data());
    }
}

void BM_of_code_build_id(benchmark::State& state) {
    of_code_loop(state, reinterpret_cast<void const*>(&std::printf));
}

void BM_of_code_no_build_id(benchmark::State& state) {
    void* const library = dlopen(COMPILE_CACHE_BENCH_NO_BUILD_ID_MODULE, RTLD_NOW);
    of_code_loop(state, no_build_id_function(library));
    if (library) dlclose(library);
}

// Given a new modification time (so that it is named anew: the maps read), loaded, named,
// unloaded; beside it the floor: the same without the naming.
void load_loop(benchmark::State& state, bool named) {
    struct timespec times[2] = {{0, UTIME_OMIT}, {1700000000, 0}};
    for (auto _ : state) {
        times[1].tv_nsec = (times[1].tv_nsec + 1) % 1000000000;
        if (::utimensat(AT_FDCWD, COMPILE_CACHE_BENCH_NO_BUILD_ID_MODULE, times, 0) != 0) {
            state.SkipWithError("the library's time cannot be set");
            return;
        }
        void* const library = dlopen(COMPILE_CACHE_BENCH_NO_BUILD_ID_MODULE, RTLD_NOW);
        void const* const code = no_build_id_function(library);
        if (!code) {
            state.SkipWithError("the library without a build-id cannot be loaded");
            return;
        }
        if (named) {
            cc::toolchain t = cc::toolchain::of_code({code});
            benchmark::DoNotOptimize(t.host_build_id.data());
        }
        dlclose(library);
    }
}
void BM_of_code_no_build_id_first_named(benchmark::State& state) { load_loop(state, true); }
void BM_of_code_floor_load_unload(benchmark::State& state) { load_loop(state, false); }

BENCHMARK(BM_key_100_statements);
BENCHMARK(BM_key_part_canonical_text);
BENCHMARK(BM_key_part_builder);
BENCHMARK(BM_key_part_make_key_builder);
BENCHMARK(BM_of_code_build_id);
BENCHMARK(BM_of_code_no_build_id);
BENCHMARK(BM_of_code_no_build_id_first_named);
BENCHMARK(BM_of_code_floor_load_unload);

} // namespace

BENCHMARK_MAIN();
