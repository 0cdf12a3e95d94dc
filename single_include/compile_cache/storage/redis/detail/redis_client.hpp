// compile_cache: a Redis client that sends each command to the node that serves its key —
// the one server of a redis:// or unix:// address, or the master of the key's slot in a
// Redis Cluster (slot map learnt with CLUSTER SLOTS, MOVED and ASK followed, a node that
// fails rested). Part of the optional redis_storage: needs hiredis.
#pragma once

#include <compile_cache/storage/redis/detail/redis_cluster.hpp>
#include <compile_cache/storage/redis/detail/redis_connection.hpp>
#include <compile_cache/storage/redis/redis_address.hpp>
#include <compile_cache/storage/redis/redis_options.hpp>
#include <compile_cache/compile_cache.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace compile_cache::detail {

/// For tests only: called on the thread that has just taken a cluster client's slot map
/// lock to learn the map (refresh), before it goes on; other calls wait for the lock meanwhile.
inline thread_local void (*redis_slot_map_held_for_testing)() = nullptr;
/// For tests only: called on the thread that has just taken a client's failure lock to
/// record a failure, before it goes on (a fork meanwhile leaves the lock held in the child).
inline thread_local void (*redis_failure_held_for_testing)() = nullptr;

/// The nodes of one address and the routing of a command to them (see redis_storage for
/// the contract a user sees). Thread-safe: each node's connection is used by one call at
/// a time, and every wait for a lock or a reply ends at the call's deadline.
///
/// Cluster: a key goes to the node serving its slot (CRC16, hash tags honoured) per the
/// slot map learnt with CLUSTER SLOTS from the seed nodes, one connection per node;
/// `MOVED` refreshes the map and retries once on the node named, `ASK` sends ASKING and
/// retries once there. A node that refused, or timed out with at least a quarter of its
/// call's time (see exchange_failed), is not called for node_rest (its keys fail at once,
/// remote_error::node_down, or node_timeout after a timeout, while another master answers) and the slot map is learnt
/// again; so is it, at most once a second, for a call to a slot the map leaves without a
/// master. A node that timed out with less (other nodes of the call used the time) is
/// not rested: its keys fail as `timeout`. When every master is out of reach, or no node
/// tells the slot map, the error is the node's own (refused, timeout): the whole cluster
/// is failing.
///
/// A reply of the wrong type for its command, or an exchange whose replies do not end
/// with its nonce (redis_connection::exchange), means the connection is out of step: it is
/// closed and the call fails as `protocol`.
class redis_client {
public:
    struct call {
        std::error_code error;
        redis_reply_ptr reply;
    };

    /// The nodes of `a` (not connected yet); each connection attempt takes at most
    /// `connect_timeout`.
    redis_client(redis_address a, std::chrono::milliseconds connect_timeout)
        : address(std::move(a)), connect_timeout_(connect_timeout) {
        if (address.type == redis_address::kind::unix_socket) {
            add_node(redis_endpoint{{}, 0, address.socket_path, address.user, address.password, address.db});
        } else {
            for (auto const& n : address.nodes)
                add_node(redis_endpoint{n.host, n.port, {}, address.user, address.password, address.db});
        }
    }
    redis_client(redis_client const&) = delete;
    redis_client& operator=(redis_client const&) = delete;

    redis_address const& where() const noexcept { return address; }
    bool is_cluster() const noexcept { return address.type == redis_address::kind::cluster; }

    /// The last failure any call saw, with a text for a log line; `other` when its lock
    /// is not had within brief_lock_wait (a child forked while another thread held it).
    redis_failure last_failure() const {
        std::unique_lock<std::timed_mutex> lock(failure_mutex, brief_lock_wait);
        if (!lock.owns_lock()) return {make_error_code(remote_error::other), "(the last failure could not be read)"};
        return failure;
    }

    /// The most a call waits for a lock held only for a few loads and stores (the last
    /// failure's, a node's health): one held longer has a holder this process does not
    /// have (a child forked while another thread of the parent held it), and the call goes
    /// on without it (see each use) rather than waiting for ever.
    static constexpr std::chrono::milliseconds brief_lock_wait{100};

    /// The masters to visit for a listing, in `out`: node 0 on a server; on a cluster
    /// each master of the slot map (learnt first when it is not known).
    std::error_code master_nodes(std::vector<std::size_t>& out, redis_clock::time_point deadline) {
        out.assign(1, 0);
        if (!is_cluster()) return {};
        if (!owner(0, deadline)) return record(remote_error::other, "the cluster's slot map is not known");
        std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return record(remote_error::timeout, "waited too long for the slot map");
        out.clear();
        for (std::uint16_t owner_index : slot_owner)
            if (owner_index != 0 && std::find(out.begin(), out.end(), owner_index - 1u) == out.end())
                out.push_back(owner_index - 1u);
        return {};
    }

    /// Whether the one server of a redis:// address turned out to be a node of a cluster
    /// (it answered MOVED or ASK): every call fails as remote_error::cluster_node.
    bool serves_some_keys_only() const noexcept { return cluster_member.load(std::memory_order_relaxed); }

    /// The most bytes a CLUSTER SLOTS reply may take: one range per slot (a cluster whose
    /// slots were moved one by one), each naming a master and two replicas, fits (about
    /// 250 bytes a range); a longer reply is `protocol`, and no node tells the map.
    static constexpr std::size_t cluster_slots_reply_bytes = std::size_t(4) << 20;
    /// How long a cluster node that failed is not called.
    static constexpr std::chrono::milliseconds node_rest{1000};
    /// The most nodes a client knows (seeds and those a slot map names); a slot map
    /// with more is not used. (Redis Cluster's own advice is at most 1,000.)
    static constexpr std::size_t max_nodes = 1024;

private:
    struct node {
        explicit node(redis_endpoint e) : connection(e), batch_connection(std::move(e)) {}
        std::timed_mutex mutex;
        redis_connection connection;
        /// The batch writes' own (pipeline_on's `batch`), opened at the first one: a host's
        /// call never waits behind a batch of uploads on the wire.
        std::timed_mutex batch_mutex;
        redis_connection batch_connection;
        // A cluster node's health: after a refusal or a timeout it rests until resting_until.
        std::timed_mutex health_mutex; ///< (taken within brief_lock_wait)
        redis_clock::time_point resting_until{};
        std::error_code last_error;
    };

public:

    /// Keeps `e` and `text` as the last failure (not when its lock is not had within
    /// brief_lock_wait) and returns `e`.
    std::error_code record(std::error_code e, std::string text) const {
        try {
            std::unique_lock<std::timed_mutex> lock(failure_mutex, brief_lock_wait);
            if (!lock.owns_lock()) return e;
            if (redis_failure_held_for_testing != nullptr) redis_failure_held_for_testing();
            failure = {e, std::move(text)};
        } catch (...) {
        }
        return e;
    }

    std::error_code record(remote_error e, std::string text) const { return record(make_error_code(e), std::move(text)); }

    std::error_code error_reply(redisReply const* r) const {
        std::string text(r->str, r->len);
        remote_error why = classify_error_reply(text);
        if (text.find("exceeds maximum allowed size") != std::string::npos) why = remote_error::too_large;
        return record(why, std::move(text));
    }

    /// Several commands sent to node `index` at once, their replies in order.
    /// `expected[j]`: the reply types (bit 1 << REDIS_REPLY_...) command j may have besides
    /// an error (0, or no entry: any). A reply of another type means the connection is out
    /// of step: it is closed, under the node's lock (no other call uses it meanwhile),
    /// `replies` keeps those before it, and the call fails as `protocol`. `batch`: on the
    /// node's second connection, the batch writes' (write_many, release_claim_many), so
    /// that the other calls do not wait for them.
    std::error_code pipeline_on(std::size_t index, std::vector<redis_command> const& commands,
                                std::vector<redis_reply_ptr>& replies, std::size_t max_reply,
                                redis_clock::time_point deadline, bool arrays = false,
                                std::vector<unsigned> const& expected = {},
                                std::size_t max_total_bytes = std::numeric_limits<std::size_t>::max(),
                                bool batch = false) {
        node* const n = &node_at(index);
        std::unique_lock<std::timed_mutex> lock(batch ? n->batch_mutex : n->mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return record(remote_error::timeout, "waited too long for the connection");
        redis_connection& connection = batch ? n->batch_connection : n->connection;
        std::error_code const e =
            connection.exchange(commands, replies, max_reply, deadline, connect_timeout_, arrays, max_total_bytes);
        std::string text = e ? describe_node(connection.endpoint()) + ": " + connection.last_error_text() : "";
        for (std::size_t j = 0; j < replies.size() && j < expected.size(); ++j) {
            int const type = replies[j]->type;
            if (expected[j] == 0 || type == REDIS_REPLY_ERROR) continue;
            if (type >= 0 && type <= 31 && (expected[j] & (1u << type))) continue;
            connection.close();
            replies.resize(j);
            if (e) break; // (the exchange's own error stands; the replies from here on go)
            return record(remote_error::protocol, describe_node(connection.endpoint()) +
                                                      ": a reply of the wrong type to " +
                                                      std::string(commands[j].front()) +
                                                      " (the connection was out of step; it is closed)");
        }
        if (e) return record(e, std::move(text));
        return {};
    }

    static std::string describe_node(redis_endpoint const& e) {
        if (!e.socket_path.empty()) return e.socket_path;
        bool const v6 = e.host.find(':') != std::string::npos;
        return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
    }

    /// The reply types a command of this storage may get besides an error (see pipeline_on).
    static unsigned expected_replies(std::string_view command) noexcept {
        auto bit = [](int type) { return 1u << static_cast<unsigned>(type); };
        if (command == "GETRANGE" || command == "GET") return bit(REDIS_REPLY_STRING) | bit(REDIS_REPLY_NIL);
        if (command == "SET") // (OK; nil after NX/XX; the old value after GET)
            return bit(REDIS_REPLY_STATUS) | bit(REDIS_REPLY_NIL) | bit(REDIS_REPLY_STRING);
        if (command == "DEL" || command == "EXISTS" || command == "STRLEN") return bit(REDIS_REPLY_INTEGER);
        return 0;
    }

    /// One exchange with node `index`: the command, or ASKING then the command.
    call exchange_on(std::size_t index, redis_command const& command, std::size_t max_reply,
                     redis_clock::time_point deadline, bool asking, bool arrays = false) {
        std::vector<redis_command> commands;
        if (asking) commands.push_back({"ASKING"});
        commands.push_back(command);
        std::vector<unsigned> expected;
        if (asking) expected.push_back(1u << REDIS_REPLY_STATUS);
        expected.push_back(command.empty() ? 0u : expected_replies(command.front()));
        std::vector<redis_reply_ptr> replies;
        call c;
        c.error = pipeline_on(index, commands, replies, max_reply, deadline, arrays, expected);
        if (!c.error) c.reply = std::move(replies.back());
        return c;
    }

    call run(std::string const& name, redis_command const& command, std::size_t max_reply,
             redis_clock::time_point deadline) {
        if (!is_cluster()) return run_on_server(command, max_reply, deadline);
        auto const whole = deadline - redis_clock::now(); // (the call's time, for exchange_failed)
        std::uint16_t const slot = redis_hash_slot(name);
        std::optional<std::size_t> target = owner(slot, deadline);
        if (!target) return failed(unserved(slot, deadline));
        if (auto e = resting(*target)) return failed(e);
        bool asking = false;
        for (int attempt = 0;; ++attempt) {
            auto const given = deadline - redis_clock::now();
            call c = exchange_on(*target, command, max_reply, deadline, asking);
            if (c.error) {
                c.error = exchange_failed(*target, c.error, given, whole);
                return c;
            }
            node_answered(*target);
            if (c.reply->type != REDIS_REPLY_ERROR) return c;
            auto redirect = parse_redis_redirection(std::string_view(c.reply->str, c.reply->len));
            if (!redirect || attempt == 1) {
                if (redirect) c.error = record(remote_error::other, "redirected twice for slot " + std::to_string(slot));
                return c;
            }
            if (redirect->host.empty()) redirect->host = node_host(*target, deadline);
            auto next = node_for(redirect->host, redirect->port, deadline);
            if (!next) {
                c.reply.reset();
                c.error = record(remote_error::timeout, "waited too long for the slot map");
                return c;
            }
            asking = redirect->ask;
            if (!asking) {
                refresh(deadline, *target);
                set_owner(redirect->slot, *next, deadline);
            }
            target = next;
        }
    }

    /// A call to the one server of a redis:// address. A server that redirects (MOVED,
    /// ASK) is a cluster's node, which serves only some keys: from then on every call
    /// fails at once as remote_error::cluster_node, whose text says to use redis+cluster://,
    /// so that neither entries nor records are read from a part of the cluster only.
    call run_on_server(redis_command const& command, std::size_t max_reply,
                       redis_clock::time_point deadline) {
        if (cluster_member.load(std::memory_order_relaxed))
            return failed(make_error_code(remote_error::cluster_node));
        call c = exchange_on(0, command, max_reply, deadline, false);
        if (c.error || c.reply->type != REDIS_REPLY_ERROR) return c;
        std::string_view const said(c.reply->str, c.reply->len);
        if (!parse_redis_redirection(said)) return c;
        cluster_member.store(true, std::memory_order_relaxed);
        // The node this storage talks to: a host and port, or a Unix socket (which has no
        // entry in address.nodes).
        std::string const where = describe_node(node_at(0).connection.endpoint());
        std::string const text = where + " is a node of a Redis Cluster (it answered \"" +
                                 std::string(said.substr(0, said.find(' '))) + "\"), which serves only some keys: " +
                                 "address the cluster as redis+cluster://" + where;
        return failed(record(remote_error::cluster_node, text));
    }

    std::string node_host(std::size_t index, redis_clock::time_point deadline) {
        std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return {};
        return nodes[index].connection.endpoint().host;
    }

    std::optional<std::size_t> node_for(std::string const& host, int port, redis_clock::time_point deadline) {
        std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return std::nullopt;
        auto const& a = address;
        std::size_t const index = add_node(redis_endpoint{host, port, {}, a.user, a.password, 0});
        if (index >= max_nodes) return std::nullopt;
        return index;
    }

    void set_owner(std::uint16_t slot, std::size_t index, redis_clock::time_point deadline) {
        std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return;
        if (slot_owner.size() == redis_cluster_slots) {
            slot_owner[slot] = static_cast<std::uint16_t>(index + 1);
            if (std::find(master_list.begin(), master_list.end(), index) == master_list.end())
                master_list.push_back(index);
        }
    }

    void want_refresh() {
        std::unique_lock<std::timed_mutex> lock(map_mutex, std::try_to_lock);
        if (lock.owns_lock()) map_loaded = false;
    }

    std::optional<std::size_t> owner(std::uint16_t slot, redis_clock::time_point deadline) {
        {
            std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
            if (!lock.try_lock_until(deadline)) return std::nullopt;
            // A map that failed is learnt again, and so is one that leaves this slot without
            // a master (learnt while a cluster was made, or a master had not taken its
            // slots yet: no call to the slot would ever meet a MOVED that tells its master),
            // but not more than once a second.
            bool const stale = !map_loaded || (!slot_owner.empty() && slot_owner[slot] == 0);
            bool const due = stale && (slot_owner.empty() ||
                                       redis_clock::now() - last_refresh > std::chrono::seconds(1));
            if (!due && !slot_owner.empty() && slot_owner[slot] != 0)
                return std::size_t(slot_owner[slot] - 1);
            if (!due) return std::nullopt;
        }
        (void)refresh(deadline, std::nullopt);
        std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return std::nullopt;
        if (slot_owner.empty() || slot_owner[slot] == 0) return std::nullopt;
        return std::size_t(slot_owner[slot] - 1);
    }

    /// Learns the slot map with CLUSTER SLOTS from the first node that answers with one
    /// that names a master (the known nodes in order, then `last`, the one that just
    /// redirected, then the resting ones): a node that serves no slot (one that left the
    /// cluster or has not joined it yet: an empty list) would hide the map the others
    /// know, so its empty map is taken only when no other node tells one. Each node is
    /// given half of the time left (the last one asked all of it), so that a stalled node
    /// cannot use up the call; one that refuses or times out goes through exchange_failed
    /// (rested). Its failure (the last node's error, or timeout when no time was left) is
    /// kept in refresh_error and returned.
    std::error_code refresh(redis_clock::time_point deadline, std::optional<std::size_t> last) {
        auto const whole = deadline - redis_clock::now();
        std::size_t count;
        {
            std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
            if (!lock.try_lock_until(deadline)) return make_error_code(remote_error::timeout);
            if (redis_slot_map_held_for_testing != nullptr) redis_slot_map_held_for_testing();
            last_refresh = redis_clock::now();
            count = nodes.size();
        }
        std::vector<std::size_t> order, rested;
        for (std::size_t i = 0; i < count; ++i)
            if (!last || i != *last) (is_resting(i) ? rested : order).push_back(i);
        if (last) (is_resting(*last) ? rested : order).push_back(*last);
        order.insert(order.end(), rested.begin(), rested.end());
        std::error_code why = make_error_code(remote_error::timeout);
        std::string text = "no time was left to ask a node";
        std::optional<std::size_t> empty_at; // a node that answered with no slot
        for (std::size_t k = 0; k < order.size(); ++k) {
            std::size_t const index = order[k];
            auto const now = redis_clock::now();
            if (now >= deadline) break;
            auto const until = k + 1 == order.size() ? deadline : now + (deadline - now) / 2;
            call c = exchange_on(index, {"CLUSTER", "SLOTS"}, cluster_slots_reply_bytes, until, false, true);
            if (c.error) {
                why = c.error;
                text = last_failure().text;
                (void)exchange_failed(index, c.error, until - now, whole);
                continue;
            }
            if (c.reply->type == REDIS_REPLY_ERROR) {
                why = error_reply(c.reply.get());
                text = last_failure().text;
                continue;
            }
            if (c.reply->type == REDIS_REPLY_ARRAY && c.reply->elements == 0) {
                if (!empty_at) empty_at = index;
                continue;
            }
            if (c.reply->type == REDIS_REPLY_ARRAY && install_map(c.reply.get(), index, deadline)) return {};
            why = make_error_code(remote_error::protocol);
            text = "CLUSTER SLOTS did not return a slot map";
        }
        if (empty_at) {
            // No node named a master: the cluster serves no slot (yet); each slot's call
            // fails as unserved, and the map is learnt again at most once a second.
            redisReply none{};
            none.type = REDIS_REPLY_ARRAY;
            if (install_map(&none, *empty_at, deadline)) return {};
        }
        std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
        if (lock.try_lock_until(deadline)) {
            refresh_error = why;
            refresh_error_text = text;
        }
        return why;
    }

    /// The error of a call whose slot no known node serves: while the slot map is not
    /// known, why no node told it (the cluster is out of reach: refused, timeout, auth...);
    /// `timeout` when the map cannot be looked at by `deadline` (other calls held it);
    /// with a map that leaves the slot out, `other`.
    std::error_code unserved(std::uint16_t slot, redis_clock::time_point deadline) {
        std::error_code why;
        std::string text;
        {
            std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
            if (!lock.try_lock_until(deadline))
                return record(remote_error::timeout, "waited too long for the cluster's slot map");
            if (slot_owner.empty()) {
                why = refresh_error;
                text = refresh_error_text;
            }
        }
        if (why) return record(why, "no node of the cluster told its slot map (" + text + ")");
        return record(remote_error::other, "no cluster node serves slot " + std::to_string(slot));
    }

    /// A call to node `index` while it rests (it failed less than node_rest ago): the
    /// node's error, at once; node_down (node_timeout when it timed out) while another
    /// master has not failed. (Its health not to be read within brief_lock_wait: not resting.)
    std::error_code resting(std::size_t index) {
        node& n = node_at(index);
        std::error_code last;
        {
            std::unique_lock<std::timed_mutex> lock(n.health_mutex, brief_lock_wait);
            if (!lock.owns_lock() || redis_clock::now() >= n.resting_until) return {};
            last = n.last_error;
        }
        std::string const where = describe_node(n.connection.endpoint());
        if (another_master_answers(index))
            return record(only_this_node(last), where + " failed less than " +
                                                     std::to_string(node_rest.count()) + " ms ago; its slots fail");
        return record(last, where + " and every other master of the cluster failed less than " +
                                std::to_string(node_rest.count()) + " ms ago");
    }

    /// Whether node `index` rests now (it failed less than node_rest ago; not when its
    /// health is not to be read within brief_lock_wait).
    bool is_resting(std::size_t index) {
        node& n = node_at(index);
        std::unique_lock<std::timed_mutex> lock(n.health_mutex, brief_lock_wait);
        return lock.owns_lock() && redis_clock::now() < n.resting_until;
    }

    /// The error of a call whose exchange with node `index` failed with `e`, the exchange
    /// having been given `given` of the call's `whole` time. A refusal, or a timeout with
    /// at least a quarter of the call's time, is the node's failure: node_failed (it rests,
    /// the slot map is learnt again). A timeout with less (earlier nodes of the call, or the
    /// slot map, used the time) says nothing of the node: `e` stays a `timeout`, the node is
    /// not rested. Any other error is returned as it is.
    std::error_code exchange_failed(std::size_t index, std::error_code e, redis_clock::duration given,
                                    redis_clock::duration whole) {
        if (e != remote_error::refused && e != remote_error::timeout) return e;
        if (e == remote_error::timeout && given * 4 < whole)
            return record(e, last_failure().text + " (it had " +
                                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                    std::max(given, redis_clock::duration::zero()))
                                                    .count()) +
                                 " ms of the call's time left: not rested)");
        want_refresh();
        return node_failed(index, e);
    }

    /// Node `index` refused or timed out with `e`: it rests for node_rest. The answer is
    /// node_down (node_timeout for a timeout) while another master has not failed, else
    /// `e` (the cluster is failing).
    std::error_code node_failed(std::size_t index, std::error_code e) {
        node& n = node_at(index);
        std::string const text = last_failure().text;
        {
            std::unique_lock<std::timed_mutex> lock(n.health_mutex, brief_lock_wait);
            if (lock.owns_lock()) { // (else not rested: its calls go on failing, each bounded)
                n.resting_until = redis_clock::now() + node_rest;
                n.last_error = e;
            }
        }
        if (!another_master_answers(index)) return e;
        return record(only_this_node(e), text + " (" + to_string(remote_error_of(e)) +
                                                 "); only this node's slots fail, for " +
                                                 std::to_string(node_rest.count()) + " ms at least");
    }

    /// The error of a node's keys when it failed with `e` and other masters answer: counted
    /// as `e` is (timeout, refused), and a partial failure (redis_storage::partial_failure).
    static remote_error only_this_node(std::error_code const& e) noexcept {
        return e == remote_error::timeout ? remote_error::node_timeout : remote_error::node_down;
    }

    void node_answered(std::size_t index) {
        node& n = node_at(index);
        std::unique_lock<std::timed_mutex> lock(n.health_mutex, brief_lock_wait);
        if (lock.owns_lock()) n.resting_until = {};
    }

    /// Whether a master of the slot map other than `index` is not resting (one whose health
    /// is not to be read within brief_lock_wait does not count).
    bool another_master_answers(std::size_t index) {
        std::vector<std::size_t> masters;
        {
            std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
            if (!lock.try_lock_for(std::chrono::milliseconds(10))) return false;
            masters = master_list;
        }
        auto const now = redis_clock::now();
        for (std::size_t m : masters) {
            if (m == index) continue;
            node& n = node_at(m);
            std::unique_lock<std::timed_mutex> lock(n.health_mutex, brief_lock_wait);
            if (lock.owns_lock() && now >= n.resting_until) return true;
        }
        return false;
    }

    /// Node `index` (one add_node handed out), without waiting for map_mutex: its address
    /// was published in node_index before the index was handed out.
    node& node_at(std::size_t index) noexcept { return *node_index[index].load(std::memory_order_acquire); }

    bool install_map(redisReply const* slots, std::size_t asked, redis_clock::time_point deadline) {
        std::unique_lock<std::timed_mutex> lock(map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return false;
        std::vector<std::uint16_t> owners(redis_cluster_slots, 0);
        std::string const asked_host = nodes[asked].connection.endpoint().host;
        auto const& a = address;
        for (std::size_t i = 0; i < slots->elements; ++i) {
            redisReply const* range = slots->element[i];
            if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) return false;
            redisReply const* from = range->element[0];
            redisReply const* to = range->element[1];
            redisReply const* master = range->element[2];
            if (from->type != REDIS_REPLY_INTEGER || to->type != REDIS_REPLY_INTEGER ||
                master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
                master->element[0]->type != REDIS_REPLY_STRING || master->element[1]->type != REDIS_REPLY_INTEGER)
                return false;
            if (from->integer < 0 || to->integer >= static_cast<long long>(redis_cluster_slots) ||
                from->integer > to->integer)
                return false;
            std::string host(master->element[0]->str, master->element[0]->len);
            if (host.empty() || host == "?") host = asked_host;
            long long const port = master->element[1]->integer;
            if (port <= 0 || port > 65535) return false;
            std::size_t const index =
                add_node(redis_endpoint{host, static_cast<int>(port), {}, a.user, a.password, 0});
            if (index >= max_nodes) return false;
            for (long long s = from->integer; s <= to->integer; ++s)
                owners[static_cast<std::size_t>(s)] = static_cast<std::uint16_t>(index + 1);
        }
        std::vector<std::size_t> masters;
        for (std::uint16_t o : owners)
            if (o != 0 && std::find(masters.begin(), masters.end(), std::size_t(o - 1u)) == masters.end())
                masters.push_back(o - 1u);
        slot_owner = std::move(owners);
        master_list = std::move(masters);
        map_loaded = true;
        return true;
    }

    static call failed(std::error_code e) {
        call c;
        c.error = e;
        return c;
    }

private:
    /// The index of the node at `e` (added when new, under map_mutex or in the
    /// constructor); max_nodes when there is no room for one more.
    std::size_t add_node(redis_endpoint e) {
        for (std::size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].connection.endpoint().host == e.host && nodes[i].connection.endpoint().port == e.port &&
                nodes[i].connection.endpoint().socket_path == e.socket_path)
                return i;
        if (nodes.size() == max_nodes) return max_nodes;
        nodes.emplace_back(std::move(e));
        node_index[nodes.size() - 1].store(&nodes.back(), std::memory_order_release);
        return nodes.size() - 1;
    }

    redis_address address;
    std::chrono::milliseconds connect_timeout_;
    std::deque<node> nodes; ///< grows only (under map_mutex), so references stay valid
    /// Each node's address, published once by add_node: node_at reads it with no lock.
    std::array<std::atomic<node*>, max_nodes> node_index{};
    std::timed_mutex map_mutex;
    std::vector<std::uint16_t> slot_owner; ///< node index + 1 per slot; 0: unknown (cluster)
    std::vector<std::size_t> master_list;   ///< the nodes that own slots in slot_owner
    bool map_loaded = false;
    redis_clock::time_point last_refresh{};
    std::error_code refresh_error;         ///< why the last refresh failed (refused, timeout...)
    std::string refresh_error_text;
    mutable std::timed_mutex failure_mutex; ///< (taken within brief_lock_wait)
    mutable redis_failure failure;
    std::atomic<bool> cluster_member{false}; ///< a redis:// server answered MOVED or ASK
};

} // namespace compile_cache::detail
