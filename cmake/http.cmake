# libcurl, optional: when pkg-config finds it, the INTERFACE target compile_cache::http
# (compile_cache + libcurl) is there for compile_cache/storage/http/http_storage.hpp. The
# library target itself never links libcurl.
#
# Sets COMPILE_CACHE_HAVE_CURL.
set(COMPILE_CACHE_HAVE_CURL OFF)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(COMPILE_CACHE_CURL QUIET IMPORTED_TARGET GLOBAL libcurl)
endif()
if(TARGET PkgConfig::COMPILE_CACHE_CURL)
  set(COMPILE_CACHE_HAVE_CURL ON)
  add_library(compile_cache_http INTERFACE)
  add_library(compile_cache::http ALIAS compile_cache_http)
  set_target_properties(compile_cache_http PROPERTIES EXPORT_NAME http)
  target_link_libraries(compile_cache_http INTERFACE compile_cache PkgConfig::COMPILE_CACHE_CURL)
  message(STATUS "compile_cache: libcurl ${COMPILE_CACHE_CURL_VERSION}: target compile_cache::http "
                 "(compile_cache/storage/http/http_storage.hpp)")
else()
  message(STATUS "compile_cache: libcurl not found by pkg-config (install libcurl4-openssl-dev and pkgconf): "
                 "no compile_cache::http target, no HTTP tests")
endif()
