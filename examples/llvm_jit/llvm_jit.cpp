// An LLJIT user adding compile_cache's llvm::ObjectCache: the lines marked (cache) are
// all it takes. Run it twice with a cache directory: the second run loads the object
// code instead of generating it.
//
//   LLVM_JIT_CACHE_DIR=/tmp/jit-cache ./llvm_jit 10     # compiled: sum of squares 0..9 = 285
//   LLVM_JIT_CACHE_DIR=/tmp/jit-cache ./llvm_jit 10     # loaded
#include <compile_cache/compile_cache.hpp>            // (cache)
#include <compile_cache/llvm/object_cache.hpp>        // (cache)

#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace {

// sum_squares(n) = 0*0 + 1*1 + ... + (n-1)*(n-1), as a loop.
std::unique_ptr<llvm::Module> make_module(llvm::LLVMContext& ctx) {
    auto m = std::make_unique<llvm::Module>("sum_squares", ctx);
    llvm::IRBuilder<> b(ctx);
    llvm::Type* i64 = b.getInt64Ty();
    auto* f = llvm::Function::Create(llvm::FunctionType::get(i64, {i64}, false), llvm::Function::ExternalLinkage,
                                     "sum_squares", m.get());
    llvm::Value* n = f->getArg(0);
    auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
    auto* loop = llvm::BasicBlock::Create(ctx, "loop", f);
    auto* done = llvm::BasicBlock::Create(ctx, "done", f);
    b.SetInsertPoint(entry);
    b.CreateCondBr(b.CreateICmpSGT(n, b.getInt64(0)), loop, done);
    b.SetInsertPoint(loop);
    llvm::PHINode* i = b.CreatePHI(i64, 2);
    llvm::PHINode* acc = b.CreatePHI(i64, 2);
    llvm::Value* next_acc = b.CreateAdd(acc, b.CreateMul(i, i));
    llvm::Value* next_i = b.CreateAdd(i, b.getInt64(1));
    i->addIncoming(b.getInt64(0), entry);
    i->addIncoming(next_i, loop);
    acc->addIncoming(b.getInt64(0), entry);
    acc->addIncoming(next_acc, loop);
    b.CreateCondBr(b.CreateICmpSLT(next_i, n), loop, done);
    b.SetInsertPoint(done);
    llvm::PHINode* result = b.CreatePHI(i64, 2);
    result->addIncoming(b.getInt64(0), entry);
    result->addIncoming(next_acc, loop);
    b.CreateRet(result);
    return m;
}

} // namespace

int main(int argc, char** argv) {
    std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 10;
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();

    // (cache) The cache, off unless LLVM_JIT_CACHE_DIR is set, and the ObjectCache over it.
    auto cache = compile_cache::default_cache::from_env("LLVM_JIT_CACHE");
    compile_cache::object_cache<compile_cache::default_cache> objects(cache, "llvm_jit example 1");

    auto jit = llvm::orc::LLJITBuilder()
                   // (cache) The adapter's compiler: it asks the ObjectCache first and tells it
                   // what it compiled, for the target the cache keys.
                   .setCompileFunctionCreator(objects.compile_function())
                   .create();
    if (!jit) {
        std::fprintf(stderr, "llvm_jit: %s\n", llvm::toString(jit.takeError()).c_str());
        return 1;
    }

    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto m = make_module(*ctx);
    if (llvm::Error e = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx)))) {
        std::fprintf(stderr, "llvm_jit: %s\n", llvm::toString(std::move(e)).c_str());
        return 1;
    }
    auto sym = (*jit)->lookup("sum_squares");
    if (!sym) {
        std::fprintf(stderr, "llvm_jit: %s\n", llvm::toString(sym.takeError()).c_str());
        return 1;
    }
    auto sum_squares = reinterpret_cast<std::int64_t (*)(std::int64_t)>(static_cast<std::uintptr_t>(sym->getAddress()));
    std::printf("sum_squares(%lld) = %lld\n", static_cast<long long>(n), static_cast<long long>(sum_squares(n)));

    auto s = objects.statistics();
    std::printf("object code: %s\n", s.hits ? "loaded from the cache"
                                     : cache.enabled() ? "compiled (and stored)"
                                                       : "compiled (set LLVM_JIT_CACHE_DIR to cache it)");
    return 0;
}
