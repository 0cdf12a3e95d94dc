// compile_cache: the one object of each of the library's error categories, made before any
// use and never destroyed.
#pragma once

namespace compile_cache::detail {

/// Holds a `Category` (a std::error_category whose constructor is a constant expression,
/// as std::error_category's is) constant-initialised and never destroyed: no allocation
/// and no static's guard at its first use, which a noexcept make_error_code could not let
/// fail and a forked child could find held; usable at exit, when a cache of static
/// storage duration may still meet an error.
template <class Category>
union error_category_holder {
    Category object;
    constexpr error_category_holder() noexcept : object() {}
    ~error_category_holder() {}
};

// (Checked by the compilers: a Category whose construction is not a constant expression
// is an error, not an object made at start-up.)
#if defined(__clang__)
#define COMPILE_CACHE_DETAIL_CONSTANT_INITIALISED [[clang::require_constant_initialization]]
#elif defined(__GNUC__) && __GNUC__ >= 10
#define COMPILE_CACHE_DETAIL_CONSTANT_INITIALISED __constinit
#else
#define COMPILE_CACHE_DETAIL_CONSTANT_INITIALISED
#endif
template <class Category>
COMPILE_CACHE_DETAIL_CONSTANT_INITIALISED inline error_category_holder<Category> error_category_object;
#undef COMPILE_CACHE_DETAIL_CONSTANT_INITIALISED

} // namespace compile_cache::detail
