# Install rules (COMPILE_CACHE_INSTALL, on by default only when compile_cache is the
# top-level project): the headers, a CMake package (find_package(compile_cache CONFIG)
# gives the target compile_cache::compile_cache) and pkg-config files. The library is
# header-only, so everything goes to architecture-independent places: the package to
# <datadir>/cmake/compile_cache, the .pc files to <datadir>/pkgconfig.
include(CMakePackageConfigHelpers)

set(COMPILE_CACHE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_DATADIR}/cmake/compile_cache
    CACHE STRING "Where the compile_cache CMake package is installed, relative to the prefix")
set(COMPILE_CACHE_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_DATADIR}/pkgconfig
    CACHE STRING "Where compile_cache.pc (and its components' .pc files) are installed, relative to the prefix")
mark_as_advanced(COMPILE_CACHE_INSTALL_CMAKEDIR COMPILE_CACHE_INSTALL_PKGCONFIGDIR)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/compile_cache
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.ipp")

install(TARGETS compile_cache EXPORT compile_cacheTargets)
install(EXPORT compile_cacheTargets
        NAMESPACE compile_cache::
        FILE compile_cacheTargets.cmake
        DESTINATION ${COMPILE_CACHE_INSTALL_CMAKEDIR})

# compile_cache::redis (compile_cache + hiredis) in an export of its own: the package
# defines it only where pkg-config finds hiredis again (component `redis`).
if(COMPILE_CACHE_HAVE_HIREDIS)
  install(TARGETS compile_cache_redis EXPORT compile_cache_redisTargets)
  install(EXPORT compile_cache_redisTargets
          NAMESPACE compile_cache::
          FILE compile_cache_redisTargets.cmake
          DESTINATION ${COMPILE_CACHE_INSTALL_CMAKEDIR})
endif()

# compile_cache::sqlite (compile_cache + SQLite3) likewise (component `sqlite`), defined
# where CMake's FindSQLite3 finds SQLite again.
if(COMPILE_CACHE_HAVE_SQLITE)
  install(TARGETS compile_cache_sqlite EXPORT compile_cache_sqliteTargets)
  install(EXPORT compile_cache_sqliteTargets
          NAMESPACE compile_cache::
          FILE compile_cache_sqliteTargets.cmake
          DESTINATION ${COMPILE_CACHE_INSTALL_CMAKEDIR})
endif()

# compile_cache::http (compile_cache + libcurl) likewise (component `http`), defined
# where pkg-config finds libcurl again.
if(COMPILE_CACHE_HAVE_CURL)
  install(TARGETS compile_cache_http EXPORT compile_cache_httpTargets)
  install(EXPORT compile_cache_httpTargets
          NAMESPACE compile_cache::
          FILE compile_cache_httpTargets.cmake
          DESTINATION ${COMPILE_CACHE_INSTALL_CMAKEDIR})
endif()

# compile_cache::signing (compile_cache + libsodium) likewise (component `signing`),
# defined where pkg-config finds libsodium again.
if(COMPILE_CACHE_HAVE_SODIUM)
  install(TARGETS compile_cache_signing EXPORT compile_cache_signingTargets)
  install(EXPORT compile_cache_signingTargets
          NAMESPACE compile_cache::
          FILE compile_cache_signingTargets.cmake
          DESTINATION ${COMPILE_CACHE_INSTALL_CMAKEDIR})
endif()

# compile_cache::zstd (compile_cache + libzstd) likewise (component `zstd`), defined
# where pkg-config finds libzstd again.
if(COMPILE_CACHE_HAVE_ZSTD)
  install(TARGETS compile_cache_zstd EXPORT compile_cache_zstdTargets)
  install(EXPORT compile_cache_zstdTargets
          NAMESPACE compile_cache::
          FILE compile_cache_zstdTargets.cmake
          DESTINATION ${COMPILE_CACHE_INSTALL_CMAKEDIR})
endif()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/compile_cacheConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/compile_cacheConfig.cmake
                              INSTALL_DESTINATION ${COMPILE_CACHE_INSTALL_CMAKEDIR})
# 0.x releases are compatible with each other as CMake counts it (same major number);
# a header-only package fits any architecture.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/compile_cacheConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMajorVersion
                                 ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/compile_cacheConfig.cmake
              ${PROJECT_BINARY_DIR}/compile_cacheConfigVersion.cmake
        DESTINATION ${COMPILE_CACHE_INSTALL_CMAKEDIR})

# The .pc file finds the prefix from its own location, so a staged or relocated install
# (cmake --install --prefix DIR, DESTDIR) works as well as the configured prefix.
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(COMPILE_CACHE_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH COMPILE_CACHE_PC_TO_PREFIX /${COMPILE_CACHE_INSTALL_PKGCONFIGDIR} /)
  set(COMPILE_CACHE_PC_INCLUDEDIR "\${pcfiledir}/${COMPILE_CACHE_PC_TO_PREFIX}${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/compile_cache.pc.in ${PROJECT_BINARY_DIR}/compile_cache.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/compile_cache.pc DESTINATION ${COMPILE_CACHE_INSTALL_PKGCONFIGDIR})
# The optional storages, as the CMake package's components: compile_cache_redis.pc
# (Requires: compile_cache hiredis), compile_cache_sqlite.pc (compile_cache sqlite3),
# compile_cache_http.pc (compile_cache libcurl), compile_cache_signing.pc (compile_cache
# libsodium) and compile_cache_zstd.pc (compile_cache libzstd), where their library was
# found at build time.
set(COMPILE_CACHE_PC_COMPONENTS)
if(COMPILE_CACHE_HAVE_HIREDIS)
  list(APPEND COMPILE_CACHE_PC_COMPONENTS redis)
endif()
if(COMPILE_CACHE_HAVE_SQLITE)
  list(APPEND COMPILE_CACHE_PC_COMPONENTS sqlite)
endif()
if(COMPILE_CACHE_HAVE_CURL)
  list(APPEND COMPILE_CACHE_PC_COMPONENTS http)
endif()
if(COMPILE_CACHE_HAVE_SODIUM)
  list(APPEND COMPILE_CACHE_PC_COMPONENTS signing)
endif()
if(COMPILE_CACHE_HAVE_ZSTD)
  list(APPEND COMPILE_CACHE_PC_COMPONENTS zstd)
endif()
foreach(component IN LISTS COMPILE_CACHE_PC_COMPONENTS)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/compile_cache_${component}.pc.in
                 ${PROJECT_BINARY_DIR}/compile_cache_${component}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/compile_cache_${component}.pc DESTINATION ${COMPILE_CACHE_INSTALL_PKGCONFIGDIR})
endforeach()
