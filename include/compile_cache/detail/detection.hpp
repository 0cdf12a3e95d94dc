// compile_cache: the detection idiom (as the Library Fundamentals TS v2's
// std::experimental::is_detected): a policy requirement is one alias template naming
// the expression, and one trait `is_detected...<Op, T>` saying whether it is valid.
#pragma once

#include <type_traits>

namespace compile_cache::detail {

/// What detected_t names when the expression is not valid: matches no requirement.
struct nonesuch {
    nonesuch() = delete;
    ~nonesuch() = delete;
    nonesuch(nonesuch const&) = delete;
    void operator=(nonesuch const&) = delete;
};

template <class AlwaysVoid, template <class...> class Op, class... Args>
struct detector {
    using value_t = std::false_type;
    using type = nonesuch;
};
template <template <class...> class Op, class... Args>
struct detector<std::void_t<Op<Args...>>, Op, Args...> {
    using value_t = std::true_type;
    using type = Op<Args...>;
};

/// true_type when Op<Args...> is a valid type.
template <template <class...> class Op, class... Args>
using is_detected = typename detector<void, Op, Args...>::value_t;

/// Op<Args...>, or nonesuch when it is not valid.
template <template <class...> class Op, class... Args>
using detected_t = typename detector<void, Op, Args...>::type;

/// true_type when Op<Args...> is valid and exactly Expected.
template <class Expected, template <class...> class Op, class... Args>
using is_detected_exact = std::is_same<Expected, detected_t<Op, Args...>>;

/// true_type when Op<Args...> is valid and converts to To.
template <class To, template <class...> class Op, class... Args>
using is_detected_convertible =
    std::bool_constant<is_detected<Op, Args...>::value && std::is_convertible_v<detected_t<Op, Args...>, To>>;

} // namespace compile_cache::detail
