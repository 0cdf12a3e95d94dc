// compile_cache: cache_options, the settings of a basic_cache, and how from_env reads the
// cache's own ones from PREFIX_* variables before it asks its storage.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/record_identities_setting.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/secret_file.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/single_flight.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compile_cache {

/// Settings of a cache; from_env fills them from PREFIX_* variables.
struct cache_options {
    std::size_t max_entry_size = std::size_t{64} << 20; ///< larger entries are neither read nor written
    std::function<void(std::string_view)> logger;        ///< one-line diagnostics; silent when empty
    /// The secret (any bytes; 32 random bytes are plenty) that authenticates entries:
    /// when not empty, entries are written with an HMAC-SHA256 under it, and only
    /// entries whose HMAC verifies are loaded; the others are misses with reason
    /// `unauthenticated`. Empty (the default): unkeyed entries, checked by a CRC-32C
    /// against accidents only. Every process sharing a directory needs the same
    /// secret, or none. See docs/security.md.
    std::string secret;
    /// Each store also records the entry under the kernel's identity (one small extra
    /// write), so that an `absent` miss can say what changed (explain.hpp).
    bool record_identities = true;
    /// Verify mode: the share of hits (0 to 1; 1 = every hit) that are also compiled
    /// and compared byte for byte with the loaded artifact (counted verified,
    /// unsound or nondeterministic). 0: none (the default).
    double verify_fraction = 0;
    /// A kernel whose compile took less is not stored (counted store-skipped.cheap).
    std::chrono::nanoseconds min_compile_time{0};
    /// Signed entries on a tier's remote (compile_cache/signing/signed_entries.hpp makes
    /// them; from_env from PREFIX_SIGNING_KEY_FILE and PREFIX_TRUSTED_KEYS_FILE). When set,
    /// an entry the tier read from its remote is accepted only when one of its trusted
    /// keys signed it (else a miss, `unauthenticated` or `untrusted-signer`), and is then
    /// kept locally sealed as local entries are (`secret`, or a CRC-32C); the tier's
    /// uploads are signed by its signing key, and without one nothing is uploaded. Local
    /// entries are checked as without it. Null (the default): the remote's entries are
    /// checked as local ones. Set over a Storage that is not a tier, they would check
    /// nothing: the cache is then disabled, secret or not (one line through the logger).
    std::shared_ptr<entry_signatures const> signatures;
    /// Single flight (single_flight.hpp): a miss claims its key before it compiles, and a
    /// miss that finds another process's claim waits for its entry, within a bound.
    single_flight_options single_flight{};
    /// For a cache whose Compression policy compresses (compile_cache/compression/zstd.hpp):
    /// the level payloads are compressed at (`PREFIX_COMPRESS`); nullopt: the policy's
    /// default level; 0: none (entries are written plain; compressed ones are still read).
    /// A cache without such a policy writes plain entries whatever this says.
    std::optional<int> compression_level{};
    /// Payloads smaller than this many bytes are written plain; so is a payload that
    /// does not come out smaller. docs/benchmarks.md ("Compressed entries") says why 512.
    std::size_t compression_threshold = 512;
};

namespace detail {

/// Reads PREFIX_VERIFY and PREFIX_MIN_COMPILE_TIME into `options`; a value that does
/// not parse is one line through `env`, and the default stays.
COMPILE_CACHE_DECL void cache_settings_from_env(settings_reader const& env, cache_options& options);

/// What basic_cache::from_env reads before it asks its storage: the cache's own settings
/// (PREFIX_LOG, PREFIX_SECRET_FILE, then PREFIX_VERIFY and PREFIX_MIN_COMPILE_TIME), and
/// the storage_settings it hands the storage: authenticated (a secret), remote trusted
/// (authenticated, or PREFIX_REMOTE_INSECURE on, read when PREFIX_REMOTE is set), the
/// logger, and cache_off (the secret file's line when it cannot be used; the settings
/// after it are then not read). The cache's own lines wait in `held` until the storage
/// shows it is wanted.
struct cache_env_settings {
    cache_options options;
    storage_settings storage;
    std::shared_ptr<held_lines> held;
    /// Whether a remote is trusted without counting trusted keys (a secret, or the
    /// insecure setting): what a storage that is itself the remote gets, since only a
    /// tier's reads are checked by signature (basic_cache::auth_for).
    bool remote_trusted_without_signatures = false;
};
COMPILE_CACHE_DECL cache_env_settings read_cache_env_settings(std::string_view prefix);

/// Reads PREFIX_SIGNING_KEY_FILE and PREFIX_TRUSTED_KEYS_FILE into options.signatures
/// through the registered loader (signing/signed_entries.hpp); empty, or the line that
/// disables the cache (a file that cannot be used, or no loader in this program).
COMPILE_CACHE_DECL std::string read_signature_files(settings_reader const& env, cache_options& options);


/// The line said for `name`, a variable of the cache's prefix, when it looks like a
/// misspelling of one of `known` (the settings of the cache and its storage) and is none
/// of them: at most 2 letters apart, or a file setting without its `_FILE`. Empty otherwise (a known
/// name, or a variable of the host's own, or one its storage reads without listing it).
COMPILE_CACHE_DECL std::string misspelled_setting_line(std::string const& name,
                                                       std::vector<environment_setting> const& known);

/// The settings basic_cache::environment_settings lists after its Storage's: the cache's
/// own, one line each; PREFIX_COMPRESS's when `compress_max_level` is not 0 (a cache
/// whose Compression policy compresses, up to that level).
COMPILE_CACHE_DECL void add_cache_environment_settings(std::string_view prefix, std::vector<environment_setting>& s,
                                                       int compress_max_level);

} // namespace detail
} // namespace compile_cache

#include <compile_cache/impl/cache_options.ipp>
