// compile_cache: tiered_storage's claims (single flight): the local storage's claim covers
// the processes of one machine, the remote's the fleet; how the two answers make one.
// Included by tiered_storage.hpp; the protocol is in docs/design.md.
#pragma once

#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/claim.hpp>
#include <compile_cache/storage/concept.hpp>

namespace compile_cache::detail {

/// The local storage's claim of `k` (when `request.scope` has `local`), then (when that is
/// not held elsewhere, `remote` is given, a remote that may be written now, and the scope
/// has `remote`) the remote's: held when either
/// is held by another process (a local claim just taken is then dropped, so that the
/// machine's other processes also wait on the remote one), claimed when either was taken
/// and neither is held, none when neither storage takes claims. Never throws.
template <class Local, class Remote>
claim_answer tier_try_claim(Local* local, Remote* remote, key const& k, claim_request const& request) noexcept {
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
                remote_answer = remote->try_claim(k, whole);
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
