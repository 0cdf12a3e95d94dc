// compile_cache: the umbrella header. Everything that needs nothing beyond the
// standard library and Boost; optional headers (an LLVM adapter, remote tiers) are
// included on their own.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>

#include <compile_cache/version.hpp>

#include <compile_cache/hasher/concept.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/key/ordinal_map.hpp>
#include <compile_cache/key/toolchain.hpp>
#include <compile_cache/key/toolchain_component.hpp>
#include <compile_cache/key/writer.hpp>

#include <compile_cache/serializer/boost_archive.hpp>
#include <compile_cache/serializer/concept.hpp>
#include <compile_cache/serializer/reference.hpp>

#include <compile_cache/resolver/concept.hpp>
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/resolver/registry.hpp>

#include <compile_cache/storage/concept.hpp>
#include <compile_cache/storage/directory/directory_layout.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#include <compile_cache/storage/memory_storage.hpp>
#include <compile_cache/storage/null_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <compile_cache/compression.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/explain.hpp>
#include <compile_cache/identity_record.hpp>
#include <compile_cache/printable.hpp>
#include <compile_cache/secret_file.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/statistics.hpp>
#include <compile_cache/storage_members.hpp>
#include <compile_cache/verify.hpp>
#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
