// tinyk: a kernel as the running program sees it, and the module of a file.
#pragma once

#include "ast.hpp"
#include "bytecode.hpp"
#include "ir.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tinyk {

struct native_artifact; // native_artifact.hpp

/// A live kernel. Artifacts reference kernels by address (`ref<kernel>`); kernels are
/// never moved once the module is built.
struct kernel {
    std::string name;
    int index = 0;       // position in the file
    int first_line = 0;  // line of the `kernel` keyword, as it stands now
    int nparams = 0;

    std::unique_ptr<ir::function> lowered;
    std::string canonical_ir;                  // canonical_text(*lowered)
    std::map<std::string, double> globals_read;
    std::vector<int> callees;                  // direct callees, sorted, unique
    int scc = -1;                              // strongly connected component id
    bool recursive = false;                    // in a cycle (or calls itself)

    std::shared_ptr<artifact> code;            // compiled or loaded
    std::shared_ptr<native_artifact> native;   // the same, with --backend=native
};

struct module {
    std::string file;                          // as given on the command line
    ast::program prog;
    std::vector<std::unique_ptr<kernel>> kernels;

    kernel* find(std::string const& name) const {
        for (auto const& k : kernels)
            if (k->name == name) return k.get();
        return nullptr;
    }
};

} // namespace tinyk
