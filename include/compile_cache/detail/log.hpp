// compile_cache: one-line diagnostics through a host's logger: built only when there is a
// logger, and neither the building (out of memory) nor a throwing logger reaches the host.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace compile_cache::detail {

/// Receives one-line diagnostics (cache_options::logger); silent when empty.
using line_logger = std::function<void(std::string_view)>;

/// Gives `logger` the line `build()` makes, built only when there is a logger; an empty
/// line is not given.
template <class Build>
void log_with(line_logger const& logger, Build&& build) noexcept {
    if (!logger) return;
    try {
        decltype(auto) line = build();
        if (!std::string_view(line).empty()) logger(line);
    } catch (...) {
    }
}

/// `line` through `logger`, or on stderr after `compile_cache: ` when there is none: for
/// what a host must hear of even when it asked for no diagnostics. A view, so that a
/// literal line costs no allocation (that could fail) in the noexcept callers.
COMPILE_CACHE_DECL void log_or_stderr(line_logger const& logger, std::string_view line) noexcept;

} // namespace compile_cache::detail

#include <compile_cache/detail/impl/log.ipp>
