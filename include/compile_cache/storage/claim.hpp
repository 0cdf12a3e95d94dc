// compile_cache: what a storage's optional claim members (single flight) take and answer,
// and who this process is in a claim; storage/concept.hpp detects the members and
// single_flight.hpp drives them.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/made_once.hpp>
#include <compile_cache/detail/posix_io.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace compile_cache {

/// Which claims a miss takes before it compiles (PREFIX_SINGLE_FLIGHT): none, the local
/// storage's (a directory: the processes of one machine), the remote's (Redis: the
/// fleet), or both. A storage that is neither local nor remote for a scope takes none.
enum class claim_scope : unsigned char { none = 0, local = 1, remote = 2, both = 3 };

inline constexpr bool includes(claim_scope s, claim_scope part) noexcept {
    return (static_cast<unsigned>(s) & static_cast<unsigned>(part)) != 0;
}

/// What a claim asks for: its scope, and how long it stands at most (`expiry`: a remote
/// claim is dropped by the server after it; a directory claim of another machine, whose
/// owner cannot be asked, is deemed dead after it).
struct claim_request {
    claim_scope scope = claim_scope::both;
    std::chrono::milliseconds expiry{30000};
};

enum class claim_state : unsigned char {
    none,    ///< no claim taken: the storage cannot (read-only, off, failing): compile as without claims
    claimed, ///< this process holds the claim: compile, store, then release_claim
    held,    ///< a live claim of another process (or thread) stands: wait for its entry
};

/// A storage's answer to `try_claim(key const&, claim_request const&)`. Never throws.
struct claim_answer {
    claim_state state = claim_state::none;
    bool took_over = false; ///< claimed after removing a dead claim (its owner gone, or expired)
    std::string holder;     ///< who holds a claim found held (for the log), when known
    /// Claimed, and the entry was there once the claim was taken (another process stored
    /// it and released its claim after this one's miss): read it before compiling.
    bool entry_seen = false;
};

namespace detail {

/// This process as a claim names it: `pid=N boot=BOOT_ID start=TICKS host=NAME run=MARK`,
/// the process's start time in clock ticks since boot (so that a reused pid is told apart)
/// and its program image's mark (so that the image it ran before an exec is told apart).
COMPILE_CACHE_DECL std::string claim_owner() noexcept;

/// Whether the process a claim names (claim_owner()'s text) is alive: false when it ran on
/// this boot of this machine and is gone (no such pid, or the pid's start time differs, or
/// it is this process under another image's `run=` mark: before an exec);
/// true when it is alive, or on another machine or boot (`same_machine` false: it cannot
/// be asked, and the claim's expiry decides).
COMPILE_CACHE_DECL bool claim_owner_alive(std::string_view owner, bool& same_machine) noexcept;

/// The value of `field=` in a claim_owner() text ("" when absent).
COMPILE_CACHE_DECL std::string claim_field(std::string_view owner, std::string_view field);

} // namespace detail

} // namespace compile_cache

#include <compile_cache/storage/impl/claim.ipp>
