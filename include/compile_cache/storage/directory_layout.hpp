// compile_cache: forwarding header, kept for one release; directory_layout.hpp moved to
// <compile_cache/storage/directory/directory_layout.hpp>: include that instead.
#pragma once

#include <compile_cache/storage/directory/directory_layout.hpp>
