# The single-header test build (COMPILE_CACHE_TEST_SINGLE_HEADER=ON) compiles the
# project's tests and examples with single_include/ on the include path and include/
# off it. Tests include individual headers (<compile_cache/key/writer.hpp>), which do
# not exist in single_include/: for each header that the single header inlined (named
# by its `// ---- begin <path>` lines, written by scripts/amalgamate.py) this writes a
# forwarding header at the same path that includes the single header. So a test that
# compiles in this build compiles against the single header's text alone, and a header
# missing from it is an error, not a silent fallback to include/. Optional headers are
# real files in single_include/ and need no forwarder.
set(COMPILE_CACHE_SHIM_TEMPLATE ${CMAKE_CURRENT_LIST_DIR}/single_header_shim.hpp.in)

function(compile_cache_single_header_shims single_include_dir shim_dir)
  set(single_header ${single_include_dir}/compile_cache/compile_cache.hpp)
  if(NOT EXISTS ${single_header})
    message(FATAL_ERROR "compile_cache: ${single_header} is missing; run scripts/amalgamate.py")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${single_header})
  file(STRINGS ${single_header} begin_lines REGEX "^// ---- begin compile_cache/.*\\.hpp$")
  set(wanted)
  foreach(line IN LISTS begin_lines)
    string(REGEX REPLACE "^// ---- begin " "" header "${line}")
    if(header STREQUAL "compile_cache/compile_cache.hpp")
      continue()
    endif()
    list(APPEND wanted ${shim_dir}/${header})
    set(COMPILE_CACHE_SHIM_HEADER ${header})
    # configure_file rewrites a file only when its content changes: no needless rebuilds.
    configure_file(${COMPILE_CACHE_SHIM_TEMPLATE} ${shim_dir}/${header} @ONLY)
  endforeach()
  # Forwarders of headers that are no longer in the single header go away.
  file(GLOB_RECURSE existing ${shim_dir}/*.hpp)
  foreach(file IN LISTS existing)
    if(NOT file IN_LIST wanted)
      file(REMOVE ${file})
    endif()
  endforeach()
endfunction()
