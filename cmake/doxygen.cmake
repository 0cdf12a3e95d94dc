# The API reference (docs/Doxyfile, public headers only), when Doxygen is found:
# - target compile_cache_docs: HTML in BUILD/docs/api/html;
# - ctest doxygen_no_warnings (with the tests): fails on any Doxygen warning.
# Only for the top-level project: a project that adds the library builds no docs.
if(NOT COMPILE_CACHE_IS_TOP_LEVEL)
  return()
endif()

find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "compile_cache: Doxygen not found (install doxygen): no compile_cache_docs target "
                 "and no doxygen_no_warnings test")
  return()
endif()

set(COMPILE_CACHE_DOCS_OUTPUT_DIR ${PROJECT_BINARY_DIR}/docs/api)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile ${PROJECT_BINARY_DIR}/docs/Doxyfile @ONLY)
add_custom_target(compile_cache_docs
  COMMAND ${DOXYGEN_EXECUTABLE} ${PROJECT_BINARY_DIR}/docs/Doxyfile
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "Doxygen: API reference in ${COMPILE_CACHE_DOCS_OUTPUT_DIR}/html"
  VERBATIM)

if(COMPILE_CACHE_BUILD_TESTS)
  # WARN_AS_ERROR = FAIL_ON_WARNINGS makes Doxygen exit non-zero on a warning; the
  # expression also fails the test on a warning line should the exit status not say so.
  add_test(NAME doxygen_no_warnings
           COMMAND ${DOXYGEN_EXECUTABLE} ${PROJECT_BINARY_DIR}/docs/Doxyfile
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(doxygen_no_warnings PROPERTIES FAIL_REGULAR_EXPRESSION "warning:|error:")
endif()
message(STATUS "compile_cache: Doxygen ${DOXYGEN_VERSION}: target compile_cache_docs")
