// compile-cache: what checking one entry concluded — its envelope opened by the
// library's inspect_envelope under the given secret, and whether it is stored under
// its own key — for every command that reads entries, on any cache.
#pragma once

#include "opened_cache.hpp"

#include <compile_cache/envelope.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace compile_cache_tool {

/// The largest entry read: the library's default bound on an entry
/// (cache_options::max_entry_size). A larger one is judged without being read.
inline constexpr std::uint64_t max_entry_read = std::uint64_t{64} << 20;

/// What checking one entry concluded.
enum class verdict {
    sound,     ///< the check value (CRC-32C or HMAC) verifies and the key is the one it is stored under
    bad,       ///< damaged, truncated, for another key, or not authenticated under the secret
    /// Cannot be judged here: keyed without a secret given, another envelope version, too
    /// large, a read that failed (permissions, I/O), or gone since it was listed.
    unchecked,
    /// A signed entry whose signer is none of the trusted keys given (--trusted-keys-file):
    /// neither checked nor bad (a key rotated out, or never trusted); never removed.
    untrusted,
};

char const* to_string(verdict v) noexcept;

struct checked_entry {
    verdict result = verdict::bad;
    std::string problem; ///< for bad and unchecked: why, one phrase
    std::string read_cause; ///< unchecked for want of a read: what such entries are (unchecked_cause)
    bool gone = false;      ///< unchecked: not there any more (evicted or removed since the listing)
    bool read_failed = false; ///< unchecked: the storage refused the read (an I/O error, a server's): exit 3
    compile_cache::opened_envelope envelope; ///< its payload view is cleared: only sizes are kept
    std::uint64_t file_size = 0;
    std::uint64_t payload_size = 0;
    std::uint64_t check_size = 0;
};

/// The size the entry would have with its payload uncompressed (its size when it is not
/// compressed): what a host without compression would have stored.
inline std::uint64_t uncompressed_size(checked_entry const& e) {
    if (!e.envelope.compressed) return e.file_size;
    // The stored payload field is the declared size (8 bytes) and the frame.
    return e.file_size - e.payload_size - 8 + e.envelope.uncompressed_size;
}

/// Checks the bytes stored under the key whose hex is `name`, in `auth`'s mode.
checked_entry check_bytes(std::string const& bytes, std::string const& name, compile_cache::envelope_auth const& auth);

/// Reads `e` from `cache` (its use left alone) and checks it; `bytes` keeps what was read.
checked_entry read_and_check(opened_cache const& cache, listed_entry const& e, compile_cache::envelope_auth const& auth,
                             std::string& bytes);

/// The public keys of --trusted-keys-file (read by the library's own reader, as
/// PREFIX_TRUSTED_KEYS_FILE is): signed entries are checked by signature against them.
struct trusted_signers {
    compile_cache::envelope_auth auth; ///< signed_by the keys; unset (is_signed() false): none given
    std::vector<std::pair<compile_cache::entry_signer_id, std::string>> names; ///< each key's id and name

    bool given() const noexcept { return auth.is_signed(); }
    /// Whether keys were given and one of them has the id `id`: what a host asks of a
    /// signer's copy (refuse_untrusted_copy) before it uses it.
    bool trusts(compile_cache::entry_signer_id const& id) const { return given() && auth.signatures()->trusts(id); }
    /// The name of the trusted key of id `id`; empty when none has it.
    std::string name_of(compile_cache::entry_signer_id const& id) const;
};

/// A signer's key id as 16 hex digits.
std::string signer_hex(compile_cache::entry_signer_id const& id);

/// check_bytes and read_and_check, a signed entry checked by signature against
/// `trusted` when keys were given (else as above: not checked).
checked_entry check_bytes(std::string const& bytes, std::string const& name, compile_cache::envelope_auth const& auth,
                          trusted_signers const* trusted);
checked_entry read_and_check(opened_cache const& cache, listed_entry const& e, compile_cache::envelope_auth const& auth,
                             std::string& bytes, trusted_signers const* trusted);

/// Why an entry could not be checked, as what was missing: "HMAC entries: give
/// --secret-file", "signed entries: give --trusted-keys-file", ... (for verify's and
/// copy's lines).
std::string unchecked_cause(checked_entry const& e);

} // namespace compile_cache_tool
