// A fresh-process helper for the LLVM ObjectCache tests: JIT-compiles a one-function
// module, calls it, and prints what happened. Its JIT is its own ORC stack (an
// ExecutionSession, an RTDyldObjectLinkingLayer and an IRCompileLayer over a
// ConcurrentIRCompiler), or LLJIT with --lljit: the two ways a JIT wires the adapter.
//
//   llvm_object_cache_helper [--constant K] [--opt 0-3] [--cpu NAME] [--ir-opt] [--no-target]
//                            [--lljit] [--llvm-option ARG] [--hidden-llvm-option ARG]
//                            [--target-option loop-alignment=N] [--mc-option save-temp-labels]
//                            [--set-llvm-option NAME=UNSIGNED] [--parse-llvm-option ARG] [-mllvm ARG]
//                            [--adapter-compiler] [--compiler-cpu NAME]
//                            [--module-cpu NAME] [--module-triple T] [--module-data-layout L]
//   -> object=SHA256 (of the object the JIT links: compiled or loaded)
//      result=R hits=H misses=M rejected=J notified=N bypassed=B
//      cache: hits=H absent=A corrupt=C stores=S bypasses=P compile-ns=T
//      main-build-id=ID code-generator=ID
//      entry: NAME
//
// The module is `f(x) = x * K + 1` (i64). --opt is the code generator's opt level,
// --cpu replaces the host CPU (and drops the host's feature string), --ir-opt runs
// LLVM's O2 pipeline on the module before it is added, --no-target never tells the
// adapter the target (nothing may be cached then). --llvm-option parses ARG with
// cl::ParseCommandLineOptions and tells the adapter (set_llvm_arguments);
// --hidden-llvm-option parses -ARG without telling it (and ARG is no LLVM option in
// this process's arguments). --target-option and --mc-option set a field of the
// builder's TargetOptions / MCTargetOptions. --set-llvm-option sets a cl::opt<unsigned>
// through setValue (no occurrence, nothing on a command line); --parse-llvm-option
// parses ARG with cl::ParseCommandLineOptions without telling the adapter (before
// --set-llvm-option); -mllvm ARG does the same, as a clang-style driver forwards ARG
// to LLVM (the process's arguments show `-mllvm ARG`). --adapter-compiler takes the
// JIT's compiler from the adapter (make_compiler, or compile_function with --lljit);
// otherwise the JIT makes its own ConcurrentIRCompiler, for the CPU --compiler-cpu
// names if given (the adapter keeps the other builder: the mistake the adapter's
// compiler prevents). --module-cpu,
// --module-triple and --module-data-layout make the module tell another target (a
// target-cpu attribute on f, its triple, its data layout). The cache is
// LLVM_HELPER_CACHE_DIR.
//
// Compiled with -fno-rtti: it uses basic_object_cache over an object_store made in
// helper_store.cpp, the way a host whose LLVM has no RTTI would. It is built twice
// (llvm_object_cache_helper and llvm_object_cache_helper_rebuilt): a
// host rebuilt (its cache side compiled with other flags).
#include "helper_store.hpp"

#include <compile_cache/llvm/object_cache.hpp>

#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutorProcessControl.h>
#include <llvm/ExecutionEngine/Orc/IRCompileLayer.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/Mangling.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(std::string const& what) {
    std::fprintf(stderr, "llvm_object_cache_helper: %s\n", what.c_str());
    std::exit(1);
}

template <class T>
T check(llvm::Expected<T> e) {
    if (!e) die(llvm::toString(e.takeError()));
    return std::move(*e);
}

void check(llvm::Error e) {
    if (e) die(llvm::toString(std::move(e)));
}

/// The hex SHA-256 of the last object the JIT linked (hashing_compiler).
std::string linked_object;

/// An IRCompiler that hashes the object its inner compiler returns: compiled, or
/// loaded from the object cache.
class hashing_compiler : public llvm::orc::IRCompileLayer::IRCompiler {
public:
    explicit hashing_compiler(std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler> inner)
        : IRCompiler(inner->getManglingOptions()), inner_(std::move(inner)) {}
    llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module& m) override {
        auto object = (*inner_)(m);
        if (object) {
            llvm::SHA256 h;
            h.update((*object)->getBuffer());
            linked_object = llvm::toHex(h.final(), /*LowerCase=*/true);
        }
        return object;
    }

private:
    std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler> inner_;
};

void run_o2(llvm::Module& m) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb;
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(m, mam);
}

/// What --module-cpu, --module-triple and --module-data-layout ask of the module.
struct module_target {
    std::string cpu, triple, data_layout;
};
module_target told_module;

llvm::orc::ThreadSafeModule make_module(long long constant, llvm::DataLayout const& layout, bool ir_opt) {
    // f(x) = x * K + 1 for x >= 0, as a loop (so that loop settings change its code).
    std::string ir = "define i64 @f(i64 %x) {\n"
                     "entry:\n"
                     "  br label %loop\n"
                     "loop:\n"
                     "  %i = phi i64 [ 0, %entry ], [ %i1, %body ]\n"
                     "  %s = phi i64 [ 1, %entry ], [ %s1, %body ]\n"
                     "  %done = icmp sge i64 %i, %x\n"
                     "  br i1 %done, label %exit, label %body\n"
                     "body:\n"
                     "  %s1 = add i64 %s, " + std::to_string(constant) + "\n"
                     "  %i1 = add i64 %i, 1\n"
                     "  br label %loop\n"
                     "exit:\n"
                     "  ret i64 %s\n"
                     "}\n";
    auto context = std::make_unique<llvm::LLVMContext>();
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> m = llvm::parseIR(llvm::MemoryBufferRef(ir, "helper.ll"), diag, *context);
    if (!m) die("cannot parse the module: " + diag.getMessage().str());
    m->setDataLayout(layout);
    if (!told_module.data_layout.empty()) m->setDataLayout(told_module.data_layout);
    if (!told_module.triple.empty()) m->setTargetTriple(told_module.triple);
    if (!told_module.cpu.empty()) m->getFunction("f")->addFnAttr("target-cpu", told_module.cpu);
    if (ir_opt) run_o2(*m);
    return llvm::orc::ThreadSafeModule(std::move(m), std::move(context));
}

using function = std::int64_t (*)(std::int64_t);

bool adapter_compiler = false;
std::string compiler_cpu;

/// The own ORC stack: what Kaleidoscope's and the BuildingAJIT chapters' JITs build.
std::int64_t run_own_layer(llvm::orc::JITTargetMachineBuilder jtmb, compile_cache::basic_object_cache& objects,
                           long long constant, bool ir_opt) {
    auto session = std::make_unique<llvm::orc::ExecutionSession>(check(llvm::orc::SelfExecutorProcessControl::Create()));
    llvm::DataLayout layout = check(jtmb.getDefaultDataLayoutForTarget());
    llvm::orc::RTDyldObjectLinkingLayer objects_layer(*session,
                                                      [] { return std::make_unique<llvm::SectionMemoryManager>(); });
    std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler> compiler;
    if (adapter_compiler) {
        compiler = objects.make_compiler(jtmb);
    } else {
        auto compiler_jtmb = jtmb;
        if (!compiler_cpu.empty()) compiler_jtmb.setCPU(compiler_cpu);
        compiler = std::make_unique<llvm::orc::ConcurrentIRCompiler>(compiler_jtmb, &objects);
    }
    llvm::orc::IRCompileLayer compile_layer(*session, objects_layer, std::make_unique<hashing_compiler>(std::move(compiler)));
    llvm::orc::JITDylib& main = session->createBareJITDylib("main");
    check(compile_layer.add(main, make_module(constant, layout, ir_opt)));
    llvm::orc::MangleAndInterner mangle(*session, layout);
    auto sym = check(session->lookup({&main}, mangle("f")));
    std::int64_t result = reinterpret_cast<function>(static_cast<std::uintptr_t>(sym.getAddress()))(6);
    check(session->endSession());
    return result;
}

std::int64_t run_lljit(llvm::orc::JITTargetMachineBuilder jtmb, compile_cache::basic_object_cache& objects,
                       long long constant, bool ir_opt, bool tell_target) {
    auto jit = check(llvm::orc::LLJITBuilder()
                         .setJITTargetMachineBuilder(std::move(jtmb))
                         .setCompileFunctionCreator(
                             [&](llvm::orc::JITTargetMachineBuilder b)
                                 -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                                 if (adapter_compiler) {
                                     auto compiler = objects.compile_function()(std::move(b));
                                     if (!compiler) return compiler.takeError();
                                     return std::make_unique<hashing_compiler>(std::move(*compiler));
                                 }
                                 if (tell_target)
                                     if (llvm::Error e = objects.set_target(b)) return e;
                                 return std::make_unique<hashing_compiler>(
                                     std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(b), &objects));
                             })
                         .create());
    check(jit->addIRModule(make_module(constant, jit->getDataLayout(), ir_opt)));
    auto sym = check(jit->lookup("f"));
    return reinterpret_cast<function>(static_cast<std::uintptr_t>(sym.getAddress()))(6);
}

} // namespace

int main(int argc, char** argv) {
    long long constant = 7;
    int opt = 2;
    std::string cpu;
    bool ir_opt = false, no_target = false, lljit = false;
    std::vector<std::string> told, hidden, target_options, mc_options, set_options;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--constant" && i + 1 < argc) constant = std::atoll(argv[++i]);
        else if (a == "--opt" && i + 1 < argc) opt = std::atoi(argv[++i]);
        else if (a == "--cpu" && i + 1 < argc) cpu = argv[++i];
        else if (a == "--ir-opt") ir_opt = true;
        else if (a == "--no-target") no_target = true;
        else if (a == "--lljit") lljit = true;
        else if (a == "--llvm-option" && i + 1 < argc) told.push_back(argv[++i]);
        else if (a == "--hidden-llvm-option" && i + 1 < argc) hidden.push_back(std::string("-") + argv[++i]);
        else if (a == "--target-option" && i + 1 < argc) target_options.push_back(argv[++i]);
        else if (a == "--mc-option" && i + 1 < argc) mc_options.push_back(argv[++i]);
        else if (a == "--adapter-compiler") adapter_compiler = true;
        else if (a == "--compiler-cpu" && i + 1 < argc) compiler_cpu = argv[++i];
        else if (a == "--module-cpu" && i + 1 < argc) told_module.cpu = argv[++i];
        else if (a == "--module-triple" && i + 1 < argc) told_module.triple = argv[++i];
        else if (a == "--module-data-layout" && i + 1 < argc) told_module.data_layout = argv[++i];
        else if (a == "--set-llvm-option" && i + 1 < argc) set_options.push_back(argv[++i]);
        else if (a == "--parse-llvm-option" && i + 1 < argc) hidden.push_back(argv[++i]);
        else if (a == "-mllvm" && i + 1 < argc) hidden.push_back(argv[++i]);
        else die("unknown argument " + a);
    }

    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    if (!told.empty() || !hidden.empty()) {
        std::vector<char const*> args{"llvm_object_cache_helper"};
        for (auto const& t : told) args.push_back(t.c_str());
        for (auto const& h : hidden) args.push_back(h.c_str());
        if (!llvm::cl::ParseCommandLineOptions(static_cast<int>(args.size()), args.data(), "", &llvm::errs()))
            die("LLVM rejected the options");
    }
    for (std::string const& o : set_options) {
        std::size_t const eq = o.find('=');
        auto& registered = llvm::cl::getRegisteredOptions();
        auto it = registered.find(o.substr(0, eq));
        if (eq == std::string::npos || it == registered.end()) die("no LLVM option " + o);
        // The options this is used with are cl::opt<unsigned> (align-all-functions).
        static_cast<llvm::cl::opt<unsigned>*>(it->getValue())->setValue(
            static_cast<unsigned>(std::stoul(o.substr(eq + 1))));
    }

    auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost());
    if (!cpu.empty()) {
        jtmb.setCPU(cpu);
        jtmb.setFeatures("");
    }
    jtmb.setCodeGenOptLevel(static_cast<llvm::CodeGenOpt::Level>(opt));
    for (std::string const& o : target_options) {
        if (o.rfind("loop-alignment=", 0) == 0) jtmb.getOptions().LoopAlignment = static_cast<unsigned>(std::stoul(o.substr(15)));
        else die("unknown target option " + o);
    }
    for (std::string const& o : mc_options) {
        if (o == "save-temp-labels") jtmb.getOptions().MCOptions.MCSaveTempLabels = true;
        else die("unknown MC option " + o);
    }

    // The own stack passes its JITTargetMachineBuilder to the adapter's constructor;
    // LLJIT's compile function calls set_target; the adapter's compiler needs neither.
    // --no-target does neither.
    std::unique_ptr<compile_cache::basic_object_cache> objects =
        no_target || lljit || adapter_compiler ? std::make_unique<compile_cache::basic_object_cache>(make_helper_store())
                                               : std::make_unique<compile_cache::basic_object_cache>(make_helper_store(), jtmb);
    if (!told.empty()) objects->set_llvm_arguments(told);

    std::int64_t result = lljit ? run_lljit(jtmb, *objects, constant, ir_opt, !no_target)
                                : run_own_layer(jtmb, *objects, constant, ir_opt);

    compile_cache::basic_object_cache::counters c = objects->statistics();
    std::printf("object=%s\n", linked_object.c_str());
    std::printf("result=%lld hits=%llu misses=%llu rejected=%llu notified=%llu bypassed=%llu\n",
                static_cast<long long>(result), static_cast<unsigned long long>(c.hits),
                static_cast<unsigned long long>(c.misses), static_cast<unsigned long long>(c.rejected),
                static_cast<unsigned long long>(c.notified), static_cast<unsigned long long>(c.bypassed));
    std::printf("cache: %s\n", helper_cache_summary().c_str());
    std::printf("main-build-id=%s code-generator=%s\n", compile_cache::detail::main_program_build_id().c_str(),
                compile_cache::code_generator_identity(*check(jtmb.createTargetMachine())).c_str());
    std::fflush(stdout);
    objects.reset(); // its summary line, with LLVM_HELPER_CACHE_LOG=1
    return 0;
}
