// compile_cache: forwarding header, kept for one release; directory_storage.hpp moved to
// <compile_cache/storage/directory/directory_storage.hpp>: include that instead.
#pragma once

#include <compile_cache/storage/directory/directory_storage.hpp>
