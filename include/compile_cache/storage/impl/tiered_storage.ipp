// compile_cache: the definitions of storage/tiered_storage.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

// (remote_error_of: storage/impl/remote_error.ipp.)

} // namespace compile_cache

#endif // COMPILE_CACHE_INCLUDE_IMPL
