// Tests of compile_cache/llvm/object_cache.hpp: an llvm::ObjectCache over a
// compile_cache cache, used by ORC's LLJIT. In-process tests use object_cache<Cache>
// over a memory_storage cache; the fresh-process tests run llvm_object_cache_helper
// (helper_jit.cpp: basic_object_cache compiled with -fno-rtti, its store made in an
// RTTI translation unit) against a directory cache.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/llvm/object_cache.hpp>

#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>
#include <unordered_set>
#include <vector>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

namespace cc = compile_cache;
namespace fs = std::filesystem;
using compile_cache_test::temp_dir;

namespace {

using memory_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::memory_storage>;

std::string module_ir(long long constant) {
    return "define i64 @f(i64 %x) {\n"
           "  %y = mul i64 %x, " + std::to_string(constant) + "\n"
           "  %z = add i64 %y, 1\n"
           "  ret i64 %z\n"
           "}\n";
}

void init_llvm() {
    static bool done = [] {
        llvm::InitializeNativeTarget();
        llvm::InitializeNativeTargetAsmPrinter();
        return true;
    }();
    (void)done;
}

template <class T>
T check(llvm::Expected<T> e) {
    if (!e) throw std::runtime_error(llvm::toString(e.takeError()));
    return std::move(*e);
}

llvm::orc::JITTargetMachineBuilder host_jtmb() {
    init_llvm();
    return check(llvm::orc::JITTargetMachineBuilder::detectHost());
}

std::unique_ptr<llvm::Module> parse(std::string const& ir, llvm::LLVMContext& context) {
    llvm::SMDiagnostic diag;
    auto m = llvm::parseIR(llvm::MemoryBufferRef(ir, "test.ll"), diag, context);
    if (!m) throw std::runtime_error("bad IR: " + diag.getMessage().str());
    return m;
}

/// JIT-compiles module_ir(constant) in a new LLJIT whose compiler uses `objects`;
/// returns f(6).
std::int64_t run_jit(cc::basic_object_cache& objects, long long constant, bool tell_target = true) {
    auto jit = check(llvm::orc::LLJITBuilder()
                         .setJITTargetMachineBuilder(host_jtmb())
                         .setCompileFunctionCreator(
                             [&](llvm::orc::JITTargetMachineBuilder b)
                                 -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                                 if (tell_target)
                                     if (llvm::Error e = objects.set_target(b)) return e;
                                 return std::make_unique<llvm::orc::TMOwningSimpleCompiler>(
                                     check(b.createTargetMachine()), &objects);
                             })
                         .create());
    auto context = std::make_unique<llvm::LLVMContext>();
    auto m = parse(module_ir(constant), *context);
    m->setDataLayout(jit->getDataLayout());
    if (llvm::Error e = jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(context))))
        throw std::runtime_error(llvm::toString(std::move(e)));
    auto sym = check(jit->lookup("f"));
    auto f = reinterpret_cast<std::int64_t (*)(std::int64_t)>(static_cast<std::uintptr_t>(sym.getAddress()));
    return f(6);
}

// --- the helper, in fresh processes ------------------------------------------------

struct helper_run {
    int status = -1;
    std::string out;
    bool has(std::string const& s) const { return out.find(s) != std::string::npos; }
};

/// What `command` prints (stdout), and its exit status.
helper_run output_of(std::string const& command) {
    compile_cache_test::process_result const p = compile_cache_test::run_shell(command);
    return {p.exit_code, p.out};
}

helper_run run_helper(fs::path const& cache_dir, std::string const& args,
                      char const* helper = LLVM_OBJECT_CACHE_HELPER) {
    helper_run r = output_of("LLVM_HELPER_CACHE_LOG=1 LLVM_HELPER_CACHE_DIR='" + cache_dir.string() + "' '" + helper +
                             "' " + args + " 2>&1");
    INFO(r.out);
    REQUIRE(r.status == 0);
    return r;
}

// What a run prints when it compiled (and stored) the module, or loaded it.
constexpr char const* compiled = "hits=0 misses=1 rejected=0 notified=1 bypassed=0";
constexpr char const* loaded = "hits=1 misses=0 rejected=0 notified=0 bypassed=0";

/// Runs the helper and checks that it printed f(6) (`result`) and `counts` (compiled or loaded).
helper_run check_run(fs::path const& cache_dir, std::string const& args, char const* counts,
                     std::string const& result = "43") {
    helper_run r = run_helper(cache_dir, args);
    INFO(args << "\n" << r.out);
    CHECK(r.has("result=" + result + " "));
    CHECK(r.has(counts));
    return r;
}

bool is_entry(fs::directory_entry const& e) {
    return e.is_regular_file() && e.path().filename().string().size() == 64;
}

std::size_t entry_count(fs::path const& dir) {
    std::size_t n = 0;
    if (!fs::exists(dir)) return 0;
    for (auto const& e : fs::recursive_directory_iterator(dir))
        if (is_entry(e)) ++n;
    return n;
}

/// The path of an entry below `dir` (the last one found), empty when there is none.
fs::path some_entry(fs::path const& dir) {
    fs::path entry;
    for (auto const& e : fs::recursive_directory_iterator(dir))
        if (is_entry(e)) entry = e.path();
    return entry;
}

/// The value after `name=` in the helper's output, up to a space or line end.
std::string field(helper_run const& r, std::string const& name) {
    std::size_t at = r.out.find(name + "=");
    if (at == std::string::npos) return {};
    at += name.size() + 1;
    return r.out.substr(at, r.out.find_first_of(" \n", at) - at);
}

/// The object a helper run linked, compiled or loaded: its hex SHA-256.
std::string object_of(helper_run const& r) { return field(r, "object"); }

/// A code-generation setting (helper arguments) must not hit an entry stored without
/// it: on a cache warmed under `warm` (the default settings), a run under `setting`
/// links the object an uncached run under `setting` compiles, or bypasses the cache
/// (counted).
void check_setting_is_keyed(std::string const& setting, std::string const& warm = "") {
    temp_dir dir;
    helper_run const plain = run_helper(dir.path(), warm);
    INFO(plain.out);
    REQUIRE(plain.has(compiled));
    helper_run const uncached =
        output_of(std::string("LLVM_HELPER_CACHE_DIR= '") + LLVM_OBJECT_CACHE_HELPER + "' " + setting + " 2>&1");
    INFO(setting << " uncached:\n" << uncached.out);
    REQUIRE(uncached.status == 0);
    REQUIRE(!object_of(uncached).empty());
    REQUIRE(object_of(uncached) != object_of(plain)); // the setting changes the code, so this can fail
    helper_run const cached = run_helper(dir.path(), setting);
    INFO(setting << " on the warm cache:\n" << cached.out);
    CHECK(object_of(cached) == object_of(uncached));
    CHECK((cached.has(compiled) || cached.has("bypassed=1")));
    CHECK(cached.has("result=43 "));
    if (cached.has(compiled)) { // its own entry, loaded next time
        helper_run const again = run_helper(dir.path(), setting);
        INFO(again.out);
        CHECK(again.has(loaded));
        CHECK(object_of(again) == object_of(uncached));
    }
}

/// A target machine for x86-64 (the CPU "x86-64") made with `options`.
std::unique_ptr<llvm::TargetMachine> x86_64_machine(llvm::TargetOptions const& options) {
    init_llvm();
    std::string const triple = "x86_64-unknown-linux-gnu";
    std::string error;
    llvm::Target const* target = llvm::TargetRegistry::lookupTarget(triple, error);
    REQUIRE(target);
    return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
        triple, "x86-64", "", options, llvm::Reloc::PIC_, llvm::None, llvm::CodeGenOpt::Default));
}

/// The object `tm` makes of `ir` (what a SimpleCompiler over `tm` makes).
std::string object_for(llvm::TargetMachine& tm, std::string const& ir) {
    llvm::LLVMContext context;
    auto m = parse(ir, context);
    m->setDataLayout(tm.createDataLayout());
    m->setTargetTriple(tm.getTargetTriple().str());
    llvm::SmallVector<char, 0> out;
    llvm::raw_svector_ostream os(out);
    llvm::legacy::PassManager pm;
    llvm::MCContext* mc = nullptr;
    REQUIRE_FALSE(tm.addPassesToEmitMC(pm, mc, os));
    pm.run(*m);
    return std::string(out.begin(), out.end());
}

/// A string option of a parser type of its own: its dynamic type is none LLVM's
/// library instantiates, yet a cl::opt<std::string>'s, whose value the adapter reads.
struct test_string_parser : llvm::cl::parser<std::string> {
    using llvm::cl::parser<std::string>::parser;
};
llvm::cl::opt<std::string, false, test_string_parser> test_padded_option(
    "compile-cache-test-padded", llvm::cl::desc("compile_cache's tests: a string option of its own parser"),
    llvm::cl::init(""), llvm::cl::Hidden);

} // namespace

TEST_CASE("llvm object_cache: a module compiled in one process is loaded in the next, not compiled") {
    temp_dir dir;
    helper_run const first = check_run(dir.path(), "--constant 7", compiled);
    INFO(first.out);
    CHECK(first.has("cache: hits=0 absent=1 corrupt=0 stores=1"));
    CHECK(entry_count(dir.path()) == 1);

    helper_run const second = check_run(dir.path(), "--constant 7", loaded);
    INFO(second.out);
    CHECK(second.has("cache: hits=1 absent=0 corrupt=0 stores=0"));
    CHECK(entry_count(dir.path()) == 1);
}

TEST_CASE("llvm object_cache: a changed function misses, and both versions stay cached") {
    temp_dir dir;
    CHECK(run_helper(dir.path(), "--constant 7").has(compiled));
    check_run(dir.path(), "--constant 8", compiled, "49");
    CHECK(entry_count(dir.path()) == 2);
    CHECK(run_helper(dir.path(), "--constant 7").has(loaded));
    CHECK(run_helper(dir.path(), "--constant 8").has(loaded));
}

TEST_CASE("llvm object_cache: another opt level misses (code generator, or IR optimisation)") {
    temp_dir dir;
    CHECK(run_helper(dir.path(), "--opt 2").has(compiled));
    check_run(dir.path(), "--opt 0", compiled);
    CHECK(run_helper(dir.path(), "--opt 3").has(compiled));
    check_run(dir.path(), "--opt 2 --ir-opt", compiled); // O2 changed the bitcode (attributes at least)
    CHECK(entry_count(dir.path()) == 4);
    CHECK(run_helper(dir.path(), "--opt 0").has(loaded));
    CHECK(run_helper(dir.path(), "--opt 2 --ir-opt").has(loaded));
}

TEST_CASE("llvm object_cache: another CPU misses") {
    init_llvm();
    if (llvm::Triple(llvm::sys::getProcessTriple()).getArch() != llvm::Triple::x86_64) {
        WARN("CPU names of this test are x86-64 ones; skipped on this architecture");
        return;
    }
    temp_dir dir;
    // Both CPUs run on any x86-64 machine.
    CHECK(run_helper(dir.path(), "--cpu x86-64").has(compiled));
    check_run(dir.path(), "--cpu core2", compiled);
    CHECK(run_helper(dir.path(), "").has(compiled)); // the host CPU and its features
    CHECK(run_helper(dir.path(), "--cpu x86-64").has(loaded));
    CHECK(run_helper(dir.path(), "--cpu core2").has(loaded));
}

TEST_CASE("llvm object_cache: a corrupt entry misses, the JIT compiles as usual, and the entry is replaced") {
    temp_dir dir;
    CHECK(run_helper(dir.path(), "").has(compiled));
    fs::path const entry = some_entry(dir.path());
    REQUIRE(!entry.empty());
    std::string bytes = compile_cache_test::read_file(entry);
    REQUIRE(bytes.size() > 200);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x20); // inside the object code
    compile_cache_test::write_file(entry, bytes);

    helper_run const after = check_run(dir.path(), "", compiled);
    INFO(after.out);
    CHECK(after.has("cache: hits=0 absent=0 corrupt=1 stores=1"));
    CHECK(run_helper(dir.path(), "").has(loaded));

    compile_cache_test::write_file(entry, bytes.substr(0, bytes.size() / 3)); // truncated
    check_run(dir.path(), "", compiled);
}

TEST_CASE("llvm object_cache: a JIT that never gives the target caches nothing, counts a bypass and says set_target once") {
    for (char const* wiring : {"--no-target", "--no-target --lljit"}) {
        temp_dir dir;
        helper_run r = run_helper(dir.path(), wiring);
        INFO(wiring << "\n" << r.out);
        CHECK(r.has("result=43 hits=0 misses=0 rejected=0 notified=0 bypassed=1"));
        CHECK(r.has("cache: hits=0 absent=0 corrupt=0 stores=0 bypasses=1"));
        CHECK(r.has("bypass 'f' (module 'helper.ll'): no target: call set_target("));
        CHECK(entry_count(dir.path()) == 0);
    }
}

TEST_CASE("llvm object_cache: without a cache, nothing is cached and nothing is counted") {
    // LLVM_HELPER_CACHE_DIR empty: the cache is off, the JIT compiles, nothing is stored.
    helper_run r = output_of(std::string("LLVM_HELPER_CACHE_DIR= '") + LLVM_OBJECT_CACHE_HELPER + "' 2>&1");
    INFO(r.out);
    REQUIRE(r.status == 0);
    CHECK(r.has("result=43 hits=0 misses=0 rejected=0 notified=0 bypassed=0"));
}

TEST_CASE("llvm object_cache: an own IRCompileLayer JIT and LLJIT share entries") {
    temp_dir dir;
    CHECK(run_helper(dir.path(), "").has(compiled));
    check_run(dir.path(), "--lljit", loaded);
}

TEST_CASE("llvm object_cache: entries are named after the function a module defines, and compile time is counted") {
    temp_dir dir;
    helper_run r = run_helper(dir.path(), "");
    INFO(r.out);
    CHECK(r.has("llvm object cache: miss 'f' (module 'helper.ll'): new (no earlier entry named f from helper.ll); compiling"));
    CHECK(r.has("llvm object cache: stored 'f' ("));
    CHECK(std::stoull("0" + field(r, "compile-ns")) > 0); // the cache's statistics, this process's
    CHECK(r.has("llvm object cache: hits=0 misses=1 rejected=0 stored=1 bypassed=0")); // the summary line
    fs::path const entry = some_entry(dir.path());
    REQUIRE(!entry.empty());
    std::string const bytes = compile_cache_test::read_file(entry);
    CHECK(bytes.find("helper.ll") != std::string::npos); // the origin, in the entry's metadata
}

TEST_CASE("llvm object_cache: a miss says why, component by component, as the tool's explain does") {
    temp_dir dir;
    CHECK(run_helper(dir.path(), "--constant 7").has("miss 'f' (module 'helper.ll'): new (no earlier entry named f from helper.ll); compiling"));
    helper_run const changed = run_helper(dir.path(), "--constant 8");
    INFO(changed.out);
    CHECK(changed.has("llvm object cache: miss 'f' (module 'helper.ll'): changed bitcode; "
                      "unchanged toolchain, kind, target, llvm, llvm-options; compiling"));
    helper_run const options = run_helper(dir.path(), "--constant 8 --set-llvm-option align-all-functions=6");
    INFO(options.out);
    CHECK(options.has("llvm object cache: miss 'f' (module 'helper.ll'): changed llvm-options; "
                      "unchanged toolchain, kind, bitcode, target, llvm; compiling"));
}

TEST_CASE("llvm object_cache: a rebuilt host loads what its previous build stored (keyed by LLVM's build-id)") {
    temp_dir dir;
    helper_run first = run_helper(dir.path(), "");
    helper_run rebuilt = run_helper(dir.path(), "", LLVM_OBJECT_CACHE_HELPER_REBUILT);
    INFO(first.out << rebuilt.out);
    // Two builds indeed: other build-ids; one code generator, which is not the host.
    REQUIRE(!field(first, "main-build-id").empty());
    REQUIRE(field(first, "main-build-id") != field(rebuilt, "main-build-id"));
    REQUIRE(!field(first, "code-generator").empty());
    CHECK(field(first, "code-generator") == field(rebuilt, "code-generator"));
    CHECK(first.has(compiled));
    CHECK(rebuilt.has("result=43 "));
    CHECK(rebuilt.has(loaded));
}

TEST_CASE("llvm object_cache: a changed LLVM option misses, and each value keeps its entry") {
    temp_dir dir;
    CHECK(run_helper(dir.path(), "").has(compiled));
    CHECK(run_helper(dir.path(), "--llvm-option -enable-misched=false").has(compiled));
    CHECK(run_helper(dir.path(), "--llvm-option -enable-misched=false").has(loaded));
    // Set to its default value: the code is the default's, and so is the entry.
    check_run(dir.path(), "--llvm-option -enable-misched=true", loaded);
    // Told or not, an option whose value LLVM prints is keyed by that value.
    CHECK(run_helper(dir.path(), "--hidden-llvm-option enable-misched=false").has(loaded));
    CHECK(run_helper(dir.path(), "").has(loaded));
    CHECK(entry_count(dir.path()) == 2);
}

TEST_CASE("llvm object_cache: an LLVM option whose value LLVM cannot print, set where no argument shows it, is a bypass, said once") {
    temp_dir dir;
    helper_run r = run_helper(dir.path(), "--hidden-llvm-option pass-remarks=inline");
    INFO(r.out);
    CHECK(r.has("result=43 hits=0 misses=0 rejected=0 notified=0 bypassed=1"));
    CHECK(r.has("LLVM option(s) -pass-remarks set, but no argument gives their value"));
    CHECK(r.has("set_llvm_arguments"));
    CHECK(entry_count(dir.path()) == 0);
}

TEST_CASE("llvm object_cache: an option a driver forwards as -mllvm -name -mllvm value is keyed by value") {
    // `-mllvm -x86-align-branch -mllvm jcc`: LLVM gets `-x86-align-branch jcc` (an
    // option it cannot print); the process's arguments, which the adapter searches,
    // have `-mllvm` after the name.
    temp_dir dir;
    std::string const boundary = "-mllvm -x86-align-branch-boundary=32 -mllvm -x86-align-branch -mllvm ";
    CHECK(run_helper(dir.path(), boundary + "jcc").has(compiled));
    CHECK(run_helper(dir.path(), boundary + "ret").has(compiled)); // its own key
    CHECK(run_helper(dir.path(), boundary + "jcc").has(loaded));
    CHECK(run_helper(dir.path(), boundary + "ret").has(loaded));
    CHECK(entry_count(dir.path()) == 2);
}

TEST_CASE("llvm object_cache: TargetOptions are keyed: LoopAlignment=64 never loads the default's object") {
    check_setting_is_keyed("--target-option loop-alignment=64");
}

TEST_CASE("llvm object_cache: MCTargetOptions are keyed: MCSaveTempLabels never loads the default's object") {
    check_setting_is_keyed("--mc-option save-temp-labels");
}

TEST_CASE("llvm object_cache: an LLVM option set through cl::opt::setValue is keyed by its value") {
    check_setting_is_keyed("--set-llvm-option align-all-functions=8");
}

TEST_CASE("llvm object_cache: an LLVM option parsed by cl::ParseCommandLineOptions is keyed by its value, after code changed it too") {
    check_setting_is_keyed("--parse-llvm-option -align-all-functions=8");
    // Parsed from a command line, then changed by the host's code: the value counts,
    // not the argument.
    check_setting_is_keyed("--parse-llvm-option -align-all-functions=8 --set-llvm-option align-all-functions=6",
                           "--parse-llvm-option -align-all-functions=8");
}

TEST_CASE("llvm object_cache: the adapter's own compiler compiles for the target it keys, in an IRCompileLayer and in LLJIT") {
    temp_dir dir;
    helper_run const own = check_run(dir.path(), "--adapter-compiler --cpu core2", compiled);
    helper_run const uncached =
        output_of(std::string("LLVM_HELPER_CACHE_DIR= '") + LLVM_OBJECT_CACHE_HELPER + "' --cpu core2 2>&1");
    INFO(own.out << uncached.out);
    REQUIRE(!object_of(own).empty());
    CHECK(object_of(own) == object_of(uncached));
    helper_run const lljit = check_run(dir.path(), "--adapter-compiler --lljit --cpu core2", loaded);
    CHECK(object_of(lljit) == object_of(uncached));
    helper_run const other = check_run(dir.path(), "--adapter-compiler --lljit --cpu x86-64", compiled);
    CHECK(object_of(other) != object_of(uncached));
}

TEST_CASE("llvm object_cache: a module that tells another target than the object cache's is a bypass, said once, never stored") {
    init_llvm();
    if (llvm::Triple(llvm::sys::getProcessTriple()).getArch() != llvm::Triple::x86_64) {
        WARN("CPU names of this test are x86-64 ones; skipped on this architecture");
        return;
    }
    auto const layout = check(host_jtmb().getDefaultDataLayoutForTarget()).getStringRepresentation();
    std::string const other_layout = layout.substr(0, layout.rfind("-S128")) + "-S64";
    REQUIRE(other_layout != layout);
    struct disagreement {
        std::string args, line;
    };
    disagreement const cases[] = {
        {"--cpu x86-64 --module-cpu core2", "function 'f' has target-cpu 'core2', the target's CPU is 'x86-64'"},
        {"--module-triple x86_64-unknown-freebsd", "the module's triple 'x86_64-unknown-freebsd' is not the target's"},
        {"--module-data-layout '" + other_layout + "'", "the module's data layout '" + other_layout + "'"},
    };
    for (auto const& c : cases) {
        temp_dir dir;
        helper_run const r = run_helper(dir.path(), c.args);
        INFO(c.args << "\n" << r.out);
        CHECK(r.has("result=43 hits=0 misses=0 rejected=0 notified=0 bypassed=1"));
        CHECK(r.has("llvm object cache: bypass 'f' (module 'helper.ll'): " + c.line));
        CHECK(r.has("disagree on the target"));
        CHECK(entry_count(dir.path()) == 0);
    }
    // Agreement: a target-cpu attribute that names the target's CPU is cached as usual.
    temp_dir dir;
    check_run(dir.path(), "--cpu x86-64 --module-cpu x86-64", compiled);
}

// --- in one process, through object_cache<Cache> ------------------------------------

TEST_CASE("llvm object_cache<Cache>: a second JIT in the same process loads what the first compiled") {
    memory_cache cache{cc::memory_storage{}};
    cc::object_cache<memory_cache> objects(cache, "object_cache_test");
    CHECK(run_jit(objects, 5) == 31);
    CHECK(objects.statistics().misses == 1);
    CHECK(objects.statistics().notified == 1);
    CHECK(cache.stats().stores == 1);

    CHECK(run_jit(objects, 5) == 31);
    CHECK(objects.statistics().hits == 1);
    CHECK(cache.stats().hits == 1);

    CHECK(run_jit(objects, 6) == 37);
    CHECK(objects.statistics().misses == 2);
    CHECK(cache.stats().stores == 2);
}

namespace {
/// An LLJIT at `level` whose compiler is the object cache's own (compile_function).
std::unique_ptr<llvm::orc::LLJIT> jit_at(cc::basic_object_cache& objects, llvm::CodeGenOpt::Level level) {
    auto jtmb = host_jtmb();
    jtmb.setCodeGenOptLevel(level);
    return check(llvm::orc::LLJITBuilder()
                     .setJITTargetMachineBuilder(std::move(jtmb))
                     .setCompileFunctionCreator(objects.compile_function())
                     .create());
}

/// Compiles module_ir(constant) in `jit`; returns f(6).
std::int64_t run_in(llvm::orc::LLJIT& jit, long long constant) {
    auto context = std::make_unique<llvm::LLVMContext>();
    auto m = parse(module_ir(constant), *context);
    m->setDataLayout(jit.getDataLayout());
    if (llvm::Error e = jit.addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(context))))
        throw std::runtime_error(llvm::toString(std::move(e)));
    auto sym = check(jit.lookup("f"));
    auto f = reinterpret_cast<std::int64_t (*)(std::int64_t)>(static_cast<std::uintptr_t>(sym.getAddress()));
    return f(6);
}
} // namespace

TEST_CASE("llvm object_cache<Cache>: each compiler made here keys by its own target, not by the last one made") {
    memory_cache cache{cc::memory_storage{}};
    cc::object_cache<memory_cache> objects(cache, "object_cache_test");
    // A JIT's two tiers: the O0 compiler is made first, the O3 one second.
    auto const tier0 = jit_at(objects, llvm::CodeGenOpt::None);
    auto const tier3 = jit_at(objects, llvm::CodeGenOpt::Aggressive);
    CHECK(run_in(*tier0, 5) == 31); // keyed O0, not O3
    CHECK(run_in(*tier3, 5) == 31); // so O3 misses: it never loads the O0 object
    CHECK(objects.statistics().hits == 0);
    CHECK(objects.statistics().misses == 2);
    CHECK(cache.stats().stores == 2);
    auto const tier0_again = jit_at(objects, llvm::CodeGenOpt::None); // (made after the O3 one)
    CHECK(run_in(*tier0_again, 5) == 31);
    CHECK(objects.statistics().hits == 1); // the O0 object, under the O0 key
}

TEST_CASE("llvm object_cache<Cache>: an object notified after a bypass is never stored under an earlier miss's key") {
    memory_cache cache{cc::memory_storage{}};
    cc::object_cache<memory_cache> objects(cache, host_jtmb(), "object_cache_test");
    llvm::LLVMContext context;
    auto m = parse(module_ir(5), context);
    m->setDataLayout(check(host_jtmb().getDefaultDataLayoutForTarget()));
    CHECK(objects.getObject(m.get()) == nullptr); // a miss, whose compile then fails: nothing notified
    // The same module object, now for another target: a bypass, which has no key.
    m->setTargetTriple("sparcv9-sun-solaris");
    CHECK(objects.getObject(m.get()) == nullptr);
    CHECK(objects.statistics().bypassed == 1);
    std::string const object = "the object of the module as it is now";
    objects.notifyObjectCompiled(m.get(), llvm::MemoryBufferRef(object, "m"));
    CHECK(objects.statistics().notified == 0);
    CHECK(cache.stats().stores == 0);
}

TEST_CASE("llvm object_cache<Cache>: constructed with the JIT's JITTargetMachineBuilder, it needs no set_target") {
    memory_cache cache{cc::memory_storage{}};
    cc::object_cache<memory_cache> objects(cache, host_jtmb(), "object_cache_test");
    CHECK(run_jit(objects, 5, /*tell_target=*/false) == 31);
    CHECK(run_jit(objects, 5, /*tell_target=*/false) == 31);
    CHECK(objects.statistics().bypassed == 0);
    CHECK(objects.statistics().hits == 1);
    CHECK(cache.stats().compile_ns > 0);
}

TEST_CASE("llvm object_cache<Cache>: an intact entry that is not an object file is not used") {
    memory_cache cache{cc::memory_storage{}};
    std::string const host = "object_cache_test";
    cc::object_cache<memory_cache> objects(cache, host);
    REQUIRE(run_jit(objects, 9) == 55);

    // The inputs the adapter keys this module by; storing under them replaces the entry.
    llvm::LLVMContext context;
    auto m = parse(module_ir(9), context);
    auto jtmb = host_jtmb();
    auto tm = check(jtmb.createTargetMachine());
    m->setDataLayout(tm->createDataLayout());
    cc::object_key_inputs in;
    in.module_name = m->getModuleIdentifier();
    in.bitcode_digest = cc::bitcode_digest(*m);
    in.target = cc::describe_target(*tm);
    in.code_generator = cc::code_generator_identity(*tm);
    in.llvm_version = LLVM_VERSION_STRING;
    std::string unknown;
    in.llvm_options = cc::describe_llvm_options({}, unknown);
    REQUIRE(unknown.empty());
    cc::make_object_store(cache, host).store(in, "this is not an object file", {});

    CHECK(run_jit(objects, 9) == 55);
    CHECK(objects.statistics().rejected == 1);
    CHECK(objects.statistics().notified == 2); // compiled again, and stored again

    CHECK(run_jit(objects, 9) == 55);
    CHECK(objects.statistics().hits == 1);
}

TEST_CASE("llvm code_generator_identity: the build-id of LLVM's library, not of the program, in both keys' toolchain") {
    auto tm = check(host_jtmb().createTargetMachine());
    std::string const id = cc::code_generator_identity(*tm);
    REQUIRE(!id.empty());
    cc::detail::loaded_module const m = cc::detail::module_containing(&tm->getTarget());
    REQUIRE(m.found);
    if (m.main_program) {
        CHECK(id == cc::detail::main_program_build_id()); // LLVM linked statically
    } else {
        CHECK(id != cc::detail::main_program_build_id());
        CHECK(id == m.build_id);
        // What the file itself says (binutils' readelf), when the tool is there.
        helper_run const readelf = output_of("readelf -n '" + m.path + "' 2>/dev/null");
        if (readelf.has("Build ID")) CHECK(readelf.has("Build ID: " + id));
    }

    // Another code generator (a replaced libLLVM) is another key.
    memory_cache cache{cc::memory_storage{}};
    cc::object_key_inputs in;
    in.bitcode_digest = std::string(32, 'b');
    in.target = cc::describe_target(*tm);
    in.code_generator = id;
    cc::key_result const a = cc::object_key(cache, in);
    in.code_generator = "0123456789abcdef";
    cc::key_result const b = cc::object_key(cache, in);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a.value() != b.value());
    in.llvm_options = "option=14:enable-misched;";
    CHECK(cc::object_key(cache, in).value() != b.value());
}

TEST_CASE("llvm describe_target: deterministic, and it tells CPUs, features and opt levels apart") {
    auto describe = [](std::string const& cpu, std::string const& features, llvm::CodeGenOpt::Level level) {
        auto jtmb = host_jtmb();
        jtmb.setCPU(cpu);
        jtmb.setFeatures(features);
        jtmb.setCodeGenOptLevel(level);
        return check(cc::describe_target(jtmb));
    };
    std::string const base = describe("x86-64", "", llvm::CodeGenOpt::Default);
    CHECK(base == describe("x86-64", "", llvm::CodeGenOpt::Default));
    CHECK(base != describe("core2", "", llvm::CodeGenOpt::Default));
    CHECK(base != describe("x86-64", "+sse4.1", llvm::CodeGenOpt::Default));
    CHECK(base != describe("x86-64", "", llvm::CodeGenOpt::None));
    CHECK(base.find(LLVM_VERSION_STRING) == std::string::npos); // the version is its own key field

    llvm::TargetOptions fast;
    fast.UnsafeFPMath = true;
    auto jtmb = host_jtmb();
    jtmb.setCPU("x86-64");
    jtmb.setOptions(fast);
    CHECK(base != check(cc::describe_target(jtmb)));
}

TEST_CASE("llvm describe_target: every field of TargetOptions and MCTargetOptions that was left out is told apart") {
    auto describe = [](auto&& change) {
        auto jtmb = host_jtmb();
        jtmb.setCPU("x86-64");
        jtmb.setFeatures("");
        llvm::TargetOptions o;
        change(o);
        jtmb.setOptions(o);
        return check(cc::describe_target(jtmb));
    };
    std::string const base = describe([](llvm::TargetOptions&) {});
    auto list = [](char const* text) {
        return std::shared_ptr<llvm::MemoryBuffer>(llvm::MemoryBuffer::getMemBufferCopy(text, "list"));
    };
    std::string const list_a = describe([&](llvm::TargetOptions& o) { o.BBSectionsFuncListBuf = list("!f"); });
    std::string const list_b = describe([&](llvm::TargetOptions& o) { o.BBSectionsFuncListBuf = list("!g"); });
    CHECK(list_a != list_b); // by content
    CHECK(list_a == describe([&](llvm::TargetOptions& o) { o.BBSectionsFuncListBuf = list("!f"); }));
    std::string const other[] = {
        describe([](llvm::TargetOptions& o) { o.LoopAlignment = 64; }),
        describe([](llvm::TargetOptions& o) { o.TLSSize = 24; }),
        describe([](llvm::TargetOptions& o) { o.GlobalISelAbort = llvm::GlobalISelAbortMode::Disable; }),
        describe([](llvm::TargetOptions& o) { o.BinutilsVersion = {2, 35}; }),
        describe([](llvm::TargetOptions& o) { o.SwiftAsyncFramePointer = llvm::SwiftAsyncFramePointerMode::Never; }),
        describe([](llvm::TargetOptions& o) { o.CompressDebugSections = llvm::DebugCompressionType::Z; }),
        describe([](llvm::TargetOptions& o) { o.StackUsageOutput = "f.su"; }),
        describe([](llvm::TargetOptions& o) { o.ObjectFilenameForDebug = "f.o"; }),
        list_a,
        describe([](llvm::TargetOptions& o) { o.MCOptions.MCSaveTempLabels = true; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.MCFatalWarnings = true; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.MCNoTypeCheck = true; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.MCUseDwarfDirectory = true; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.PreserveAsmComments = false; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.Dwarf64 = true; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.DwarfVersion = 4; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.AssemblyLanguage = "masm"; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.SplitDwarfFile = "f.dwo"; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.Argv0 = "jit"; }),
        describe([](llvm::TargetOptions& o) { o.MCOptions.IASSearchPaths = {"/x"}; }),
    };
    for (std::size_t i = 0; i < std::size(other); ++i) {
        INFO("changed field " << i);
        CHECK(other[i] != base);
        for (std::size_t j = 0; j < i; ++j) CHECK(other[i] != other[j]);
    }
    static std::string const args[] = {"-g"};
    CHECK(base != describe([](llvm::TargetOptions& o) { o.MCOptions.CommandLineArgs = args; }));
}

TEST_CASE("llvm describe_target: ExceptionModel set after the machine was made is keyed as it is used") {
    // LLVM copies it into the machine's MCAsmInfo when it makes the machine, and the
    // code generator reads it there: set afterwards, it changes Options, not the code.
    char const* const ir = "declare void @may_throw()\n"
                           "declare i32 @__gxx_personality_v0(...)\n"
                           "define i32 @f() personality i32 (...)* @__gxx_personality_v0 {\n"
                           "  invoke void @may_throw() to label %ok unwind label %lp\n"
                           "ok:\n  ret i32 0\n"
                           "lp:\n  %l = landingpad { i8*, i32 } cleanup\n  ret i32 1\n}\n";
    llvm::TargetOptions sjlj;
    sjlj.ExceptionModel = llvm::ExceptionHandling::SjLj;
    auto made_so = x86_64_machine(sjlj);
    auto set_after = x86_64_machine(llvm::TargetOptions());
    set_after->Options.ExceptionModel = llvm::ExceptionHandling::SjLj;
    REQUIRE(made_so->getMCAsmInfo()->getExceptionHandlingType() == llvm::ExceptionHandling::SjLj);
    REQUIRE(set_after->getMCAsmInfo()->getExceptionHandlingType() == llvm::ExceptionHandling::DwarfCFI);
    // Described as set_target describes them, before they compile (compiling sets
    // O0WantsFastISel, from an LLVM option).
    std::string const made_so_described = cc::describe_target(*made_so);
    CHECK(made_so_described == cc::describe_target(*x86_64_machine(sjlj))); // made alike, described alike
    CHECK(made_so_described != cc::describe_target(*set_after));
    CHECK(object_for(*made_so, ir) != object_for(*set_after, ir)); // SjLj in one, DWARF CFI in the other
}

TEST_CASE("llvm describe_target: every TargetOptions field LLVM latches in the MCAsmInfo is keyed as made") {
    auto check_latched = [](char const* field, auto&& change) {
        INFO(field);
        llvm::TargetOptions o;
        change(o);
        auto made_so = x86_64_machine(o);
        auto set_after = x86_64_machine(llvm::TargetOptions());
        change(set_after->Options);
        CHECK(cc::describe_target(*made_so) != cc::describe_target(*set_after));
    };
    check_latched("ExceptionModel", [](llvm::TargetOptions& o) { o.ExceptionModel = llvm::ExceptionHandling::SjLj; });
    check_latched("RelaxELFRelocations", [](llvm::TargetOptions& o) { o.RelaxELFRelocations = true; });
    check_latched("CompressDebugSections",
                  [](llvm::TargetOptions& o) { o.CompressDebugSections = llvm::DebugCompressionType::Z; });
    check_latched("DisableIntegratedAS", [](llvm::TargetOptions& o) { o.DisableIntegratedAS = true; });
    check_latched("BinutilsVersion", [](llvm::TargetOptions& o) { o.BinutilsVersion = {2, 35}; });
    check_latched("MCOptions.PreserveAsmComments",
                  [](llvm::TargetOptions& o) { o.MCOptions.PreserveAsmComments = false; });
    // The binutils version is read back exactly (LLVM 14's MCAsmInfo only compares it).
    llvm::TargetOptions a, b;
    a.BinutilsVersion = {2, 35};
    b.BinutilsVersion = {2, 36};
    a.MCOptions.PreserveAsmComments = b.MCOptions.PreserveAsmComments = true;
    auto ma = x86_64_machine(a), mb = x86_64_machine(b);
    mb->Options.BinutilsVersion = a.BinutilsVersion; // Options alike, MCAsmInfo not
    CHECK(cc::describe_target(*ma) != cc::describe_target(*mb));
}

TEST_CASE("llvm describe_target: LLVM options read when the machine is made are keyed as they were then") {
    // MCAsmInfo's constructor reads -use-leb128-directives and -dwarf-extended-loc; the
    // option walk keys them as they are when a module compiles, not as the machine took them.
    init_llvm();
    auto& registered = llvm::cl::getRegisteredOptions();
    REQUIRE(registered.count("use-leb128-directives") == 1);
    auto& leb128 = *static_cast<llvm::cl::opt<llvm::cl::boolOrDefault>*>(registered["use-leb128-directives"]);
    auto before = x86_64_machine(llvm::TargetOptions());
    leb128.setValue(llvm::cl::BOU_FALSE);
    auto after = x86_64_machine(llvm::TargetOptions());
    leb128.setValue(llvm::cl::BOU_UNSET);
    REQUIRE(before->getMCAsmInfo()->hasLEB128Directives() != after->getMCAsmInfo()->hasLEB128Directives());
    CHECK(cc::describe_target(*before) != cc::describe_target(*after));
}

TEST_CASE("llvm describe_llvm_options: an option without a cl::init default is keyed by its value") {
    init_llvm();
    auto& registered = llvm::cl::getRegisteredOptions();
    REQUIRE(registered.count("cfg-dot-filename-prefix") == 1);
    // A cl::opt<std::string> without cl::init in LLVM 14: LLVM cannot say it changed.
    auto& prefix = *static_cast<llvm::cl::opt<std::string>*>(registered["cfg-dot-filename-prefix"]);
    REQUIRE(prefix.getValue().empty());
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    prefix.setValue("other");
    std::string const after = cc::describe_llvm_options({}, unknown);
    prefix.setValue("");
    CHECK(unknown.empty());
    CHECK(after != before);
    CHECK(cc::describe_llvm_options({}, unknown) == before);
}

TEST_CASE("llvm describe_llvm_options: a double option is keyed by its arguments, never by its 7-digit print") {
    init_llvm();
    auto& registered = llvm::cl::getRegisteredOptions();
    REQUIRE(registered.count("ext-tsp-forward-weight") == 1);
    auto& weight = *static_cast<llvm::cl::opt<double>*>(registered["ext-tsp-forward-weight"]); // double in LLVM 14
    double const default_weight = weight;
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    // 0.30000001 and 0.30000002 both print as 3.000000e-01: set without an argument that
    // names it, its value cannot be told, a bypass.
    weight.setValue(0.30000001);
    (void)cc::describe_llvm_options({}, unknown);
    CHECK(unknown == "-ext-tsp-forward-weight");
    // Named by an argument: keyed by it, exactly.
    std::string const first = cc::describe_llvm_options({"-ext-tsp-forward-weight=0.30000001"}, unknown);
    CHECK(unknown.empty());
    weight.setValue(0.30000002);
    std::string const second = cc::describe_llvm_options({"-ext-tsp-forward-weight=0.30000002"}, unknown);
    CHECK(unknown.empty());
    CHECK(first != second);
    weight.setValue(default_weight);
    CHECK(cc::describe_llvm_options({}, unknown) == before);
    CHECK(unknown.empty());
}

namespace {

// One option of each class print_option_values reads (cl::opt of each value type, with
// its own storage and with a cl::location), registered in this process, each at its
// default unless a test sets it.
#define TEST_READ_OPTION(T, suffix, initial)                                                                   \
    llvm::cl::opt<T> read_##suffix("compile-cache-test-" #suffix, llvm::cl::init(initial), llvm::cl::Hidden); \
    T read_##suffix##_location;                                                                            \
    llvm::cl::opt<T, true> read_##suffix##_ext("compile-cache-test-" #suffix "-ext",                       \
                                               llvm::cl::location(read_##suffix##_location),               \
                                               llvm::cl::init(initial), llvm::cl::Hidden);
TEST_READ_OPTION(bool, bool, false)
TEST_READ_OPTION(llvm::cl::boolOrDefault, bool_or_default, llvm::cl::BOU_UNSET)
TEST_READ_OPTION(int, int, -3)
TEST_READ_OPTION(long, long, -4L)
TEST_READ_OPTION(long long, long_long, -5LL)
TEST_READ_OPTION(unsigned, unsigned, 3U)
TEST_READ_OPTION(unsigned long, unsigned_long, 4UL)
TEST_READ_OPTION(unsigned long long, unsigned_long_long, 5ULL)
TEST_READ_OPTION(double, double, 0.25)
TEST_READ_OPTION(float, float, 0.5F)
TEST_READ_OPTION(char, char, 'a')
TEST_READ_OPTION(std::string, string, "abc")
#undef TEST_READ_OPTION

// Enum options (LLVM's generic cl::parser<E>) of each size an enum's value may have, with
// their own storage and with a cl::location, each at its default unless a test sets it.
enum class test_enum_1 : std::uint8_t { a = 1, b = 200 };
enum class test_enum_2 : std::int16_t { a = -300, b = 7 };
enum test_enum_4 { test_enum_4_a = 0, test_enum_4_b = 70000, test_enum_4_c = -1 };
// (cl::values holds an int: a value beyond one is no entry's, for LLVM as here.)
enum class test_enum_8 : std::uint64_t { a = 5, b = 3 };
llvm::cl::opt<test_enum_1> read_enum_1("compile-cache-test-enum-1", llvm::cl::init(test_enum_1::a), llvm::cl::Hidden,
                                       llvm::cl::values(clEnumValN(test_enum_1::a, "one-a", ""),
                                                        clEnumValN(test_enum_1::b, "one-b", "")));
llvm::cl::opt<test_enum_2> read_enum_2("compile-cache-test-enum-2", llvm::cl::init(test_enum_2::b), llvm::cl::Hidden,
                                       llvm::cl::values(clEnumValN(test_enum_2::a, "two-a", ""),
                                                        clEnumValN(test_enum_2::b, "two-b", "")));
llvm::cl::opt<test_enum_4> read_enum_4("compile-cache-test-enum-4", llvm::cl::init(test_enum_4_a), llvm::cl::Hidden,
                                       llvm::cl::values(clEnumValN(test_enum_4_a, "four-a", ""),
                                                        clEnumValN(test_enum_4_b, "four-b", ""),
                                                        clEnumValN(test_enum_4_c, "a-name-longer-than-eight", "")));
llvm::cl::opt<test_enum_8> read_enum_8("compile-cache-test-enum-8", llvm::cl::init(test_enum_8::a), llvm::cl::Hidden,
                                       llvm::cl::values(clEnumValN(test_enum_8::a, "eight-a", ""),
                                                        clEnumValN(test_enum_8::b, "eight-b", "")));
test_enum_4 read_enum_4_location;
llvm::cl::opt<test_enum_4, true> read_enum_4_ext("compile-cache-test-enum-4-ext",
                                                 llvm::cl::location(read_enum_4_location),
                                                 llvm::cl::init(test_enum_4_b), llvm::cl::Hidden,
                                                 llvm::cl::values(clEnumValN(test_enum_4_a, "four-a", ""),
                                                                  clEnumValN(test_enum_4_b, "four-b", "")));
test_enum_8 read_enum_8_location;
llvm::cl::opt<test_enum_8, true> read_enum_8_ext("compile-cache-test-enum-8-ext",
                                                 llvm::cl::location(read_enum_8_location),
                                                 llvm::cl::init(test_enum_8::b), llvm::cl::Hidden,
                                                 llvm::cl::values(clEnumValN(test_enum_8::a, "eight-a", ""),
                                                                  clEnumValN(test_enum_8::b, "eight-b", "")));
// Read: a cl::location without cl::init (its default is the location's value then). Not
// read: one without its cl::location, one of a parser of its own, one of a class derived
// from cl::opt.
test_enum_2 enum_without_default_location = test_enum_2::a;
llvm::cl::opt<test_enum_2, true> enum_without_default("compile-cache-enum-without-init",
                                                      llvm::cl::location(enum_without_default_location),
                                                      llvm::cl::Hidden,
                                                      llvm::cl::values(clEnumValN(test_enum_2::a, "two-a", ""),
                                                                       clEnumValN(test_enum_2::b, "two-b", "")));
llvm::cl::opt<test_enum_4, true> enum_without_location("compile-cache-enum-without-location", llvm::cl::Hidden,
                                                       llvm::cl::values(clEnumValN(test_enum_4_a, "four-a", "")));
struct test_enum_parser : llvm::cl::parser<test_enum_4> {
    using llvm::cl::parser<test_enum_4>::parser;
};
llvm::cl::opt<test_enum_4, false, test_enum_parser> enum_own_parser(
    "compile-cache-enum-own-parser", llvm::cl::init(test_enum_4_a), llvm::cl::Hidden,
    llvm::cl::values(clEnumValN(test_enum_4_a, "four-a", ""), clEnumValN(test_enum_4_b, "four-b", "")));
struct test_enum_option : llvm::cl::opt<test_enum_4> {
    using llvm::cl::opt<test_enum_4>::opt;
};
test_enum_option enum_derived("compile-cache-enum-derived", llvm::cl::init(test_enum_4_a), llvm::cl::Hidden,
                              llvm::cl::values(clEnumValN(test_enum_4_a, "four-a", ""),
                                               clEnumValN(test_enum_4_b, "four-b", "")));

/// Sets every test option above to another value than its default (`on`), or back.
void set_read_options(bool on) {
    read_bool.setValue(on);
    read_bool_ext.setValue(on);
    read_bool_or_default.setValue(on ? llvm::cl::BOU_FALSE : llvm::cl::BOU_UNSET);
    read_bool_or_default_ext.setValue(on ? llvm::cl::BOU_TRUE : llvm::cl::BOU_UNSET);
    read_int.setValue(on ? 7 : -3);
    read_int_ext.setValue(on ? -8 : -3);
    read_long.setValue(on ? 1L << 40 : -4L);
    read_long_ext.setValue(on ? -(1L << 41) : -4L);
    read_long_long.setValue(on ? 1LL << 42 : -5LL);
    read_long_long_ext.setValue(on ? 9LL : -5LL);
    read_unsigned.setValue(on ? 4000000000U : 3U);
    read_unsigned_ext.setValue(on ? 0U : 3U);
    read_unsigned_long.setValue(on ? ~0UL : 4UL);
    read_unsigned_long_ext.setValue(on ? 1UL : 4UL);
    read_unsigned_long_long.setValue(on ? ~0ULL : 5ULL);
    read_unsigned_long_long_ext.setValue(on ? 6ULL : 5ULL);
    read_double.setValue(on ? 1e300 : 0.25);
    read_double_ext.setValue(on ? -0.125 : 0.25);
    read_float.setValue(on ? 3.5F : 0.5F);
    read_float_ext.setValue(on ? -1e-20F : 0.5F);
    read_char.setValue(on ? 'z' : 'a');
    read_char_ext.setValue(on ? ' ' : 'a');
    read_string.setValue(on ? "a longer value than eight" : "abc");
    read_string_ext.setValue(on ? "" : "abc");
    read_enum_1.setValue(on ? test_enum_1::b : test_enum_1::a);
    read_enum_2.setValue(on ? test_enum_2::a : test_enum_2::b);
    read_enum_4.setValue(on ? test_enum_4_c : test_enum_4_a);
    read_enum_8.setValue(on ? test_enum_8::b : test_enum_8::a);
    read_enum_4_ext.setValue(on ? test_enum_4_a : test_enum_4_b);
    read_enum_8_ext.setValue(on ? test_enum_8::a : test_enum_8::b);
}

/// What `o` prints through Option::printOptionValue (to llvm::outs(), for the call the
/// file `fd`, emptied first: the test is the only thread that writes to llvm::outs()).
std::string printed_by_llvm(int fd, llvm::cl::Option const& o, std::size_t width, bool force) {
    llvm::outs().flush();
    std::fflush(stdout);
    REQUIRE(::ftruncate(fd, 0) == 0);
    int const saved = ::dup(1);
    REQUIRE(::dup2(fd, 1) == 1);
    o.printOptionValue(width, force);
    llvm::outs().flush();
    ::dup2(saved, 1);
    ::close(saved);
    std::string text(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)), '\0');
    REQUIRE(::pread(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
    return text;
}

} // namespace

TEST_CASE("llvm describe_llvm_options: llvm::outs() written on a host thread meanwhile: no crash, no line lost") {
    // From an audit: the option walk printed every option through llvm::outs() (with fd 1
    // an in-memory file), so a host thread writing to llvm::outs() while its JIT compiled
    // was a second writer on an unlocked stream: the host crashed (SIGSEGV or SIGABRT in
    // raw_ostream), or its lines went into the walk's file. In a child process: a crash
    // fails this test, not the suite.
    init_llvm();
    temp_dir dir;
    fs::path const out_file = dir.path() / "host-stdout";
    std::fflush(stdout);
    llvm::outs().flush();
    pid_t const pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int const out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600); // buffered, as a log is
        if (out < 0 || ::dup2(out, 1) < 0) ::_exit(2);
        std::atomic<bool> started{false}, stop{false};
        long lines = 0;
        std::thread host([&] {
            started = true;
            while (!stop && lines < 1000000) llvm::outs() << "host line " << lines++ << "\n";
            llvm::outs() << "host lines " << lines << "\n";
            llvm::outs().flush();
        });
        while (!started) std::this_thread::yield();
        // The JIT's compile thread: what getObject does for each module.
        long unread = 0;
        for (int walk = 0; walk < 200; ++walk) {
            std::string unknown;
            (void)cc::describe_llvm_options({}, unknown);
            if (unknown == "*") ++unread; // the values were not read: a bypass
        }
        stop = true;
        host.join();
        ::_exit(unread > 0 ? 3 : 0);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO("child " << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "exited " + std::to_string(WEXITSTATUS(status))));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    std::string const written = compile_cache_test::read_file(out_file);
    // Every line the host wrote, in order, then the count it wrote last.
    std::size_t const last = written.rfind("host lines ");
    long const lines = last == std::string::npos ? -1 : std::atol(written.c_str() + last + 11);
    std::string expected;
    for (long n = 0; n < lines; ++n) expected += "host line " + std::to_string(n) + "\n";
    expected += "host lines " + std::to_string(lines) + "\n";
    bool const every_line = lines > 0 && written == expected;
    INFO(written.size() << " bytes written, " << lines << " lines said");
    CHECK(every_line);
}

TEST_CASE("llvm describe_llvm_options: without RTTI, LLVM's own cl::opt of bool, char, int, unsigned, string is read") {
    // An LLVM built without RTTI (upstream's default) leaves every option's type
    // information null: its options of the classes LLVM instantiates in its own library
    // are then read by their virtual table, so that one set in code is still keyed.
    init_llvm();
    struct hidden {
        hidden() { cc::llvm_detail::option_class_names_hidden_for_testing = true; }
        ~hidden() { cc::llvm_detail::option_class_names_hidden_for_testing = false; }
    } const no_rtti;
    set_read_options(false);
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    set_read_options(true);
    std::string const after = cc::describe_llvm_options({}, unknown);
    set_read_options(false);
    CHECK(unknown.empty());
    CHECK(after != before);
    for (char const* read : {"compile-cache-test-bool", "compile-cache-test-char", "compile-cache-test-int",
                             "compile-cache-test-unsigned"
#if COMPILE_CACHE_LLVM_READS_STRING_OPTIONS
                             ,
                             "compile-cache-test-string", "compile-cache-test-string-ext"
#endif
         }) {
        INFO(read);
        CHECK(after.find(std::string(read) + ";") != std::string::npos);
        CHECK(before.find(std::string(read) + ";") == std::string::npos);
    }
    // Back at their defaults: the key as before.
    CHECK(cc::describe_llvm_options({}, unknown) == before);
}

TEST_CASE("llvm describe_llvm_options: an option read without printing is keyed by the text LLVM prints for it") {
    init_llvm();
    // The mangled class names matched (in any translation unit, with or without RTTI) are
    // typeid's.
    using llvm::cl::boolOrDefault;
    using cc::llvm_detail::read_option_class_name;
#define CHECK_CLASS_NAME(T)                                                                        \
    CHECK(read_option_class_name<T, false>() == typeid(llvm::cl::opt<T>).name());                  \
    CHECK(read_option_class_name<T, true>() == typeid(llvm::cl::opt<T, true>).name());
    CHECK_CLASS_NAME(bool)
    CHECK_CLASS_NAME(boolOrDefault)
    CHECK_CLASS_NAME(int)
    CHECK_CLASS_NAME(long)
    CHECK_CLASS_NAME(long long)
    CHECK_CLASS_NAME(unsigned)
    CHECK_CLASS_NAME(unsigned long)
    CHECK_CLASS_NAME(unsigned long long)
    CHECK_CLASS_NAME(double)
    CHECK_CLASS_NAME(float)
    CHECK_CLASS_NAME(char)
#if COMPILE_CACHE_LLVM_READS_STRING_OPTIONS // (libstdc++'s std::string only)
    CHECK_CLASS_NAME(std::string)
#endif
#undef CHECK_CLASS_NAME
    std::vector<llvm::cl::Option*> options;
    std::unordered_set<llvm::cl::Option*> seen;
    for (auto& entry : llvm::cl::getRegisteredOptions())
        if (entry.getValue() && seen.insert(entry.getValue()).second) options.push_back(entry.getValue());
    std::size_t width = 0;
    for (llvm::cl::Option const* o : options) width = std::max(width, o->ArgStr.size());
    width += 2;
    temp_dir dir;
    int const fd = ::open((dir.path() / "printed").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0600);
    REQUIRE(fd >= 0);
    for (bool const set : {false, true}) {
        set_read_options(set);
        std::vector<cc::llvm_detail::printed_option> printed;
        cc::llvm_detail::print_option_values(options, printed);
        REQUIRE(printed.size() == options.size());
        std::size_t read = 0, differ = 0, test_options_read = 0, enums_read = 0, llvm_enums_read = 0;
        std::string enum_names;
        for (std::size_t i = 0; i < options.size(); ++i) {
            if (printed[i].value.empty()) continue; // not read: keyed by its occurrences and arguments
            ++read;
            if (!printed[i].differs.empty()) ++differ;
            if (options[i]->ArgStr.startswith("compile-cache-test-")) ++test_options_read;
            if (printed[i].enum_read) {
                ++enums_read;
                if (!options[i]->ArgStr.startswith("compile-cache-")) ++llvm_enums_read;
                enum_names += options[i]->ArgStr.str() + "=" + printed[i].enum_name + " ";
                // The name keyed is the one LLVM prints.
                CHECK(printed[i].value.find("= " + printed[i].enum_name + " ") != std::string::npos);
            }
            INFO(options[i]->ArgStr.str());
            CHECK(printed[i].value == printed_by_llvm(fd, *options[i], width, true));
            CHECK(printed[i].differs == printed_by_llvm(fd, *options[i], width, false));
        }
        // 24 of the read types (and compile-cache-test-padded, of a parser of its own), and 6
        // enums; the three string ones only with libstdc++'s std::string.
        CHECK(test_options_read == (COMPILE_CACHE_LLVM_READS_STRING_OPTIONS ? 31 : 28));
        // LLVM 14's own: all but its pass registries, lists, aliases, Polly's (no RTTI).
        CHECK(read > options.size() * 9 / 10);
        INFO(enum_names);
        // LLVM 14's own enums (52 with Debian's libLLVM-14.so), and ours.
        CHECK(llvm_enums_read >= 40);
        CHECK(enums_read == llvm_enums_read + 7);
        CHECK(enum_names.find("x86-asm-syntax=att ") != std::string::npos);
        CHECK(enum_names.find(set ? "compile-cache-test-enum-4=a-name-longer-than-eight "
                                  : "compile-cache-test-enum-4=four-a ") != std::string::npos);
        CHECK(enum_names.find(set ? "compile-cache-test-enum-8-ext=eight-a "
                                  : "compile-cache-test-enum-8-ext=eight-b ") != std::string::npos);
        if (set) CHECK(differ >= 30);
    }
    ::close(fd);
    // Keyed by their values: each differs from its default, and back at the defaults, as before.
    set_read_options(false);
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    CHECK(before.find("compile-cache-test-") == std::string::npos);
    set_read_options(true);
    // (A float or double option's print, 7 digits, is not its value: keyed by its
    // arguments, a bypass when set in code. Another test.)
    read_double.setValue(0.25);
    read_double_ext.setValue(0.25);
    read_float.setValue(0.5F);
    read_float_ext.setValue(0.5F);
    std::string const after = cc::describe_llvm_options({}, unknown);
    set_read_options(false);
    CHECK(unknown.empty());
    for (char const* name : {"bool", "bool_or_default", "int", "long", "long_long", "unsigned", "unsigned_long",
                             "unsigned_long_long", "char", "string"}) {
        std::string const option = std::string("compile-cache-test-") + name;
        INFO(option);
        CHECK(after.find(std::to_string(option.size()) + ":" + option + ";") != std::string::npos);
        CHECK(after.find(std::to_string(option.size() + 4) + ":" + option + "-ext;") != std::string::npos);
    }
    CHECK(after.find("a longer value than eight") != std::string::npos);
    // The enums by their values' names.
    for (char const* keyed : {"compile-cache-test-enum-1;enum=5:one-b;", "compile-cache-test-enum-2;enum=5:two-a;",
                              "compile-cache-test-enum-4;enum=24:a-name-longer-than-eight;",
                              "compile-cache-test-enum-8;enum=7:eight-b;",
                              "compile-cache-test-enum-4-ext;enum=6:four-a;",
                              "compile-cache-test-enum-8-ext;enum=7:eight-a;"}) {
        INFO(keyed);
        CHECK(after.find(keyed) != std::string::npos);
    }
    CHECK(cc::describe_llvm_options({}, unknown) == before);
}

TEST_CASE("llvm describe_llvm_options: LLVM's own enum options set otherwise are keyed by the names LLVM prints") {
    init_llvm();
    auto& registered = llvm::cl::getRegisteredOptions();
    std::pair<char const*, char const*> const set[] = {{"x86-asm-syntax", "intel"},
                                                       {"split-spill-mode", "size"},
                                                       {"accel-tables", "Dwarf"},
                                                       {"dwarf-linkage-names", "All"},
                                                       {"debugify-level", "locations"}};
    std::vector<llvm::cl::Option*> options;
    for (auto const& s : set) {
        INFO(s.first);
        REQUIRE(registered.count(s.first) == 1);
        options.push_back(registered[s.first]);
    }
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    for (std::size_t i = 0; i < options.size(); ++i)
        REQUIRE_FALSE(options[i]->addOccurrence(0, set[i].first, set[i].second)); // as a command line does
    std::vector<cc::llvm_detail::printed_option> printed;
    cc::llvm_detail::print_option_values(options, printed);
    std::string const after = cc::describe_llvm_options({}, unknown); // no arguments: read, not told
    std::size_t width = 0;
    for (llvm::cl::Option const* o : options) width = std::max(width, o->ArgStr.size());
    width += 2;
    temp_dir dir;
    int const fd = ::open((dir.path() / "printed").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0600);
    REQUIRE(fd >= 0);
    for (std::size_t i = 0; i < options.size(); ++i) {
        std::string const by_llvm = printed_by_llvm(fd, *options[i], width, false);
        options[i]->reset(); // back to its default, no occurrence
        INFO(set[i].first << ": " << by_llvm);
        CHECK(printed[i].enum_read);
        CHECK(printed[i].enum_name == set[i].second);
        CHECK(printed[i].differs == by_llvm);
        CHECK(by_llvm.find(std::string("= ") + set[i].second + " ") != std::string::npos);
        std::string const option(set[i].first), name(set[i].second);
        CHECK(after.find(std::to_string(option.size()) + ":" + option + ";enum=" + std::to_string(name.size()) + ":" +
                         name + ";") != std::string::npos);
    }
    ::close(fd);
    CHECK(unknown.empty());
    CHECK(cc::describe_llvm_options({}, unknown) == before);
}

TEST_CASE("llvm object_cache: an enum LLVM option is keyed by its value's name, told or not") {
    // An enum's option is read (its value's name, as LLVM prints it): however it was set,
    // the same value loads the same entry, with no argument to tell it.
    temp_dir dir;
    CHECK(run_helper(dir.path(), "").has(compiled));
    CHECK(run_helper(dir.path(), "--llvm-option -x86-asm-syntax=intel").has(compiled));
    CHECK(run_helper(dir.path(), "--llvm-option -x86-asm-syntax=intel").has(loaded));
    helper_run const hidden = run_helper(dir.path(), "--hidden-llvm-option x86-asm-syntax=intel");
    CHECK(hidden.has(loaded));
    CHECK(hidden.has("bypassed=0"));
    // Its default, given: the default's entry.
    CHECK(run_helper(dir.path(), "--llvm-option -x86-asm-syntax=att").has(loaded));
    CHECK(entry_count(dir.path()) == 2);
}

TEST_CASE("llvm describe_llvm_options: an enum option set in code is keyed by its value's name") {
    // From a review: an enum's option was keyed only when it occurred on a command line, so
    // that one a host set through setValue (or a cl::location) kept the default's key: a
    // stale object loaded.
    init_llvm();
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    auto keyed = [&](char const* option, char const* name) {
        std::string const d = cc::describe_llvm_options({}, unknown);
        INFO(option << " " << name);
        CHECK(unknown.empty());
        CHECK(d != before);
        CHECK(d.find(std::to_string(std::strlen(option)) + ":" + option + ";enum=" + std::to_string(std::strlen(name)) +
                     ":" + name + ";") != std::string::npos);
    };
    read_enum_1.setValue(test_enum_1::b);
    keyed("compile-cache-test-enum-1", "one-b");
    read_enum_1.setValue(test_enum_1::a);
    read_enum_2.setValue(test_enum_2::a);
    keyed("compile-cache-test-enum-2", "two-a");
    read_enum_2.setValue(test_enum_2::b);
    read_enum_4.setValue(test_enum_4_b);
    keyed("compile-cache-test-enum-4", "four-b");
    read_enum_4.setValue(test_enum_4_a);
    read_enum_8.setValue(test_enum_8::b);
    keyed("compile-cache-test-enum-8", "eight-b");
    read_enum_8.setValue(test_enum_8::a);
    read_enum_4_location = test_enum_4_a; // through the cl::location, as LLVM's code does
    keyed("compile-cache-test-enum-4-ext", "four-a");
    read_enum_4_location = test_enum_4_b;
    read_enum_8_ext.setValue(test_enum_8::a);
    keyed("compile-cache-test-enum-8-ext", "eight-a");
    read_enum_8_ext.setValue(test_enum_8::b);
    // Without cl::init: its default is its location's value when it was made.
    CHECK(before.find("compile-cache-enum-without-init") == std::string::npos);
    enum_without_default_location = test_enum_2::b;
    keyed("compile-cache-enum-without-init", "two-b");
    enum_without_default_location = test_enum_2::a;
    CHECK(cc::describe_llvm_options({}, unknown) == before);
    CHECK(unknown.empty());
}

TEST_CASE("llvm describe_llvm_options: an enum value without a name is keyed by its arguments, else a bypass") {
    init_llvm();
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    // LLVM prints `*unknown option value*`: no name to key, and no number is keyed.
    read_enum_4.setValue(static_cast<test_enum_4>(5));
    (void)cc::describe_llvm_options({}, unknown);
    CHECK(unknown == "-compile-cache-test-enum-4");
    std::string const told = cc::describe_llvm_options({"-compile-cache-test-enum-4=5"}, unknown);
    CHECK(unknown.empty());
    CHECK(told.find("compile-cache-test-enum-4;printed=") != std::string::npos);
    read_enum_4.setValue(test_enum_4_a);
    CHECK(cc::describe_llvm_options({}, unknown) == before);
    CHECK(unknown.empty());
}

TEST_CASE("llvm describe_llvm_options: an enum option of another class or parser, or unlocated, is not read") {
    init_llvm();
    std::vector<llvm::cl::Option*> const options{&enum_own_parser, &enum_derived, &enum_without_location,
                                                 &read_enum_4};
    std::vector<cc::llvm_detail::printed_option> printed;
    cc::llvm_detail::print_option_values(options, printed);
    REQUIRE(printed.size() == 4);
    for (std::size_t i = 0; i < 3; ++i) {
        INFO(options[i]->ArgStr.str());
        CHECK(printed[i].value.empty());
        CHECK_FALSE(printed[i].enum_read);
    }
    CHECK(printed[3].enum_read);
    // Keyed as before: by their occurrences and arguments (set in code: not seen).
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    enum_own_parser.setValue(test_enum_4_b);
    enum_derived.setValue(test_enum_4_b);
    CHECK(cc::describe_llvm_options({}, unknown) == before);
    enum_own_parser.setValue(test_enum_4_a);
    enum_derived.setValue(test_enum_4_a);
}

TEST_CASE("llvm describe_llvm_options: an option set through setValue is seen, and prints nothing on stdout") {
    init_llvm();
    auto& registered = llvm::cl::getRegisteredOptions();
    REQUIRE(registered.count("align-all-functions") == 1);
    auto& align = *static_cast<llvm::cl::opt<unsigned>*>(registered["align-all-functions"]); // unsigned in LLVM 14
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    CHECK(before.find("align-all-functions") == std::string::npos);
    std::fflush(stdout);
    compile_cache_test::temp_dir dir;
    std::string const stdout_file = (dir.path() / "stdout").string();
    align.setValue(8);
    std::string const after = [&] {
        // stdout a file for the call, to see that nothing of the walk reaches it.
        std::FILE* f = std::fopen(stdout_file.c_str(), "w");
        REQUIRE(f);
        int const saved = ::dup(1);
        ::dup2(::fileno(f), 1);
        llvm::outs() << "host output ";
        std::string const d = cc::describe_llvm_options({}, unknown);
        llvm::outs() << "stays";
        llvm::outs().flush();
        ::dup2(saved, 1);
        ::close(saved);
        std::fclose(f);
        return d;
    }();
    // With stdout closed, the values are read all the same, and stdout stays closed.
    int const saved = ::dup(1);
    ::close(1);
    std::string const closed = cc::describe_llvm_options({}, unknown);
    bool const still_closed = ::fcntl(1, F_GETFD) == -1;
    ::dup2(saved, 1);
    ::close(saved);
    CHECK(closed == after);
    CHECK(still_closed);
    align.setValue(0);
    CHECK(compile_cache_test::read_file(stdout_file) == "host output stays");
    CHECK(unknown.empty());
    CHECK(after != before);
    CHECK(after.find("align-all-functions") != std::string::npos);
    CHECK(cc::describe_llvm_options({}, unknown) == before); // back at its default: as before
}

TEST_CASE("llvm describe_llvm_options: -mllvm -name -mllvm value is keyed by value, -name -other is a bypass") {
    init_llvm();
    auto& registered = llvm::cl::getRegisteredOptions();
    REQUIRE(registered.count("ext-tsp-forward-weight") == 1);
    auto& weight = *static_cast<llvm::cl::opt<double>*>(registered["ext-tsp-forward-weight"]); // double in LLVM 14
    double const default_weight = weight;
    std::string unknown;
    weight.setValue(0.30000001); // printed as 3.000000e-01, as 0.30000002: keyed by its arguments
    std::string const wrapped_1 =
        cc::describe_llvm_options({"-mllvm", "-ext-tsp-forward-weight", "-mllvm", "0.30000001"}, unknown);
    CHECK(unknown.empty());
    std::string const joined_1 = cc::describe_llvm_options({"-mllvm=-ext-tsp-forward-weight=0.30000001"}, unknown);
    CHECK(unknown.empty());
    std::string const plain_1 = cc::describe_llvm_options({"-ext-tsp-forward-weight", "0.30000001"}, unknown);
    CHECK(unknown.empty());
    CHECK(wrapped_1 == plain_1); // what LLVM got, however a driver wrapped it
    weight.setValue(0.30000002);
    std::string const wrapped_2 =
        cc::describe_llvm_options({"-mllvm", "-ext-tsp-forward-weight", "-mllvm", "0.30000002"}, unknown);
    CHECK(unknown.empty());
    std::string const joined_2 = cc::describe_llvm_options({"-mllvm=-ext-tsp-forward-weight=0.30000002"}, unknown);
    CHECK(unknown.empty());
    CHECK(wrapped_1 != wrapped_2);
    CHECK(joined_1 != joined_2);
    // After the name, an argument that is another option, or none: the value is not
    // seen, a bypass (a wrapper the adapter does not know, say).
    (void)cc::describe_llvm_options({"-Xclang", "-ext-tsp-forward-weight", "-Xclang", "0.30000002"}, unknown);
    CHECK(unknown == "-ext-tsp-forward-weight");
    (void)cc::describe_llvm_options({"-ext-tsp-forward-weight"}, unknown);
    CHECK(unknown == "-ext-tsp-forward-weight");
    weight.setValue(default_weight);
}

TEST_CASE("llvm describe_llvm_options: string values that differ in trailing spaces are keyed apart") {
    init_llvm();
    auto& registered = llvm::cl::getRegisteredOptions();
    REQUIRE(registered.count("fs-profile-file") == 1);
    // LLVM pads a value shorter than 8 characters with spaces: "prof" and "prof " print alike.
    auto& file = *static_cast<llvm::cl::opt<std::string>*>(registered["fs-profile-file"]); // LLVM 14
    std::string unknown;
    std::string const before = cc::describe_llvm_options({}, unknown);
    file.setValue("prof");
    std::string const a = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    file.setValue("prof ");
    std::string const b = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    file.setValue("prof    "); // 8 characters: printed without padding
    std::string const c = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    file.setValue("");
    CHECK(a.find("fs-profile-file") != std::string::npos);
    CHECK(a != b);
    CHECK(b != c);
    CHECK(a != c);
    CHECK(cc::describe_llvm_options({}, unknown) == before);

    // A string option of a parser class of its own: read all the same (its class is a
    // cl::opt<std::string, false, P>), exactly, with no argument.
    test_padded_option.setValue("ab");
    std::string const ab = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    test_padded_option.setValue("ab ");
    std::string const ab_space = cc::describe_llvm_options({}, unknown);
    CHECK(unknown.empty());
    CHECK(ab.find("compile-cache-test-padded") != std::string::npos);
    CHECK(ab != ab_space);
    test_padded_option.setValue("");
    CHECK(cc::describe_llvm_options({}, unknown) == before);
    CHECK(unknown.empty());
}


TEST_CASE("llvm describe_llvm_options: -x86-align-branch parsed again in one process is keyed by the kinds it holds") {
    // From a review: LLVM's parser for -x86-align-branch adds each value's kinds to those it
    // holds, and cl::ResetAllOptionOccurrences keeps them: a host that parsed `ret`, then
    // `jcc`, generates code for jcc+ret, and was keyed by its arguments (`jcc`) alone: it
    // loaded the object of a process that parsed `jcc` once. In a child process: the kinds
    // cannot be cleared.
    init_llvm();
    temp_dir dir;
    fs::path const out_file = dir.path() / "keys";
    std::fflush(stdout);
    llvm::outs().flush();
    pid_t const pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        auto parse = [](char const* arg) {
            char const* argv[] = {"host", arg};
            return llvm::cl::ParseCommandLineOptions(2, argv, "", &llvm::nulls());
        };
        std::string unknown, keys;
        std::string const none = cc::describe_llvm_options({}, unknown);
        if (!parse("-x86-align-branch=jcc")) ::_exit(2);
        keys += cc::describe_llvm_options({"-x86-align-branch=jcc"}, unknown) + "\n";
        llvm::cl::ResetAllOptionOccurrences();
        if (!parse("-x86-align-branch=ret")) ::_exit(3);
        llvm::cl::ResetAllOptionOccurrences();
        if (!parse("-x86-align-branch=jcc")) ::_exit(4);
        keys += cc::describe_llvm_options({"-x86-align-branch=jcc"}, unknown) + "\n" + unknown + "\n";
        keys += none.find("x86-align-branch") == std::string::npos ? "default unkeyed" : "default keyed";
        std::FILE* f = std::fopen(out_file.c_str(), "w");
        if (!f || std::fwrite(keys.data(), 1, keys.size(), f) != keys.size() || std::fclose(f) != 0) ::_exit(5);
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    std::string const keys = compile_cache_test::read_file(out_file);
    std::size_t const first_end = keys.find('\n');
    REQUIRE(first_end != std::string::npos);
    std::string const once = keys.substr(0, first_end);
    std::size_t const second_end = keys.find('\n', first_end + 1);
    REQUIRE(second_end != std::string::npos);
    std::string const again = keys.substr(first_end + 1, second_end - first_end - 1);
    INFO(keys);
    CHECK(once.find("16:x86-align-branch;kinds=3:jcc;") != std::string::npos);
    CHECK(again.find("16:x86-align-branch;kinds=7:jcc+ret;") != std::string::npos);
    CHECK(once != again);
    CHECK(keys.substr(second_end + 1) == "\ndefault unkeyed"); // no bypass; unkeyed at its default
}
