#!/bin/sh
# check_test_names.sh PROGRAM: fails when a test case of the Catch2 program PROGRAM has a
# name that hides what it tests:
# - a semicolon: catch_discover_tests (Catch2 v2) registers a ctest test per test case by
#   name, and cuts the name at a ';' (a CMake list separator): the ctest test then matches
#   no test case, runs nothing and passes;
# - a first ': ' past column 76: Catch2 v2's console reporter indents the name's next
#   lines to just after it, within 79 columns, and past them it aborts when it prints
#   the test's failure, so a failing test shows no failure.
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
if printf '%s\n' "$names" | awk 'index($0, ": ") > 76 { print; found = 1 } END { exit !found }'; then
  echo "check_test_names: the test case names above have their first ': ' past column 76: Catch2 would abort printing their failures (move it, or use a comma)" >&2
  exit 1
fi
exit 0
