// Which Catch2 tests/catch2_compat.hpp includes, checked both ways with marker headers
// in place of the real ones (this machine has only Debian's v2): with v3's headers on
// the include path it takes them, and only them; without, v2's single header. That the
// whole suite runs under v3 is not shown here.
#include "catch2_compat.hpp"

#if defined(EXPECT_CATCH2_V3)
static_assert(COMPILE_CACHE_TEST_SAW_CATCH2_V3 + 0 == 1, "with Catch2 v3 present, its headers are included");
#ifdef COMPILE_CACHE_TEST_SAW_CATCH2_V2
#error "with Catch2 v3 present, v2's catch.hpp must not be included too"
#endif
#elif defined(EXPECT_CATCH2_V2)
static_assert(COMPILE_CACHE_TEST_SAW_CATCH2_V2 + 0 == 1, "without Catch2 v3, v2's catch.hpp is included");
#ifdef COMPILE_CACHE_TEST_SAW_CATCH2_V3
#error "without Catch2 v3, none of its headers can have been included"
#endif
#else
#error "define EXPECT_CATCH2_V3 or EXPECT_CATCH2_V2"
#endif

int main() { return 0; }
