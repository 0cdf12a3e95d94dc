// A fresh-process helper for the LLVM ObjectCache tests: JIT-compiles a one-function
// module with LLJIT and the adapter, calls it, and prints what happened.
//
//   llvm_object_cache_helper [--constant K] [--opt 0-3] [--cpu NAME] [--ir-opt] [--no-target]
//   -> result=R hits=H misses=M rejected=J notified=N bypassed=B
//      cache: hits=H absent=A corrupt=C stores=S
//
// The module is `f(x) = x * K + 1` (i64). --opt is the code generator's opt level,
// --cpu replaces the host CPU (and drops the host's feature string), --ir-opt runs
// LLVM's O2 pipeline on the module before it is added, --no-target never tells the
// adapter the target (nothing may be cached then). The cache is LLVM_HELPER_CACHE_DIR.
//
// Compiled with -fno-rtti: it uses basic_object_cache over an object_store made in
// helper_store.cpp, the way a host whose LLVM has no RTTI would.
#include "helper_store.hpp"

#include <compile_cache/llvm/object_cache.hpp>

#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void die(std::string const& what) {
    std::fprintf(stderr, "llvm_object_cache_helper: %s\n", what.c_str());
    std::exit(1);
}

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

} // namespace

int main(int argc, char** argv) {
    long long constant = 7;
    int opt = 2;
    std::string cpu;
    bool ir_opt = false, no_target = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--constant" && i + 1 < argc) constant = std::atoll(argv[++i]);
        else if (a == "--opt" && i + 1 < argc) opt = std::atoi(argv[++i]);
        else if (a == "--cpu" && i + 1 < argc) cpu = argv[++i];
        else if (a == "--ir-opt") ir_opt = true;
        else if (a == "--no-target") no_target = true;
        else die("unknown argument " + a);
    }

    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();

    compile_cache::basic_object_cache objects(make_helper_store());

    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) die(llvm::toString(jtmb.takeError()));
    if (!cpu.empty()) {
        jtmb->setCPU(cpu);
        jtmb->setFeatures("");
    }
    jtmb->setCodeGenOptLevel(static_cast<llvm::CodeGenOpt::Level>(opt));

    auto jit = llvm::orc::LLJITBuilder()
                   .setJITTargetMachineBuilder(std::move(*jtmb))
                   .setCompileFunctionCreator(
                       [&](llvm::orc::JITTargetMachineBuilder b)
                           -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                           if (!no_target)
                               if (llvm::Error e = objects.set_target(b)) return e;
                           return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(b), &objects);
                       })
                   .create();
    if (!jit) die(llvm::toString(jit.takeError()));

    std::string ir = "define i64 @f(i64 %x) {\n"
                     "  %y = mul i64 %x, " + std::to_string(constant) + "\n"
                     "  %z = add i64 %y, 1\n"
                     "  ret i64 %z\n"
                     "}\n";
    auto context = std::make_unique<llvm::LLVMContext>();
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> m =
        llvm::parseIR(llvm::MemoryBufferRef(ir, "helper.ll"), diag, *context);
    if (!m) die("cannot parse the module: " + diag.getMessage().str());
    m->setDataLayout((*jit)->getDataLayout());
    if (ir_opt) run_o2(*m);
    if (llvm::Error e = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(context))))
        die(llvm::toString(std::move(e)));
    auto sym = (*jit)->lookup("f");
    if (!sym) die(llvm::toString(sym.takeError()));
    auto f = reinterpret_cast<std::int64_t (*)(std::int64_t)>(static_cast<std::uintptr_t>(sym->getAddress()));
    std::int64_t result = f(6);

    compile_cache::basic_object_cache::counters c = objects.statistics();
    std::printf("result=%lld hits=%llu misses=%llu rejected=%llu notified=%llu bypassed=%llu\n",
                static_cast<long long>(result), static_cast<unsigned long long>(c.hits),
                static_cast<unsigned long long>(c.misses), static_cast<unsigned long long>(c.rejected),
                static_cast<unsigned long long>(c.notified), static_cast<unsigned long long>(c.bypassed));
    std::printf("cache: %s\n", helper_cache_summary().c_str());
    return 0;
}
