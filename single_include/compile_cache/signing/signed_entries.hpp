// compile_cache: Ed25519-signed entries for a tier's shared remote, the envelope's
// signed mode made of signing/ed25519.hpp's keys (optional: needs libsodium, Debian
// libsodium-dev; link compile_cache::signing, or -lsodium on the single-header route).
// Not in the umbrella header.
//
// A program that includes this header (in any one of its translation units) lets
// basic_cache::from_env read PREFIX_SIGNING_KEY_FILE and PREFIX_TRUSTED_KEYS_FILE; one
// built without it disables the cache, with one line, when either is set. A host that
// constructs its cache itself puts ed25519_entry_signatures in cache_options::signatures.
// docs/security.md says what signatures protect against; docs/design.md how they meet
// the tier.
#pragma once

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/signing/ed25519.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace compile_cache {

/// entry_signatures by Ed25519 keys: a writer's secret key (optional) and the public keys
/// a reader trusts. A writer's own public key is trusted too, so that it reads back what
/// it wrote.
class ed25519_entry_signatures final : public entry_signatures {
public:
    /// A reader: entries signed by one of `trusted` are accepted; nothing is signed.
    explicit ed25519_entry_signatures(trusted_keys trusted) : trusted_(std::move(trusted)) {}
    /// A writer: entries are signed by `signer`; those of `trusted` and of `signer` are accepted.
    explicit ed25519_entry_signatures(ed25519_signer signer, trusted_keys trusted = {})
        : signer_(std::move(signer)), trusted_(std::move(trusted)) {
        trusted_.add(signer_->public_key());
    }

    bool can_sign() const noexcept override { return signer_.has_value(); }
    entry_signer_id signer_id() const noexcept override { return signer_ ? signer_->id() : entry_signer_id{}; }
    void sign(unsigned char const* message, std::size_t size, unsigned char* signature) const override {
        ed25519_signature const s = signer_.value().sign(message, size);
        std::copy(s.begin(), s.end(), signature);
    }
    signature_verdict verify(entry_signer_id const& id, unsigned char const* message, std::size_t size,
                             unsigned char const* signature) const noexcept override {
        switch (trusted_.verify(id, message, size, signature)) {
        case signature_check::ok: return signature_verdict::ok;
        case signature_check::untrusted_signer: return signature_verdict::untrusted_signer;
        default: return signature_verdict::bad_signature;
        }
    }
    bool trusts(entry_signer_id const& id) const noexcept override { return trusted_.find(id) != nullptr; }

    /// The keys accepted (the trusted keys file's, and the writer's own).
    trusted_keys const& trusted() const noexcept { return trusted_; }

    /// What the two settings' files configure: a signing key file (may be empty: a
    /// reader), a trusted-keys file (may be empty: a writer that trusts its own key);
    /// null and why (one sentence naming the setting and the file, never a key byte)
    /// when a file named cannot be used, or when both are empty.
    static std::shared_ptr<ed25519_entry_signatures> from_files(detail::signature_files const& files,
                                                                std::string& why) {
        why.clear();
        std::optional<trusted_keys> trusted;
        if (!files.trusted_keys_file.empty()) {
            trusted = trusted_keys::from_file(files.trusted_keys_file, why);
            if (!trusted) {
                why = files.trusted_keys_setting + "=\"" + files.trusted_keys_file + "\": " + why;
                return nullptr;
            }
        }
        if (!files.signing_key_file.empty()) {
            std::optional<ed25519_signer> signer = ed25519_signer::from_file(files.signing_key_file, why);
            if (!signer) {
                why = files.signing_key_setting + "=\"" + files.signing_key_file + "\": " + why;
                return nullptr;
            }
            return std::make_shared<ed25519_entry_signatures>(std::move(*signer),
                                                              trusted ? std::move(*trusted) : trusted_keys());
        }
        if (!trusted) {
            why = "neither a signing key file nor a trusted-keys file is named";
            return nullptr;
        }
        return std::make_shared<ed25519_entry_signatures>(std::move(*trusted));
    }

private:
    std::optional<ed25519_signer> signer_;
    trusted_keys trusted_;
};

namespace detail {
inline std::shared_ptr<entry_signatures const> load_ed25519_entry_signatures(signature_files const& files,
                                                                             std::string& why) {
    try {
        return ed25519_entry_signatures::from_files(files, why);
    } catch (std::exception const& e) {
        why = e.what();
    } catch (...) {
        why = "the key files could not be read";
    }
    return nullptr;
}

/// Registers the loader with basic_cache::from_env, in every program that includes this header.
inline bool const ed25519_loader_registered = (registered_signatures_loader() = &load_ed25519_entry_signatures, true);
} // namespace detail

} // namespace compile_cache
