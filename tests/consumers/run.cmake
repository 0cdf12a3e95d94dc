# Runs one consumer test: builds tests/consumers/consumer.cpp the way a user of the
# library would, then runs it twice on a fresh cache directory (the first process
# stores the kernel, the second must load it).
#
#   cmake -DMODE=<mode> -DSOURCE_DIR=<compile_cache source> -DWORK_DIR=<scratch dir>
#         -DCXX=<c++ compiler> [-DCXX_STANDARD=<17|20>] [-DPARENT_BINARY_DIR=<build dir>]
#         [-DPKG_CONFIG=<pkg-config>] [-DEXPECT_TOOL=ON] [-DEXPECT_REDIS=ON]
#         [-DEXPECT_SQLITE=ON] [-DEXPECT_HTTP=ON] [-DEXPECT_ZSTD=ON]
#         -P run.cmake
#
# MODE:
#   find_package      `cmake --install PARENT_BINARY_DIR` into a staged prefix, then a
#                     project that calls find_package(compile_cache CONFIG REQUIRED),
#                     building the consumer header-only and with separate compilation,
#                     and old_host.cpp (a host of the earlier release: its build must
#                     print the deprecation sentence, and it must run);
#                     with EXPECT_TOOL, the installed compile-cache must then report
#                     the consumer's cache: one entry, one store, three hits (two
#                     runs, each loading it back once more)
#                     then the install is moved, and find_package_components/ asks it
#                     for components: those installed are found there, and a missing
#                     one (hidden library, not installed, unknown name) fails with the
#                     one sentence that says which and why
#   pkg_config        the same staged install, then the compiler with the flags of
#                     `pkg-config --cflags --libs compile_cache` (and, for the
#                     optional storages, compile_cache_redis and compile_cache_sqlite)
#   add_subdirectory  a project that calls add_subdirectory(<source>)
#   fetchcontent      a project that uses FetchContent on the local source folder
#   single_header     the compiler alone: -std=c++17 -I single_include ... -lboost_serialization
#                     (and -lhiredis, -lsqlite3 for the optional storages' headers)
#
# EXPECT_REDIS (hiredis is installed): find_package and add_subdirectory also build
# redis_consumer.cpp against the target compile_cache::redis, pkg_config with the flags
# of `pkg-config --cflags --libs compile_cache_redis`, single_header with -lhiredis,
# and run it; EXPECT_SQLITE (SQLite3 is found) likewise sqlite_consumer.cpp against
# compile_cache::sqlite, compile_cache_sqlite, or -lsqlite3; EXPECT_HTTP (libcurl is
# found) http_consumer.cpp against compile_cache::http, compile_cache_http, or -lcurl;
# EXPECT_ZSTD (libzstd is found) zstd_consumer.cpp against compile_cache::zstd,
# compile_cache_zstd, or -lzstd.
cmake_minimum_required(VERSION 3.16)

foreach(var MODE SOURCE_DIR WORK_DIR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT CXX_STANDARD)
  set(CXX_STANDARD 17)
endif()
set(here ${CMAKE_CURRENT_LIST_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "consumer ${MODE}: failed (${rc}): ${command}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
  set(run_error "${err}" PARENT_SCOPE)
endfunction()

function(build_project project_dir)
  run(${CMAKE_COMMAND} -S ${project_dir} -B ${WORK_DIR}/build
      -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_CXX_STANDARD=${CXX_STANDARD}
      -DCOMPILE_CACHE_SOURCE_DIR=${SOURCE_DIR} -DEXPECT_REDIS=${EXPECT_REDIS}
      -DEXPECT_SQLITE=${EXPECT_SQLITE} -DEXPECT_HTTP=${EXPECT_HTTP} -DEXPECT_ZSTD=${EXPECT_ZSTD} ${ARGN})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
  set(build_log "${run_output}${run_error}" PARENT_SCOPE)
  set(program ${WORK_DIR}/build/consumer PARENT_SCOPE)
endfunction()

function(stage_install)
  if(NOT PARENT_BINARY_DIR)
    message(FATAL_ERROR "run.cmake: MODE=${MODE} needs -DPARENT_BINARY_DIR=<configured compile_cache build>")
  endif()
  run(${CMAKE_COMMAND} --install ${PARENT_BINARY_DIR} --prefix ${WORK_DIR}/prefix)
  if(NOT EXISTS ${WORK_DIR}/prefix/include/compile_cache/compile_cache.hpp)
    message(FATAL_ERROR "consumer ${MODE}: the install has no compile_cache/compile_cache.hpp")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

if(MODE STREQUAL "find_package")
  stage_install()
  # Only the staged prefix: never the source tree, a build tree or the package registry.
  build_project(${here}/find_package -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
                -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
elseif(MODE STREQUAL "pkg_config")
  stage_install()
  if(NOT PKG_CONFIG)
    message(FATAL_ERROR "run.cmake: MODE=pkg_config needs -DPKG_CONFIG=<pkg-config program>")
  endif()
  set(ENV{PKG_CONFIG_PATH} ${WORK_DIR}/prefix/share/pkgconfig)
  # The release the headers name (version.hpp's macros, which the README documents) is
  # the one the .pc files give.
  file(READ ${WORK_DIR}/prefix/include/compile_cache/version.hpp version_header)
  set(header_version)
  foreach(part MAJOR MINOR PATCH)
    if(NOT version_header MATCHES "#define COMPILE_CACHE_VERSION_${part} ([0-9]+)")
      message(FATAL_ERROR "consumer ${MODE}: the installed version.hpp has no COMPILE_CACHE_VERSION_${part}")
    endif()
    list(APPEND header_version ${CMAKE_MATCH_1})
  endforeach()
  string(REPLACE ";" "." header_version "${header_version}")
  run(${PKG_CONFIG} --modversion compile_cache)
  string(STRIP "${run_output}" pc_version)
  if(NOT pc_version STREQUAL header_version)
    message(FATAL_ERROR "consumer ${MODE}: compile_cache.pc says ${pc_version}, version.hpp ${header_version}")
  endif()
  run(${PKG_CONFIG} --cflags --libs compile_cache)
  string(STRIP "${run_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(program ${WORK_DIR}/consumer)
  run(${CXX} -std=c++${CXX_STANDARD} ${here}/consumer.cpp ${flags} -o ${program})
  # Each optional storage through its own .pc, which brings the core's flags and its
  # library's (Requires: compile_cache hiredis, or sqlite3).
  file(MAKE_DIRECTORY ${WORK_DIR}/build)
  foreach(component redis sqlite http zstd)
    string(TOUPPER ${component} upper)
    if(EXPECT_${upper})
      run(${PKG_CONFIG} --cflags --libs compile_cache_${component})
      string(STRIP "${run_output}" flags)
      separate_arguments(flags UNIX_COMMAND "${flags}")
      run(${CXX} -std=c++${CXX_STANDARD} ${here}/${component}_consumer.cpp ${flags}
          -o ${WORK_DIR}/build/${component}_consumer)
    endif()
  endforeach()
elseif(MODE STREQUAL "add_subdirectory" OR MODE STREQUAL "fetchcontent")
  build_project(${here}/${MODE})
elseif(MODE STREQUAL "single_header")
  # A host's strict warnings (the headers are on -I, not a system path) see nothing of ours.
  set(strict -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wold-style-cast -Werror)
  set(program ${WORK_DIR}/consumer)
  run(${CXX} -std=c++${CXX_STANDARD} ${strict} -I${SOURCE_DIR}/single_include
      ${here}/consumer.cpp -o ${program} -lboost_serialization)
  # The optional headers beside it, each with the library the README names.
  file(MAKE_DIRECTORY ${WORK_DIR}/build)
  if(EXPECT_REDIS)
    run(${CXX} -std=c++${CXX_STANDARD} ${strict} -I${SOURCE_DIR}/single_include
        ${here}/redis_consumer.cpp -o ${WORK_DIR}/build/redis_consumer -lboost_serialization -lhiredis)
  endif()
  if(EXPECT_SQLITE)
    run(${CXX} -std=c++${CXX_STANDARD} ${strict} -I${SOURCE_DIR}/single_include
        ${here}/sqlite_consumer.cpp -o ${WORK_DIR}/build/sqlite_consumer -lboost_serialization -lsqlite3)
  endif()
  if(EXPECT_HTTP)
    run(${CXX} -std=c++${CXX_STANDARD} ${strict} -I${SOURCE_DIR}/single_include
        ${here}/http_consumer.cpp -o ${WORK_DIR}/build/http_consumer -lboost_serialization -lcurl)
  endif()
  if(EXPECT_ZSTD)
    run(${CXX} -std=c++${CXX_STANDARD} ${strict} -I${SOURCE_DIR}/single_include
        ${here}/zstd_consumer.cpp -o ${WORK_DIR}/build/zstd_consumer -lboost_serialization -lzstd)
  endif()
else()
  message(FATAL_ERROR "run.cmake: unknown MODE ${MODE}")
endif()

run(${program} ${WORK_DIR}/cache)
string(STRIP "${run_output}" first)
run(${program} ${WORK_DIR}/cache)
string(STRIP "${run_output}" second)
if(NOT first STREQUAL "compiled" OR NOT second STREQUAL "loaded")
  message(FATAL_ERROR "consumer ${MODE}: expected `compiled` then `loaded`, got `${first}` then `${second}`")
endif()
message(STATUS "consumer ${MODE}: stored the kernel, then loaded it in a fresh process")
if(MODE STREQUAL "find_package")
  foreach(expected compiled loaded)
    run(${WORK_DIR}/build/separate_consumer ${WORK_DIR}/cache_separate)
    string(STRIP "${run_output}" got)
    if(NOT got STREQUAL expected)
      message(FATAL_ERROR "consumer ${MODE}: separate_consumer printed `${got}`, expected `${expected}`")
    endif()
  endforeach()
  message(STATUS "consumer ${MODE}: the same, built with COMPILE_CACHE_SEPARATE_COMPILATION")
  # The host of the earlier release: built, told once, and working.
  set(sentence "use static from_env_result<S> from_env(storage_settings const&); see README, Moving from an earlier version")
  string(FIND "${build_log}" "${sentence}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "consumer ${MODE}: building old_host did not print the deprecation sentence:\n${build_log}")
  endif()
  set(expected "old host: compiled loaded")
  if(EXPECT_SQLITE)
    string(APPEND expected " sqlite enabled")
  endif()
  run(${WORK_DIR}/build/old_host ${WORK_DIR}/cache_old_host)
  string(STRIP "${run_output}" got)
  if(NOT got STREQUAL expected)
    message(FATAL_ERROR "consumer ${MODE}: old_host printed `${got}`, expected `${expected}`")
  endif()
  message(STATUS "consumer ${MODE}: a host of the earlier release (old include paths, the deprecated "
                 "from_env form) builds with the deprecation sentence and runs")
endif()
set(component_modes find_package add_subdirectory pkg_config single_header)
if(EXPECT_REDIS AND MODE IN_LIST component_modes)
  run(${WORK_DIR}/build/redis_consumer)
  string(STRIP "${run_output}" redis)
  if(NOT redis STREQUAL "redis: refused")
    message(FATAL_ERROR "consumer ${MODE}: redis_consumer printed `${redis}`")
  endif()
  message(STATUS "consumer ${MODE}: the Redis storage builds, links hiredis and runs")
endif()
if(EXPECT_SQLITE AND MODE IN_LIST component_modes)
  run(${WORK_DIR}/build/sqlite_consumer ${WORK_DIR}/cache.db)
  string(STRIP "${run_output}" sqlite)
  if(NOT sqlite STREQUAL "sqlite: kept")
    message(FATAL_ERROR "consumer ${MODE}: sqlite_consumer printed `${sqlite}`")
  endif()
  message(STATUS "consumer ${MODE}: the SQLite storage builds, links libsqlite3 and runs")
endif()
if(EXPECT_HTTP AND MODE IN_LIST component_modes)
  run(${WORK_DIR}/build/http_consumer)
  string(STRIP "${run_output}" http)
  if(NOT http STREQUAL "http: refused")
    message(FATAL_ERROR "consumer ${MODE}: http_consumer printed `${http}`")
  endif()
  message(STATUS "consumer ${MODE}: the HTTP storage builds, links libcurl and runs")
endif()
if(EXPECT_ZSTD AND MODE IN_LIST component_modes)
  run(${WORK_DIR}/build/zstd_consumer)
  string(STRIP "${run_output}" zstd)
  if(NOT zstd STREQUAL "zstd: round trip")
    message(FATAL_ERROR "consumer ${MODE}: zstd_consumer printed `${zstd}`")
  endif()
  message(STATUS "consumer ${MODE}: zstd compression builds, links libzstd and runs")
endif()
if(MODE STREQUAL "find_package" AND EXPECT_TOOL)
  set(tool ${WORK_DIR}/prefix/bin/compile-cache)
  if(NOT EXISTS ${tool})
    message(FATAL_ERROR "consumer ${MODE}: the install has no bin/compile-cache")
  endif()
  run(${tool} stats --json ${WORK_DIR}/cache)
  foreach(expected "\"entries\":1," "\"stores\":1" "\"hits\":3," "\"misses.absent\":1,")
    string(FIND "${run_output}" "${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "consumer ${MODE}: installed compile-cache stats lacks ${expected}:\n${run_output}")
    endif()
  endforeach()
  message(STATUS "consumer ${MODE}: the installed compile-cache reports the consumer's entry and counters")
endif()
if(MODE STREQUAL "find_package")
  # The components, asked of the install moved elsewhere (its files name no absolute
  # prefix): one found, and each way of not finding one said in one sentence naming it.
  file(RENAME ${WORK_DIR}/prefix ${WORK_DIR}/moved)
  set(components_dir ${here}/find_package_components)
  function(expect_components_refused components sentence)
    execute_process(COMMAND ${CMAKE_COMMAND} -S ${components_dir} -B ${WORK_DIR}/components
                            -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${WORK_DIR}/moved
                            -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DCOMPONENTS=${components}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    string(REGEX REPLACE "[ \n]+" " " said "${err}") # CMake wraps the reason
    string(STRIP "${said}" said)
    string(FIND "${said}|" "Reason given by package: compile_cache: ${sentence}|" at) # the reason, and nothing more
    if(rc EQUAL 0 OR at EQUAL -1)
      message(FATAL_ERROR "consumer ${MODE}: find_package(compile_cache COMPONENTS ${components}) "
                          "did not fail with `${sentence}` (${rc}):\n${out}\n${err}")
    endif()
  endfunction()
  # hiredis hidden from pkg-config (first, in a fresh build folder: pkg-config's results are cached)
  set(ENV{PKG_CONFIG_LIBDIR} ${WORK_DIR}/no_pkgconfig)
  if(EXPECT_REDIS)
    expect_components_refused(redis
      "component redis needs hiredis, which pkg-config does not find (install libhiredis-dev and pkg-config)")
  else()
    expect_components_refused(redis "component redis was not installed: this compile_cache was built without \
hiredis (install libhiredis-dev, then build and install compile_cache again)")
  endif()
  unset(ENV{PKG_CONFIG_LIBDIR})
  expect_components_refused("bogus"
    "there is no component bogus (the components: redis sqlite http signing zstd)")
  set(installed)
  foreach(component redis sqlite http zstd)
    string(TOUPPER ${component} upper)
    if(EXPECT_${upper})
      list(APPEND installed ${component})
    endif()
  endforeach()
  run(${CMAKE_COMMAND} -S ${components_dir} -B ${WORK_DIR}/components "-DCOMPONENTS=${installed}")
  string(FIND "${run_output}" "compile_cache headers: ${WORK_DIR}/moved/include\n" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "consumer ${MODE}: the moved install does not name its own headers:\n${run_output}")
  endif()
  file(REMOVE ${WORK_DIR}/moved/share/cmake/compile_cache/compile_cache_zstdTargets.cmake)
  expect_components_refused("zstd" "component zstd was not installed: this compile_cache was built without \
libzstd (install libzstd-dev, then build and install compile_cache again)")
  message(STATUS "consumer ${MODE}: the moved install finds its components, and says which is missing and why")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
