// tinyk: the native backend. Lowers a kernel's optimized SSA IR to LLVM IR (doubles,
// no fast-math), runs LLVM's pipeline (tinyk -O1: LLVM O2; -O0: O0), generates an
// object file for the host, and links kernels with ORC (one session and JITDylib; the
// target machine is made only when a kernel is compiled). The object file is
// the artifact the cache keeps (native_artifact.hpp): a warm run only adds the cached
// objects to the JIT, which links what the called kernel reaches.
//
// Run-time failures leave native code through the tinyk runtime: a failed assert,
// or a call past the depth limit (max_call_depth, as in the VM), calls back into the
// host with the kernel and the site number; the driver prints
// `FILE:LINE: assertion failed in KERNEL` from the artifact's source map (relocated
// like the VM's) and exits with status 3.
//
// No LLVM header here: without LLVM (native_backend_none.cpp) available() is false.
#pragma once

#include "kernel.hpp"
#include "native_artifact.hpp"
#include "passes/passes.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tinyk {

namespace native {

/// True when this tinyk was built with LLVM: --backend=native is then the default.
bool available();

class backend {
public:
    /// Sets up code generation for the host at `level`. Throws internal_error when
    /// the backend is unavailable or LLVM cannot target the host.
    explicit backend(opt_level level);
    ~backend();
    backend(backend const&) = delete;
    backend& operator=(backend const&) = delete;

    /// What goes into the toolchain component of every key: the LLVM version and the
    /// target (triple, CPU, features, options, code generator opt level).
    std::string const& toolchain() const;
    /// What goes into the "backend" component: the backend and its LLVM pipeline.
    std::string const& key_id() const;

    /// Runs tinyk's passes on k, lowers and optimizes it with LLVM and generates its
    /// object file. Depends only on what k's key covers. `ir_dump`: tinyk's optimized
    /// IR and LLVM's optimized IR, for --dump-ir.
    native_artifact compile(module const& m, kernel const& k, std::string* ir_dump = nullptr);

    /// Adds k.native's object to the JIT (linked later, when a call reaches it).
    /// Throws internal_error if the artifact does not reference the live singletons.
    void add(kernel& k);

    /// Calls `entry` (links what it reaches). Throws runtime_failure like the VM.
    double execute(kernel const& entry, std::vector<double> const& args);

    /// For --dump-bytecode: what was generated for k.
    std::string describe(kernel const& k) const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace native
} // namespace tinyk
