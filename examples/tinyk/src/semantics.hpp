// tinyk: the meaning of every operator and builtin, in one place, so that the
// checker (global initializers), constant folding and the VM can never disagree.
#pragma once

#include <cmath>

namespace tinyk::sem {

inline double truth(bool b) { return b ? 1.0 : 0.0; }
inline bool is_true(double x) { return x != 0.0; } // NaN is true, as in C

inline double add(double a, double b) { return a + b; }
inline double sub(double a, double b) { return a - b; }
inline double mul(double a, double b) { return a * b; }
inline double div(double a, double b) { return a / b; }
inline double neg(double a) { return -a; }
inline double not_(double a) { return truth(!is_true(a)); }
inline double lt(double a, double b) { return truth(a < b); }
inline double le(double a, double b) { return truth(a <= b); }
inline double gt(double a, double b) { return truth(a > b); }
inline double ge(double a, double b) { return truth(a >= b); }
inline double eq(double a, double b) { return truth(a == b); }
inline double ne(double a, double b) { return truth(a != b); }
inline double sqrt(double a) { return std::sqrt(a); }
inline double abs(double a) { return std::fabs(a); }
inline double floor(double a) { return std::floor(a); }
// min/max: the first argument when the comparison is false (NaN-propagation as std::min/max).
inline double min(double a, double b) { return b < a ? b : a; }
inline double max(double a, double b) { return a < b ? b : a; }

} // namespace tinyk::sem
