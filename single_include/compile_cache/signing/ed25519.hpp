// compile_cache: Ed25519 keys, signatures and trusted-key lists for signed entries
// (optional: needs libsodium, Debian libsodium-dev; link compile_cache::signing, or
// -lsodium on the single-header route). Not in the umbrella header.
//
// Key files are text, one key per line as `NAME:BASE64`, the format of Nix's binary
// cache keys: a secret key file holds one line whose base64 is libsodium's 64-byte
// secret key (the 32-byte seed, then the public key); a trusted-keys file holds public
// keys (32 bytes), one per line, blank lines and `#` comments allowed. Every file is
// read as secret_file.hpp reads a secret: bounded, a FIFO never hangs, a file any user
// may write is refused. docs/security.md says what signatures protect against.
#pragma once

#include <compile_cache/compile_cache.hpp>

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compile_cache {

inline constexpr std::size_t ed25519_signature_size = crypto_sign_BYTES;       // 64
inline constexpr std::size_t ed25519_public_key_size = crypto_sign_PUBLICKEYBYTES; // 32
inline constexpr std::size_t ed25519_secret_key_size = crypto_sign_SECRETKEYBYTES; // 64

/// The id an entry carries for the key that signed it: the first 8 bytes of the
/// SHA-256 of the public key. An id names a key; only the signature proves anything.
using signing_key_id = std::array<unsigned char, 8>;
using ed25519_signature = std::array<unsigned char, ed25519_signature_size>;

/// A key id as 16 lowercase hex digits, for log lines and the tool.
inline std::string to_hex(signing_key_id const& id) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    for (unsigned char b : id) {
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

/// A signer's public key, with the name it was given and its id.
struct ed25519_public_key {
    std::string name;
    std::array<unsigned char, ed25519_public_key_size> bytes{};
    signing_key_id id{};

    /// `NAME:BASE64`: the line of a trusted-keys file.
    std::string line() const;
};

namespace detail {
/// libsodium's one-time set-up; false when it cannot run (no entropy source): then no
/// key is made or read, and each caller says so.
inline bool sodium_ready() noexcept {
    static bool const ready = ::sodium_init() >= 0;
    return ready;
}

inline signing_key_id signing_key_id_of(unsigned char const* public_key) noexcept {
    sha256 h;
    h.update(public_key, ed25519_public_key_size);
    auto const digest = h.result();
    signing_key_id id{};
    std::copy_n(digest.begin(), id.size(), id.begin());
    return id;
}

inline std::string to_base64(unsigned char const* p, std::size_t n) {
    std::string out(sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL), '\0');
    sodium_bin2base64(out.data(), out.size(), p, n, sodium_base64_VARIANT_ORIGINAL);
    out.resize(out.size() - 1); // the terminating NUL
    return out;
}

/// Decodes `text` into exactly `out.size()` bytes... or says why not: the decoded size
/// goes to `decoded` when the base64 is sound.
inline bool from_base64(std::string_view text, unsigned char* out, std::size_t capacity, std::size_t& decoded) {
    decoded = 0;
    char const* end = nullptr;
    if (sodium_base642bin(out, capacity, text.data(), text.size(), nullptr, &decoded, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0)
        return false;
    return end == text.data() + text.size();
}

/// A key's name: 1 to 128 printable ASCII characters without ':' or blanks, the first
/// not '#' (a trusted-keys file's line that starts with '#' is a comment).
inline bool is_key_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 128 || name.front() == '#') return false;
    return std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 127 && c != ':'; });
}

/// Splits `NAME:BASE64` (surrounding blanks and a trailing CR removed); false when the
/// line has no ':' or the name is not a key name.
inline bool split_key_line(std::string_view line, std::string_view& name, std::string_view& base64) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    auto const colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    name = line.substr(0, colon);
    base64 = line.substr(colon + 1);
    return is_key_name(name);
}
} // namespace detail

inline std::string ed25519_public_key::line() const { return name + ":" + detail::to_base64(bytes.data(), bytes.size()); }

/// A secret signing key: what a writer (CI) holds. Move-only; the secret bytes are
/// wiped when it goes.
class ed25519_signer {
public:
    ed25519_signer(ed25519_signer&& other) noexcept : public_(std::move(other.public_)), secret_(other.secret_) {
        sodium_memzero(other.secret_.data(), other.secret_.size());
    }
    ed25519_signer& operator=(ed25519_signer&& other) noexcept {
        public_ = std::move(other.public_);
        secret_ = other.secret_;
        sodium_memzero(other.secret_.data(), other.secret_.size());
        return *this;
    }
    ed25519_signer(ed25519_signer const&) = delete;
    ed25519_signer& operator=(ed25519_signer const&) = delete;
    ~ed25519_signer() { sodium_memzero(secret_.data(), secret_.size()); }

    /// A new random key named `name`; nullopt (and why) for a name that is not one
    /// (1 to 128 printable characters, no ':' or blank, the first not '#') or when
    /// libsodium cannot run.
    static std::optional<ed25519_signer> generate(std::string const& name, std::string& why) {
        why.clear();
        if (!detail::is_key_name(name)) {
            why = "a key name is 1 to 128 printable characters without ':' or blanks, the first not '#' (a comment in "
                  "a trusted-keys file)";
            return std::nullopt;
        }
        if (!detail::sodium_ready()) {
            why = "libsodium cannot start (no source of randomness)";
            return std::nullopt;
        }
        ed25519_signer s;
        s.public_.name = name;
        crypto_sign_keypair(s.public_.bytes.data(), s.secret_.data());
        s.public_.id = detail::signing_key_id_of(s.public_.bytes.data());
        return s;
    }

    /// The key in a secret key file's text (one `NAME:BASE64` line); nullopt and why
    /// (one phrase, never a byte of the key) otherwise.
    static std::optional<ed25519_signer> from_text(std::string_view text, std::string& why) {
        why.clear();
        if (!detail::sodium_ready()) {
            why = "libsodium cannot start (no source of randomness)";
            return std::nullopt;
        }
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
        if (text.find('\n') != std::string_view::npos) {
            why = "it holds more than one line; a secret key file holds one key";
            return std::nullopt;
        }
        std::string_view name, base64;
        if (!detail::split_key_line(text, name, base64)) {
            why = "it is not a key line (NAME:BASE64, as compile-cache keygen writes)";
            return std::nullopt;
        }
        ed25519_signer s;
        std::size_t decoded = 0;
        // Room for more than a secret key, so that a public key or other bytes are told apart.
        std::array<unsigned char, 2 * ed25519_secret_key_size> buffer{};
        bool const sound = detail::from_base64(base64, buffer.data(), buffer.size(), decoded);
        if (sound && decoded == ed25519_secret_key_size) std::copy_n(buffer.begin(), decoded, s.secret_.begin());
        sodium_memzero(buffer.data(), buffer.size());
        if (!sound) {
            why = "its key is not base64";
            return std::nullopt;
        }
        if (decoded == ed25519_public_key_size) {
            why = "it holds a public key (32 bytes), not a secret key (64 bytes): a trusted-keys line?";
            return std::nullopt;
        }
        if (decoded != ed25519_secret_key_size) {
            why = "its key is " + std::to_string(decoded) + " bytes, not the 64 of an Ed25519 secret key";
            return std::nullopt;
        }
        // The secret key is the seed and then the public key: both must agree.
        std::array<unsigned char, ed25519_secret_key_size> derived{};
        crypto_sign_seed_keypair(s.public_.bytes.data(), derived.data(), s.secret_.data());
        bool const agrees = sodium_memcmp(derived.data(), s.secret_.data(), derived.size()) == 0;
        sodium_memzero(derived.data(), derived.size());
        if (!agrees) {
            why = "its key is damaged (its public half does not match its seed)";
            return std::nullopt;
        }
        s.public_.name = std::string(name);
        s.public_.id = detail::signing_key_id_of(s.public_.bytes.data());
        return s;
    }

    /// The key in the secret key file at `path`, read as read_secret_file reads; a file
    /// with any group or other permission bit is refused (secret_file_rule::signing_key).
    static std::optional<ed25519_signer> from_file(std::string const& path, std::string& why) {
        std::string text;
        why = read_secret_file(path, text, secret_file_rule::signing_key);
        if (!why.empty()) return std::nullopt;
        std::optional<ed25519_signer> s = from_text(text, why);
        sodium_memzero(text.data(), text.size());
        return s;
    }

    ed25519_public_key const& public_key() const noexcept { return public_; }
    signing_key_id const& id() const noexcept { return public_.id; }

    /// `NAME:BASE64` of the secret key: the secret key file's one line.
    std::string secret_key_line() const { return public_.name + ":" + detail::to_base64(secret_.data(), secret_.size()); }

    /// The signature of `message`.
    ed25519_signature sign(unsigned char const* message, std::size_t size) const noexcept {
        ed25519_signature sig{};
        crypto_sign_detached(sig.data(), nullptr, message, size, secret_.data());
        return sig;
    }
    ed25519_signature sign(std::string_view message) const noexcept {
        return sign(reinterpret_cast<unsigned char const*>(message.data()), message.size());
    }

private:
    ed25519_signer() = default;
    ed25519_public_key public_;
    std::array<unsigned char, ed25519_secret_key_size> secret_{};
};

/// What checking a signature found.
enum class signature_check {
    ok,               ///< signed by a trusted key, and the bytes are the ones it signed
    untrusted_signer, ///< no trusted key has that id (a key no longer listed, or never)
    bad_signature,    ///< a trusted key's id, but not its signature of these bytes
};

/// The public keys a reader trusts: what every developer machine holds. Copyable.
class trusted_keys {
public:
    trusted_keys() = default;

    /// The keys of a trusted-keys file's text: `NAME:BASE64` lines of 32-byte public
    /// keys, blank lines and `#` comments ignored. nullopt and why (naming the line) for
    /// any line that is not one, a secret key among them, two keys of one id, or no key.
    static std::optional<trusted_keys> from_text(std::string_view text, std::string& why) {
        why.clear();
        if (!detail::sodium_ready()) {
            why = "libsodium cannot start (no source of randomness)";
            return std::nullopt;
        }
        trusted_keys keys;
        std::size_t number = 0;
        while (!text.empty()) {
            auto const eol = text.find('\n');
            std::string_view line = text.substr(0, eol);
            text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
            ++number;
            std::string_view trimmed = line;
            while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) trimmed.remove_prefix(1);
            if (trimmed.empty() || trimmed == "\r" || trimmed.front() == '#') continue;
            std::string const where = "line " + std::to_string(number) + ": ";
            std::string_view name, base64;
            if (!detail::split_key_line(line, name, base64)) {
                why = where + "not a key line (NAME:BASE64, as compile-cache keygen prints)";
                return std::nullopt;
            }
            ed25519_public_key key;
            key.name = std::string(name);
            std::array<unsigned char, 2 * ed25519_secret_key_size> buffer{};
            std::size_t decoded = 0;
            bool const sound = detail::from_base64(base64, buffer.data(), buffer.size(), decoded);
            if (sound && decoded == ed25519_public_key_size) std::copy_n(buffer.begin(), decoded, key.bytes.begin());
            sodium_memzero(buffer.data(), buffer.size());
            if (!sound) {
                why = where + "the key is not base64";
                return std::nullopt;
            }
            if (decoded == ed25519_secret_key_size) {
                why = where + "a secret key (64 bytes), which a trusted-keys file must never hold: give readers "
                              "the public line that compile-cache keygen printed";
                return std::nullopt;
            }
            if (decoded != ed25519_public_key_size) {
                why = where + "the key is " + std::to_string(decoded) +
                      " bytes, not the 32 of an Ed25519 public key";
                return std::nullopt;
            }
            key.id = detail::signing_key_id_of(key.bytes.data());
            if (keys.find(key.id)) {
                why = where + "the same key as an earlier line";
                return std::nullopt;
            }
            keys.keys_.push_back(std::move(key));
        }
        if (keys.keys_.empty()) {
            why = "it lists no key";
            return std::nullopt;
        }
        return keys;
    }

    /// The keys of the trusted-keys file at `path`, read as read_secret_file reads; a file
    /// owned by another user than this process's effective one or root, or that group or
    /// other users may write, is refused (secret_file_rule::trusted_keys): whoever may
    /// change it could add their own key.
    static std::optional<trusted_keys> from_file(std::string const& path, std::string& why) {
        std::string text;
        why = read_secret_file(path, text, secret_file_rule::trusted_keys);
        if (!why.empty()) return std::nullopt;
        return from_text(text, why);
    }

    /// Adds `key` unless a key of its id is there; false then. Its id is made anew from
    /// its bytes (the one given is not trusted): an entry names its signer by that id.
    bool add(ed25519_public_key key) {
        key.id = detail::signing_key_id_of(key.bytes.data());
        if (find(key.id)) return false;
        keys_.push_back(std::move(key));
        return true;
    }

    std::vector<ed25519_public_key> const& keys() const noexcept { return keys_; }
    bool empty() const noexcept { return keys_.empty(); }

    /// The trusted key of that id; nullptr when none.
    ed25519_public_key const* find(signing_key_id const& id) const noexcept {
        for (auto const& k : keys_)
            if (k.id == id) return &k;
        return nullptr;
    }

    /// Whether `signature` is the trusted key `id`'s signature of `message`.
    signature_check verify(signing_key_id const& id, unsigned char const* message, std::size_t size,
                           unsigned char const* signature) const noexcept {
        ed25519_public_key const* key = find(id);
        if (!key) return signature_check::untrusted_signer;
        return crypto_sign_verify_detached(signature, message, size, key->bytes.data()) == 0
                   ? signature_check::ok
                   : signature_check::bad_signature;
    }
    signature_check verify(signing_key_id const& id, std::string_view message, ed25519_signature const& sig) const noexcept {
        return verify(id, reinterpret_cast<unsigned char const*>(message.data()), message.size(), sig.data());
    }

private:
    std::vector<ed25519_public_key> keys_;
};

} // namespace compile_cache
