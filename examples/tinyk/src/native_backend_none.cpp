// tinyk without LLVM: the native backend is not there (--backend=vm only).
#include "native_backend.hpp"

#include "diag.hpp"
#include "native_artifact.hpp"

#include <stdexcept>

namespace tinyk {

void validate(native_artifact const&) {
    throw std::runtime_error("tinyk: native code, but this tinyk was built without LLVM");
}

namespace native {

bool available() { return false; }

struct backend::impl {};

backend::backend(opt_level) {
    throw internal_error("this tinyk was built without LLVM: --backend=native is not available");
}
backend::~backend() = default;
std::string const& backend::toolchain() const { throw internal_error("no native backend"); }
std::string const& backend::key_id() const { throw internal_error("no native backend"); }
native_artifact backend::compile(module const&, kernel const&, std::string*) { throw internal_error("no native backend"); }
void backend::add(kernel&) { throw internal_error("no native backend"); }
double backend::execute(kernel const&, std::vector<double> const&) { throw internal_error("no native backend"); }
std::string backend::describe(kernel const&) const { return {}; }

} // namespace native
} // namespace tinyk
