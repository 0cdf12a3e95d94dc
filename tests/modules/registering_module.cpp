// A shared library that includes key/detail/executable_digest.hpp, and so registers its
// digests while it is loaded (detail/build_id.hpp), which content_digests_helper loads into
// a program that registers none, then unloads.
#include <compile_cache/key/detail/executable_digest.hpp>

/// The digests this library registers.
extern "C" void const* compile_cache_test_registering_digests() {
    return &compile_cache::detail::sha256_content_digests;
}
