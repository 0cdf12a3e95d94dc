// compile_cache: redis_storage's claims (single flight): a miss claims its key on the
// server with `SET NAMESPACE:HEX:claim OWNER NX PX EXPIRY` (claim.hpp's claim_owner: pid,
// boot id, process start time, host), which the server drops after the expiry.
// Optional header: needs hiredis, as redis_storage.hpp, which includes it. The protocol
// and its bounds are in docs/design.md.
#pragma once

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace compile_cache {

namespace detail {
/// Deletes KEYS[1] only if it holds ARGV[1]: 1 when deleted, 0 otherwise. One script, so
/// that the server compares and deletes at once: a claim that expired and was taken by
/// another process between a separate GET and DEL would be the one deleted.
inline constexpr char redis_claim_release_script[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
/// Claims KEYS[2] for ARGV[1] (`SET KEYS[2] ARGV[1] NX PX ARGV[2]`) only if the entry
/// KEYS[1] does not exist: OK when claimed, nil when another's claim stands, 0 when the
/// entry exists (nothing claimed). Both names on one server (a cluster refuses a script
/// whose keys are in two slots).
inline constexpr char redis_claim_if_absent_script[] =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) end "
    "return 0";
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
        auto const until = claim_deadline();
        for (int round = 0; round < 2; ++round) {
            call c = run(name, {"SET", name, owner, "NX", "PX", expiry}, 4096, until);
            if (c.error) return claim_answer{}; // the server is failing: no claims, as before
            redisReply const* r = c.reply.get();
            if (r->type == REDIS_REPLY_STATUS) {
                answer.state = claim_state::claimed;
                return answer;
            }
            if (r->type != REDIS_REPLY_NIL) return claim_answer{}; // refused (read-only replica, ACL): none
            // Held: whose? A claim of a process of this machine that is gone is taken over
            // at once; any other stands until its expiry.
            call g = run(name, {"GET", name}, 4096, until);
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
            call t = run(name, {"EVAL", detail::redis_claim_take_over_script, "1", name, held, owner, expiry}, 4096,
                         until);
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
                call again = run(name, {"GET", name}, 4096, until);
                if (again.error || again.reply->type != REDIS_REPLY_STRING ||
                    std::string(again.reply->str, again.reply->len) != held)
                    continue;
                call d = run(name, {"DEL", name}, 4096, until);
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
        claim_batch(keys, request, out);
    } catch (...) {
        // (Claims taken before the failure stand until their expiry: none is said claimed.)
        for (auto& o : out) o = claim_answer{};
    }
}

inline void redis_storage::claim_batch(std::vector<key> const& keys, claim_request const& request,
                                       std::vector<claim_answer>& out, detail::redis_clock::time_point until) {
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
        [&](std::size_t i, std::error_code) { out[i] = claim_answer{}; }, false, until);
}

inline void redis_storage::release_claim(key const& k) noexcept {
    if (!state_) return;
    try {
        // Compare and delete in one step on the server (a script): a claim of ours that
        // expired and was taken by another process is that process's, and stays.
        std::string const name = claim_name(k);
        std::string const owner = detail::claim_owner();
        auto const until = claim_deadline();
        call e = run(name, {"EVAL", detail::redis_claim_release_script, "1", name, owner}, 4096, until);
        if (!e.error && e.reply->type == REDIS_REPLY_ERROR) release_claim_without_script(name, owner, until);
    } catch (...) {
    }
}

inline void redis_storage::release_claim_without_script(std::string const& name, std::string const& owner,
                                                        detail::redis_clock::time_point until) {
    // A server that refuses scripts (an ACL without EVAL): GET, compare, DEL, as before
    // scripts (a claim that expires between the two and is taken by another is then
    // deleted: one more compile at worst), so that waiters need not wait for the expiry.
    call g = run(name, {"GET", name}, 4096, until);
    if (!g.error && g.reply->type == REDIS_REPLY_STRING && std::string(g.reply->str, g.reply->len) == owner)
        (void)run(name, {"DEL", name}, 4096, until);
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
            release_claim_without_script(names[i], owner, until);
        }
    } catch (...) {
    }
}

inline void redis_storage::write_many_then_release(std::vector<std::pair<key, std::string_view>> const& entries,
                                                   std::vector<key> const& releases,
                                                   std::vector<std::error_code>& out) noexcept {
    try {
        if (!batch_answers_ready(entries.size(), out)) return;
        if (releases.empty() || state_->client.is_cluster()) {
            // A cluster: a claim's name is mostly in another slot, on another master, than
            // its entry; each node's batch is its own exchange, so the writes go first.
            write_many(entries, out);
            release_claim_many(releases);
            return;
        }
        std::size_t const writes = entries.size();
        std::string const ttl = std::to_string(state_->options.ttl.count());
        std::string const owner = detail::claim_owner();
        std::vector<std::string> names; // the entries', then the claims'
        names.reserve(writes + releases.size());
        for (auto const& e : entries) names.push_back(redis_key(e.first));
        for (key const& k : releases) names.push_back(claim_name(k));
        std::vector<key> unanswered;       // (the exchange failed before their answers)
        std::vector<std::size_t> refused;  // (scripts refused: released one by one without)
        auto const until = call_deadline();
        pipeline_by_node(
            names,
            [&](std::size_t i) {
                if (i < writes) return set_command(names[i], entries[i].second, ttl);
                return detail::redis_command{"EVAL", detail::redis_claim_release_script, "1", names[i], owner};
            },
            [&](std::size_t i) -> unsigned {
                return i < writes ? 1u << REDIS_REPLY_STATUS : 1u << REDIS_REPLY_INTEGER;
            },
            4096, std::numeric_limits<std::size_t>::max(),
            [&](std::size_t i, redisReply const* r) {
                if (r->type != REDIS_REPLY_ERROR) return;
                if (i < writes) out[i] = state_->client.error_reply(r);
                else refused.push_back(i);
            },
            [&](std::size_t i, std::error_code e) {
                if (i < writes) out[i] = e;
                else unanswered.push_back(releases[i - writes]);
            },
            true);
        // (A compare-and-delete: sent again, it is harmless where the first was applied.)
        if (!unanswered.empty()) release_claim_many(unanswered);
        for (std::size_t i : refused) {
            if (detail::redis_clock::now() >= until) break; // (the rest left to their expiry)
            release_claim_without_script(names[i], owner, until);
        }
    } catch (...) {
        // (What was not sent is left: the writes as failed, the claims to their expiry.)
        for (auto& e : out)
            if (!e) e = make_error_code(remote_error::other);
    }
}

inline void redis_storage::read_many_claiming(std::vector<key> const& keys, std::size_t max,
                                              std::vector<key> const& to_claim, claim_request const& request,
                                              std::vector<std::pair<read_result, std::string>>& out,
                                              std::vector<claim_answer>& claims) noexcept {
    try {
        claims.assign(to_claim.size(), claim_answer{});
        bool const claim = state_ && includes(request.scope, claim_scope::remote) && !to_claim.empty();
        if (!claim) {
            read_many(keys, max, out);
            return;
        }
        auto const until = call_deadline(); // (the reads and the claims after them: one timeout)
        std::vector<std::size_t> after_read; // (indexes in to_claim) claimed after the reads, if absent
        if (state_->client.is_cluster()) {
            out.clear();
            out.resize(keys.size());
            read_batch(keys, max, out, until);
            for (std::size_t j = 0; j < to_claim.size(); ++j) after_read.push_back(j);
        } else {
            out.clear();
            out.resize(keys.size());
            std::size_t const reads = keys.size();
            std::size_t const bound = std::min<std::size_t>(max, std::size_t(1) << 40);
            std::string const end = std::to_string(bound);
            std::string const owner = detail::claim_owner();
            std::string const expiry = std::to_string(std::max<long long>(request.expiry.count(), 1));
            std::vector<std::string> names; // the entries read, then the claims
            names.reserve(reads + to_claim.size());
            for (key const& k : keys) names.push_back(redis_key(k));
            for (key const& k : to_claim) names.push_back(claim_name(k));
            std::vector<std::string> entry_names; // KEYS[1] of each claim's script
            entry_names.reserve(to_claim.size());
            for (key const& k : to_claim) entry_names.push_back(redis_key(k));
            pipeline_by_node(
                names,
                [&](std::size_t i) {
                    if (i < reads) return detail::redis_command{"GETRANGE", names[i], "0", end};
                    return detail::redis_command{"EVAL", detail::redis_claim_if_absent_script, "2",
                                                 entry_names[i - reads], names[i], owner, expiry};
                },
                [&](std::size_t i) -> unsigned {
                    if (i < reads) return (1u << REDIS_REPLY_STRING) | (1u << REDIS_REPLY_NIL);
                    return (1u << REDIS_REPLY_STATUS) | (1u << REDIS_REPLY_NIL) | (1u << REDIS_REPLY_INTEGER);
                },
                bound + 64, state_->options.batch_max_bytes,
                [&](std::size_t i, redisReply const* r) {
                    if (i < reads) {
                        out[i].first = read_answer(r, max, out[i].second);
                        return;
                    }
                    std::size_t const j = i - reads;
                    // OK: claimed; nil: another's claim stands; 0: the entry exists (none);
                    // an error (scripts refused, a read-only replica): claimed after the reads.
                    if (r->type == REDIS_REPLY_STATUS) claims[j].state = claim_state::claimed;
                    else if (r->type == REDIS_REPLY_NIL) claims[j].state = claim_state::held;
                    else if (r->type == REDIS_REPLY_ERROR) after_read.push_back(j);
                },
                [&](std::size_t i, std::error_code e) {
                    if (i < reads) {
                        out[i].second.clear();
                        out[i].first = {read_status::error, e};
                    } // (a claim without an answer: none, which may be held all the same)
                },
                false, until);
        }
        if (after_read.empty()) return;
        // The keys to claim whose entries the reads found absent, in one try_claim_many.
        detail::claim_absent_after_reads(keys, out, to_claim, after_read, claims,
                                         [&](std::vector<key> const& absent, std::vector<claim_answer>& answers) {
                                             // (None sent without time left to read its answer.)
                                             if (detail::redis_clock::now() < until)
                                                 claim_batch(absent, request, answers, until);
                                         });
    } catch (...) {
        // (Claims taken before the failure stand until their expiry: none is said claimed.)
        for (auto& c : claims) c = claim_answer{};
        if (out.size() != keys.size()) {
            out.clear();
            try {
                out.resize(keys.size());
            } catch (...) {
                return;
            }
        }
        for (auto& o : out)
            if (o.first.status != read_status::found)
                o.first = {read_status::error, make_error_code(remote_error::other)};
    }
}

} // namespace compile_cache
