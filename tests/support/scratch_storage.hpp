// A directory storage in a fresh scratch folder, as a test fixture
// (TEST_CASE_METHOD(scratch_storage, ...)): the cache folder itself is made by the first write.
#pragma once

#include "support/posix.hpp"

#include <compile_cache/storage/directory/directory_storage.hpp>

#include <filesystem>

namespace compile_cache_test {

struct scratch_storage {
    temp_dir dir;
    std::filesystem::path const root = dir.path() / "cache";
    compile_cache::directory_storage s{root.string()};
};

} // namespace compile_cache_test
