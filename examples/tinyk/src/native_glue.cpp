// tinyk: the cache side of the native backend: loads or compiles a kernel's
// native_artifact through the same cache as the bytecode (cache_glue.hpp). Compiled
// with RTTI and no LLVM header (Boost.Serialization and the registry need RTTI).
#include "cache_glue.hpp"
#include "native_artifact.hpp"

#include <memory>
#include <variant>

namespace tinyk::glue {

result cache::get_or_compile_native(kernel& k, key_result const& kr, std::string const& origin_file,
                                    std::function<native_artifact()> const& compile) {
    cc::entry_info info{k.name, origin_file, k.first_line};
    cc::cached<native_artifact> r =
        std::visit([&](auto& c) { return c.template get_or_compile<native_artifact>(kr, info, compile, &k); }, c_);
    k.native = std::make_shared<native_artifact>(std::move(r.value));
    return {r.outcome, std::move(r.reason), r.explanation.brief()};
}

} // namespace tinyk::glue
