// compile_cache: tiered_storage's claims (single flight): the local storage's claim covers
// the processes of one machine, the remote's the fleet; how the two answers make one.
// Included by tiered_storage.hpp; the protocol is in docs/design.md.
#pragma once

#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/claim.hpp>
#include <compile_cache/storage/concept.hpp>

namespace compile_cache::detail {

/// The local storage's claim of `k`, then (when `local` is not held elsewhere, and
/// `remote` is given: a remote that may be written now) the remote's: held when either
/// is held by another process (a local claim just taken is then dropped, so that the
/// machine's other processes also wait on the remote one), claimed when either was taken
/// and neither is held, none when neither storage takes claims. Never throws.
template <class Local, class Remote>
claim_answer tier_try_claim(Local* local, Remote* remote, key const& k, claim_request const& request) noexcept {
    claim_answer local_answer;
    if constexpr (has_claims<Local>::value) {
        if (local) {
            try {
                local_answer = local->try_claim(k, request);
            } catch (...) {
                local_answer = claim_answer{};
            }
        }
    }
    if (local_answer.state == claim_state::held) return local_answer;
    if constexpr (has_claims<Remote>::value) {
        if (remote) {
            claim_answer remote_answer;
            try {
                remote_answer = remote->try_claim(k, request);
            } catch (...) {
                remote_answer = claim_answer{};
            }
            remote_answer.took_over = remote_answer.took_over || local_answer.took_over;
            if (remote_answer.state == claim_state::held) {
                if constexpr (has_claims<Local>::value)
                    if (local_answer.state == claim_state::claimed) local->release_claim(k);
                return remote_answer;
            }
            if (remote_answer.state == claim_state::claimed) return remote_answer;
        }
    }
    return local_answer;
}

} // namespace compile_cache::detail
