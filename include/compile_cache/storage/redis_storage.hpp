// compile_cache: forwarding header, kept for one release; redis_storage.hpp moved to
// <compile_cache/storage/redis/redis_storage.hpp>: include that instead. (Needs hiredis: link compile_cache::redis.)
#pragma once

#include <compile_cache/storage/redis/redis_storage.hpp>
