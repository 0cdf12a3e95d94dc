# libsodium, optional: when pkg-config finds it, the INTERFACE target compile_cache::signing
# (compile_cache + libsodium) is there for compile_cache/signing/ed25519.hpp (signed
# entries). The library target itself never links libsodium.
#
# Sets COMPILE_CACHE_HAVE_SODIUM.
option(COMPILE_CACHE_WITH_SIGNING "Offer compile_cache::signing and test signed entries when libsodium is found" ON)
set(COMPILE_CACHE_HAVE_SODIUM OFF)
if(COMPILE_CACHE_WITH_SIGNING)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(COMPILE_CACHE_SODIUM QUIET IMPORTED_TARGET GLOBAL libsodium)
  endif()
  if(TARGET PkgConfig::COMPILE_CACHE_SODIUM)
    set(COMPILE_CACHE_HAVE_SODIUM ON)
    add_library(compile_cache_signing INTERFACE)
    add_library(compile_cache::signing ALIAS compile_cache_signing)
    set_target_properties(compile_cache_signing PROPERTIES EXPORT_NAME signing)
    target_link_libraries(compile_cache_signing INTERFACE compile_cache PkgConfig::COMPILE_CACHE_SODIUM)
    message(STATUS "compile_cache: libsodium ${COMPILE_CACHE_SODIUM_VERSION}: target compile_cache::signing "
                   "(compile_cache/signing/ed25519.hpp)")
  else()
    message(STATUS "compile_cache: libsodium not found by pkg-config (install libsodium-dev and pkgconf): "
                   "no compile_cache::signing target, no signing tests")
  endif()
endif()
