# SQLite3, optional (COMPILE_CACHE_WITH_SQLITE): when CMake's FindSQLite3 finds it, the
# INTERFACE target compile_cache::sqlite (compile_cache + SQLite3) is there for
# compile_cache/storage/sqlite/sqlite_storage.hpp. The library target itself never links it.
#
# Sets COMPILE_CACHE_HAVE_SQLITE, and defines compile_cache_use_sqlite() and
# compile_cache_drop_sqlite_files() for the project's own targets.
option(COMPILE_CACHE_WITH_SQLITE "Offer compile_cache::sqlite and test the SQLite storage when SQLite3 is found" ON)
set(COMPILE_CACHE_HAVE_SQLITE OFF)
if(COMPILE_CACHE_WITH_SQLITE)
  find_package(SQLite3 QUIET)
  if(SQLite3_FOUND)
    set(COMPILE_CACHE_HAVE_SQLITE ON)
    add_library(compile_cache_sqlite INTERFACE)
    add_library(compile_cache::sqlite ALIAS compile_cache_sqlite)
    set_target_properties(compile_cache_sqlite PROPERTIES EXPORT_NAME sqlite)
    target_link_libraries(compile_cache_sqlite INTERFACE compile_cache SQLite::SQLite3)
  else()
    message(STATUS "compile_cache: SQLite3 not found; no compile_cache::sqlite, and its tests are skipped")
  endif()
endif()

# compile_cache_use_sqlite(TARGET)
#   Links TARGET to compile_cache::sqlite where SQLite3 was found; nothing otherwise.
function(compile_cache_use_sqlite target)
  if(COMPILE_CACHE_HAVE_SQLITE)
    target_link_libraries(${target} PRIVATE compile_cache::sqlite)
  endif()
endfunction()

# compile_cache_drop_sqlite_files(LIST_VARIABLE)
#   Where SQLite3 was not found, removes from the list the files that need it: those
#   named sqlite_* (the SQLite storage's tests and helpers) and its header.
function(compile_cache_drop_sqlite_files list_variable)
  if(NOT COMPILE_CACHE_HAVE_SQLITE)
    set(files ${${list_variable}})
    list(FILTER files EXCLUDE REGEX "(^|/)sqlite_[^/]*$")
    set(${list_variable} ${files} PARENT_SCOPE)
  endif()
endfunction()
