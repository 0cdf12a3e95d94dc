// tinyk: the register VM that runs artifacts.
#pragma once

#include "kernel.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace tinyk {

/// A failure while running: an assertion, or the call-depth limit. The driver prints
/// `FILE:LINE: MESSAGE in KERNEL` and exits with status 3.
class runtime_failure : public std::runtime_error {
public:
    runtime_failure(std::string what, int line, std::string kernel_name)
        : std::runtime_error(std::move(what)), line_(line), kernel_(std::move(kernel_name)) {}
    int line() const noexcept { return line_; }
    std::string const& kernel_name() const noexcept { return kernel_; }

private:
    int line_;
    std::string kernel_;
};

inline constexpr std::size_t max_call_depth = 1000000;

/// Calls kernel `k` (every kernel it reaches must have code) with `args`.
double execute(kernel const& k, std::vector<double> const& args);

} // namespace tinyk
