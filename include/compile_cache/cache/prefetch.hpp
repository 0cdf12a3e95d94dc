// compile_cache: basic_cache::prefetch's work, which asks a Storage with `prefetch` for
// the entries of many keys and their kernels' identity records at once; used by cache.hpp only.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/identity_record.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/claim.hpp>
#include <compile_cache/storage/concept.hpp>

#include <cstddef>
#include <vector>

namespace compile_cache::detail {

/// Asks `storage` to read ahead, bounded by `max_entry_size`, the entries of `keys` (a
/// bypass skipped) and, with `record_identities`, the identity record of each kernel
/// given an info (`infos[i]` for `keys[i]`: an entry_info); with `claims` (single
/// flight's scope and expiry; scope none: no claims), a storage that can also claims the
/// keys it lacks (has_prefetch_claiming). Nothing for a Storage without `prefetch`.
/// Never throws.
template <class Storage, class Info>
void prefetch_entries(Storage& storage, std::vector<key_result> const& keys, std::vector<Info> const& infos,
                      std::size_t max_entry_size, bool record_identities, claim_request const& claims) noexcept {
    if constexpr (has_prefetch<Storage>::value) {
        try {
            std::vector<key> wanted;
            wanted.reserve(keys.size() * 2);
            for (std::size_t i = 0; i < keys.size(); ++i) {
                if (!keys[i].ok()) continue;
                wanted.push_back(keys[i].value());
                if (i < infos.size() && record_identities)
                    wanted.push_back(
                        identity_record_key(kernel_identity(infos[i].identity, infos[i].name, infos[i].origin_file)));
            }
            if (wanted.empty()) return;
            if constexpr (has_prefetch_claiming<Storage>::value && has_claims<Storage>::value) {
                if (claims.scope != claim_scope::none) {
                    storage.prefetch(wanted, max_entry_size, claims);
                    return;
                }
            }
            storage.prefetch(wanted, max_entry_size);
        } catch (...) {
        }
    } else {
        (void)storage, (void)keys, (void)infos, (void)max_entry_size, (void)record_identities, (void)claims;
    }
}

} // namespace compile_cache::detail
