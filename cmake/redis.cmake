# hiredis, optional: when pkg-config finds it, the INTERFACE target compile_cache::redis
# (compile_cache + hiredis) is there for compile_cache/storage/redis/redis_storage.hpp. The
# library target itself never links hiredis.
#
# Sets COMPILE_CACHE_HAVE_HIREDIS.
set(COMPILE_CACHE_HAVE_HIREDIS OFF)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(COMPILE_CACHE_HIREDIS QUIET IMPORTED_TARGET GLOBAL hiredis)
endif()
if(TARGET PkgConfig::COMPILE_CACHE_HIREDIS)
  set(COMPILE_CACHE_HAVE_HIREDIS ON)
  add_library(compile_cache_redis INTERFACE)
  add_library(compile_cache::redis ALIAS compile_cache_redis)
  set_target_properties(compile_cache_redis PROPERTIES EXPORT_NAME redis)
  target_link_libraries(compile_cache_redis INTERFACE compile_cache PkgConfig::COMPILE_CACHE_HIREDIS)
  message(STATUS "compile_cache: hiredis ${COMPILE_CACHE_HIREDIS_VERSION}: target compile_cache::redis "
                 "(compile_cache/storage/redis/redis_storage.hpp)")
else()
  message(STATUS "compile_cache: hiredis not found by pkg-config (install libhiredis-dev and pkgconf): "
                 "no compile_cache::redis target, no Redis tests")
endif()
