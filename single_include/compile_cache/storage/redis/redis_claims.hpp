// compile_cache: redis_storage's claims (single flight): a miss claims its key on the
// server with `SET NAMESPACE:HEX:claim OWNER NX PX EXPIRY` (claim.hpp's claim_owner: pid,
// boot id, process start time, host), which the server drops after the expiry.
// Optional header: needs hiredis, as redis_storage.hpp, which includes it. The protocol
// and its bounds are in docs/design.md.
#pragma once

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace compile_cache {

namespace detail {
/// Deletes KEYS[1] only if it holds ARGV[1]: 1 when deleted, 0 otherwise. One script, so
/// that the server compares and deletes at once: a claim that expired and was taken by
/// another process between a separate GET and DEL would be the one deleted.
inline constexpr char redis_claim_release_script[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
/// Replaces KEYS[1] with ARGV[2], expiring in ARGV[3] ms, only if it holds ARGV[1] (the
/// dead claim read): 1 when replaced, 0 otherwise (another took it over, or it went).
inline constexpr char redis_claim_take_over_script[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end "
    "return 0";
} // namespace detail

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
            // Dead: replaced by ours on the server if it still holds the claim read, in one
            // step (a script): another process taking it over meanwhile keeps its claim.
            call t = run(name, {"EVAL", detail::redis_claim_take_over_script, "1", name, held, owner, expiry}, 4096);
            if (t.error) return claim_answer{};
            if (t.reply->type == REDIS_REPLY_INTEGER && t.reply->integer == 1) {
                answer.state = claim_state::claimed;
                answer.took_over = true;
                return answer;
            }
            // A server that refuses scripts (an ACL without EVAL): the dead claim is
            // removed with GET, compare, DEL (between the GET and the DEL another process
            // can only take the dead claim over: one more compile at worst), then claimed
            // with SET NX in the next round.
            if (t.reply->type == REDIS_REPLY_ERROR) {
                call again = run(name, {"GET", name}, 4096);
                if (again.error || again.reply->type != REDIS_REPLY_STRING ||
                    std::string(again.reply->str, again.reply->len) != held)
                    continue;
                call d = run(name, {"DEL", name}, 4096);
                if (!d.error && d.reply->type == REDIS_REPLY_INTEGER && d.reply->integer == 1) answer.took_over = true;
                continue;
            }
            // Not replaced: another took it over (or released it) meanwhile: look again.
        }
        answer.state = claim_state::held;
        return answer;
    } catch (...) {
        return claim_answer{};
    }
}

inline void redis_storage::try_claim_many(std::vector<key> const& keys, claim_request const& request,
                                          std::vector<claim_answer>& out) noexcept {
    try {
        out.assign(keys.size(), claim_answer{});
        if (!state_ || !includes(request.scope, claim_scope::remote) || keys.empty()) return;
        std::vector<std::string> names;
        names.reserve(keys.size());
        for (key const& k : keys) names.push_back(claim_name(k));
        std::string const owner = detail::claim_owner();
        std::string const expiry = std::to_string(std::max<long long>(request.expiry.count(), 1));
        pipeline_by_node(
            names, [&](std::size_t i) { return detail::redis_command{"SET", names[i], owner, "NX", "PX", expiry}; },
            (1u << REDIS_REPLY_STATUS) | (1u << REDIS_REPLY_NIL), 4096, std::numeric_limits<std::size_t>::max(),
            [&](std::size_t i, redisReply const* r) {
                // OK: claimed; nil: another's claim stands; an error (read-only replica, ACL): none.
                if (r->type == REDIS_REPLY_STATUS) out[i].state = claim_state::claimed;
                else if (r->type == REDIS_REPLY_NIL) out[i].state = claim_state::held;
            },
            [&](std::size_t i, std::error_code) { out[i] = claim_answer{}; });
    } catch (...) {
        // (Claims taken before the failure stand until their expiry: none is said claimed.)
        for (auto& o : out) o = claim_answer{};
    }
}

inline void redis_storage::release_claim(key const& k) noexcept {
    if (!state_) return;
    try {
        // Compare and delete in one step on the server (a script): a claim of ours that
        // expired and was taken by another process is that process's, and stays.
        std::string const name = claim_name(k);
        std::string const owner = detail::claim_owner();
        call e = run(name, {"EVAL", detail::redis_claim_release_script, "1", name, owner}, 4096);
        if (!e.error && e.reply->type == REDIS_REPLY_ERROR) release_claim_without_script(name, owner);
    } catch (...) {
    }
}

inline void redis_storage::release_claim_without_script(std::string const& name, std::string const& owner) {
    // A server that refuses scripts (an ACL without EVAL): GET, compare, DEL, as before
    // scripts (a claim that expires between the two and is taken by another is then
    // deleted: one more compile at worst), so that waiters need not wait for the expiry.
    call g = run(name, {"GET", name}, 4096);
    if (!g.error && g.reply->type == REDIS_REPLY_STRING && std::string(g.reply->str, g.reply->len) == owner)
        (void)run(name, {"DEL", name}, 4096);
}

inline void redis_storage::release_claim_many(std::vector<key> const& keys) noexcept {
    if (!state_ || keys.empty()) return;
    try {
        std::vector<std::string> names;
        names.reserve(keys.size());
        for (key const& k : keys) names.push_back(claim_name(k));
        std::string const owner = detail::claim_owner();
        std::vector<std::size_t> refused; // (scripts refused: released one by one without)
        auto const until = call_deadline(); // the whole batch, its fallbacks too, within one command timeout
        pipeline_by_node(
            names,
            [&](std::size_t i) {
                return detail::redis_command{"EVAL", detail::redis_claim_release_script, "1", names[i], owner};
            },
            1u << REDIS_REPLY_INTEGER, 4096, std::numeric_limits<std::size_t>::max(),
            [&](std::size_t i, redisReply const* r) {
                if (r->type == REDIS_REPLY_ERROR) refused.push_back(i);
            },
            [](std::size_t, std::error_code) {}, // (a failing server: left to their expiry)
            true);
        for (std::size_t i : refused) {
            if (detail::redis_clock::now() >= until) break; // (the rest left to their expiry)
            release_claim_without_script(names[i], owner);
        }
    } catch (...) {
    }
}

} // namespace compile_cache
