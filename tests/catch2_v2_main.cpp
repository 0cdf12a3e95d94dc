// Catch2 v2's main() compiled with the tests' own compiler, for cross builds: the
// machine's libCatch2WithMain.a is built for the machine's own architecture.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
