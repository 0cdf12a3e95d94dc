// Tests of signed entries (envelope flags 2, signing/signed_entries.hpp): the layout,
// what older readers and other modes see, forgeries, resealing, and a tier whose
// remote is a shared directory (a writer signs, a reader verifies and keeps a local
// copy under its own check). tests/redis/signed_redis_test.cpp does the same over Redis.
#include "catch2_compat.hpp"
#include "support/model.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"
#include "support/signing_keys.hpp"
#include "support/stored_entry.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/signing/signed_entries.hpp>
#include <compile_cache/storage/directory_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using namespace compile_cache_test;
using namespace compile_cache_test::model;

using compile_cache_test::reader_of;
using compile_cache_test::trusting;
using compile_cache_test::writer_of;

cc::ed25519_signer new_key(std::string const& name) { return compile_cache_test::new_signing_key(name); }

cc::entry_metadata meta() {
    cc::entry_metadata m;
    m.name = "axpy";
    m.format_id = "test-format";
    return m;
}

std::string sealed_entry(cc::key const& k, std::string const& payload, cc::envelope_auth const& auth) {
    std::string out;
    cc::envelope_writer w(out, k, meta(), auth);
    w.out() += payload;
    w.seal();
    return out;
}

cc::envelope_status open_status(std::string const& entry, cc::key const& k, cc::envelope_auth const& auth) {
    return cc::open_envelope(entry, k, "test-format", 1 << 20, auth).status;
}

cc::key const some_key = plain_key("axpy").value();

using tier = cc::tiered_storage<cc::directory_storage, cc::directory_storage>;
using tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, tier>;

/// A machine: its own local directory before the shared "remote" directory, in sync mode.
tier_cache machine(fs::path const& local, fs::path const& remote, cc::cache_options options,
                   cc::remote_mode mode = cc::remote_mode::read_write) {
    cc::tier_options t;
    t.upload = cc::remote_upload::sync;
    t.mode = mode;
    return tier_cache(tier(cc::directory_storage(local.string()), cc::directory_storage(remote.string()), t),
                      std::move(options));
}

cc::cache_options signing(std::shared_ptr<cc::entry_signatures const> s, std::string secret = {}) {
    cc::cache_options o;
    o.signatures = std::move(s);
    o.secret = std::move(secret);
    o.record_identities = false;
    return o;
}

std::uint16_t flags_of(std::string const& entry) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(entry[10]) | static_cast<unsigned char>(entry[11]) << 8);
}

/// The envelope version an entry says (offset 8, little-endian).
std::uint16_t version_of(std::string const& entry) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(entry[8]) | static_cast<unsigned char>(entry[9]) << 8);
}

/// One process on the laptop (a fresh child), its local directory `local` before `remote`,
/// trusting the keys the file `trusted` lists when it starts, getting `k`: how it got the
/// kernel, why, " wrong" for wrong bytes, and how many lines of its log named `key_id`.
std::string laptop_run(fs::path const& local, fs::path const& remote, fs::path const& trusted, cc::key_result const& k,
                       std::string const& key_id) {
    return run_in_child([&] {
        std::string why;
        std::optional<cc::trusted_keys> keys = cc::trusted_keys::from_file(trusted.string(), why);
        if (!keys) return "trusted keys: " + why;
        tier_cache c = machine(local, remote, signing(reader_of(std::move(*keys))));
        if (!c.enabled()) return std::string("disabled");
        std::size_t naming = 0;
        c.set_logger([&](std::string_view line) { naming += line.find(key_id) != std::string_view::npos; });
        cc::cached<compiled_kernel> const r = c.get_or_compile<compiled_kernel>(k, axpy_info, small_kernel);
        bool const right = r.value.bytecode == small_kernel().bytecode;
        return std::string(cc::to_string(r.outcome)) + " " + r.reason + (right ? "" : " wrong") + " named " +
               std::to_string(naming);
    });
}

/// Whether `entry` holds the key id `id` (a signer's copy names its signer after its payload).
bool names_signer(std::string const& entry, cc::entry_signer_id const& id) {
    return entry.find(std::string(reinterpret_cast<char const*>(id.data()), id.size())) != std::string::npos;
}

} // namespace

TEST_CASE("signed entry: flags 2, then the signer's key id and the signature of everything before the signature",
          "[signing]") {
    cc::ed25519_signer ci = new_key("ci");
    cc::ed25519_public_key const pub = ci.public_key();
    cc::envelope_auth const writer = cc::envelope_auth::signed_by(writer_of(std::move(ci)));
    std::string const entry = sealed_entry(some_key, "payload", writer);
    CHECK(flags_of(entry) == 2);
    CHECK(writer.check_size() == 72);
    std::string const id = entry.substr(entry.size() - 72, 8);
    CHECK(id == std::string(reinterpret_cast<char const*>(pub.id.data()), 8));
    cc::trusted_keys const keys = trusting({pub});
    cc::ed25519_signature sig{};
    std::copy_n(entry.end() - 64, 64, sig.begin());
    CHECK(keys.verify(pub.id, std::string_view(entry).substr(0, entry.size() - 64), sig) == cc::signature_check::ok);

    cc::envelope_auth const reader = cc::envelope_auth::signed_by(reader_of(keys));
    cc::opened_envelope const opened = cc::open_envelope(entry, some_key, "test-format", 1 << 20, reader);
    CHECK(opened.status == cc::envelope_status::ok);
    CHECK(opened.payload == "payload");
    CHECK(opened.signed_entry);
    CHECK(opened.signer_id == pub.id);
}

TEST_CASE("signed entry: readers in the CRC-32C or HMAC mode, as older releases are, see a clean miss", "[signing]") {
    cc::envelope_auth const writer = cc::envelope_auth::signed_by(writer_of(new_key("ci")));
    std::string const entry = sealed_entry(some_key, "payload", writer);
    // Earlier releases check the check value in their own mode first, then refuse any
    // flags but their own: neither a CRC-32C nor an HMAC is where the signature is. This
    // release names it unauthenticated in both modes (another mode's entry, left alone).
    cc::opened_envelope const crc = cc::open_envelope(entry, some_key, "test-format", 1 << 20, cc::envelope_auth());
    CHECK(crc.status == cc::envelope_status::unauthenticated);
    CHECK(crc.payload.empty());
    cc::opened_envelope const hmac =
        cc::open_envelope(entry, some_key, "test-format", 1 << 20, cc::envelope_auth("a secret"));
    CHECK(hmac.status == cc::envelope_status::unauthenticated);
    CHECK(hmac.payload.empty());
    CHECK_FALSE(cc::is_damaged_entry(crc.status));
    // The envelope says so: a signed entry is version 4 (a reader of an earlier release
    // that could check its bytes would find a sound entry of another version), a plain
    // one stays 3 for those readers.
    CHECK(version_of(entry) == 4);
    CHECK(version_of(sealed_entry(some_key, "payload", cc::envelope_auth())) == 3);
    CHECK(version_of(sealed_entry(some_key, "payload", cc::envelope_auth("a secret"))) == 3);
}

TEST_CASE("signed entry: a version-3 entry that says signed is refused, even with a trusted key's valid signature",
          "[signing]") {
    cc::ed25519_signer ci = new_key("ci");
    cc::envelope_auth const reader = cc::envelope_auth::signed_by(reader_of(trusting({ci.public_key()})));
    cc::envelope_auth const writer = cc::envelope_auth::signed_by(writer_of(std::move(ci)));
    std::string const entry = sealed_entry(some_key, "payload", writer);
    REQUIRE(version_of(entry) == 4);
    REQUIRE(open_status(entry, some_key, reader) == cc::envelope_status::ok);
    // Version 3 never had a signature: the same entry said to be version 3, signed again
    // by the trusted key, is refused (corrupt, as a version-3 reader refused flags 2).
    std::string v3 = entry.substr(0, entry.size() - cc::detail::envelope_signed_check_size);
    v3[8] = 3;
    writer.append_check(v3);
    cc::opened_envelope const o = cc::open_envelope(v3, some_key, "test-format", 1 << 20, reader);
    CHECK(o.status == cc::envelope_status::corrupt);
    CHECK(o.payload.empty());
    // Version 5 is a signer's copy, never signed itself: refused the same way.
    std::string v5 = entry.substr(0, entry.size() - cc::detail::envelope_signed_check_size);
    v5[8] = 5;
    writer.append_check(v5);
    CHECK(open_status(v5, some_key, reader) == cc::envelope_status::corrupt);
    // Said to be version 6, it is a sound entry of another version: foreign, not damage.
    std::string v6 = entry.substr(0, entry.size() - cc::detail::envelope_signed_check_size);
    v6[8] = 6;
    writer.append_check(v6);
    CHECK(open_status(v6, some_key, reader) == cc::envelope_status::foreign_version);
    CHECK_FALSE(cc::is_damaged_entry(cc::envelope_status::foreign_version));
}

TEST_CASE("signed entry: a changed byte, another trusted key's id, an untrusted signer, an HMAC entry never open",
          "[signing]") {
    cc::ed25519_signer ci = new_key("ci");
    cc::ed25519_signer laptop = new_key("laptop");
    cc::ed25519_signer ci2 = new_key("ci-2");
    cc::trusted_keys const keys = trusting({ci.public_key(), ci2.public_key()});
    cc::envelope_auth const reader = cc::envelope_auth::signed_by(reader_of(keys));
    cc::entry_signer_id const ci2_id = ci2.id();
    std::string const sound = sealed_entry(some_key, "payload", cc::envelope_auth::signed_by(writer_of(std::move(ci))));
    REQUIRE(open_status(sound, some_key, reader) == cc::envelope_status::ok);

    std::vector<std::size_t> accepted;
    for (std::size_t i = 0; i < sound.size(); ++i) {
        std::string changed = sound;
        changed[i] = static_cast<char>(changed[i] ^ 0x01);
        if (open_status(changed, some_key, reader) == cc::envelope_status::ok) accepted.push_back(i);
    }
    CHECK(accepted.empty());

    // The signature kept, the id changed to another trusted key's: its key does not verify it.
    std::string moved = sound;
    std::copy(ci2_id.begin(), ci2_id.end(), moved.end() - 72);
    CHECK(open_status(moved, some_key, reader) == cc::envelope_status::unauthenticated);

    // Signed by a key nobody trusts: untrusted-signer, told apart for rotation.
    std::string const foreign =
        sealed_entry(some_key, "payload", cc::envelope_auth::signed_by(writer_of(std::move(laptop))));
    CHECK(open_status(foreign, some_key, reader) == cc::envelope_status::untrusted_signer);

    // Sealed with an HMAC (a reader's secret, say) or a CRC: not signed, not accepted.
    CHECK(open_status(sealed_entry(some_key, "payload", cc::envelope_auth("secret")), some_key, reader) ==
          cc::envelope_status::unauthenticated);
    CHECK(open_status(sealed_entry(some_key, "payload", cc::envelope_auth()), some_key, reader) ==
          cc::envelope_status::unauthenticated);
    // Truncated to nothing but a signature's worth, or shorter: never accepted.
    CHECK(open_status(sound.substr(0, 80), some_key, reader) != cc::envelope_status::ok);
    // Under another key than the one signed: key-mismatch.
    CHECK(open_status(sound, plain_key("other").value(), reader) == cc::envelope_status::key_mismatch);
}

TEST_CASE("signed entry: a reader cannot sign, and a verified entry resealed under a secret opens as a local one that "
          "names its signer",
          "[signing]") {
    cc::ed25519_signer ci = new_key("ci");
    cc::envelope_auth const reader = cc::envelope_auth::signed_by(reader_of(trusting({ci.public_key()})));
    std::string out;
    cc::envelope_writer w(out, some_key, meta(), reader);
    w.out() += "payload";
    CHECK_THROWS_AS(w.seal(), std::logic_error);

    cc::envelope_auth const writer = cc::envelope_auth::signed_by(writer_of(std::move(ci)));
    std::string const entry = sealed_entry(some_key, "payload", writer);
    cc::envelope_auth const local("local secret");
    std::string resealed;
    REQUIRE(cc::reseal_envelope(entry, reader, local, resealed));
    // An HMAC entry and a signer's copy (0x0200), version 5, which earlier releases miss;
    // the signer's key id after the payload, under the HMAC.
    CHECK(flags_of(resealed) == 0x0201);
    CHECK(version_of(resealed) == 5);
    CHECK(resealed.size() == entry.size() - 72 + 8 + 32);
    CHECK(resealed.compare(resealed.size() - 40, 8, entry, entry.size() - 72, 8) == 0);
    cc::opened_envelope const copy = cc::open_envelope(resealed, some_key, "test-format", 1 << 20, local);
    CHECK(copy.status == cc::envelope_status::ok);
    CHECK(copy.payload == "payload");
    CHECK(copy.signer_copy);
    CHECK_FALSE(copy.signed_entry);
    CHECK(cc::to_hex(copy.signer_id) == cc::to_hex(writer.signatures()->signer_id()));
    CHECK(open_status(resealed, some_key, reader) == cc::envelope_status::unauthenticated);
    // A changed byte of the key id is damage, as any byte under the check value.
    std::string moved = resealed;
    moved[moved.size() - 40] ^= 1;
    CHECK(open_status(moved, some_key, local) == cc::envelope_status::unauthenticated);
    // The flags the version allows, and no other: a copy's flag without version 5, version 5
    // without the flag, are refused even under a valid check value.
    std::string const body = resealed.substr(0, resealed.size() - 32);
    auto with = [&](std::uint16_t version, std::uint16_t flags) {
        std::string e = body;
        e[8] = static_cast<char>(version);
        e[10] = static_cast<char>(flags & 0xff);
        e[11] = static_cast<char>(flags >> 8);
        local.append_check(e);
        return open_status(e, some_key, local);
    };
    CHECK(with(5, 0x0201) == cc::envelope_status::ok);
    CHECK(with(4, 0x0201) == cc::envelope_status::corrupt);
    CHECK(with(5, 0x0001) == cc::envelope_status::corrupt);
    CHECK(with(3, 0x0201) == cc::envelope_status::corrupt);
    // Sealed again for the remote, it is signed by this writer, the copy's key id gone.
    CHECK_FALSE(cc::reseal_envelope(resealed, local, reader, out)); // no signing key
    REQUIRE(cc::reseal_envelope(resealed, local, writer, out));
    CHECK(out == entry); // (one key: the same signature of the same bytes, Ed25519 being deterministic)
    CHECK(open_status(out, some_key, reader) == cc::envelope_status::ok);
    // Sealed again in another mode that does not sign, it stays a signer's copy.
    cc::envelope_auth const crc;
    REQUIRE(cc::reseal_envelope(resealed, local, crc, out));
    CHECK(flags_of(out) == 0x0200);
    CHECK(cc::open_envelope(out, some_key, "test-format", 1 << 20, crc).signer_copy);
}

TEST_CASE("signed tier: a writer signs what it uploads, a reader loads it, keeps it locally under its own check, and "
          "uploads nothing",
          "[signing]") {
    temp_dir dir;
    fs::path const remote = dir.path() / "remote";
    cc::ed25519_signer ci = new_key("ci");
    cc::trusted_keys const keys = trusting({ci.public_key()});
    cc::key_result const k = plain_key("axpy(a,x,y) = a*x+y");

    tier_cache writer = machine(dir.path() / "ci", remote, signing(writer_of(std::move(ci))));
    REQUIRE(writer.store(k, small_kernel(), axpy_info));
    // CI's own local copy is sealed as local entries are (CRC-32C here), the remote's is signed.
    CHECK(flags_of(read_file(writer.storage().local().entry_path(k.value()))) == 0);
    CHECK(flags_of(read_file(writer.storage().remote().entry_path(k.value()))) == 2);
    CHECK(version_of(read_file(writer.storage().local().entry_path(k.value()))) == 3);
    CHECK(version_of(read_file(writer.storage().remote().entry_path(k.value()))) == 4);

    tier_cache reader = machine(dir.path() / "laptop", remote, signing(reader_of(keys), "laptop secret"));
    std::optional<compiled_kernel> loaded = reader.load<compiled_kernel>(k, axpy_info);
    REQUIRE(loaded);
    CHECK(loaded->bytecode == small_kernel().bytecode);
    fs::path const local_copy = reader.storage().local().entry_path(k.value());
    REQUIRE(fs::exists(local_copy));
    CHECK(flags_of(read_file(local_copy)) == 0x0201); // resealed with the laptop's HMAC, naming its signer
    CHECK(version_of(read_file(local_copy)) == 5);

    // The next process on the laptop hits locally: the remote gone, it still loads.
    fs::remove_all(remote);
    tier_cache again = machine(dir.path() / "laptop", remote, signing(reader_of(keys), "laptop secret"));
    CHECK(again.load<compiled_kernel>(k, axpy_info));
    CHECK(again.stats().hits == 1);

    // The reader compiles something new: kept locally, nothing uploaded.
    cc::key_result const k2 = plain_key("scale(a,x) = a*x");
    REQUIRE(again.store(k2, small_kernel(), axpy_info));
    CHECK(fs::exists(again.storage().local().entry_path(k2.value())));
    CHECK_FALSE(fs::exists(again.storage().remote().entry_path(k2.value())));
}

TEST_CASE("signed tier: a local entry is never trusted for a signature it carries, an untrusted signer is a counted "
          "miss named once in the log",
          "[signing]") {
    temp_dir dir;
    fs::path const remote = dir.path() / "remote";
    cc::ed25519_signer ci = new_key("ci");
    cc::ed25519_signer rogue = new_key("rogue");
    std::string const rogue_id = cc::to_hex(rogue.id());
    cc::trusted_keys const keys = trusting({ci.public_key()});
    cc::key_result const k = plain_key("axpy(a,x,y) = a*x+y");
    cc::key_result const k2 = plain_key("scale(a,x) = a*x");

    tier_cache ci_machine = machine(dir.path() / "ci", remote, signing(writer_of(std::move(ci))));
    REQUIRE(ci_machine.store(k, small_kernel(), axpy_info));
    // A signed entry planted in a reader's local directory: local entries are checked
    // by the local mode alone.
    tier_cache reader = machine(dir.path() / "laptop", remote, signing(reader_of(keys)));
    fs::create_directories(fs::path(reader.storage().local().entry_path(k.value())).parent_path());
    write_file(reader.storage().local().entry_path(k.value()),
               read_file(ci_machine.storage().remote().entry_path(k.value())));
    fs::remove(ci_machine.storage().remote().entry_path(k.value()));
    CHECK_FALSE(reader.load<compiled_kernel>(k, axpy_info));
    CHECK(reader.stats().miss_count(cc::miss_reason::unauthenticated) == 1);

    // Entries signed by an untrusted key on the remote: misses, the key id said once.
    tier_cache rogue_machine = machine(dir.path() / "rogue", remote, signing(writer_of(std::move(rogue))));
    REQUIRE(rogue_machine.store(k2, small_kernel(), axpy_info));
    std::vector<std::string> lines;
    reader.set_logger([&](std::string_view l) { lines.emplace_back(l); });
    CHECK_FALSE(reader.load<compiled_kernel>(k2, axpy_info));
    CHECK_FALSE(reader.load<compiled_kernel>(k2, axpy_info));
    CHECK(reader.stats().miss_count(cc::miss_reason::untrusted_signer) == 2);
    std::size_t naming = 0;
    for (auto const& l : lines) naming += l.find(rogue_id) != std::string::npos;
    CHECK(naming == 1);
    CHECK(std::string(cc::to_string(cc::miss_reason::untrusted_signer)) == "untrusted-signer");
}

TEST_CASE("signed tier: a key taken out of the trusted keys stops the local copies of its entries in the next "
          "process: a miss untrusted-signer, said once, then the kernel stored anew",
          "[signing]") {
    temp_dir dir;
    cc::ed25519_signer ci = new_key("ci");
    cc::ed25519_signer next = new_key("next");
    std::string const ci_id = cc::to_hex(ci.id());
    fs::path const trusted = dir.path() / "trusted";
    write_file(trusted, ci.public_key().line() + "\n" + next.public_key().line() + "\n");
    ::chmod(trusted.c_str(), 0644);
    fs::path const remote = dir.path() / "remote";
    cc::key_result const k = plain_key("axpy(a,x,y) = a*x+y");
    {
        tier_cache writer = machine(dir.path() / "ci", remote, signing(writer_of(std::move(ci))));
        REQUIRE(writer.store(k, small_kernel(), axpy_info));
    }
    auto laptop = [&] { return laptop_run(dir.path() / "laptop", remote, trusted, k, ci_id); };
    CHECK(laptop() == "loaded  named 0"); // from the remote, by signature; kept locally
    fs::path const copy = cc::directory_storage((dir.path() / "laptop").string()).entry_path(k.value());
    REQUIRE(fs::exists(copy));
    CHECK(flags_of(read_file(copy)) == 0x0200); // a CRC-32C, and CI's key id
    CHECK(laptop() == "loaded  named 0");       // from the local copy

    // CI's key is taken out: the copy it signed is no longer used, as its signed entry on
    // the remote is not; the kernel is compiled and stored as the laptop's own.
    write_file(trusted, next.public_key().line() + "\n");
    CHECK(laptop() == "compiled untrusted-signer named 1");
    CHECK(flags_of(read_file(copy)) == 0);
    CHECK(laptop() == "loaded  named 0");

    // A cache that checks no signature cannot vouch for a copy's signer: it misses it.
    fs::path const desk = dir.path() / "desk";
    cc::ed25519_signer ci2 = new_key("ci2");
    cc::trusted_keys const keys2 = trusting({ci2.public_key()});
    cc::key_result const k2 = plain_key("scale(a,x) = a*x");
    tier_cache writer = machine(dir.path() / "ci2", remote, signing(writer_of(std::move(ci2))));
    REQUIRE(writer.store(k2, small_kernel(), axpy_info));
    tier_cache reader = machine(desk, remote, signing(reader_of(keys2)));
    REQUIRE(reader.load<compiled_kernel>(k2, axpy_info)); // (copied to the desk's directory)
    cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage> unsigned_reader{
        cc::directory_storage(desk.string())};
    CHECK_FALSE(unsigned_reader.load<compiled_kernel>(k2, axpy_info));
    CHECK(unsigned_reader.stats().miss_count(cc::miss_reason::untrusted_signer) == 1);
}

TEST_CASE("signed tier: after a key rotation a reader's copies of the old key's entry and record give way to the "
          "remote's, signed anew: loaded and explained, not compiled",
          "[signing]") {
    temp_dir dir;
    cc::ed25519_signer ci = new_key("ci");
    cc::ed25519_signer next = new_key("next");
    cc::entry_signer_id const ci_id = ci.id(), next_id = next.id();
    std::string const next_line = next.public_key().line() + "\n";
    fs::path const trusted = dir.path() / "trusted";
    write_file(trusted, ci.public_key().line() + "\n" + next_line);
    ::chmod(trusted.c_str(), 0644);
    fs::path const remote = dir.path() / "remote", laptop = dir.path() / "laptop";
    cc::key_result const k = plain_key("axpy(a,x,y) = a*x+y");
    // A kernel with an identity record, its entries' keys made of its IR.
    cc::entry_info const info{"scale", "blas.dsl", 7};
    auto const compile = [] { return std::string("code"); };
    auto const key_of = [](tier_cache& c, int ir) { return c.make_key_builder().add("ir", ir).finish(); };
    auto const with_records = [](cc::cache_options o) {
        o.record_identities = true;
        return o;
    };
    // A process on the laptop that gets the kernel's entry for `ir`: how, and its miss's explanation.
    auto const laptop_with_records = [&](int ir) {
        return run_in_child([&] {
            std::string why;
            std::optional<cc::trusted_keys> keys = cc::trusted_keys::from_file(trusted.string(), why);
            if (!keys) return "trusted keys: " + why;
            tier_cache c = machine(laptop, remote, with_records(signing(reader_of(std::move(*keys)))));
            cc::cached<std::string> const r = c.get_or_compile<std::string>(key_of(c, ir), info, compile);
            std::string changed;
            for (std::string const& part : r.explanation.changed) changed += " " + part;
            return std::string(cc::to_string(r.outcome)) + " " + r.reason +
                   (r.explanation.what == cc::miss_explanation::kind::changed     ? " changed" + changed
                    : r.explanation.what == cc::miss_explanation::kind::new_kernel ? " new kernel"
                                                                                   : "");
        });
    };
    cc::key const record_key = cc::identity_record_key(cc::kernel_identity({}, "scale", "blas.dsl"));
    auto const record_copy = [&] {
        std::string out;
        (void)cc::directory_storage(laptop.string()).read(record_key, out, 1 << 20);
        return out;
    };
    {
        tier_cache writer = machine(dir.path() / "ci", remote, with_records(signing(writer_of(std::move(ci)))));
        REQUIRE(writer.store(k, small_kernel(), axpy_info));
        REQUIRE(writer.get_or_compile<std::string>(key_of(writer, 1), info, compile).outcome == cc::outcome::compiled);
    }
    // The laptop copies CI's entries, and the kernel's record beside the one it loads.
    CHECK(laptop_run(laptop, remote, trusted, k, cc::to_hex(ci_id)) == "loaded  named 0");
    CHECK(laptop_with_records(1) == "loaded ");
    fs::path const copy = cc::directory_storage(laptop.string()).entry_path(k.value());
    REQUIRE(fs::exists(copy));
    CHECK(names_signer(read_file(copy), ci_id));
    REQUIRE(flags_of(record_copy()) == 0x0200);
    CHECK(names_signer(record_copy(), ci_id));

    // The rotation: CI signs its kernels again with its new key; then the old one is taken out.
    {
        tier_cache writer = machine(dir.path() / "ci-next", remote, with_records(signing(writer_of(std::move(next)))));
        REQUIRE(writer.store(k, small_kernel(), axpy_info));
        REQUIRE(writer.get_or_compile<std::string>(key_of(writer, 1), info, compile).outcome == cc::outcome::compiled);
    }
    write_file(trusted, next_line);
    // The copy of the entry is refused, and the remote's, signed anew, is loaded and kept in its place.
    CHECK(laptop_run(laptop, remote, trusted, k, cc::to_hex(ci_id)) == "loaded  named 0");
    CHECK(names_signer(read_file(copy), next_id));
    CHECK_FALSE(names_signer(read_file(copy), ci_id));
    // So is the copy of the record: a miss is explained from the remote's.
    CHECK(laptop_with_records(2) == "compiled absent changed ir");
    // The remote gone, the laptop loads its new copy.
    fs::remove_all(remote);
    CHECK(laptop_run(laptop, remote, trusted, k, cc::to_hex(ci_id)) == "loaded  named 0");
}

TEST_CASE("signatures over a storage that is not a tier: with or without a secret the cache is disabled and says "
          "why, never loads a forged entry",
          "[signing]") {
    temp_dir dir;
    cc::ed25519_signer ci = new_key("ci");
    cc::trusted_keys const keys = trusting({ci.public_key()});
    cc::key_result const k = plain_key("axpy(a,x,y) = a*x+y");
    using plain_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage>;
    // A CRC-32C entry anyone could have written, where the reader trusts only CI's key.
    plain_cache forger(cc::directory_storage((dir.path() / "shared").string()));
    REQUIRE(forger.store(k, small_kernel(), axpy_info));

    std::vector<std::string> lines;
    cc::cache_options o = signing(reader_of(keys));
    o.logger = [&](std::string_view l) { lines.emplace_back(l); };
    plain_cache reader(cc::directory_storage((dir.path() / "shared").string()), o);
    CHECK_FALSE(reader.enabled());
    CHECK_FALSE(reader.load<compiled_kernel>(k, axpy_info));
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("trusted keys need a tier (tiered_storage); this storage cannot check signatures") !=
          std::string::npos);
    CHECK(lines[0].find("the cache is disabled") != std::string::npos);

    // With a secret too: the signatures would be dropped for the HMAC, which every holder
    // of the secret (every reader) can make, so the cache is disabled as well.
    plain_cache keyed_forger(cc::directory_storage((dir.path() / "keyed").string()),
                             signing(nullptr, "the writers' secret"));
    REQUIRE(keyed_forger.store(k, small_kernel(), axpy_info));
    lines.clear();
    cc::cache_options keyed_options = signing(reader_of(keys), "the writers' secret");
    keyed_options.logger = [&](std::string_view l) { lines.emplace_back(l); };
    plain_cache keyed(cc::directory_storage((dir.path() / "keyed").string()), keyed_options);
    CHECK_FALSE(keyed.enabled());
    CHECK_FALSE(keyed.load<compiled_kernel>(k, axpy_info));
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("this storage cannot check signatures") != std::string::npos);
    CHECK(lines[0].find("checked by the secret alone") != std::string::npos);
}

namespace {
/// A host's own Storage whose answers may come from a remote (a static `from_remote`
/// origin: a tier to the cache) over a directory, whose entries it can also give as
/// views (read_view, which may map them): counts the reads and the views.
struct viewing_host_storage {
    static constexpr std::uint32_t from_remote = 1;
    using view_type = cc::entry_view;
    cc::directory_storage dir;
    std::shared_ptr<int> reads = std::make_shared<int>(0);
    std::shared_ptr<int> views = std::make_shared<int>(0);
    cc::read_result read(cc::key const& k, std::string& out, std::size_t max_size) {
        ++*reads;
        return dir.read(k, out, max_size);
    }
    cc::read_result read_view(cc::key const& k, std::string& buffer, std::size_t max_size, cc::entry_view& view) {
        ++*views;
        return dir.read_view(k, buffer, max_size, view);
    }
    std::error_code write(cc::key const& k, std::string_view bytes) { return dir.write(k, bytes); }
    std::error_code remove(cc::key const& k) { return dir.remove(k); }
};
} // namespace

TEST_CASE("signatures over a host's storage with views: an entry is read, never viewed, so that the bytes a "
          "signature was checked on are those loaded",
          "[signing]") {
    temp_dir dir;
    cc::ed25519_signer ci = new_key("ci");
    cc::key_result const k = plain_key("axpy(a,x,y) = a*x+y");
    using host_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, viewing_host_storage>;
    SECTION("with signatures: read") {
        host_cache c(viewing_host_storage{cc::directory_storage(dir.path().string())},
                     signing(writer_of(std::move(ci))));
        REQUIRE(c.enabled());
        REQUIRE(c.store(k, small_kernel(), axpy_info));
        REQUIRE(c.load<compiled_kernel>(k, axpy_info));
        CHECK(*c.storage().reads >= 1);
        CHECK(*c.storage().views == 0);
    }
    SECTION("without (the control): viewed") {
        cc::cache_options o;
        o.record_identities = false;
        host_cache c(viewing_host_storage{cc::directory_storage(dir.path().string())}, o);
        REQUIRE(c.store(k, small_kernel(), axpy_info));
        REQUIRE(c.load<compiled_kernel>(k, axpy_info));
        CHECK(*c.storage().reads == 0);
        CHECK(*c.storage().views == 1);
    }
}

TEST_CASE("signed tier from_env: key files configure writer and reader, a reader's remote is read-only, said in one "
          "line, bad files disable the cache with one line",
          "[signing]") {
    temp_dir dir;
    scoped_settings env("CCSIGN", {"_DIR", "_REMOTE", "_LOG", "_SIGNING_KEY_FILE", "_TRUSTED_KEYS_FILE",
                                   "_SECRET_FILE", "_REMOTE_UPLOAD"});
    cc::ed25519_signer ci = new_key("ci");
    fs::path const secret = dir.path() / "ci.key";
    fs::path const trusted = dir.path() / "trusted";
    compile_cache_test::write_private_file(secret, ci.secret_key_line() + "\n");
    ::chmod(secret.c_str(), 0600);
    write_file(trusted, ci.public_key().line() + "\n");
    ::chmod(trusted.c_str(), 0644);

    // (A directory made from the environment reads _DIR: the tier's two directories are
    // one here; tests/redis/signed_redis_test.cpp loads across machines.)
    using dir_tier_cache = tier_cache;
    env.set("_REMOTE", (dir.path() / "remote").string());
    env.set("_REMOTE_UPLOAD", "sync");
    {
        env.set("_DIR", (dir.path() / "ci").string());
        env.set("_SIGNING_KEY_FILE", secret.string());
        dir_tier_cache writer = dir_tier_cache::from_env("CCSIGN");
        REQUIRE(writer.enabled());
        CHECK(writer.storage().mode() == cc::remote_mode::read_write);
    }
    {
        ::unsetenv("CCSIGN_SIGNING_KEY_FILE");
        env.set("_DIR", (dir.path() / "laptop").string());
        env.set("_TRUSTED_KEYS_FILE", trusted.string());
        env.set("_LOG", "1");
        captured_stderr err(dir.path() / "stderr");
        dir_tier_cache reader = dir_tier_cache::from_env("CCSIGN");
        std::string const said = err.text();
        REQUIRE(reader.enabled());
        CHECK(reader.storage().mode() == cc::remote_mode::read_only);
        CHECK(lines_of(said).size() == 1);
        CHECK(said.find("read-only") != std::string::npos);
    }
    // Bad files: one line each, no cache, never a hang.
    ::unsetenv("CCSIGN_LOG");
    struct bad_file {
        char const* what;
        std::string suffix;
        std::string content;
        unsigned mode;
    };
    std::vector<bad_file> const bad = {
        {"an empty secret key", "_SIGNING_KEY_FILE", "", 0600},
        {"a secret key of the wrong length", "_SIGNING_KEY_FILE", "ci:AAAA\n", 0600},
        {"a public key where the secret one goes", "_SIGNING_KEY_FILE", ci.public_key().line() + "\n", 0600},
        {"a world-writable trusted-keys file", "_TRUSTED_KEYS_FILE", ci.public_key().line() + "\n", 0666},
        {"a group-writable trusted-keys file", "_TRUSTED_KEYS_FILE", ci.public_key().line() + "\n", 0664},
        {"a secret key the group may read", "_SIGNING_KEY_FILE", ci.secret_key_line() + "\n", 0640},
        {"a secret key any user may read", "_SIGNING_KEY_FILE", ci.secret_key_line() + "\n", 0604},
        {"a secret key in the trusted-keys file", "_TRUSTED_KEYS_FILE", ci.secret_key_line() + "\n", 0600},
    };
    for (bad_file const& b : bad) {
        INFO(b.what);
        ::unsetenv("CCSIGN_SIGNING_KEY_FILE");
        ::unsetenv("CCSIGN_TRUSTED_KEYS_FILE");
        fs::path const f = dir.path() / "bad";
        write_file(f, b.content);
        ::chmod(f.c_str(), b.mode);
        env.set(b.suffix, f.string());
        captured_stderr err(dir.path() / "stderr");
        dir_tier_cache c = dir_tier_cache::from_env("CCSIGN");
        std::string const said = err.text();
        CHECK_FALSE(c.enabled());
        CHECK(lines_of(said).size() == 1);
        CHECK(said.find("CCSIGN" + b.suffix) != std::string::npos);
        CHECK(said.find("disabled") != std::string::npos);
        fs::remove(f);
    }
    {
        INFO("a FIFO that no program writes");
        ::unsetenv("CCSIGN_SIGNING_KEY_FILE");
        fs::path const fifo = dir.path() / "fifo";
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        env.set("_TRUSTED_KEYS_FILE", fifo.string());
        captured_stderr err(dir.path() / "stderr");
        dir_tier_cache c = dir_tier_cache::from_env("CCSIGN");
        std::string const said = err.text();
        CHECK_FALSE(c.enabled());
        CHECK(lines_of(said).size() == 1);
    }
}

TEST_CASE("from_env over a storage that is not a tier: trusted keys, with a secret or not, disable the cache in one "
          "line, never an HMAC-only cache",
          "[signing]") {
    temp_dir dir;
    scoped_settings env("CCSIGNDIR", {"_DIR", "_LOG", "_SIGNING_KEY_FILE", "_TRUSTED_KEYS_FILE", "_SECRET_FILE"});
    cc::ed25519_signer ci = new_key("ci");
    fs::path const trusted = dir.path() / "trusted";
    write_file(trusted, ci.public_key().line() + "\n");
    fs::path const secret = dir.path() / "secret";
    compile_cache_test::write_private_file(secret, "the fleet's secret");
    fs::path const signing_key = dir.path() / "ci.key";
    compile_cache_test::write_private_file(signing_key, ci.secret_key_line() + "\n");
    env.set("_DIR", (dir.path() / "cache").string());
    // A secret holder's entry, which the host must not take for a trusted key's.
    cc::default_cache forger(cc::directory_storage((dir.path() / "cache").string()),
                             signing(nullptr, "the fleet's secret"));
    cc::key_result const k = plain_key("axpy(a,x,y) = a*x+y");
    REQUIRE(forger.store(k, small_kernel(), axpy_info));
    struct setup {
        char const* what;
        char const* suffix;
        bool with_secret;
    };
    for (setup const& t : {setup{"trusted keys and a secret", "_TRUSTED_KEYS_FILE", true},
                           setup{"trusted keys alone", "_TRUSTED_KEYS_FILE", false},
                           setup{"a signing key and a secret", "_SIGNING_KEY_FILE", true}}) {
        INFO(t.what);
        env.clear();
        env.set("_DIR", (dir.path() / "cache").string());
        env.set(t.suffix, (std::string(t.suffix) == "_TRUSTED_KEYS_FILE" ? trusted : signing_key).string());
        if (t.with_secret) env.set("_SECRET_FILE", secret.string());
        captured_stderr err(dir.path() / "stderr");
        cc::default_cache host = cc::default_cache::from_env("CCSIGNDIR");
        std::string const said = err.text();
        INFO(said);
        CHECK_FALSE(host.enabled());
        CHECK_FALSE(host.load<compiled_kernel>(k, axpy_info));
        CHECK(lines_of(said).size() == 1);
        CHECK(said == "compile_cache: CCSIGNDIR" + std::string(t.suffix) +
                          " is set, but trusted keys need a tier (tiered_storage); this storage cannot check "
                          "signatures; the cache is disabled rather than check its entries by less\n");
    }
}

TEST_CASE("signed tier: the identity record copied from the remote beside an entry is resealed locally, so a later "
          "miss is explained from it with the remote gone",
          "[signing]") {
    temp_dir dir;
    fs::path const remote = dir.path() / "remote";
    cc::ed25519_signer ci = new_key("ci");
    cc::trusted_keys const keys = trusting({ci.public_key()});
    auto const with_records = [](cc::cache_options o) {
        o.record_identities = true;
        return o;
    };
    cc::entry_info const info{"axpy", "blas.dsl", 7};
    auto const compile = [] { return std::string("code"); };
    auto const key_of = [](tier_cache& c, int ir) { return c.make_key_builder().add("ir", ir).finish(); };
    cc::key const record_key = cc::identity_record_key(cc::kernel_identity({}, "axpy", "blas.dsl"));

    {
        tier_cache writer = machine(dir.path() / "ci", remote, with_records(signing(writer_of(std::move(ci)))));
        REQUIRE(writer.get_or_compile<std::string>(key_of(writer, 1), info, compile).outcome == cc::outcome::compiled);
    }
    std::string remote_record;
    REQUIRE(cc::directory_storage(remote.string()).read(record_key, remote_record, 1 << 20).status ==
            cc::read_status::found);
    CHECK(flags_of(remote_record) == 2);

    // A reader that misses reads the record from the remote, by signature.
    {
        tier_cache desk = machine(dir.path() / "desk", remote, with_records(signing(reader_of(keys), "desk secret")));
        auto const r = desk.get_or_compile<std::string>(key_of(desk, 2), info, compile);
        CHECK(r.reason == "absent");
        CHECK(r.explanation.what == cc::miss_explanation::kind::changed);
        CHECK(r.explanation.changed == std::vector<std::string>{"ir"});
    }

    // A reader that hits copies the entry and, beside it, the kernel's record: both
    // under its own HMAC, not the signature its local reads do not check.
    fs::path const laptop = dir.path() / "laptop";
    {
        tier_cache reader = machine(laptop, remote, with_records(signing(reader_of(keys), "laptop secret")));
        REQUIRE(reader.get_or_compile<std::string>(key_of(reader, 1), info, compile).outcome == cc::outcome::loaded);
        std::string local_record; // (held, then written in a pack when the machine ends)
        REQUIRE(reader.storage().local().read(record_key, local_record, 1 << 20).status == cc::read_status::found);
        CHECK(flags_of(local_record) == 0x0201);
    }
    // With the remote gone, the next miss on the laptop is explained from its local copy.
    fs::remove_all(remote);
    tier_cache again = machine(laptop, remote, with_records(signing(reader_of(keys), "laptop secret")));
    auto const r = again.get_or_compile<std::string>(key_of(again, 2), info, compile);
    CHECK(r.reason == "absent");
    CHECK(r.explanation.what == cc::miss_explanation::kind::changed);
    CHECK(r.explanation.changed == std::vector<std::string>{"ir"});

    // A reader that no longer trusts CI's key is explained nothing by the copy CI signed.
    cc::trusted_keys const others = trusting({new_key("next").public_key()});
    tier_cache revoked = machine(laptop, remote, with_records(signing(reader_of(others), "laptop secret")));
    auto const unexplained = revoked.get_or_compile<std::string>(key_of(revoked, 3), info, compile);
    CHECK(unexplained.reason == "absent");
    CHECK(unexplained.explanation.what == cc::miss_explanation::kind::new_kernel);
}
