// compile_cache: the definitions of cache/signed_entry_checks.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>

namespace compile_cache::detail {

std::string untrusted_signers_said::first_time(envelope_fields const& env) {
    std::string const id = key(env.signer_id.data(), env.signer_id.size()).hex();
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(said_.begin(), said_.end(), id) != said_.end() || said_.size() >= 64) return {};
    said_.push_back(id);
    return std::string(env.signer_copy ? "a local copy of an entry signed by key id " : "signed by key id ") + id +
           ", which no trusted key has (a key taken out of the trusted keys, or never in them); said once for this key";
}

} // namespace compile_cache::detail

#endif
