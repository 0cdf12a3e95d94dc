#!/bin/sh
# check_test_names.sh PROGRAM: fails when a test case of the Catch2 program PROGRAM has a
# semicolon in its name. catch_discover_tests (Catch2 v2) registers a ctest test per test
# case by name, and cuts the name at a ';' (a CMake list separator): the ctest test then
# matches no test case, runs nothing and passes.
# (Catch2 v2 exits with the number of names it listed: the status says nothing.)
names=$("$1" --list-test-names-only)
if [ -z "$names" ]; then
  echo "check_test_names: $1 --list-test-names-only listed nothing" >&2
  exit 1
fi
if printf '%s\n' "$names" | grep -F ';'; then
  echo "check_test_names: the test case names above have a ';': ctest would run nothing for them (use a comma)" >&2
  exit 1
fi
exit 0
