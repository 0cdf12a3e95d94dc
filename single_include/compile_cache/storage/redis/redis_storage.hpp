// compile_cache: a Storage on a Redis server or a Redis Cluster.
// Optional header: needs hiredis (0.14 or 1.x; Debian libhiredis-dev), linked by the
// CMake target compile_cache::redis. Not included by compile_cache/compile_cache.hpp.
//
// Values are stored as given (the cache's envelopes) under `NAMESPACE:` + the key in
// hex. Every call is bounded: connect by redis_options::connect_timeout, the whole call
// by redis_options::command_timeout; a read takes at most its bound (plus the reply's
// framing and one socket read) into memory. No member of the Storage interface throws.
//
// The client beneath it, one file each: redis_address.hpp (parsing an address),
// redis_options.hpp (settings), detail/redis_connection.hpp (one connection),
// detail/redis_cluster.hpp (slots and redirections), detail/redis_client.hpp (routing a
// command to its node); failures are storage/remote_error.hpp's conditions.
#pragma once

// ---- inlined compile_cache/detail/config.hpp
// compile_cache: what the library needs from the compiler, said first. Every public
// header includes this before anything else, so that a translation unit compiled with
// the wrong flags (llvm-config --cxxflags gives -std=c++14 -fno-exceptions) stops at
// one sentence naming the flag, not at a page of errors from inside the library.
// An include guard as well: the LLVM adapter's single-header copies inline this
// header (scripts/amalgamate.py), and so does the single header.
#ifndef COMPILE_CACHE_DETAIL_CONFIG_HPP
#define COMPILE_CACHE_DETAIL_CONFIG_HPP

#if defined(_MSVC_LANG)
#define COMPILE_CACHE_CPLUSPLUS _MSVC_LANG
#else
#define COMPILE_CACHE_CPLUSPLUS __cplusplus
#endif

#if COMPILE_CACHE_CPLUSPLUS < 201703L
#error "compile_cache: needs C++17 or later (-std=c++17); with llvm-config --cxxflags, replace its -std=c++14"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && !defined(_CPPUNWIND)
#error "compile_cache: needs exceptions (drop -fno-exceptions; llvm-config --cxxflags adds it, LLVM's headers do not need it)"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

// #error lets g++ and clang go on, into hundreds of errors from the library's code: a
// missing include is fatal to both, so compilation stops here, at the sentences.
#if defined(COMPILE_CACHE_WRONG_FLAGS)
#include <compile_cache: compilation stopped; fix the flags named above>
#endif

// Separate compilation (docs/design.md, "What including the library costs"): a host that
// defines COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit and includes
// <compile_cache/src.hpp> in exactly one gets the library's non-template functions
// compiled once, there, instead of parsed and instantiated in each translation unit.
// COMPILE_CACHE_DECL marks their declarations (inline in the default, header-only mode);
// their definitions are in impl/*.ipp files, compiled where COMPILE_CACHE_INCLUDE_IMPL is 1.
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
#define COMPILE_CACHE_DECL
#if defined(COMPILE_CACHE_SOURCE)
#define COMPILE_CACHE_INCLUDE_IMPL 1
#else
#define COMPILE_CACHE_INCLUDE_IMPL 0
#endif
#else
#define COMPILE_CACHE_DECL inline
#define COMPILE_CACHE_INCLUDE_IMPL 1
#endif

// A build that mixes the modes, or has src.hpp in no translation unit or in two, is ill-formed
// (functions defined inline in some translation units and out of line in another, or not at
// all, or twice); it fails at link time with a symbol whose name says what to do:
// - every translation unit in separate-compilation mode references
//   compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit, which
//   src.hpp defines: "undefined reference" without src.hpp, "multiple definition" with two;
// - every header-only translation unit defines
//   compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none
//   in one COMDAT group (merged among them), and src.hpp defines it in another: "multiple
//   definition" when both kinds are linked together.
// (ELF, with GCC or Clang: the mark is a section-group directive of the assembler.)
#if defined(__GNUC__)
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
extern "C" char const compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
namespace compile_cache::detail {
namespace {
[[maybe_unused]] __attribute__((used)) char const* const separate_compilation_mark =
    &compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
} // namespace
} // namespace compile_cache::detail
#elif defined(__ELF__)
__asm__(".pushsection .rodata.compile_cache_header_only_mark,\"aG\",@progbits,compile_cache_header_only_mark,comdat\n"
        ".globl compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none\n"
        "compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none:\n"
        ".byte 0\n"
        ".popsection\n");
#endif
#endif

// A function each module (the main program, each shared library) has its own copy of,
// called within the module without going to another's: an ELF symbol of hidden visibility.
#if defined(__GNUC__) && defined(__ELF__)
#define COMPILE_CACHE_MODULE_LOCAL __attribute__((visibility("hidden")))
#else
#define COMPILE_CACHE_MODULE_LOCAL
#endif

// RTTI is checked by detail/config_rtti.hpp, in the headers that need it: the LLVM
// adapter's no-RTTI side (compile_cache/llvm/object_store.hpp, object_cache.hpp) does not.

#endif // COMPILE_CACHE_DETAIL_CONFIG_HPP
// ---- end of compile_cache/detail/config.hpp

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/redis/detail/redis_client.hpp>
#include <compile_cache/storage/redis/detail/redis_cluster.hpp>
#include <compile_cache/storage/redis/detail/redis_connection.hpp>
#include <compile_cache/storage/redis/redis_address.hpp>
#include <compile_cache/storage/redis/redis_options.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace compile_cache {

/// The name the Redis storage's failures had before they became remote_error (kept for
/// one release: `redis_errc::auth` is `remote_error::auth`).
using redis_errc = remote_error;

/// A Storage on one Redis server or on a Redis Cluster (see redis_address).
///
/// `read` sends `GETRANGE k 0 max_size`: a value longer than `max_size` is `too_large`
/// (with remote_error::too_large) and no more than max_size + 1 of its bytes travel. An
/// empty value reads as absent (GETRANGE does not tell it from no value; the cache never
/// stores one). Failures are `read_status::error` / an error_code of redis_category()
/// (remote_error) for a tier to count. A connection that failed is reconnected on the next
/// call. Thread-safe: each server's connection is used by one call at a time, a call
/// waiting for it no longer than its command timeout; the batch writes (write_many,
/// release_claim_many) have a second one per server, opened at the first.
///
/// Cluster: a key goes to the node serving its slot (CRC16, hash tags honoured) per the
/// slot map learnt with CLUSTER SLOTS from the seed nodes, one connection per node;
/// `MOVED` refreshes the map and retries once on the node named, `ASK` sends ASKING and
/// retries once there. A node down fails only the keys of its slots: a node that refused
/// or timed out is not called for 1 s (its keys fail at once, remote_error::node_down,
/// which partial_failure() tells a tier is not the whole cluster's failure) and the slot
/// map is learnt again (a failover's new master takes its slots); so is it, at most once
/// a second, for a call to a slot the map leaves without a master, and a seed that serves
/// no slot (an empty CLUSTER SLOTS) is passed over for the next. A stalled node cannot
/// use up a call for the others: learning the slot map and a batch's nodes each get half
/// of the time left (the last one all of it), and a node that timed out with less than a
/// quarter of its call's time (the others used it) is not rested, its keys failing as
/// `timeout`. When every master is out of reach, or no node tells the slot map, the
/// error is the node's own (refused, timeout): the whole cluster is failing.
///
/// A reply of the wrong type for its command, or one more reply than commands, means
/// the connection is out of step: it is closed and the call fails as `protocol`.
class redis_storage {
public:
    /// A process forked after a call makes connections of its own at its first call (the
    /// copies of its parent's sockets are closed in it, nothing sent on them): the child
    /// and the parent both go on using the server (tiered_storage reads this).
    static constexpr bool reconnects_after_fork = true;

    /// No server: every call fails (remote_error::other). What a disabled cache holds.
    redis_storage() = default;

    /// Throws std::invalid_argument (its message shows no password) when the URL does
    /// not parse or a timeout is not positive or longer than redis_max_timeout.
    /// Connects on first use, not here.
    explicit redis_storage(redis_options options) {
        std::string why;
        auto address = redis_address::parse(options.url, why);
        if (!address) throw std::invalid_argument(why);
        if (options.connect_timeout.count() <= 0 || options.command_timeout.count() <= 0)
            throw std::invalid_argument("compile_cache: Redis timeouts must be positive");
        if (options.connect_timeout > redis_max_timeout || options.command_timeout > redis_max_timeout)
            throw std::invalid_argument("compile_cache: Redis timeouts must be at most " +
                                        std::to_string(redis_max_timeout.count() / 1000) + " s");
        if (!options.password.empty()) address->password = options.password;
        options.url.clear(); // (holds the password; the address keeps it where it is needed)
        options.password.clear();
        state_ = std::make_unique<state>(std::move(*address), std::move(options));
    }

    explicit redis_storage(std::string url) : redis_storage(make_options(std::move(url))) {}

    redis_storage(redis_storage&&) noexcept = default;
    redis_storage& operator=(redis_storage&&) noexcept = default;

    /// Whether `url` is a Redis address's (`redis://`, `redis+cluster://`, `unix://`): the
    /// schemes that select this storage among a program's remotes (remote_by_url), in any
    /// case (`REDIS://`, as a scheme is case-insensitive).
    static bool handles_url(std::string_view url) noexcept { return redis_address::is_redis_url(url); }

    /// The earlier form, for a host that calls it: the new one, with the settings the reader
    /// stands for (see detail::settings_reader_access::settings_of).
    COMPILE_CACHE_DEPRECATED_STORAGE_FROM_ENV static std::optional<redis_storage> from_env(settings_reader& env) {
        return detail::from_env_of_reader<redis_storage>(env);
    }
    /// The storage the environment asks for (settings.hpp): `PREFIX_REMOTE` (the URL;
    /// an off value: not configured), `PREFIX_REMOTE_PASSWORD_FILE`,
    /// `PREFIX_REMOTE_NAMESPACE`, `PREFIX_REMOTE_CONNECT_TIMEOUT` and
    /// `PREFIX_REMOTE_TIMEOUT` (durations), `PREFIX_REMOTE_TTL` (seconds); see
    /// redis_options_from_env. A URL or password file that cannot be used is off, with the
    /// reason (never showing a password). So is a server whose entries would not be
    /// authenticated (storage_settings::remote_trusted false: no `PREFIX_SECRET_FILE` and
    /// no `PREFIX_REMOTE_INSECURE=1`), before its other settings are read. Connects on
    /// first use, not here.
    static from_env_result<redis_storage> from_env(storage_settings const& settings) {
        if (settings.env.is_off("_REMOTE")) return from_env_result<redis_storage>::not_configured();
        if (!settings.cache_off.empty()) return from_env_result<redis_storage>::off(settings.cache_off);
        // What a shared server returns runs as code here: only with authenticated entries,
        // or when PREFIX_REMOTE_INSECURE says it is trusted.
        if (!settings.remote_trusted) return from_env_result<redis_storage>::off(settings.untrusted_remote_reason());
        from_env_result<redis_options> options = redis_options_from_env(settings.env);
        if (!options) return from_env_result<redis_storage>::off(options.why_off());
        return from_env_result<redis_storage>(redis_storage(*std::move(options)));
    }

    /// What from_env reads, one line each, for a host's --help.
    static std::vector<environment_setting> environment_settings(std::string_view prefix) {
        std::string const p(prefix);
        return {
            {p + "_REMOTE", "the Redis server: redis://[[user][:password]@]host[:port][/db], unix:///path.sock or "
                            "redis+cluster://host:port[,host:port...]; unset or off: none"},
            {p + "_REMOTE_PASSWORD_FILE", "a file holding the Redis password (a trailing newline is dropped)"},
            {p + "_REMOTE_NAMESPACE", "prefix of the keys on the server (default compile_cache)"},
            {p + "_REMOTE_CONNECT_TIMEOUT", "connect timeout, ms or with s (default 100)"},
            {p + "_REMOTE_TIMEOUT", "timeout of each call to the server, ms or with s (default 1000)"},
            {p + "_REMOTE_TTL", "expiry of stored values in seconds (default 0: none)"},
            {p + "_REMOTE_INSECURE", "1 uses the server without a secret (only for a server that only trusted "
                                     "machines can write)"},
        };
    }

    /// The redis_options the environment asks for; not configured when `PREFIX_REMOTE` is
    /// off; off, with the reason, when its URL does not parse or the password file cannot
    /// be read. A bad timeout or TTL is one line through `env`, and the default.
    static from_env_result<redis_options> redis_options_from_env(settings_reader const& env);

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        out.clear();
        if (!state_) return {read_status::error, make_error_code(remote_error::other)};
        if (k.empty()) return {read_status::absent, {}}; // (the empty key names no entry: key.hpp)
        try {
            // (An unbounded read asks for what a Redis string can hold at most.)
            std::size_t const bound = std::min<std::size_t>(max_size, std::size_t(1) << 40);
            std::string const name = redis_key(k);
            std::string const end = std::to_string(bound);
            call c = run(name, {"GETRANGE", name, "0", end}, bound + 64);
            if (c.error) return {read_status::error, c.error};
            redisReply const* r = c.reply.get();
            if (r->type == REDIS_REPLY_ERROR) return {read_status::error, state_->client.error_reply(r)};
            if (r->type == REDIS_REPLY_NIL) return {read_status::absent, {}};
            if (r->type != REDIS_REPLY_STRING)
                return {read_status::error, state_->client.record(remote_error::protocol, "GETRANGE did not return a string")};
            if (r->len == 0) return {read_status::absent, {}};
            if (r->len > max_size) return {read_status::too_large, make_error_code(remote_error::too_large)};
            out.assign(r->str, r->len);
            return {read_status::found, {}};
        } catch (...) {
            out.clear();
            return {read_status::error, make_error_code(remote_error::other)};
        }
    }

    /// Reads `keys` at once (the optional batch read): `out[i]` is what `read(keys[i],
    /// bytes, max)` would answer (found with the bytes, absent, too_large, or error with
    /// its remote_error), `out` holding one pair per key. The GETRANGEs are pipelined:
    /// one exchange for a server; on a cluster, one per node, each key sent to the master
    /// of its slot (a key that is redirected, MOVED or ASK, is then read alone, following
    /// it; the keys of a resting or unknown node fail at once, as `read`'s would). Bounded:
    /// the whole batch by one command timeout, each value by `max`, and the replies
    /// together by redis_options::batch_max_bytes, a key's read alone after a redirection
    /// too (the one that passes it may pass it by one value): the keys whose replies come
    /// after it, and those after the exchange's last check before it that its replies are
    /// in step (redis_connection::echo_every), answer `error` with remote_error::too_large.
    /// Never throws.
    void read_many(std::vector<key> const& keys, std::size_t max,
                   std::vector<std::pair<read_result, std::string>>& out) noexcept {
        try {
            out.clear();
            out.resize(keys.size());
            if (!state_) {
                for (auto& o : out) o.first = {read_status::error, make_error_code(remote_error::other)};
                return;
            }
            read_batch(keys, max, out);
        } catch (...) {
            for (auto& o : out) {
                o.second.clear();
                o.first = {read_status::error, make_error_code(remote_error::other)};
            }
        }
    }

    std::error_code write(key const& k, std::string_view bytes) noexcept {
        if (!state_) return make_error_code(remote_error::other);
        if (k.empty()) return std::make_error_code(std::errc::invalid_argument);
        try {
            std::string const name = redis_key(k);
            std::string const ttl = std::to_string(state_->options.ttl.count());
            return simple(name, set_command(name, bytes, ttl));
        } catch (...) {
            return make_error_code(remote_error::other);
        }
    }

    /// Writes `entries` at once (the optional batch write): `out[i]` is what
    /// `write(entries[i].first, entries[i].second)` would answer, `out` holding one
    /// error_code per entry. The SETs (with write's expiry) are pipelined: one exchange
    /// for a server; on a cluster, one per node, each key sent to the master of its slot
    /// (a key that is redirected, MOVED or ASK, is then written alone, following it; the
    /// keys of a resting or unknown node fail at once, as `write`'s would), on a second
    /// connection per node of the batch writes' own, so that the other calls (a host's
    /// reads and claims while its uploads are on the wire) do not wait for them. Bounded:
    /// the whole batch by one command timeout. Never throws.
    void write_many(std::vector<std::pair<key, std::string_view>> const& entries,
                    std::vector<std::error_code>& out) noexcept {
        try {
            if (batch_answers_ready(entries.size(), out)) write_batch(entries, out);
        } catch (...) {
            for (auto& e : out) e = make_error_code(remote_error::other); // (the caller checks the size)
        }
    }

    std::error_code remove(key const& k) noexcept {
        if (!state_) return make_error_code(remote_error::other);
        if (k.empty()) return {};
        try {
            std::string const name = redis_key(k);
            return simple(name, {"DEL", name});
        } catch (...) {
            return make_error_code(remote_error::other);
        }
    }

    /// Single flight (redis_claims.hpp, docs/design.md): claims `k` for this process with
    /// `SET NAMESPACE:HEX:claim OWNER NX PX request.expiry`; held when another process's
    /// claim stands (one of a process of this machine that is gone is taken over at once);
    /// none when the server fails or refuses the write, or `request.scope` has no `remote`.
    /// Its commands (up to ten, for a dead claim taken over) all end within two command
    /// timeouts; one that cannot is a failure (none), or held when a claim was seen.
    claim_answer try_claim(key const& k, claim_request const& request) noexcept;
    /// Deletes this process's claim of `k` (another's is left alone), within two command
    /// timeouts.
    void release_claim(key const& k) noexcept;
    /// The batch of claims (storage/concept.hpp's try_claim_many): one `SET ... NX PX`
    /// per key, pipelined as read_many's reads are (one exchange per server or node):
    /// `out[i]` claimed, held (its holder not asked, a dead one not taken over: that is
    /// try_claim's), or none (the server failed or refused it, or no `remote` in the scope).
    void try_claim_many(std::vector<key> const& keys, claim_request const& request,
                        std::vector<claim_answer>& out) noexcept;
    /// The batch of releases (storage/concept.hpp's release_claim_many): release_claim's
    /// compare-and-delete script for each key, pipelined on the batch writes' connection
    /// (a key redirected is released alone, following it; a server that refuses scripts:
    /// each released as release_claim does without, while one command timeout from the
    /// start has not passed). Bounded by about one command timeout (a fallback begun
    /// before it ends ends within its own); a failure leaves those claims to their expiry.
    void release_claim_many(std::vector<key> const& keys) noexcept;
    /// write_many(entries, out), then release_claim_many(releases) (storage/concept.hpp's
    /// write_many_then_release). On a server, one exchange on the batch writes' connection:
    /// the SETs, then the release scripts, which the server applies after them (it runs a
    /// connection's commands in order), so that a process that sees a claim gone finds the
    /// entry (unless its SET failed: it then compiles). A release left without an answer
    /// (the exchange failed before it) is sent again in release_claim_many; one refused (a
    /// server without scripts) is released as release_claim does without. On a cluster (a
    /// claim's name is mostly on another master than its entry): the writes, then the
    /// releases. Bounded by about two command timeouts. Never throws.
    void write_many_then_release(std::vector<std::pair<key, std::string_view>> const& entries,
                                 std::vector<key> const& releases, std::vector<std::error_code>& out) noexcept;
    /// read_many(keys, max, out), and the claims of `to_claim`'s keys whose entries are
    /// absent (storage/concept.hpp's read_many_claiming). On a server, one exchange: the
    /// GETRANGEs, then per key to claim one script that takes the claim (`SET ... NX PX`,
    /// as try_claim_many) only if the entry does not exist; its answer claimed, held (nil:
    /// another's claim stands), or none (the entry exists). On a cluster (an entry and its
    /// claim are in different slots, which one script may not touch), or for the keys whose
    /// script the server refused (an ACL without EVAL): the reads, then try_claim_many for
    /// the keys they found absent. Nothing claimed without `remote` in the scope. Bounded
    /// as read_many: the whole, the claims after the reads included, by one command
    /// timeout (claims that find no time left are none). Never throws.
    void read_many_claiming(std::vector<key> const& keys, std::size_t max, std::vector<key> const& to_claim,
                            claim_request const& request, std::vector<std::pair<read_result, std::string>>& out,
                            std::vector<claim_answer>& claims) noexcept;

    /// Every entry of this storage's namespace (on every master of a cluster), with its
    /// size and last use: the optional Storage member `list` (storage/concept.hpp). Names
    /// come from `SCAN ... MATCH namespace:*` (names that are not `namespace:` + a key in
    /// hex are skipped); each page's sizes and idle times are asked in one pipelined
    /// exchange (`OBJECT IDLETIME`, which leaves the server's LRU clock alone, then
    /// `STRLEN`, which on servers before 7.2 counts as a use for `maxmemory` eviction).
    /// last_use_s is 0 when the server does not track idle time (an LFU policy). Each
    /// exchange is bounded by the command timeout; entries written or evicted meanwhile
    /// may or may not be listed, and one may be listed twice (SCAN's guarantees). Stops
    /// at the first failure, which it returns; past redis_options::listing_max_calls
    /// SCAN calls (`protocol`) or listing_timeout (`timeout`) too, and at an answer to
    /// OBJECT IDLETIME or STRLEN that is not an integer (nil, an error) or is longer than
    /// list_reply_bytes (`protocol`: the page's answers take list_reply_bytes per command).
    std::error_code list(std::vector<stored_entry>& out) const noexcept {
        // Logically const: only the connections behind state_ change, never an entry.
        auto& self = const_cast<redis_storage&>(*this);
        return self.scan_pages([&](std::size_t index, std::vector<key> const& page,
                                   std::vector<std::string> const& names) -> std::error_code {
            std::vector<detail::redis_command> commands;
            for (std::string const& name : names) {
                commands.push_back({"OBJECT", "IDLETIME", name});
                commands.push_back({"STRLEN", name});
            }
            std::vector<detail::redis_reply_ptr> replies;
            auto const deadline = detail::redis_clock::now() + state_->options.command_timeout;
            // Each answer is an integer (nil: gone) or an error line: a few bytes each, at
            // most list_reply_bytes, and list_reply_bytes per command for them all, so that
            // a server answering each with a long string costs no more than that.
            detail::redis_client& client = self.state_->client;
            // OBJECT IDLETIME: an integer, or nil (gone); STRLEN: an integer. Another type
            // (another command's reply, a confused server) is never taken as a size.
            std::vector<unsigned> expected;
            for (std::size_t i = 0; i < names.size(); ++i)
                expected.insert(expected.end(), {(1u << REDIS_REPLY_INTEGER) | (1u << REDIS_REPLY_NIL),
                                                 1u << REDIS_REPLY_INTEGER});
            if (auto e = client.pipeline_on(index, commands, replies, list_reply_bytes, deadline, false, expected,
                                            list_reply_bytes * commands.size()))
                return e == remote_error::too_large
                           ? client.record(remote_error::protocol, "OBJECT IDLETIME and STRLEN answers longer than "
                                                                   "integers (the listing is incomplete)")
                           : e;
            std::int64_t const now = std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count();
            for (std::size_t i = 0; i < page.size() && 2 * i + 1 < replies.size(); ++i) {
                redisReply const* idle = replies[2 * i].get();
                redisReply const* length = replies[2 * i + 1].get();
                // Gone since the SCAN (evicted, expired, moved to another master): not listed.
                if (length->type != REDIS_REPLY_INTEGER || length->integer <= 0) continue;
                stored_entry e;
                e.k = page[i];
                e.size = static_cast<std::uint64_t>(length->integer);
                if (idle->type == REDIS_REPLY_INTEGER) e.last_use_s = now - idle->integer;
                out.push_back(e);
            }
            return {};
        });
    }

    /// Calls `visit(key const&)` for each entry in this storage's namespace.
    template <class Visit>
    [[deprecated("use list(std::vector<stored_entry>&), the Storage listing member")]] std::error_code
    for_each_entry(Visit&& visit) noexcept {
        return scan_pages([&](std::size_t, std::vector<key> const& page, std::vector<std::string> const&) {
            for (key const& k : page) visit(k);
            return std::error_code();
        });
    }

    /// The address, password hidden, and the namespace: for logs and --stats.
    std::string describe() const {
        if (!state_) return "no Redis server";
        return state_->client.where().describe() + " (namespace " + state_->options.name_space + ")";
    }
    /// The settings (the password left out). Not on a default-constructed storage.
    redis_options const& options() const noexcept { return state_->options; }
    bool is_cluster() const noexcept { return state_ && state_->client.is_cluster(); }

    /// The last failure any call saw, with a text for a log line.
    redis_failure last_failure() const {
        if (!state_) return {make_error_code(remote_error::other), "no Redis server"};
        return state_->client.last_failure();
    }

    /// Whether `e`, from a call of this storage, failed only a part of it (one node of a
    /// cluster; the others answer): a tier keeps using the storage, counting the error.
    static bool partial_failure(std::error_code const& e) noexcept {
        return e == remote_error::node_down || e == remote_error::node_timeout;
    }

    /// The most bytes a listing takes for one OBJECT IDLETIME or STRLEN reply (an integer,
    /// or an error line), and per command for a page's replies together.
    static constexpr std::size_t list_reply_bytes = 512;

    /// The name of a key on the server: `namespace:` + hex.
    std::string redis_key(key const& k) const { return state_->prefix + k.hex(); }
    /// The name of a key's claim: redis_key + `:claim`.
    std::string claim_name(key const& k) const;

private:
    static redis_options make_options(std::string url) {
        redis_options o;
        o.url = std::move(url);
        return o;
    }

    struct state {
        state(redis_address address, redis_options o)
            : client(std::move(address), o.connect_timeout), options(std::move(o)), prefix(options.name_space + ":") {}
        detail::redis_client client;
        redis_options options; ///< (without the URL and the password)
        std::string prefix;
    };
    using call = detail::redis_client::call;

    detail::redis_clock::time_point call_deadline() const {
        return detail::redis_clock::now() + state_->options.command_timeout;
    }
    /// The deadline of every command of one try_claim or release_claim: two command
    /// timeouts from now.
    detail::redis_clock::time_point claim_deadline() const {
        return detail::redis_clock::now() + 2 * state_->options.command_timeout;
    }

    /// A batch write's start (write_many, write_many_then_release): `out` holds `n`
    /// answers, none an error; false, each answer then `other`, when this object has no
    /// server (default-constructed or moved from): nothing to send. Throws only bad_alloc.
    bool batch_answers_ready(std::size_t n, std::vector<std::error_code>& out) const {
        out.assign(n, state_ ? std::error_code() : make_error_code(remote_error::other));
        return state_ != nullptr;
    }

    /// release_claim on a server that refuses scripts: GET, compare, DEL, both by `until`.
    void release_claim_without_script(std::string const& name, std::string const& owner,
                                      detail::redis_clock::time_point until);

    /// One command, within one command timeout from now.
    call run(std::string const& name, detail::redis_command const& command, std::size_t max_reply) {
        return state_->client.run(name, command, max_reply, call_deadline());
    }
    /// One command of a call that makes several, all by the call's deadline `until`.
    call run(std::string const& name, detail::redis_command const& command, std::size_t max_reply,
             detail::redis_clock::time_point until) {
        return state_->client.run(name, command, max_reply, until);
    }

    std::error_code simple(std::string const& name, detail::redis_command const& command) {
        call c = run(name, command, 4096);
        if (c.error) return c.error;
        if (c.reply->type == REDIS_REPLY_ERROR) return state_->client.error_reply(c.reply.get());
        return {};
    }

    /// The SET of `bytes` under `name`, with the expiry (`ttl`: its seconds) when there is one.
    detail::redis_command set_command(std::string const& name, std::string_view bytes, std::string const& ttl) const {
        detail::redis_command command{"SET", name, bytes};
        if (state_->options.ttl.count() > 0) command.insert(command.end(), {"EX", ttl});
        return command;
    }

    void write_batch(std::vector<std::pair<key, std::string_view>> const& entries, std::vector<std::error_code>& out) {
        std::string const ttl = std::to_string(state_->options.ttl.count());
        std::vector<std::string> names;
        names.reserve(entries.size());
        for (auto const& e : entries) names.push_back(redis_key(e.first));
        pipeline_by_node(
            names, [&](std::size_t i) { return set_command(names[i], entries[i].second, ttl); },
            1u << REDIS_REPLY_STATUS, 4096, std::numeric_limits<std::size_t>::max(),
            [&](std::size_t i, redisReply const* r) {
                if (r->type == REDIS_REPLY_ERROR) out[i] = state_->client.error_reply(r);
            },
            [&](std::size_t i, std::error_code e) { out[i] = e; }, true);
    }

    /// What `read` answers for one GETRANGE reply `r` (bounded by `max`), the bytes in `bytes`.
    read_result read_answer(redisReply const* r, std::size_t max, std::string& bytes) const {
        bytes.clear();
        if (r->type == REDIS_REPLY_ERROR) return {read_status::error, state_->client.error_reply(r)};
        if (r->type == REDIS_REPLY_NIL) return {read_status::absent, {}};
        if (r->type != REDIS_REPLY_STRING)
            return {read_status::error, state_->client.record(remote_error::protocol, "GETRANGE did not return a string")};
        if (r->len == 0) return {read_status::absent, {}};
        if (r->len > max) return {read_status::too_large, make_error_code(remote_error::too_large)};
        bytes.assign(r->str, r->len);
        return {read_status::found, {}};
    }

    /// read_many's batch, the whole by `until` (time_point{}: one command timeout from now).
    void read_batch(std::vector<key> const& keys, std::size_t max,
                    std::vector<std::pair<read_result, std::string>>& out, detail::redis_clock::time_point until = {}) {
        std::size_t const bound = std::min<std::size_t>(max, std::size_t(1) << 40);
        std::string const end = std::to_string(bound);
        std::vector<std::string> names;
        names.reserve(keys.size());
        for (key const& k : keys) names.push_back(redis_key(k));
        pipeline_by_node(
            names, [&](std::size_t i) { return detail::redis_command{"GETRANGE", names[i], "0", end}; },
            (1u << REDIS_REPLY_STRING) | (1u << REDIS_REPLY_NIL), bound + 64, state_->options.batch_max_bytes,
            [&](std::size_t i, redisReply const* r) { out[i].first = read_answer(r, max, out[i].second); },
            [&](std::size_t i, std::error_code e) {
                out[i].second.clear();
                out[i].first = {read_status::error, e};
            },
            false, until);
    }

    /// try_claim_many's batch, the whole by `until` (time_point{}: one command timeout from now).
    void claim_batch(std::vector<key> const& keys, claim_request const& request, std::vector<claim_answer>& out,
                     detail::redis_clock::time_point until = {});

    /// One command per name (`command(i)` for `names[i]`, a name on the server), pipelined:
    /// one exchange for a server; on a cluster, one per node, each command sent to the
    /// master of its name's slot. `answer(i, reply)` gets each reply that is an error or of
    /// a type in `accepted` (bits 1 << REDIS_REPLY_...; or `accepted(i)`, those of
    /// `command(i)`, where the commands differ), a command redirected (MOVED, ASK)
    /// being sent again alone, following it; `fail(i, error)` each name left without one
    /// (a resting or unknown node's at once, as `run` would). A reply of another type
    /// closes its connection (out of step) and fails the rest of its node's. Bounded: the
    /// whole by one command timeout, each reply by `max_reply`, the replies together by
    /// `budget` bytes (the names after it fail with remote_error::too_large). The nodes are
    /// asked one after another, each within half of the time left (the last one all of
    /// it), so that a stalled node uses at most half and the nodes after it still answer;
    /// a node that fails goes through redis_client::exchange_failed (rested only when it
    /// had at least a quarter of the call's time, else its names fail as `timeout`). A redirection
    /// to a redis:// server that is a cluster's node fails every name not answered yet (no
    /// answer from a part of it). `batch`: on the batch writes' own connection of each node (write_many,
    /// release_claim_many), not the one the host's calls use. `call_until`: the whole call's
    /// deadline, where it shares one with a step before it (time_point{}: one command timeout
    /// from now). read_many, write_many and the claims' batches send their commands through it.
    template <class Command, class Accepted, class Answer, class Fail>
    void pipeline_by_node(std::vector<std::string> const& names, Command const& command, Accepted const& accepted,
                          std::size_t max_reply, std::size_t budget, Answer&& answer, Fail&& fail,
                          bool batch = false, detail::redis_clock::time_point call_until = {}) {
        auto const expected_of = [&](std::size_t i) -> unsigned {
            if constexpr (std::is_invocable_r_v<unsigned, Accepted const&, std::size_t>)
                return accepted(i);
            else
                return static_cast<unsigned>(accepted);
        };
        detail::redis_client& client = state_->client;
        auto const deadline = call_until == detail::redis_clock::time_point{} ? call_deadline() : call_until;
        auto const whole = deadline - detail::redis_clock::now(); // (the call's time, for exchange_failed)
        if (!client.is_cluster() && client.serves_some_keys_only()) {
            for (std::size_t i = 0; i < names.size(); ++i) fail(i, make_error_code(remote_error::cluster_node));
            return;
        }
        // The names of each node, in the order given.
        std::vector<std::pair<std::size_t, std::vector<std::size_t>>> groups;
        for (std::size_t i = 0; i < names.size(); ++i) {
            std::size_t node = 0;
            if (client.is_cluster()) {
                std::uint16_t const slot = detail::redis_hash_slot(names[i]);
                std::optional<std::size_t> const target = client.owner(slot, deadline);
                if (!target) {
                    fail(i, client.unserved(slot, deadline));
                    continue;
                }
                if (std::error_code e = client.resting(*target)) {
                    fail(i, e);
                    continue;
                }
                node = *target;
            }
            auto g = std::find_if(groups.begin(), groups.end(), [&](auto const& x) { return x.first == node; });
            if (g == groups.end()) g = groups.insert(groups.end(), {node, {}});
            g->second.push_back(i);
        }
        std::vector<char> answered(names.size(), 0); // (kept when a redirection fails the rest)
        std::size_t asked = 0;
        for (auto const& [node, members] : groups) {
            // This node's share of the call's time: half of what is left; the last, all of it.
            auto const now = detail::redis_clock::now();
            auto const until = ++asked == groups.size() || now >= deadline ? deadline : now + (deadline - now) / 2;
            if (budget == 0) {
                std::error_code const e = client.record(remote_error::too_large, "a batch passed batch_max_bytes");
                for (std::size_t i : members) fail(i, e);
                continue;
            }
            std::vector<detail::redis_command> commands;
            commands.reserve(members.size());
            for (std::size_t i : members) commands.push_back(command(i));
            std::vector<detail::redis_reply_ptr> replies;
            std::vector<unsigned> expected;
            expected.reserve(members.size());
            for (std::size_t i : members) expected.push_back(expected_of(i));
            // (The types are checked under the connection's lock: one of the wrong type
            // closes it there, and the replies from it on are not kept.)
            std::error_code failed =
                client.pipeline_on(node, commands, replies, max_reply, until, false, expected, budget, batch);
            if (failed && client.is_cluster()) {
                failed = client.exchange_failed(node, failed, until - now, whole);
            } else if (!failed && client.is_cluster()) {
                client.node_answered(node);
            }
            for (std::size_t j = 0; j < members.size(); ++j) {
                std::size_t const i = members[j];
                if (j >= replies.size()) {
                    fail(i, failed ? failed : make_error_code(remote_error::protocol));
                    continue;
                }
                redisReply const* r = replies[j].get();
                std::size_t const taken = r->type == REDIS_REPLY_STRING ? r->len + 16 : 16;
                budget = budget > taken ? budget - taken : 0;
                if (r->type == REDIS_REPLY_ERROR && detail::parse_redis_redirection(std::string_view(r->str, r->len))) {
                    // Moved or asked elsewhere: sent alone, following the redirection (and,
                    // on a redis:// server that is a cluster's node, failing as `run` does),
                    // its reply counted against the budget as the pipeline's are (a slot
                    // moved during a batch redirects every key of it).
                    if (budget == 0) {
                        fail(i, client.record(remote_error::too_large, "a batch passed batch_max_bytes"));
                        continue;
                    }
                    call c = client.run(names[i], commands[j], max_reply, until);
                    if (!c.error) {
                        redisReply const* alone = c.reply.get();
                        std::size_t const cost = alone->type == REDIS_REPLY_STRING ? alone->len + 16 : 16;
                        budget = budget > cost ? budget - cost : 0;
                    }
                    if (c.error == remote_error::cluster_node) {
                        // (A redis:// server that is a node of a cluster: no answer from a part of it.)
                        for (std::size_t all = 0; all < names.size(); ++all)
                            if (!answered[all]) fail(all, c.error);
                        return;
                    }
                    if (c.error)
                        fail(i, c.error);
                    else
                        answer(i, c.reply.get()), answered[i] = 1;
                    continue;
                }
                answer(i, r);
                answered[i] = 1;
            }
        }
    }

    /// SCANs the namespace on every master (the one server, or each master of a
    /// cluster) and calls `page(master index, keys, their names)` for each non-empty page
    /// of keys; stops at the first error, a page's too (an exception: remote_error::other).
    template <class Page>
    std::error_code scan_pages(Page&& page) noexcept {
        if (!state_) return make_error_code(remote_error::other);
        try {
            detail::redis_client& client = state_->client;
            std::vector<std::size_t> masters;
            if (std::error_code e = client.master_nodes(masters, call_deadline())) return e;
            std::string pattern;
            for (char c : state_->prefix) {
                if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
                pattern += c;
            }
            pattern += '*';
            auto const listing_deadline = detail::redis_clock::now() + state_->options.listing_timeout;
            std::uint64_t calls = 0;
            for (std::size_t index : masters) {
                std::string cursor = "0";
                do {
                    // A server whose cursor never comes back to 0 (or an endless keyspace)
                    // ends the listing here, never in a loop without end.
                    if (calls == state_->options.listing_max_calls)
                        return client.record(remote_error::protocol, "SCAN did not finish after " + std::to_string(calls) +
                                                                " calls (listing_max_calls); the listing is incomplete");
                    if (detail::redis_clock::now() >= listing_deadline)
                        return client.record(remote_error::timeout,
                                      "SCAN did not finish within " +
                                          std::to_string(state_->options.listing_timeout.count()) +
                                          " ms (listing_timeout); the listing is incomplete");
                    ++calls;
                    auto const deadline = call_deadline();
                    call c = client.exchange_on(index, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, std::size_t(4) << 20,
                                         deadline, false, true);
                    if (c.error) return c.error;
                    redisReply const* r = c.reply.get();
                    if (r->type == REDIS_REPLY_ERROR) return client.error_reply(r);
                    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
                        r->element[1]->type != REDIS_REPLY_ARRAY)
                        return client.record(remote_error::protocol, "SCAN did not return a cursor and names");
                    cursor.assign(r->element[0]->str, r->element[0]->len);
                    std::vector<key> keys;
                    std::vector<std::string> names;
                    for (std::size_t i = 0; i < r->element[1]->elements; ++i) {
                        redisReply const* name = r->element[1]->element[i];
                        if (name->type != REDIS_REPLY_STRING) continue;
                        std::string_view const text(name->str, name->len);
                        if (text.substr(0, state_->prefix.size()) != state_->prefix) continue;
                        if (auto k = key::from_hex(text.substr(state_->prefix.size()))) {
                            keys.push_back(*k);
                            names.emplace_back(text);
                        }
                    }
                    if (!keys.empty())
                        if (std::error_code e = page(index, static_cast<std::vector<key> const&>(keys),
                                                     static_cast<std::vector<std::string> const&>(names)))
                            return e;
                } while (cursor != "0");
            }
            return {};
        } catch (...) {
            return make_error_code(remote_error::other);
        }
    }

    std::unique_ptr<state> state_;
};

inline from_env_result<redis_options> redis_storage::redis_options_from_env(settings_reader const& env) {
    redis_options o;
    o.url = env.value("_REMOTE");
    if (detail::is_off(o.url)) return from_env_result<redis_options>::not_configured();
    std::string why;
    if (!redis_address::parse(o.url, why))
        return from_env_result<redis_options>::off(env.name("_REMOTE") + "=" + why + "; the remote is off");
    std::string const password_file = env.value("_REMOTE_PASSWORD_FILE");
    if (!password_file.empty()) {
        std::string const reason = read_secret_file(password_file, o.password);
        if (!reason.empty())
            return from_env_result<redis_options>::off(env.name("_REMOTE_PASSWORD_FILE") + "=\"" + password_file +
                                                       "\" cannot be used: " + reason + "; the remote is off");
        if (!o.password.empty() && o.password.back() == '\n') o.password.pop_back();
        if (!o.password.empty() && o.password.back() == '\r') o.password.pop_back();
    }
    std::string const name_space = env.value("_REMOTE_NAMESPACE");
    if (!name_space.empty()) o.name_space = name_space;
    auto positive = [&](char const* suffix, std::chrono::milliseconds fallback) {
        std::chrono::milliseconds const d = env.milliseconds(suffix, fallback);
        if (d.count() > 0 && d <= redis_max_timeout) return d;
        env.report_value(suffix, env.value(suffix),
                         std::string(d.count() > 0 ? "is longer than a timeout may be (at most " +
                                                         std::to_string(redis_max_timeout.count() / 1000) + " s)"
                                                   : "is not a positive duration") +
                             "; using the default, " + std::to_string(fallback.count()) + " ms");
        return fallback;
    };
    o.connect_timeout = positive("_REMOTE_CONNECT_TIMEOUT", o.connect_timeout);
    o.command_timeout = positive("_REMOTE_TIMEOUT", o.command_timeout);
    std::string const ttl = env.value("_REMOTE_TTL");
    if (!ttl.empty()) {
        if (std::optional<std::uint64_t> const seconds = parse_whole_number(ttl, 10))
            o.ttl = std::chrono::seconds(static_cast<std::chrono::seconds::rep>(*seconds));
        else
            env.report_value("_REMOTE_TTL", ttl, "is not a number of seconds; using the default, 0 (no expiry)");
    }
    return from_env_result<redis_options>(std::move(o));
}

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::redis_storage>::value);
static_assert(compile_cache::detail::has_list<compile_cache::redis_storage>::value);
static_assert(compile_cache::detail::has_read_many<compile_cache::redis_storage>::value);
static_assert(compile_cache::detail::has_write_many<compile_cache::redis_storage>::value);
static_assert(compile_cache::detail::has_write_many_then_release<compile_cache::redis_storage>::value);
static_assert(compile_cache::detail::has_read_many_claiming<compile_cache::redis_storage>::value);

#include <compile_cache/storage/redis/redis_claims.hpp>
