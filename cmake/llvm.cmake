# LLVM, optional (COMPILE_CACHE_WITH_LLVM): used by the LLVM adapter's tests
# (tests/llvm), its example (examples/llvm_jit) and tinyk's native backend. The library
# target never links LLVM; compile_cache/llvm/ is an optional header folder.
#
# Sets COMPILE_CACHE_HAVE_LLVM, and defines compile_cache_use_llvm().
set(COMPILE_CACHE_HAVE_LLVM OFF)
if(COMPILE_CACHE_WITH_LLVM AND NOT (COMPILE_CACHE_BUILD_TESTS OR COMPILE_CACHE_BUILD_EXAMPLES))
  # Only the tests and examples use LLVM: a project that adds the library (add_subdirectory,
  # FetchContent) does not search for it.
elseif(COMPILE_CACHE_WITH_LLVM)
  # LLVMConfig.cmake probes libffi and terminfo with check_c_source_compiles: it needs C.
  include(CheckLanguage)
  check_language(C)
  if(CMAKE_C_COMPILER)
    enable_language(C)
  endif()
  # Debian's llvm-14-dev puts its package in /usr/lib/llvm-14/lib/cmake/llvm, which
  # find_package does not search by itself; LLVM_DIR still wins when given.
  if(CMAKE_C_COMPILER)
    find_package(LLVM 14 CONFIG QUIET HINTS /usr/lib/llvm-14/lib/cmake/llvm /usr/lib/llvm-14)
  endif()
  if(LLVM_FOUND)
    set(COMPILE_CACHE_HAVE_LLVM ON)
    message(STATUS "compile_cache: LLVM ${LLVM_PACKAGE_VERSION} (${LLVM_DIR}; RTTI ${LLVM_ENABLE_RTTI}): "
                   "building the LLVM ObjectCache tests and example, and tinyk's native backend")
  else()
    message(STATUS "compile_cache: LLVM 14 not found (install llvm-14-dev, or set LLVM_DIR): "
                   "no LLVM ObjectCache tests or example, and tinyk has only its bytecode VM")
  endif()
else()
  message(STATUS "compile_cache: COMPILE_CACHE_WITH_LLVM is off: no LLVM parts are built")
endif()

# compile_cache_use_llvm(TARGET [STATIC] COMPONENTS comp... [NO_RTTI_SOURCES file...])
#   LLVM's headers as system headers (the project's warnings stay off them), its
#   definitions, and its libraries: libLLVM.so, or with STATIC the component
#   libraries (a process that links them starts in ~3 ms; relocating libLLVM.so costs
#   20-40 ms at every start, which is what a warm cache run would measure).
#   NO_RTTI_SOURCES: the files that use LLVM's classes, compiled with -fno-rtti when
#   LLVM was built without RTTI. Keep Boost.Serialization and the cache (which need
#   RTTI) in the other files.
function(compile_cache_use_llvm target)
  cmake_parse_arguments(arg "STATIC" "" "COMPONENTS;NO_RTTI_SOURCES" ${ARGN})
  target_include_directories(${target} SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
  separate_arguments(llvm_definitions NATIVE_COMMAND "${LLVM_DEFINITIONS}")
  target_compile_options(${target} PRIVATE ${llvm_definitions})
  if(NOT LLVM_ENABLE_RTTI AND arg_NO_RTTI_SOURCES)
    set_source_files_properties(${arg_NO_RTTI_SOURCES} TARGET_DIRECTORY ${target}
                                PROPERTIES COMPILE_OPTIONS -fno-rtti)
  endif()
  # The component libraries need what LLVMConfig.cmake found for them (zlib, terminfo:
  # zlib1g-dev and libtinfo-dev); without it, libLLVM.so, which carries its own.
  set(static ${arg_STATIC})
  if((LLVM_ENABLE_ZLIB AND NOT TARGET ZLIB::ZLIB) OR (LLVM_ENABLE_TERMINFO AND NOT TARGET Terminfo::terminfo))
    if(static AND TARGET LLVM)
      message(STATUS "compile_cache: ${target} links libLLVM.so: zlib or terminfo (zlib1g-dev, libtinfo-dev) "
                     "is missing for LLVM's static libraries")
    endif()
    set(static OFF)
  endif()
  if(static OR NOT TARGET LLVM)
    llvm_map_components_to_libnames(llvm_libraries ${arg_COMPONENTS})
    target_link_libraries(${target} PRIVATE ${llvm_libraries})
  else()
    target_link_libraries(${target} PRIVATE LLVM)
  endif()
endfunction()
