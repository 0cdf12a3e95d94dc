# Diagnostics under C++17 and C++20: compiles concept_errors.cpp once per case and
# standard with -fsyntax-only. The control (None) must compile; every other case must
# fail with exactly one error, whose line holds the library's sentence for the policy
# requirement it breaks. UserConcept (C++20 only) checks that a user's own template
# constrained by compile_cache::Storage names the concept: GCC says "required for the
# satisfaction of 'Storage<...>'", Clang "'T' does not satisfy 'Storage'". (The quotes
# are ASCII or typographic, depending on the locale.)
#
#   cmake -DCXX=<c++ compiler> -DINCLUDES=<dir;dir> -DSOURCE=<concept_errors.cpp>
#         [-DSTANDARDS=c++17;c++20] -P check_concept_errors.cmake
set(flags)
foreach(dir IN LISTS INCLUDES)
  list(APPEND flags -I${dir})
endforeach()

set(expect_Hasher "compile_cache: the Hasher has no result member")
set(expect_Serializer "compile_cache: the Serializer has no format_id")
set(expect_Resolver "compile_cache: the Resolver has no from_reference member")
set(expect_Storage "compile_cache: the Storage has no remove member")
set(expect_StorageRead "compile_cache: the Storage has no read member")
set(expect_SerializerFor "compile_cache: the Serializer cannot save this artifact")
set(expect_Unserializable "compile_cache: Boost.Serialization cannot serialize the artifact type")

if(NOT STANDARDS)
  set(STANDARDS c++17 c++20)
endif()
# With clang, the umbrella header (the source's first include) is parsed once per standard
# into a precompiled header (tests/support/precompile_umbrella.sh): the same diagnostics.
# The one in -DPCH_DIR=DIR (DIR/STD/umbrella.pch) when there is one; else made in the
# working directory (ctest's: the build folder of tests/headers), removed at the end; with
# g++, or when clang cannot make it, each case is compiled as it is.
string(RANDOM LENGTH 12 run) # (a folder of this run's own: two runs may share the build folder)
set(pch_dir ${CMAKE_CURRENT_BINARY_DIR}/concept_errors_pch_${run})
set(failures 0)
foreach(std IN LISTS STANDARDS)
  if(PCH_DIR AND EXISTS ${PCH_DIR}/${std}/umbrella.pch) # (made before, for every check: -DPCH_DIR)
    set(pch_file ${PCH_DIR}/${std}/umbrella.pch)
  else()
    execute_process(COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/../support/precompile_umbrella.sh ${pch_dir} ${std} ${CXX}
                            ${flags}
                    OUTPUT_VARIABLE pch_file OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  set(pch_flags)
  if(pch_file)
    set(pch_flags -include-pch ${pch_file})
  endif()
  foreach(case None Hasher Serializer Resolver Storage StorageRead SerializerFor Unserializable UserConcept)
    if(case STREQUAL "UserConcept" AND std STREQUAL "c++17")
      continue()
    endif()
    execute_process(COMMAND ${CXX} -std=${std} -fsyntax-only ${pch_flags} ${flags} -DCASE_${case}=1 ${SOURCE}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    set(log "${out}${err}")
    set(name "${case} -std=${std}")
    if(case STREQUAL "None")
      if(NOT rc EQUAL 0)
        message("FAIL ${name}: the control does not compile:\n${log}")
        math(EXPR failures "${failures} + 1")
      else()
        message("ok   ${name} (compiles)")
      endif()
      continue()
    endif()
    if(rc EQUAL 0)
      message("FAIL ${name}: compiled, expected an error")
      math(EXPR failures "${failures} + 1")
      continue()
    endif()
    string(REPLACE ";" "," flat "${log}") # a list element per error line, not per semicolon
    string(REGEX MATCHALL "error:[^\n]*" errors "${flat}")
    list(LENGTH errors error_count)
    if(error_count EQUAL 0)
      message("FAIL ${name}: the compiler failed with no error line:\n${log}")
      math(EXPR failures "${failures} + 1")
      continue()
    endif()
    list(GET errors 0 first)
    if(case STREQUAL "UserConcept")
      if(NOT log MATCHES "satisfaction of .+Storage<|does not satisfy .Storage.")
        message("FAIL ${name}: no diagnostic names the concept Storage:\n${log}")
        math(EXPR failures "${failures} + 1")
      else()
        message("ok   ${name}")
      endif()
      continue()
    endif()
    string(FIND "${first}" "${expect_${case}}" at)
    if(at EQUAL -1)
      message("FAIL ${name}: the first error is not \"${expect_${case}}...\":\n${log}")
      math(EXPR failures "${failures} + 1")
    elseif(NOT error_count EQUAL 1)
      message("FAIL ${name}: ${error_count} errors, expected the sentence alone:\n${log}")
      math(EXPR failures "${failures} + 1")
    else()
      message("ok   ${name}")
    endif()
  endforeach()
endforeach()
file(REMOVE_RECURSE ${pch_dir})
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} diagnostic checks failed")
endif()
