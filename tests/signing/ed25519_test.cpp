// Tests of signing/ed25519.hpp: RFC 8032's test vectors, key files as a writer and a
// reader hold them, and every bad file the issue names (one phrase, never a hang).
#include "catch2_compat.hpp"
#include "support/posix.hpp"

#include <compile_cache/signing/ed25519.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace cc = compile_cache;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;

namespace {

std::vector<unsigned char> from_hex(std::string_view hex) {
    std::vector<unsigned char> out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<unsigned char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    return out;
}

std::string base64(std::vector<unsigned char> const& bytes) { return cc::detail::to_base64(bytes.data(), bytes.size()); }

// RFC 8032, "Edwards-Curve Digital Signature Algorithm (EdDSA)", section 7.1, TEST 1,
// TEST 2 and TEST 3: the secret key (seed), the public key, the message, the signature.
struct rfc8032_vector {
    char const* seed;
    char const* public_key;
    char const* message;
    char const* signature;
};
rfc8032_vector const rfc8032_vectors[] = {
    {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
    {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
    {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
};

cc::ed25519_signer signer_from_text(std::string const& text) {
    std::string why;
    auto s = cc::ed25519_signer::from_text(text, why);
    INFO(why);
    REQUIRE(s);
    return std::move(*s);
}

cc::trusted_keys trusted_from_text(std::string const& text) {
    std::string why;
    auto k = cc::trusted_keys::from_text(text, why);
    INFO(why);
    REQUIRE(k);
    return std::move(*k);
}

std::string secret_refusal(std::string const& text) {
    std::string why;
    CHECK_FALSE(cc::ed25519_signer::from_text(text, why));
    return why;
}

std::string trusted_refusal(std::string const& text) {
    std::string why;
    CHECK_FALSE(cc::trusted_keys::from_text(text, why));
    return why;
}

} // namespace

TEST_CASE("ed25519: RFC 8032's vectors sign and verify as the RFC says") {
    for (auto const& v : rfc8032_vectors) {
        auto const seed = from_hex(v.seed);
        auto const pk = from_hex(v.public_key);
        std::vector<unsigned char> secret = seed;
        secret.insert(secret.end(), pk.begin(), pk.end());
        cc::ed25519_signer const signer = signer_from_text("rfc8032:" + base64(secret));
        CHECK(std::vector<unsigned char>(signer.public_key().bytes.begin(), signer.public_key().bytes.end()) == pk);

        auto const message = from_hex(v.message);
        std::string_view const text(reinterpret_cast<char const*>(message.data()), message.size());
        cc::ed25519_signature const sig = signer.sign(text);
        CHECK(std::vector<unsigned char>(sig.begin(), sig.end()) == from_hex(v.signature));

        cc::trusted_keys const keys = trusted_from_text(signer.public_key().line() + "\n");
        CHECK(keys.verify(signer.id(), text, sig) == cc::signature_check::ok);
    }
}

TEST_CASE("ed25519: a generated key's lines read back, and a changed byte, another key or an unlisted one never verify") {
    std::string why;
    auto ci = cc::ed25519_signer::generate("ci-2026", why);
    REQUIRE(ci);
    auto other = cc::ed25519_signer::generate("laptop", why);
    REQUIRE(other);
    CHECK(ci->id() != other->id());

    cc::ed25519_signer const reread = signer_from_text(ci->secret_key_line() + "\n");
    CHECK(reread.public_key().line() == ci->public_key().line());
    CHECK(reread.public_key().name == "ci-2026");
    CHECK(cc::to_hex(reread.id()).size() == 16);

    cc::trusted_keys const keys =
        trusted_from_text("# CI's keys\n\n" + ci->public_key().line() + "\r\n  # rotated in March\n");
    REQUIRE(keys.keys().size() == 1);
    CHECK(keys.find(ci->id())->name == "ci-2026");

    std::string const entry = "an entry's bytes";
    cc::ed25519_signature const sig = ci->sign(entry);
    CHECK(keys.verify(ci->id(), entry, sig) == cc::signature_check::ok);
    std::string changed = entry;
    changed[3] = static_cast<char>(changed[3] ^ 1);
    CHECK(keys.verify(ci->id(), changed, sig) == cc::signature_check::bad_signature);
    cc::ed25519_signature flipped = sig;
    flipped[10] = static_cast<unsigned char>(flipped[10] ^ 0x80);
    CHECK(keys.verify(ci->id(), entry, flipped) == cc::signature_check::bad_signature);
    // Signed by a key nobody listed: its id is unknown. Claiming CI's id does not help.
    cc::ed25519_signature const forged = other->sign(entry);
    CHECK(keys.verify(other->id(), entry, forged) == cc::signature_check::untrusted_signer);
    CHECK(keys.verify(ci->id(), entry, forged) == cc::signature_check::bad_signature);
}

TEST_CASE("ed25519: two trusted keys for rotation, and a key removed from the list no longer verifies") {
    std::string why;
    auto old_key = cc::ed25519_signer::generate("ci-old", why);
    auto new_key = cc::ed25519_signer::generate("ci-new", why);
    REQUIRE(old_key);
    REQUIRE(new_key);
    std::string const entry = "kernel";
    auto const old_sig = old_key->sign(entry);
    auto const new_sig = new_key->sign(entry);
    cc::trusted_keys const both = trusted_from_text(old_key->public_key().line() + "\n" + new_key->public_key().line());
    CHECK(both.verify(old_key->id(), entry, old_sig) == cc::signature_check::ok);
    CHECK(both.verify(new_key->id(), entry, new_sig) == cc::signature_check::ok);
    cc::trusted_keys const rotated = trusted_from_text(new_key->public_key().line() + "\n");
    CHECK(rotated.verify(old_key->id(), entry, old_sig) == cc::signature_check::untrusted_signer);
    CHECK(rotated.verify(new_key->id(), entry, new_sig) == cc::signature_check::ok);
}

TEST_CASE("ed25519: a key added in code is found by the id its bytes make, whatever id it came with") {
    std::string why;
    auto signer = cc::ed25519_signer::generate("ci", why);
    auto other = cc::ed25519_signer::generate("other", why);
    REQUIRE(signer);
    REQUIRE(other);
    std::string const entry = "kernel";
    auto const sig = signer->sign(entry);
    cc::ed25519_public_key key = signer->public_key();
    key.id = other->id(); // a wrong id, given with the key's bytes
    cc::trusted_keys keys = trusted_from_text(other->public_key().line() + "\n");
    CHECK(keys.add(key)); // (not refused as the other key's id)
    CHECK(keys.verify(signer->id(), entry, sig) == cc::signature_check::ok);
    CHECK(keys.verify(other->id(), entry, sig) == cc::signature_check::bad_signature);
    CHECK_FALSE(keys.add(signer->public_key())); // there already, under its own id
}

TEST_CASE("ed25519: a bad secret key file is refused with one phrase that shows no key byte") {
    std::string why;
    auto key = cc::ed25519_signer::generate("ci", why);
    REQUIRE(key);
    std::string const line = key->secret_key_line();
    std::string const encoded = line.substr(line.find(':') + 1);

    CHECK(secret_refusal("") == "it is not a key line (NAME:BASE64, as compile-cache keygen writes)");
    CHECK(secret_refusal(encoded) == "it is not a key line (NAME:BASE64, as compile-cache keygen writes)");
    CHECK(secret_refusal("ci:not base64!") == "its key is not base64");
    CHECK(secret_refusal("ci:" + base64(std::vector<unsigned char>(40, 7))) ==
          "its key is 40 bytes, not the 64 of an Ed25519 secret key");
    CHECK(secret_refusal(key->public_key().line()) ==
          "it holds a public key (32 bytes), not a secret key (64 bytes): a trusted-keys line?");
    CHECK(secret_refusal(line + "\n" + line) == "it holds more than one line; a secret key file holds one key");
    // The seed and the public half disagree: the key is damaged, not used.
    auto other = cc::ed25519_signer::generate("ci", why);
    REQUIRE(other);
    std::vector<unsigned char> mixed(64);
    std::size_t n = 0;
    REQUIRE(cc::detail::from_base64(encoded, mixed.data(), mixed.size(), n));
    std::copy(other->public_key().bytes.begin(), other->public_key().bytes.end(), mixed.begin() + 32);
    CHECK(secret_refusal("ci:" + base64(mixed)) == "its key is damaged (its public half does not match its seed)");
    CHECK(secret_refusal("bad name:" + encoded) == "it is not a key line (NAME:BASE64, as compile-cache keygen writes)");
    CHECK_FALSE(cc::ed25519_signer::generate("has:colon", why));
    CHECK(why == "a key name is 1 to 128 printable characters without ':' or blanks, the first not '#' (a comment in "
                 "a trusted-keys file)");
}

TEST_CASE("ed25519: a key name starting with '#' is refused, since its trusted-keys line would be a comment") {
    std::string why;
    CHECK_FALSE(cc::ed25519_signer::generate("#2027-rotation", why));
    CHECK(why.find("the first not '#'") != std::string::npos);
    CHECK_FALSE(cc::ed25519_signer::generate("#", why));
    // '#' after the first character is a name's like any other.
    auto inner = cc::ed25519_signer::generate("ci#2027", why);
    REQUIRE(inner);
    std::string const file = inner->public_key().line() + "\n";
    auto const keys = cc::trusted_keys::from_text(file, why);
    REQUIRE(keys);
    CHECK(keys->keys().size() == 1);
}

TEST_CASE("ed25519: a bad trusted-keys file is refused, naming the line") {
    std::string why;
    auto key = cc::ed25519_signer::generate("ci", why);
    REQUIRE(key);
    std::string const pub = key->public_key().line();
    CHECK(trusted_refusal("") == "it lists no key");
    CHECK(trusted_refusal("# only a comment\n\n") == "it lists no key");
    CHECK(trusted_refusal(pub + "\nnot a key\n") == "line 2: not a key line (NAME:BASE64, as compile-cache keygen prints)");
    CHECK(trusted_refusal(key->secret_key_line()) ==
          "line 1: a secret key (64 bytes), which a trusted-keys file must never hold: give readers the public "
          "line that compile-cache keygen printed");
    CHECK(trusted_refusal("ci:" + base64(std::vector<unsigned char>(31, 1))) ==
          "line 1: the key is 31 bytes, not the 32 of an Ed25519 public key");
    CHECK(trusted_refusal(pub + "\n" + "again:" + pub.substr(pub.find(':') + 1)) ==
          "line 2: the same key as an earlier line");
}

TEST_CASE("ed25519: a signing key file open to group or other users is refused, whatever the bit") {
    temp_dir dir("cc-signing");
    std::string why;
    auto key = cc::ed25519_signer::generate("ci", why);
    REQUIRE(key);
    auto const secret = dir.path() / "ci.key";
    write_file(secret, key->secret_key_line() + "\n");
    for (mode_t const mode : {0600u, 0400u}) {
        ::chmod(secret.c_str(), mode);
        CHECK(cc::ed25519_signer::from_file(secret.string(), why));
    }
    for (mode_t const mode : {0644u, 0640u, 0604u, 0610u, 0601u, 0620u}) {
        ::chmod(secret.c_str(), mode);
        INFO("mode " << std::oct << mode);
        CHECK_FALSE(cc::ed25519_signer::from_file(secret.string(), why));
        CHECK(why.find("opens it to other users, and a signing key must be its owner's alone (chmod go= it") !=
              std::string::npos);
    }
}

TEST_CASE("ed25519: a trusted-keys file another user owns, or that group or other users may write, is refused") {
    temp_dir dir("cc-signing");
    std::string why;
    auto key = cc::ed25519_signer::generate("ci", why);
    REQUIRE(key);
    auto const trusted = dir.path() / "trusted-keys";
    write_file(trusted, key->public_key().line() + "\n");
    for (mode_t const mode : {0644u, 0600u, 0444u, 0640u}) {
        ::chmod(trusted.c_str(), mode);
        CHECK(cc::trusted_keys::from_file(trusted.string(), why));
    }
    // A member of the file's group could add their own key to those trusted.
    ::chmod(trusted.c_str(), 0664);
    CHECK_FALSE(cc::trusted_keys::from_file(trusted.string(), why));
    CHECK(why == "its mode 0664 lets other users write it, who could add their own key to it (chmod go-w it; 0644 is "
                 "usual)");
    ::chmod(trusted.c_str(), 0620);
    CHECK_FALSE(cc::trusted_keys::from_file(trusted.string(), why));
    // Owned by another (unprivileged) user: they could put their key in it, whatever its mode
    // (only root can give a file away, so this part runs as root alone).
    ::chmod(trusted.c_str(), 0644);
    if (!compile_cache_test::running_as_root()) return;
    REQUIRE(::chown(trusted.c_str(), 65534, static_cast<gid_t>(-1)) == 0); // nobody
    CHECK_FALSE(cc::trusted_keys::from_file(trusted.string(), why));
    CHECK(why == "it is owned by user id 65534, neither this user nor root, who could add their own key to it (chown "
                 "it to this user or root)");
    // Root's own file is trusted, as ssh trusts root's.
    REQUIRE(::chown(trusted.c_str(), 0, static_cast<gid_t>(-1)) == 0);
    CHECK(cc::trusted_keys::from_file(trusted.string(), why));
}

TEST_CASE("ed25519: key files are read with a secret's care: missing, empty, world-writable, a FIFO without writer") {
    temp_dir dir("cc-signing");
    std::string why;
    auto key = cc::ed25519_signer::generate("ci", why);
    REQUIRE(key);

    auto const secret = dir.path() / "ci.key";
    write_file(secret, key->secret_key_line() + "\n");
    ::chmod(secret.c_str(), 0600);
    auto const read = cc::ed25519_signer::from_file(secret.string(), why);
    INFO(why);
    REQUIRE(read);
    CHECK(read->id() == key->id());

    auto const trusted = dir.path() / "trusted-keys";
    write_file(trusted, key->public_key().line() + "\n");
    ::chmod(trusted.c_str(), 0644);
    REQUIRE(cc::trusted_keys::from_file(trusted.string(), why));

    CHECK_FALSE(cc::ed25519_signer::from_file((dir.path() / "missing").string(), why));
    CHECK(why.rfind("cannot open it: ", 0) == 0);

    auto const empty = dir.path() / "empty";
    compile_cache_test::write_private_file(empty, "");
    CHECK_FALSE(cc::ed25519_signer::from_file(empty.string(), why));
    CHECK(why == "it is empty");
    CHECK_FALSE(cc::trusted_keys::from_file(empty.string(), why));
    CHECK(why == "it is empty");

    // Anyone could have added their own key to such a list, or replaced the secret.
    ::chmod(trusted.c_str(), 0666);
    CHECK_FALSE(cc::trusted_keys::from_file(trusted.string(), why));
    CHECK(why.find("lets other users write it") != std::string::npos);
    ::chmod(secret.c_str(), 0666);
    CHECK_FALSE(cc::ed25519_signer::from_file(secret.string(), why));
    CHECK(why.find("opens it to other users") != std::string::npos);

    auto const fifo = dir.path() / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_FALSE(cc::ed25519_signer::from_file(fifo.string(), why));
    CHECK(why == "it is empty");
    CHECK_FALSE(cc::trusted_keys::from_file(fifo.string(), why));
    CHECK(why == "it is empty");
}
