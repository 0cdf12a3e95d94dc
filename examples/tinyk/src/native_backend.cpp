// tinyk: the native backend (see native_backend.hpp). The only file that uses LLVM's
// classes; compiled with -fno-rtti where LLVM has no RTTI (the cache, which needs
// RTTI, is reached through cache_glue.hpp / native_glue.cpp).
#include "native_backend.hpp"

#include "codegen.hpp" // source_map_line
#include "compiler.hpp"
#include "diag.hpp"
#include "native_artifact.hpp"
#include "vm.hpp"

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/Triple.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/ExecutorProcessControl.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/NoFolder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <pthread.h>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace tinyk {

namespace {

// Names the code refers to. Kernels: `tk.NAME` (the function), `tk.NAME$entry`
// (called by the driver), `tk.NAME$id` (the live kernel, defined by the host at add()).
constexpr char const* kernel_prefix = "tk.";
constexpr char const* rt_fail = "tinyk.rt.fail";   // void(kernel const*, i32 site, i32 kind)
constexpr char const* rt_depth = "tinyk.rt.depth"; // i64: frames on the call stack
constexpr char const* rt_floor = "tinyk.rt.stack_floor"; // i64: the lowest frame address allowed
// What else the code generator may call (libm for builtins without an instruction).
constexpr char const* libm_symbols[] = {"floor", "sqrt", "fabs", "fmin", "fmax", "memcpy", "memset", "memmove"};

std::string symbol_of(std::string const& kernel_name) { return kernel_prefix + kernel_name; }

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

template <class T>
T expect(llvm::Expected<T> e, char const* what) {
    if (!e) throw internal_error(std::string("native backend: ") + what + ": " + llvm::toString(e.takeError()));
    return std::move(*e);
}

void check(llvm::Error e, char const* what) {
    if (e) throw internal_error(std::string("native backend: ") + what + ": " + llvm::toString(std::move(e)));
}

// --- the runtime the code calls back into -------------------------------------------

enum failure_kind : std::int32_t { assertion = 0, depth_limit = 1, out_of_stack = 2 };

struct failure_state {
    std::jmp_buf* resume = nullptr; // where tinyk_rt_fail returns to (execute's worker)
    bool failed = false;
    bool out_of_stack = false; // the stack ran out before the depth limit: run again on a larger one
    char const* what = "";
    int line = 0;
    std::string kernel;
};
failure_state the_failure;
std::int64_t the_depth = 0;       // the code's call depth counter (tinyk.rt.depth)
std::uintptr_t the_stack_floor = 0; // tinyk.rt.stack_floor

// Called by native code (C calling convention) at a failed site; leaves the code
// with longjmp (its frames own nothing) back to the worker in execute().
[[noreturn]] void tinyk_rt_fail(kernel const* k, std::int32_t site, std::int32_t kind) {
    {
        // out_of_stack: execute() runs the call again on a larger stack; the site is
        // kept in case that one runs out too.
        the_failure.out_of_stack = kind == out_of_stack;
        the_failure.failed = kind != out_of_stack;
        the_failure.what = kind == assertion ? "assertion failed" : "call depth limit exceeded";
        int line = 0;
        std::string name = k ? k->name : std::string("?");
        native_artifact const* a = k ? k->native.get() : nullptr;
        if (a && site >= 0 && static_cast<std::size_t>(site) < a->lines.size()) {
            std::size_t s = static_cast<std::size_t>(site);
            line = a->lines[s];
            int origin = s < a->origins.size() ? a->origins[s] : 0;
            if (origin > 0 && static_cast<std::size_t>(origin) <= a->inlined.size()) {
                if (kernel const* from = a->inlined[static_cast<std::size_t>(origin - 1)].get()) {
                    line += from->first_line;
                    name = from->name;
                }
            }
        }
        the_failure.line = line;
        the_failure.kernel = std::move(name);
    }
    std::longjmp(*the_failure.resume, 1);
}

// --- lowering: tinyk SSA IR -> LLVM IR ----------------------------------------------

class lowering {
public:
    lowering(llvm::Module& lm, ir::function const& f, module const& m, kernel const& k, native_artifact& a)
        : ctx_(lm.getContext()), lm_(lm), f_(f), m_(m), k_(k), a_(a), b_(ctx_) {}

    void run() {
        f64_ = b_.getDoubleTy();
        fn_ = function_for(k_);
        fn_->addFnAttr(llvm::Attribute::NoUnwind);
        order_ = ir::reverse_post_order(f_);
        for (ir::block const* bl : order_) bb_[bl] = llvm::BasicBlock::Create(ctx_, "", fn_);
        for (ir::block const* bl : order_) {
            b_.SetInsertPoint(bb_[bl]);
            for (auto const& i : bl->instrs) emit(*i);
        }
        fill_phis();
        emit_entry_wrapper();
        for (int o : f_.origins) a_.inlined.emplace_back(m_.kernels.at(static_cast<std::size_t>(o)).get());
    }

private:
    llvm::Function* function_for(kernel const& callee) {
        std::string name = symbol_of(callee.name);
        if (llvm::Function* existing = lm_.getFunction(name)) return existing;
        std::vector<llvm::Type*> params(static_cast<std::size_t>(callee.nparams), b_.getDoubleTy());
        auto* type = llvm::FunctionType::get(b_.getDoubleTy(), params, false);
        return llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, lm_);
    }

    llvm::Value* v(ir::instr const* i) const {
        auto it = values_.find(i);
        if (it == values_.end()) throw internal_error("native backend: a value used before its definition in '" + f_.name + "'");
        return it->second;
    }

    llvm::Value* truth(llvm::Value* cond) { // 1.0 or 0.0, as sem::truth
        return b_.CreateSelect(cond, llvm::ConstantFP::get(f64_, 1.0), llvm::ConstantFP::get(f64_, 0.0));
    }
    llvm::Value* is_true(llvm::Value* x) { // x != 0.0; NaN is true (sem::is_true)
        return b_.CreateFCmpUNE(x, llvm::ConstantFP::get(f64_, 0.0));
    }
    llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) {
        llvm::Function* fn = llvm::Intrinsic::getDeclaration(&lm_, id, {f64_});
        return b_.CreateCall(fn, {x});
    }

    // A failure site: the source map entry the runtime reads when the code fails here.
    std::int32_t site(ir::instr const& i) {
        a_.lines.push_back(source_map_line(i, f_, m_));
        a_.origins.push_back(i.origin);
        return static_cast<std::int32_t>(a_.lines.size() - 1);
    }

    // Branches to a block that reports the failure of `site` when `ok` is false.
    void fail_unless(llvm::Value* ok, std::int32_t s, failure_kind kind) {
        fail_unless(ok, s, b_.getInt32(static_cast<std::uint32_t>(kind)));
    }
    void fail_unless(llvm::Value* ok, std::int32_t s, llvm::Value* kind) {
        auto* fail = llvm::BasicBlock::Create(ctx_, "", fn_);
        auto* cont = llvm::BasicBlock::Create(ctx_, "", fn_);
        b_.CreateCondBr(ok, cont, fail);
        b_.SetInsertPoint(fail);
        auto* fail_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt8PtrTy(), b_.getInt32Ty(), b_.getInt32Ty()}, false);
        llvm::FunctionCallee callee = lm_.getOrInsertFunction(rt_fail, fail_type);
        if (auto* decl = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
            decl->addFnAttr(llvm::Attribute::NoReturn);
            decl->addFnAttr(llvm::Attribute::NoUnwind);
            decl->addFnAttr(llvm::Attribute::Cold);
        }
        b_.CreateCall(callee, {kernel_id(), b_.getInt32(static_cast<std::uint32_t>(s)), kind});
        b_.CreateUnreachable();
        b_.SetInsertPoint(cont);
    }

    llvm::Constant* kernel_id() {
        return lm_.getOrInsertGlobal(symbol_of(k_.name) + "$id", b_.getInt8Ty());
    }

    llvm::GlobalVariable* depth() {
        auto* g = llvm::cast<llvm::GlobalVariable>(lm_.getOrInsertGlobal(rt_depth, b_.getInt64Ty()));
        return g;
    }

    void note_callee(int index) {
        kernel* c = m_.kernels.at(static_cast<std::size_t>(index)).get();
        if (c == &k_) return; // its own symbol is defined here
        for (auto const& r : a_.callees)
            if (r.get() == c) return;
        a_.callees.emplace_back(c);
    }

    llvm::Value* call(ir::instr const& i) {
        // The VM's depth limit: frames.size() >= max_call_depth fails at the call site.
        // And the native stack's: a frame below the floor makes the runtime run the
        // call again on a stack large enough for max_call_depth frames.
        std::int32_t s = site(i);
        llvm::GlobalVariable* d = depth();
        llvm::Value* now = b_.CreateLoad(b_.getInt64Ty(), d);
        llvm::Value* too_deep = b_.CreateICmpSGE(now, b_.getInt64(static_cast<std::uint64_t>(max_call_depth)));
        llvm::Function* frame_address =
            llvm::Intrinsic::getDeclaration(&lm_, llvm::Intrinsic::frameaddress, {b_.getInt8PtrTy()});
        llvm::Value* frame = b_.CreatePtrToInt(b_.CreateCall(frame_address, {b_.getInt32(0)}), b_.getInt64Ty());
        auto* floor = llvm::cast<llvm::GlobalVariable>(lm_.getOrInsertGlobal(rt_floor, b_.getInt64Ty()));
        llvm::Value* too_low = b_.CreateICmpULT(frame, b_.CreateLoad(b_.getInt64Ty(), floor));
        fail_unless(b_.CreateNot(b_.CreateOr(too_deep, too_low)), s,
                    b_.CreateSelect(too_deep, b_.getInt32(depth_limit), b_.getInt32(out_of_stack)));
        b_.CreateStore(b_.CreateAdd(now, b_.getInt64(1)), d);
        kernel const& callee = *m_.kernels.at(static_cast<std::size_t>(i.callee));
        note_callee(i.callee);
        std::vector<llvm::Value*> args;
        for (ir::instr const* x : i.args) args.push_back(v(x));
        llvm::Value* r = b_.CreateCall(function_for(callee), args);
        b_.CreateStore(now, d);
        return r;
    }

    void emit(ir::instr const& i) {
        using ir::opcode;
        auto x = [&](std::size_t n) { return v(i.args.at(n)); };
        llvm::Value* r = nullptr;
        switch (i.op) {
        case opcode::param: r = fn_->getArg(static_cast<unsigned>(i.index)); break;
        case opcode::constant: r = llvm::ConstantFP::get(f64_, i.imm); break;
        case opcode::add: r = b_.CreateFAdd(x(0), x(1)); break;
        case opcode::sub: r = b_.CreateFSub(x(0), x(1)); break;
        case opcode::mul: r = b_.CreateFMul(x(0), x(1)); break;
        case opcode::div: r = b_.CreateFDiv(x(0), x(1)); break;
        case opcode::neg: r = b_.CreateFNeg(x(0)); break;
        case opcode::not_: r = truth(b_.CreateFCmpOEQ(x(0), llvm::ConstantFP::get(f64_, 0.0))); break;
        case opcode::lt: r = truth(b_.CreateFCmpOLT(x(0), x(1))); break;
        case opcode::le: r = truth(b_.CreateFCmpOLE(x(0), x(1))); break;
        case opcode::gt: r = truth(b_.CreateFCmpOGT(x(0), x(1))); break;
        case opcode::ge: r = truth(b_.CreateFCmpOGE(x(0), x(1))); break;
        case opcode::eq: r = truth(b_.CreateFCmpOEQ(x(0), x(1))); break;
        case opcode::ne: r = truth(b_.CreateFCmpUNE(x(0), x(1))); break;
        case opcode::sqrt: r = intrinsic(llvm::Intrinsic::sqrt, x(0)); break;
        case opcode::abs: r = intrinsic(llvm::Intrinsic::fabs, x(0)); break;
        case opcode::floor: r = intrinsic(llvm::Intrinsic::floor, x(0)); break;
        // sem::min(a, b) = b < a ? b : a; sem::max(a, b) = a < b ? b : a.
        case opcode::min: r = b_.CreateSelect(b_.CreateFCmpOLT(x(1), x(0)), x(1), x(0)); break;
        case opcode::max: r = b_.CreateSelect(b_.CreateFCmpOLT(x(0), x(1)), x(1), x(0)); break;
        case opcode::call: r = call(i); break;
        case opcode::phi: {
            llvm::PHINode* p = b_.CreatePHI(f64_, static_cast<unsigned>(i.args.size()));
            phis_.push_back({&i, p});
            r = p;
            break;
        }
        case opcode::assert_: {
            std::int32_t s = site(i);
            fail_unless(is_true(x(0)), s, assertion);
            return;
        }
        case opcode::br:
            exits_[{i.parent, 0}] = b_.GetInsertBlock();
            b_.CreateBr(bb_.at(i.succs[0]));
            return;
        case opcode::cond_br: {
            llvm::BasicBlock* here = b_.GetInsertBlock();
            llvm::BasicBlock* on_true = bb_.at(i.succs[0]);
            llvm::BasicBlock* on_false = bb_.at(i.succs[1]);
            exits_[{i.parent, 0}] = here;
            exits_[{i.parent, 1}] = here;
            if (on_true == on_false) {
                // Two edges to one block (phis may tell them apart): the false edge
                // goes through a block of its own.
                auto* edge = llvm::BasicBlock::Create(ctx_, "", fn_);
                llvm::IRBuilder<llvm::NoFolder> eb(edge);
                eb.CreateBr(on_false);
                exits_[{i.parent, 1}] = edge;
                on_false = edge;
            }
            b_.CreateCondBr(is_true(x(0)), on_true, on_false);
            return;
        }
        case opcode::ret: b_.CreateRet(x(0)); return;
        }
        if (!r) throw internal_error("native backend: unhandled instruction");
        values_[&i] = r;
    }

    // Phi arguments follow the block's predecessors; the n-th time a block appears
    // among them is its n-th successor slot leading here (as the bytecode generator).
    void fill_phis() {
        for (auto const& [i, p] : phis_) {
            ir::block const* here = i->parent;
            std::map<ir::block const*, std::size_t> seen;
            for (std::size_t k = 0; k < here->preds.size() && k < i->args.size(); ++k) {
                ir::block const* pred = here->preds[k];
                std::size_t nth = seen[pred]++;
                if (!bb_.count(pred)) continue; // unreachable predecessor: no edge in LLVM
                auto const& succs = pred->succs();
                std::size_t slot = succs.size();
                for (std::size_t s = 0, n = 0; s < succs.size(); ++s)
                    if (succs[s] == here && n++ == nth) {
                        slot = s;
                        break;
                    }
                auto edge = exits_.find({pred, slot});
                if (edge == exits_.end()) throw internal_error("native backend: phi edge without a branch in '" + f_.name + "'");
                p->addIncoming(v(i->args[k]), edge->second);
            }
        }
    }

    // double tk.NAME$entry(double const* args): what the driver calls.
    void emit_entry_wrapper() {
        auto* type = llvm::FunctionType::get(f64_, {llvm::PointerType::getUnqual(f64_)}, false);
        auto* entry = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol_of(k_.name) + "$entry", lm_);
        entry->addFnAttr(llvm::Attribute::NoUnwind);
        llvm::IRBuilder<llvm::NoFolder> eb(llvm::BasicBlock::Create(ctx_, "", entry));
        std::vector<llvm::Value*> args;
        for (int p = 0; p < k_.nparams; ++p)
            args.push_back(eb.CreateLoad(f64_, eb.CreateConstGEP1_32(f64_, entry->getArg(0), static_cast<unsigned>(p))));
        eb.CreateRet(eb.CreateCall(fn_, args));
    }

    llvm::LLVMContext& ctx_;
    llvm::Module& lm_;
    ir::function const& f_;
    module const& m_;
    kernel const& k_;
    native_artifact& a_;
    // NoFolder: the code computes what the VM computes; only LLVM's own passes fold
    // (and keep IEEE semantics: no fast-math flags anywhere).
    llvm::IRBuilder<llvm::NoFolder> b_;
    llvm::Type* f64_ = nullptr;
    llvm::Function* fn_ = nullptr;
    std::vector<ir::block*> order_;
    std::unordered_map<ir::block const*, llvm::BasicBlock*> bb_;
    std::unordered_map<ir::instr const*, llvm::Value*> values_;
    std::vector<std::pair<ir::instr const*, llvm::PHINode*>> phis_;
    std::map<std::pair<ir::block const*, std::size_t>, llvm::BasicBlock*> exits_;
};

void optimize(llvm::Module& lm, llvm::TargetMachine& tm, opt_level level) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(&tm);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = level == opt_level::O0
                                      ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                                      : pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
    mpm.run(lm, mam);
}

llvm::Triple::ArchType host_arch() {
    static llvm::Triple::ArchType const arch = llvm::Triple(llvm::sys::getProcessTriple()).getArch();
    return arch;
}

// Time spent in validate() (on a warm run: checking each loaded object), for
// TINYK_NATIVE_TIMING.
double validate_ms = 0;

bool timing_requested() {
    char const* t = std::getenv("TINYK_NATIVE_TIMING");
    return t && *t && std::strcmp(t, "0") != 0;
}

} // namespace

void validate(native_artifact const& a) {
    struct timer {
        clock_type::time_point start = clock_type::now();
        ~timer() { validate_ms += ms_since(start); }
    } timed;
    auto bad = [](std::string const& what) { throw std::runtime_error("tinyk: invalid native artifact: " + what); };
    if (!a.self) bad("no kernel");
    if (a.symbol != symbol_of(a.self->name)) bad("symbol '" + a.symbol + "' is not kernel '" + a.self->name + "'");
    if (a.nparams != a.self->nparams) bad("parameter count");
    if (a.lines.size() != a.origins.size()) bad("source map size");
    for (std::int32_t o : a.origins)
        if (o < 0 || static_cast<std::size_t>(o) > a.inlined.size()) bad("source origin");
    if (!a.dialects || !a.result_type || a.param_types.size() != static_cast<std::size_t>(a.nparams)) bad("references");
    for (auto const& t : a.param_types)
        if (!t) bad("parameter type");
    for (auto const& k : a.inlined)
        if (!k) bad("inlined origin");
    std::set<std::string> allowed = {rt_fail, rt_depth, rt_floor, a.symbol + "$id"};
    for (char const* s : libm_symbols) allowed.insert(s);
    for (auto const& k : a.callees) {
        if (!k) bad("callee");
        allowed.insert(symbol_of(k->name));
    }

    auto obj = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(a.object, a.symbol));
    if (!obj) bad("object file: " + llvm::toString(obj.takeError()));
    if ((*obj)->getArch() != host_arch()) bad("object file for another architecture");
    bool defines_fn = false, defines_entry = false;
    for (llvm::object::SymbolRef const& sym : (*obj)->symbols()) {
        auto flags = sym.getFlags();
        auto name = sym.getName();
        if (!flags || !name) {
            if (!flags) llvm::consumeError(flags.takeError());
            if (!name) llvm::consumeError(name.takeError());
            bad("unreadable symbol");
        }
        std::string n = name->str();
        if (*flags & llvm::object::SymbolRef::SF_Undefined) {
            if (!allowed.count(n)) bad("object refers to '" + n + "'");
        } else if (*flags & llvm::object::SymbolRef::SF_Global) {
            if (n == a.symbol) defines_fn = true;
            else if (n == a.symbol + "$entry") defines_entry = true;
            else bad("object defines '" + n + "'");
        }
    }
    if (!defines_fn || !defines_entry) bad("object does not define " + a.symbol);
}

namespace native {

bool available() { return true; }

struct backend::impl {
    opt_level level;
    std::optional<llvm::orc::JITTargetMachineBuilder> jtmb; // what tm() makes
    std::unique_ptr<llvm::TargetMachine> target;            // made at the first compile()
    std::string toolchain, key_id;
    std::unique_ptr<llvm::LLVMContext> context; // for compiling; one for the process
    // The JIT, made at the first add(): one session, one JITDylib, one object linking
    // layer. No LLJIT: it would make a second target machine (for IR nobody
    // gives it) and a platform layer the kernels do not use.
    std::unique_ptr<llvm::orc::ExecutionSession> session;
    std::unique_ptr<llvm::orc::ObjectLayer> linker;
    llvm::orc::JITDylib* dylib = nullptr;
    llvm::orc::SymbolMap pending_ids; // tk.NAME$id of kernels added since the last call

    ~impl() {
        if (session) llvm::consumeError(session->endSession());
    }

    // Where the time goes (TINYK_NATIVE_TIMING=1 prints it).
    double setup_ms = 0, tm_ms = 0, jit_ms = 0, lower_ms = 0, optimize_ms = 0, codegen_ms = 0, add_ms = 0,
           link_ms = 0, run_ms = 0;
    std::size_t compiled = 0, added = 0;

    llvm::TargetMachine& tm() {
        if (target) return *target;
        auto start = clock_type::now();
        target = expect(jtmb->createTargetMachine(), "cannot target this machine");
        tm_ms += ms_since(start);
        return *target;
    }

    // The ids of the kernels added so far, as one set of absolute symbols (one
    // materialization, not one per kernel).
    void define_kernel_ids() {
        if (pending_ids.empty()) return;
        check(dylib->define(llvm::orc::absoluteSymbols(std::move(pending_ids))), "cannot define the kernel ids");
        pending_ids.clear();
    }

    // ELF (the only format the backend targets, see backend()): symbols are not mangled.
    llvm::orc::SymbolStringPtr intern(llvm::StringRef name) { return session->intern(name); }

    llvm::orc::JITDylib& jit() {
        if (dylib) return *dylib;
        auto start = clock_type::now();
        session = std::make_unique<llvm::orc::ExecutionSession>(
            expect(llvm::orc::SelfExecutorProcessControl::Create(), "cannot control this process"));
        // x86-64: JITLink, which links chain40's 40 objects in a quarter fewer
        // instructions than RuntimeDyld (its relocations are all it needs: the code has
        // no unwind tables). Elsewhere RuntimeDyld, which LLVM 14 supports more widely.
        if (jtmb->getTargetTriple().getArch() == llvm::Triple::x86_64)
            linker = std::make_unique<llvm::orc::ObjectLinkingLayer>(*session);
        else
            linker = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                *session, [] { return std::make_unique<llvm::SectionMemoryManager>(); });
        auto created = session->createJITDylib("tinyk");
        if (!created) check(created.takeError(), "cannot create the JIT's library");
        dylib = &*created;
        // The runtime and every libm/libc symbol validate() lets an object refer to,
        // by address: no search of the process's libraries.
        llvm::orc::SymbolMap runtime;
        auto callable = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
        auto fn = [&](char const* name, auto* address) {
            runtime[intern(name)] = llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(address), callable);
        };
        auto data = [&](char const* name, void* address) {
            runtime[intern(name)] =
                llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(address), llvm::JITSymbolFlags::Exported);
        };
        fn(rt_fail, &tinyk_rt_fail);
        data(rt_depth, &the_depth);
        data(rt_floor, &the_stack_floor);
        double (*unary)(double) = &::floor;
        fn("floor", unary);
        unary = &::sqrt;
        fn("sqrt", unary);
        unary = &::fabs;
        fn("fabs", unary);
        double (*binary)(double, double) = &::fmin;
        fn("fmin", binary);
        binary = &::fmax;
        fn("fmax", binary);
        fn("memcpy", &::memcpy);
        fn("memset", &::memset);
        fn("memmove", &::memmove);
        if (runtime.size() != 3 + std::size(libm_symbols))
            throw internal_error("native backend: the runtime does not define every symbol an object may use");
        check(dylib->define(llvm::orc::absoluteSymbols(std::move(runtime))), "cannot define the runtime");
        jit_ms += ms_since(start);
        return *dylib;
    }
};

backend::backend(opt_level level) : impl_(std::make_unique<impl>()) {
    auto start = clock_type::now();
    impl_->level = level;
    static bool const initialized = [] {
        return !llvm::InitializeNativeTarget() && !llvm::InitializeNativeTargetAsmPrinter();
    }();
    if (!initialized) throw internal_error("native backend: LLVM does not support this machine");

    // The host, with its features in a canonical order (detectHost lists them in the
    // order of a hash table): the feature string is part of every key.
    // TINYK_CPU names another CPU of the host's architecture (e.g. `generic`, `x86-64`,
    // `skylake`): code for it, with that CPU's own features, not the host's. It is part
    // of every native key (through the toolchain), so machines with different CPUs
    // share VM kernels but not native ones. Unknown here: one line, and the host's.
    llvm::orc::JITTargetMachineBuilder jtmb(llvm::Triple(llvm::sys::getProcessTriple()));
    std::string cpu;
    if (char const* env = std::getenv("TINYK_CPU")) cpu = env;
    bool use_host = cpu.empty();
    if (!use_host) {
        std::string error;
        llvm::Target const* target = llvm::TargetRegistry::lookupTarget(llvm::sys::getProcessTriple(), error);
        std::unique_ptr<llvm::MCSubtargetInfo> info(
            target ? target->createMCSubtargetInfo(llvm::sys::getProcessTriple(), "", "") : nullptr);
        if (!info || !info->isCPUStringValid(cpu)) {
            std::fprintf(stderr, "tinyk: TINYK_CPU=\"%s\" is not a CPU LLVM knows for %s; using this machine's, %s\n",
                         cpu.c_str(), llvm::sys::getProcessTriple().c_str(), llvm::sys::getHostCPUName().str().c_str());
            use_host = true;
        }
    }
    std::vector<std::string> features;
    if (use_host) {
        jtmb.setCPU(llvm::sys::getHostCPUName().str());
        llvm::StringMap<bool> host_features;
        if (llvm::sys::getHostCPUFeatures(host_features))
            for (auto const& f : host_features) features.push_back((f.second ? "+" : "-") + f.first().str());
        std::sort(features.begin(), features.end());
    } else {
        jtmb.setCPU(cpu);
    }
    jtmb.addFeatures(features);
    jtmb.setCodeGenOptLevel(level == opt_level::O0 ? llvm::CodeGenOpt::None : llvm::CodeGenOpt::Default);
    jtmb.getOptions().AllowFPOpFusion = llvm::FPOpFusion::Strict; // no FMA contraction: IEEE results
    if (!jtmb.getTargetTriple().isOSBinFormatELF())
        throw internal_error("native backend: the host's object format is not ELF");

    // The toolchain component describes what the target machine is made from, not the
    // machine itself: making one costs a warm run more than all its keys, and only a
    // compile needs it (impl::tm). LLVM (its version is in the text) makes the same
    // machine from the same triple, CPU, features, options, models and opt level; every
    // option set above is named here, the others are LLVM's defaults.
    auto const& r = jtmb.getRelocationModel();
    auto const& c = jtmb.getCodeModel();
    impl_->toolchain = std::string("llvm ") + LLVM_VERSION_STRING + "; made from: triple " +
                       jtmb.getTargetTriple().str() + "; cpu " + jtmb.getCPU() + "; features " +
                       jtmb.getFeatures().getString() + "; codegen-opt " + (level == opt_level::O0 ? "none" : "default") +
                       "; reloc " + (r ? std::to_string(static_cast<int>(*r)) : "default") + "; code-model " +
                       (c ? std::to_string(static_cast<int>(*c)) : "default") +
                       "; options LLVM's defaults but fp-fusion " +
                       std::to_string(static_cast<int>(jtmb.getOptions().AllowFPOpFusion));
    impl_->jtmb.emplace(std::move(jtmb));
    impl_->key_id = level == opt_level::O0 ? "native;llvm-O0" : "native;llvm-O2";
    impl_->setup_ms = ms_since(start);
}

backend::~backend() = default;

std::string const& backend::toolchain() const { return impl_->toolchain; }
std::string const& backend::key_id() const { return impl_->key_id; }

native_artifact backend::compile(module const& m, kernel const& k, std::string* ir_dump) {
    impl& s = *impl_;
    auto start = clock_type::now();
    auto f = optimize_kernel(m, k, s.level);
    if (ir_dump) *ir_dump = ir::debug_text(*f);

    if (!s.context) s.context = std::make_unique<llvm::LLVMContext>();
    auto lm = std::make_unique<llvm::Module>("tinyk." + k.name, *s.context);
    llvm::TargetMachine& tm = s.tm();
    lm->setTargetTriple(tm.getTargetTriple().str());
    lm->setDataLayout(tm.createDataLayout());
    native_artifact a;
    a.symbol = symbol_of(k.name);
    a.nparams = k.nparams;
    a.self = ref<kernel>(const_cast<kernel*>(&k));
    a.dialects = ref<dialect_group>(&core_dialects());
    a.result_type = ref<type const>(f64_type());
    for (int p = 0; p < k.nparams; ++p) a.param_types.emplace_back(f64_type());
    lowering(*lm, *f, m, k, a).run();
    std::string broken;
    llvm::raw_string_ostream why(broken);
    if (llvm::verifyModule(*lm, &why)) throw internal_error("native backend: bad LLVM IR for '" + k.name + "': " + why.str());
    auto lowered = clock_type::now();
    s.lower_ms += std::chrono::duration<double, std::milli>(lowered - start).count();

    optimize(*lm, tm, s.level);
    auto optimized = clock_type::now();
    s.optimize_ms += std::chrono::duration<double, std::milli>(optimized - lowered).count();
    if (ir_dump) {
        std::string text;
        llvm::raw_string_ostream os(text);
        lm->print(os, nullptr);
        *ir_dump += "; llvm\n" + os.str();
    }

    llvm::orc::SimpleCompiler codegen(tm);
    std::unique_ptr<llvm::MemoryBuffer> object = expect(codegen(*lm), "code generation failed");
    a.object.assign(object->getBufferStart(), object->getBufferSize());
    s.codegen_ms += ms_since(optimized);
    ++s.compiled;
    try {
        validate(a); // what a later load will require
    } catch (std::exception const& e) {
        throw internal_error(std::string("native backend: generated code fails its own check: ") + e.what());
    }
    return a;
}

void backend::add(kernel& k) {
    impl& s = *impl_;
    native_artifact const* a = k.native.get();
    if (!a || a->self.get() != &k || a->result_type.get() != f64_type() || a->dialects.get() != &core_dialects())
        throw internal_error("kernel '" + k.name + "': its native artifact does not reference the live objects");
    llvm::orc::JITDylib& jd = s.jit();
    auto start = clock_type::now();
    s.pending_ids[s.intern(a->symbol + "$id")] =
        llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(&k), llvm::JITSymbolFlags::Exported);
    // The buffer points into the artifact, which lives as long as the kernel: no copy.
    check(s.linker->add(jd, llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(a->object), a->symbol, false)),
          "cannot add an object file");
    s.add_ms += ms_since(start);
    ++s.added;
}

namespace {

struct call_on_stack {
    double (*fn)(double const*);
    double const* args;
    double result = 0;
};

// The lowest address of the calling thread's stack (pthread_getattr_np: for the main
// thread, as far as RLIMIT_STACK and the mappings below let it grow); 0 if unknown.
std::uintptr_t stack_low_end() {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
    void* low = nullptr;
    std::size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &low, &size);
    pthread_attr_destroy(&attr);
    return rc == 0 ? reinterpret_cast<std::uintptr_t>(low) : 0;
}

// Room left below the floor for the frame being entered, the runtime and libc.
constexpr std::uintptr_t stack_margin = 256 << 10;

// Runs the call on this thread. The code compares its frames with the floor at every
// call and leaves (out_of_stack) before it would overflow the stack.
void* run_call(void* p) {
    auto& c = *static_cast<call_on_stack*>(p);
    std::uintptr_t low = stack_low_end();
    std::jmp_buf resume;
    the_failure.resume = &resume;
    the_failure.failed = false;
    the_failure.out_of_stack = false;
    the_stack_floor = low ? low + stack_margin : 0; // unknown bounds: no floor
    the_depth = 1; // the entry's frame, as the VM's frames.size()
    if (setjmp(resume) == 0) c.result = c.fn(c.args);
    the_failure.resume = nullptr;
    return nullptr;
}

// The VM allows max_call_depth frames. Native frames are small, and a call that
// needs fewer than this thread's stack holds runs here; one that reaches the floor
// is run again (kernels have no side effects) on a thread whose stack is reserved
// for max_call_depth frames of up to 1 KiB (not committed: pages are touched as used).
void run_call_with_stack_for(call_on_stack& c) {
    run_call(&c);
    if (!the_failure.out_of_stack) return;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) == 0) {
        pthread_t thread;
        bool started = pthread_attr_setstacksize(&attr, std::size_t{1} << 30) == 0 &&
                       pthread_create(&thread, &attr, &run_call, &c) == 0;
        pthread_attr_destroy(&attr);
        if (started) pthread_join(thread, nullptr);
    }
    // Out of stack even there (frames over 1 KiB): the depth this machine can give.
    if (the_failure.out_of_stack) {
        the_failure.out_of_stack = false;
        the_failure.failed = true;
    }
}

} // namespace

double backend::execute(kernel const& entry, std::vector<double> const& args) {
    impl& s = *impl_;
    if (!entry.native) throw internal_error("kernel '" + entry.name + "' has no native code");
    llvm::orc::JITDylib& jd = s.jit();
    auto start = clock_type::now();
    s.define_kernel_ids();
    // Looking up the entry would link its object and every object it reaches, each
    // waiting for its callees: ORC then moves every waiting object's dependencies up
    // the chain, quadratic in its length. Callees first, each object links against
    // callees that are ready.
    std::vector<kernel const*> order;
    std::set<kernel const*> seen;
    std::vector<std::pair<kernel const*, std::size_t>> stack{{&entry, 0}};
    seen.insert(&entry);
    while (!stack.empty()) {
        auto& [k, next] = stack.back();
        auto const& callees = k->native->callees;
        if (next < callees.size()) {
            kernel const* c = callees[next++].get();
            if (c->native && seen.insert(c).second) stack.push_back({c, 0});
            continue;
        }
        order.push_back(k);
        stack.pop_back();
    }
    auto search = llvm::orc::makeJITDylibSearchOrder(&jd, llvm::orc::JITDylibLookupFlags::MatchExportedSymbolsOnly);
    llvm::orc::SymbolStringPtr entry_symbol = s.intern(entry.native->symbol + "$entry");
    // One lookup per kernel, callees first (one lookup of every symbol measured 7x
    // slower on chain40: its objects then wait for each other as the entry's would).
    for (kernel const* k : order)
        if (k != &entry) expect(s.session->lookup(search, s.intern(k->native->symbol)), "cannot link the kernels");
    llvm::JITEvaluatedSymbol sym = expect(s.session->lookup(search, entry_symbol), "cannot link the kernels");
    auto linked = clock_type::now();
    s.link_ms += std::chrono::duration<double, std::milli>(linked - start).count();

    call_on_stack c{reinterpret_cast<double (*)(double const*)>(static_cast<std::uintptr_t>(sym.getAddress())),
                    args.data()};
    run_call_with_stack_for(c);
    s.run_ms += ms_since(linked);
    if (timing_requested())
        std::fprintf(stderr,
                     "tinyk: native: setup-ms=%.3f jit-ms=%.3f compiled=%zu (target-ms=%.3f lower-ms=%.3f optimize-ms=%.3f "
                     "codegen-ms=%.3f) validate-ms=%.3f added=%zu add-ms=%.3f link-ms=%.3f run-ms=%.3f\n",
                     s.setup_ms, s.jit_ms, s.compiled, s.tm_ms, s.lower_ms, s.optimize_ms, s.codegen_ms, validate_ms, s.added,
                     s.add_ms, s.link_ms, s.run_ms);
    if (the_failure.failed) {
        the_failure.failed = false;
        throw runtime_failure(the_failure.what, the_failure.line, the_failure.kernel);
    }
    return c.result;
}

std::string backend::describe(kernel const& k) const {
    if (!k.native) return "  ; no native code\n";
    native_artifact const& a = *k.native;
    std::string s = "  ; " + std::to_string(a.object.size()) + " bytes of object code defining " + a.symbol +
                    ", " + std::to_string(a.lines.size()) + " failure sites, calls";
    for (auto const& c : a.callees) s += " " + symbol_of(c->name);
    return s + "\n";
}

} // namespace native
} // namespace tinyk
