// compile_cache: the shape of the keys an identity record and a pack of records are stored
// under, written once for identity_record.hpp and directory_storage (which packs records).
#pragma once

#include <compile_cache/detail/config.hpp>

#include <cstddef>

namespace compile_cache::detail {

/// A record's key and a pack's key are 33 bytes, a size no Hasher's digest has; the last
/// byte tells which.
inline constexpr std::size_t record_key_size = 33;
inline constexpr unsigned char record_key_marker = 0x1d; ///< an identity record
inline constexpr unsigned char pack_key_marker = 0x1e;   ///< a pack of identity records
/// A record is small; one over this bound is not read.
inline constexpr std::size_t record_max_size = std::size_t{256} << 10;

} // namespace compile_cache::detail
