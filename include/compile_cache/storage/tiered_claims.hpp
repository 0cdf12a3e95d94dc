// compile_cache: tiered_storage's claims (single flight): the local storage's claim covers
// the processes of one machine, the remote's the fleet; how the two answers make one.
// Included by tiered_storage.hpp; the protocol is in docs/design.md.
#pragma once

#include <compile_cache/detail/per_thread.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/claim.hpp>
#include <compile_cache/storage/concept.hpp>

#include <utility>
#include <vector>

namespace compile_cache::detail {

/// The remote claims this thread took through a tier (the tier's address, the key): a
/// claim is released by the thread that took it (basic_cache's claim_guard), and only a
/// remote claim taken is released on the remote (no round trip for the others).
/// nullptr at exit, once the thread's objects are gone (per_thread): a remote claim taken
/// then is not remembered, and is left to its expiry.
struct remote_claims_of_this_thread_tag;
inline std::vector<std::pair<void const*, key>>* remote_claims_of_this_thread() noexcept {
    return per_thread<std::vector<std::pair<void const*, key>>, remote_claims_of_this_thread_tag>();
}
/// Whether this thread took the remote claim of `k` through `tier`; forgets it.
inline bool forget_remote_claim(void const* tier, key const& k) noexcept {
    auto* held = remote_claims_of_this_thread();
    if (held == nullptr) return false;
    for (auto it = held->begin(); it != held->end(); ++it)
        if (it->first == tier && it->second == k) {
            held->erase(it);
            return true;
        }
    return false;
}

/// The local storage's claim of `k` (when `request.scope` has `local`), then (when that is
/// not held elsewhere, `remote` is given, a remote that may be written now, and the scope
/// has `remote`) the remote's: held when either
/// is held by another process (a local claim just taken is then dropped, so that the
/// machine's other processes also wait on the remote one), claimed when either was taken
/// and neither is held, none when neither storage takes claims. A remote claim taken is
/// remembered for this thread under `tier` (forget_remote_claim). `take_preclaimed(k)`:
/// whether this process already holds the remote claim of `k` (taken by the tier's
/// prefetch, and now handed over to this miss): then the remote is not asked. Never throws.
template <class Local, class Remote, class TakePreclaimed>
claim_answer tier_try_claim(void const* tier, Local* local, Remote* remote, key const& k,
                            claim_request const& request, TakePreclaimed&& take_preclaimed) noexcept {
    // Each tier is asked for its own part of the scope, and then claims as it would alone
    // (a directory as the remote claims for the fleet).
    claim_request whole = request;
    whole.scope = claim_scope::both;
    claim_answer local_answer;
    if constexpr (has_claims<Local>::value) {
        if (local && includes(request.scope, claim_scope::local)) {
            try {
                local_answer = local->try_claim(k, whole);
            } catch (...) {
                local_answer = claim_answer{};
            }
        }
    }
    if (local_answer.state == claim_state::held) return local_answer;
    if constexpr (has_claims<Remote>::value) {
        if (remote && includes(request.scope, claim_scope::remote)) {
            claim_answer remote_answer;
            try {
                if (take_preclaimed(k)) remote_answer.state = claim_state::claimed;
                else remote_answer = remote->try_claim(k, whole);
            } catch (...) {
                remote_answer = claim_answer{};
            }
            remote_answer.took_over = remote_answer.took_over || local_answer.took_over;
            remote_answer.entry_seen = remote_answer.entry_seen || local_answer.entry_seen;
            if (remote_answer.state == claim_state::held) {
                if constexpr (has_claims<Local>::value)
                    if (local_answer.state == claim_state::claimed) local->release_claim(k);
                return remote_answer;
            }
            if (remote_answer.state == claim_state::claimed) {
                try {
                    if (auto* held = remote_claims_of_this_thread()) held->emplace_back(tier, k);
                } catch (...) { // (not remembered: left to its expiry)
                }
                return remote_answer;
            }
        }
    }
    return local_answer;
}

} // namespace compile_cache::detail
