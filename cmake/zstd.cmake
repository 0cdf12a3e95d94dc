# libzstd, optional (COMPILE_CACHE_WITH_ZSTD): when pkg-config finds it, the INTERFACE
# target compile_cache::zstd (compile_cache + libzstd) is there for
# compile_cache/compression/zstd.hpp (compressed entries). The library target itself
# never links libzstd.
#
# Sets COMPILE_CACHE_HAVE_ZSTD, and defines compile_cache_use_zstd() and
# compile_cache_drop_zstd_files() for the project's own targets.
option(COMPILE_CACHE_WITH_ZSTD "Offer compile_cache::zstd and test compressed entries when libzstd is found" ON)
set(COMPILE_CACHE_HAVE_ZSTD OFF)
if(COMPILE_CACHE_WITH_ZSTD)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(COMPILE_CACHE_ZSTD QUIET IMPORTED_TARGET GLOBAL libzstd)
  endif()
  if(TARGET PkgConfig::COMPILE_CACHE_ZSTD)
    set(COMPILE_CACHE_HAVE_ZSTD ON)
    add_library(compile_cache_zstd INTERFACE)
    add_library(compile_cache::zstd ALIAS compile_cache_zstd)
    set_target_properties(compile_cache_zstd PROPERTIES EXPORT_NAME zstd)
    target_link_libraries(compile_cache_zstd INTERFACE compile_cache PkgConfig::COMPILE_CACHE_ZSTD)
    message(STATUS "compile_cache: libzstd ${COMPILE_CACHE_ZSTD_VERSION}: target compile_cache::zstd "
                   "(compile_cache/compression/zstd.hpp)")
  else()
    message(STATUS "compile_cache: libzstd not found by pkg-config (install libzstd-dev and pkgconf): "
                   "no compile_cache::zstd target, no compression tests")
  endif()
endif()

# compile_cache_use_zstd(TARGET)
#   Links TARGET to compile_cache::zstd where libzstd was found; nothing otherwise.
function(compile_cache_use_zstd target)
  if(COMPILE_CACHE_HAVE_ZSTD)
    target_link_libraries(${target} PRIVATE compile_cache::zstd)
  endif()
endfunction()

# compile_cache_drop_zstd_files(LIST_VARIABLE)
#   Where libzstd was not found, removes from the list the files that need it: those
#   named zstd_* (the compression tests) and its header.
function(compile_cache_drop_zstd_files list_variable)
  if(NOT COMPILE_CACHE_HAVE_ZSTD)
    set(files ${${list_variable}})
    list(FILTER files EXCLUDE REGEX "(^|/)zstd[^/]*$")
    set(${list_variable} ${files} PARENT_SCOPE)
  endif()
endfunction()
