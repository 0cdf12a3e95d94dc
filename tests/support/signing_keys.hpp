// Keys for tests of signed entries (compile_cache/signing/signed_entries.hpp, so libsodium):
// a new signing key, a set of trusted public keys, and the writer's and reader's
// entry_signatures made of them.
#pragma once

#include "catch2_compat.hpp"

#include <compile_cache/signing/signed_entries.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace compile_cache_test {

/// A new Ed25519 signing key named `name`.
inline compile_cache::ed25519_signer new_signing_key(std::string const& name) {
    std::string why;
    auto s = compile_cache::ed25519_signer::generate(name, why);
    INFO(why);
    REQUIRE(s);
    return std::move(*s);
}

/// The trusted keys `keys`, as a trusted-keys file lists them.
inline compile_cache::trusted_keys trusting(std::vector<compile_cache::ed25519_public_key> const& keys) {
    compile_cache::trusted_keys t;
    for (auto const& k : keys) t.add(k);
    return t;
}

/// A writer's signatures: it signs with `signer` (and trusts it).
inline std::shared_ptr<compile_cache::entry_signatures const> writer_of(compile_cache::ed25519_signer signer) {
    return std::make_shared<compile_cache::ed25519_entry_signatures>(std::move(signer));
}

/// A reader's signatures: it checks against `keys` and cannot sign.
inline std::shared_ptr<compile_cache::entry_signatures const> reader_of(compile_cache::trusted_keys keys) {
    return std::make_shared<compile_cache::ed25519_entry_signatures>(std::move(keys));
}

} // namespace compile_cache_test
