// compile_cache: how basic_cache checks an entry by signature when it came from a tier's
// remote, hands the storage what the check found, and signs what the tier uploads; used
// by cache.hpp only.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/detection.hpp>
#include <compile_cache/detail/elapsed_time.hpp>
#include <compile_cache/detail/log.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/identity_record.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/concept.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compile_cache::detail {

/// What a cache says when signatures are configured over a Storage that is not a tier.
inline constexpr char const signatures_need_a_tier_line[] =
    "trusted keys need a tier (tiered_storage); this storage cannot check signatures";

/// A Storage whose reads say which answers came from a shared remote: a static
/// `from_remote` origin (tiered_storage::from_remote).
template <class S>
using from_remote_origin_t = decltype(static_cast<std::uint32_t>(S::from_remote));
template <class S>
using has_from_remote_origin = is_detected<from_remote_origin_t, S>;
/// A Storage that signs what it uploads to its remote:
/// `set_remote_sealer(std::function<bool(key const&, std::string_view, std::string&)>)`.
template <class S>
using set_remote_sealer_t = decltype(std::declval<S&>().set_remote_sealer(
    std::declval<std::function<bool(key const&, std::string_view, std::string&)>>()));
template <class S>
using has_set_remote_sealer = is_detected<set_remote_sealer_t, S>;
/// A Storage that copies identity records from its remote into its local storage by
/// itself: `set_record_resealer(std::function<bool(key const&, std::string_view, std::string&)>)`.
template <class S>
using set_record_resealer_t = decltype(std::declval<S&>().set_record_resealer(
    std::declval<std::function<bool(key const&, std::string_view, std::string&)>>()));
template <class S>
using has_set_record_resealer = is_detected<set_record_resealer_t, S>;

/// Whether `signatures` (cache_options::signatures) can be honoured over Storage: true
/// without them, or over a tier (the entries it reads from its remote are checked by
/// signature). Else false, said through `logger`, whatever `secret` holds: over a
/// Storage that is not a tier nothing would check a signature, and its entries would
/// stand on the HMAC (which every reader's secret can make) or a CRC-32C; a host that
/// asked for signatures and cannot have them gets a disabled cache, as with a bad key file.
template <class Storage>
bool signatures_honoured_or_said(bool signatures, bool secret, line_logger const& logger) noexcept {
    if (!signatures || has_from_remote_origin<Storage>::value) return true;
    try {
        log_or_stderr(logger, "cache_options::signatures: " + std::string(signatures_need_a_tier_line) +
                                  (secret ? "; its entries would be checked by the secret alone, which every reader "
                                            "holds"
                                          : "; its entries would be checked by a CRC-32C alone") +
                                  ": the cache is disabled");
    } catch (...) { // bad_alloc: the line without its detail
        log_or_stderr(logger, signatures_need_a_tier_line);
    }
    return false;
}

/// How an entry the Storage's read answered `rr` for is checked: by `remote` (a
/// signature) when it came from a tier's remote and signatures are configured, else by
/// `local`, as local entries are.
template <class Storage>
envelope_auth const& auth_for(read_result const& rr, envelope_auth const& local, envelope_auth const& remote) noexcept {
    if constexpr (has_from_remote_origin<Storage>::value) {
        if (remote.is_signed() && rr.origin == static_cast<std::uint32_t>(Storage::from_remote)) return remote;
    }
    (void)rr, (void)remote;
    return local;
}

/// Refuses a signer's copy (envelope flag 0x0200) that the local mode accepted when its
/// signer is not one of `remote`'s trusted keys (taken out of the trusted-keys files
/// since the copy was made, or no signatures configured): untrusted_signer, as the signed
/// entry itself is now. Any other entry is left as it is.
inline void refuse_untrusted_copy(envelope_fields& env, envelope_auth const& remote) noexcept {
    if (env.status != envelope_status::ok || !env.signer_copy) return;
    if (remote.is_signed() && remote.signatures()->trusts(env.signer_id)) return;
    env.status = envelope_status::untrusted_signer;
    env.payload = {};
}

/// What settle_local_copy asked of the remote: its answer (absent when it was not asked,
/// and when read_remote answers absent: no remote, skipped, or failed) and the time its
/// read and check took (0 when it was not asked).
struct remote_refetch {
    read_status status = read_status::absent;
    std::uint64_t ns = 0;
};

/// Tells `storage` what the check of `bytes` (by `auth`) found; an entry accepted by
/// signature is handed over resealed in the local mode (`local`), so that the tier keeps
/// it locally as a local entry and later hits cost what local hits cost. Checked by
/// signature, an entry no trusted key signed is no other secret's entry to keep (as the
/// tier keeps those): one of an untrusted signer is, to the storage, sound but not for
/// here (foreign_version: a writer replaces it after a rotation), and any other refusal
/// is damage (a forgery or garbage, which a writer's store replaces).
template <class Storage>
void tell_checked(Storage& storage, key const& k, std::string_view bytes, read_result const& rr,
                  envelope_status status, envelope_auth const& auth, envelope_auth const& local) {
    if (status == envelope_status::untrusted_signer) status = envelope_status::foreign_version;
    if (status == envelope_status::unauthenticated && auth.is_signed()) status = envelope_status::corrupt;
    if (status == envelope_status::ok && &auth != &local) {
        std::string resealed;
        if (reseal_envelope(bytes, auth, local, resealed)) tell_entry_checked(storage, k, resealed, rr, status);
        return;
    }
    tell_entry_checked(storage, k, bytes, rr, status);
}

/// Settles an entry that `local` checked (`env`, over `bytes`): a signer's copy whose
/// signer is no longer trusted is refused (refuse_untrusted_copy), and over a Storage that
/// reads its remote alone (`from_remote` and read_remote: a tier) the remote's entry for
/// `k` is then read into `fetched` and checked by signature (`remote`). Returns the auth
/// that checked what `env` now holds (never null): `remote` when the remote's entry verified (after a
/// rotation the remote holds the kernel signed by a trusted key; `env`, `rr` and `bytes`
/// are then its own, for the caller to go on with as with any entry from the remote), else
/// `local`. An entry from the remote that does not verify is told to the storage as
/// tell_checked tells it (counted against the remote, not copied). No clock is read unless
/// a copy is refused.
template <class Storage>
envelope_auth const* settle_local_copy(Storage& storage, key const& k, std::string_view format_id,
                                       std::size_t max_size, envelope_auth const& local, envelope_auth const& remote,
                                       std::string_view& bytes, std::string& fetched, read_result& rr,
                                       envelope_fields& env, remote_refetch& refetch) {
    refuse_untrusted_copy(env, remote);
    if constexpr (has_read_remote<Storage>::value && has_from_remote_origin<Storage>::value) {
        if (env.status != envelope_status::untrusted_signer || !env.signer_copy || !remote.is_signed()) return &local;
        auto const asked = std::chrono::steady_clock::now();
        read_result const answer = storage.read_remote(k, fetched, max_size);
        refetch.status = answer.status;
        envelope_fields checked;
        if (answer.status == read_status::found) checked = check_envelope(fetched, k, format_id, max_size, remote);
        if (answer.status != read_status::absent) refetch.ns = elapsed_ns(asked);
        if (answer.status != read_status::found) return &local;
        if (checked.status != envelope_status::ok) {
            tell_checked(storage, k, fetched, answer, checked.status, remote, local);
            return &local;
        }
        env = checked;
        rr = answer;
        bytes = fetched;
        return &remote;
    }
    (void)storage, (void)k, (void)format_id, (void)max_size, (void)bytes, (void)fetched, (void)rr, (void)refetch;
    return &local;
}

/// With signatures (`remote` signed), a Storage that uploads to a remote
/// (set_remote_sealer) gets the function that turns a store's entry (sealed by `local`)
/// into the one it uploads: signed, or none (false: not uploaded) without a signing key.
/// And a Storage that copies identity records from its remote by itself
/// (set_record_resealer) gets the function that checks such a record by signature and
/// reseals it in the local mode, so that a later local read accepts it; one that does
/// not verify is not kept (false).
template <class Storage>
void pass_sealer_to_storage(Storage& storage, envelope_auth const& local, envelope_auth const& remote) {
    if (!remote.is_signed()) return;
    if constexpr (has_set_remote_sealer<Storage>::value) {
        storage.set_remote_sealer(
            [local, remote](key const&, std::string_view entry, std::string& out) {
                try {
                    return reseal_envelope(entry, local, remote, out);
                } catch (...) {
                    out.clear();
                    return false;
                }
            },
            remote.signatures()->can_sign());
    }
    if constexpr (has_set_record_resealer<Storage>::value) {
        storage.set_record_resealer([local, remote](key const& rk, std::string_view record, std::string& out) {
            try {
                out.clear();
                if (check_envelope(record, rk, identity_record_format, identity_record_max_size, remote).status !=
                    envelope_status::ok)
                    return false;
                return reseal_envelope(record, remote, local, out);
            } catch (...) {
                out.clear();
                return false;
            }
        });
    }
    (void)storage, (void)local;
}

/// The untrusted signers a cache has named in its log, so that each is named once.
class untrusted_signers_said {
public:
    /// The log detail of an untrusted signer's miss: its key id, the first time it is
    /// seen (at most 64 are remembered); empty after that.
    COMPILE_CACHE_DECL std::string first_time(envelope_fields const& env);

private:
    std::mutex mutex_;
    std::vector<std::string> said_;
};

} // namespace compile_cache::detail

#include <compile_cache/cache/impl/signed_entry_checks.ipp>
