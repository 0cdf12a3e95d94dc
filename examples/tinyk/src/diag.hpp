// tinyk: diagnostics. A program error is thrown as compile_error and printed by the
// driver as `FILE:LINE:COL: error: MESSAGE` (exit status 2).
#pragma once

#include <stdexcept>
#include <string>

namespace tinyk {

/// A position in the source file: 1-based line and column (a tab counts as one column).
struct source_pos {
    int line = 0;
    int col = 0;
};

class compile_error : public std::runtime_error {
public:
    compile_error(source_pos pos, std::string const& message)
        : std::runtime_error(message), pos_(pos) {}
    source_pos pos() const noexcept { return pos_; }

private:
    source_pos pos_;
};

/// An internal inconsistency (a bug in tinyk, not in the program): exit status 1.
class internal_error : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

} // namespace tinyk
