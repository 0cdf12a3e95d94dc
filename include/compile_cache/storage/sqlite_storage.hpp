// compile_cache: forwarding header, kept for one release; sqlite_storage.hpp moved to
// <compile_cache/storage/sqlite/sqlite_storage.hpp>: include that instead. (Needs SQLite: link compile_cache::sqlite.)
#pragma once

#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
