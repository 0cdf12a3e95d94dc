// compile_cache: redis_storage's claims (single flight): a miss claims its key on the
// server with `SET NAMESPACE:HEX:claim OWNER NX PX EXPIRY` (claim.hpp's claim_owner: pid,
// boot id, process start time, host), which the server drops after the expiry.
// Optional header: needs hiredis, as redis_storage.hpp, which includes it. The protocol
// and its bounds are in docs/design.md.
#pragma once

#include <compile_cache/storage/claim.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>

#include <algorithm>
#include <string>

namespace compile_cache {

inline std::string redis_storage::claim_name(key const& k) const { return redis_key(k) + ":claim"; }

inline claim_answer redis_storage::try_claim(key const& k, claim_request const& request) noexcept {
    claim_answer answer;
    if (!state_ || !includes(request.scope, claim_scope::remote)) return answer;
    try {
        std::string const name = claim_name(k);
        std::string const owner = detail::claim_owner();
        std::string const expiry = std::to_string(std::max<long long>(request.expiry.count(), 1));
        for (int round = 0; round < 2; ++round) {
            call c = run(name, {"SET", name, owner, "NX", "PX", expiry}, 4096);
            if (c.error) return claim_answer{}; // the server is failing: no claims, as before
            redisReply const* r = c.reply.get();
            if (r->type == REDIS_REPLY_STATUS) {
                answer.state = claim_state::claimed;
                return answer;
            }
            if (r->type != REDIS_REPLY_NIL) return claim_answer{}; // refused (read-only replica, ACL): none
            // Held: whose? A claim of a process of this machine that is gone is taken over
            // at once; any other stands until its expiry.
            call g = run(name, {"GET", name}, 4096);
            if (g.error || g.reply->type != REDIS_REPLY_STRING) {
                if (!g.error && g.reply->type == REDIS_REPLY_NIL) continue; // released meanwhile
                answer.state = claim_state::held;
                return answer;
            }
            std::string const held(g.reply->str, g.reply->len);
            bool same_machine = false;
            if (detail::claim_owner_alive(held, same_machine) || round > 0) {
                answer.state = claim_state::held;
                std::string const pid = detail::claim_field(held, "pid");
                std::string const host = detail::claim_field(held, "host");
                answer.holder = pid.empty() ? "another process" : "pid " + pid + (host.empty() ? "" : " on " + host);
                return answer;
            }
            // Dead: removed if it is still the claim read (a compare and delete would need a
            // script; between the GET and the DEL another can only take the dead one over).
            call again = run(name, {"GET", name}, 4096);
            if (again.error) return claim_answer{};
            if (again.reply->type == REDIS_REPLY_STRING && std::string(again.reply->str, again.reply->len) == held) {
                if (!simple(name, {"DEL", name})) answer.took_over = true;
            }
        }
        answer.state = claim_state::held;
        return answer;
    } catch (...) {
        return claim_answer{};
    }
}

inline void redis_storage::release_claim(key const& k) noexcept {
    if (!state_) return;
    try {
        std::string const name = claim_name(k);
        call g = run(name, {"GET", name}, 4096);
        if (g.error || g.reply->type != REDIS_REPLY_STRING) return;
        if (std::string(g.reply->str, g.reply->len) == detail::claim_owner()) (void)simple(name, {"DEL", name});
    } catch (...) {
    }
}

} // namespace compile_cache
