# C++20: compiles concept_errors.cpp once per case with -std=c++20 -fsyntax-only. The
# control (None) must compile; every other case must fail with a diagnostic naming the
# concept of the policy it breaks: GCC says "required for the satisfaction of
# 'Hasher<...>'", Clang "'T' does not satisfy 'Hasher'" or "'SerializerFor<...>'
# evaluated to false". (The quotes are ASCII or typographic, depending on the locale.)
#
#   cmake -DCXX=<c++ compiler> -DINCLUDES=<dir;dir> -DSOURCE=<concept_errors.cpp> -P check_concept_errors.cmake
set(flags)
foreach(dir IN LISTS INCLUDES)
  list(APPEND flags -I${dir})
endforeach()

set(failures 0)
foreach(case None Hasher Serializer Resolver Storage SerializerFor)
  execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only ${flags} -DCASE_${case}=1 ${SOURCE}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(log "${out}${err}")
  if(case STREQUAL "None")
    if(NOT rc EQUAL 0)
      message("FAIL ${case}: the control does not compile:\n${log}")
      math(EXPR failures "${failures} + 1")
    else()
      message("ok   ${case} (compiles)")
    endif()
    continue()
  endif()
  set(named "satisfaction of .+${case}<|does not satisfy .${case}.|${case}<[^\n]*>. evaluated to false")
  if(rc EQUAL 0)
    message("FAIL ${case}: compiled, expected an error naming the concept ${case}")
    math(EXPR failures "${failures} + 1")
  elseif(NOT log MATCHES "${named}")
    message("FAIL ${case}: no diagnostic names the concept ${case}:\n${log}")
    math(EXPR failures "${failures} + 1")
  else()
    message("ok   ${case}")
  endif()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} concept diagnostic checks failed")
endif()
