// The seam of the fresh-process helper: its LLVM side (helper_jit.cpp, compiled with
// -fno-rtti, as a host whose LLVM has no RTTI must) gets its object_store from its
// cache side (helper_store.cpp, compiled with RTTI: Boost.Serialization, registry).
#pragma once

#include <compile_cache/llvm/object_store.hpp>

#include <string>

/// An object_store over compile_cache::default_cache::from_env("LLVM_HELPER_CACHE").
compile_cache::object_store make_helper_store();

/// The cache's statistics: `hits=H absent=A corrupt=C stores=S bypasses=B compile-ns=T`.
std::string helper_cache_summary();
