// make_entries DIR COUNT [NAME]: writes COUNT real entries into the cache directory
// DIR through directory_storage and the library's envelope, for the tool's tests that
// need more entries than tinyk runs make quickly (the progress line's 10,001) or a
// kernel name no tinyk program can have. Entry i has key sha256("entry i"), kernel
// name NAME (default "kernel_i"), origin "generated.tk" line i, and one component.
// With MAKE_ENTRIES_SIGNING_KEY_FILE set (a secret key file compile-cache keygen made),
// the entries are signed by that key, as a tier signs what it uploads. With
// MAKE_ENTRIES_WITH_RECORDS=1, each entry's kernel gets its identity record too (one
// entry recorded), written as a host writes it: held, and packed a batch at a time. With
// MAKE_ENTRIES_SIGNER_COPIES=1 too (and a signing key), what is written is a reader's
// local copies of those signed entries and records, as its tier keeps what it fetched
// (reseal_envelope into CRC-32C: flag 0x0200 and the signer's key id).
// MAKE_ENTRIES_ORIGIN=FILE: the origin file instead of "generated.tk".
#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/identity_record.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#if defined(MAKE_ENTRIES_WITH_SIGNING)
#include <compile_cache/signing/signed_entries.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4) {
        std::fprintf(stderr, "usage: make_entries DIR COUNT [NAME]\n");
        return 2;
    }
    compile_cache::envelope_auth auth;
    if (char const* key_file = std::getenv("MAKE_ENTRIES_SIGNING_KEY_FILE")) {
#if defined(MAKE_ENTRIES_WITH_SIGNING)
        std::string why;
        std::optional<compile_cache::ed25519_signer> signer = compile_cache::ed25519_signer::from_file(key_file, why);
        if (!signer) {
            std::fprintf(stderr, "make_entries: %s: %s\n", key_file, why.c_str());
            return 2;
        }
        auth = compile_cache::envelope_auth::signed_by(
            std::make_shared<compile_cache::ed25519_entry_signatures>(std::move(*signer)));
#else
        std::fprintf(stderr, "make_entries: built without signing, cannot sign with %s\n", key_file);
        return 2;
#endif
    }
    char const* const with_records = std::getenv("MAKE_ENTRIES_WITH_RECORDS");
    bool const records = with_records != nullptr && std::string(with_records) == "1";
    char const* const signer_copies = std::getenv("MAKE_ENTRIES_SIGNER_COPIES");
    bool const copies = signer_copies != nullptr && std::string(signer_copies) == "1";
    if (copies && !auth.is_signed()) {
        std::fprintf(stderr, "make_entries: MAKE_ENTRIES_SIGNER_COPIES needs MAKE_ENTRIES_SIGNING_KEY_FILE\n");
        return 2;
    }
    compile_cache::envelope_auth const local; // a reader's copies: CRC-32C
    std::string copy;
    /// What is written for the signed `sealed`: itself, or the reader's copy of it.
    auto const as_written = [&](std::string const& sealed) -> std::string const& {
        if (!copies) return sealed;
        if (!compile_cache::reseal_envelope(sealed, auth, local, copy)) {
            std::fprintf(stderr, "make_entries: cannot reseal a signed entry as a signer's copy\n");
            std::exit(1);
        }
        return copy;
    };
    char const* const origin = std::getenv("MAKE_ENTRIES_ORIGIN");
    compile_cache::directory_storage storage(argv[1]);
    long const count = std::strtol(argv[2], nullptr, 10);
    std::string bytes;
    for (long i = 0; i < count; ++i) {
        std::string const id = "entry " + std::to_string(i);
        compile_cache::key const k(compile_cache::sha256_digest(id.data(), id.size()));
        compile_cache::entry_metadata m;
        m.name = argc == 4 ? std::string(argv[3]) : "kernel_" + std::to_string(i);
        m.origin_file = origin != nullptr ? origin : "generated.tk";
        m.origin_line = i + 1;
        m.format_id = "make_entries";
        m.created_ns = 1;
        m.compile_ns = 1000;
        m.components.push_back({"id", k});
        std::size_t const length_at = compile_cache::begin_envelope(bytes, k, m, auth);
        bytes += "payload of " + id;
        compile_cache::seal_envelope(bytes, length_at, auth);
        if (std::error_code const ec = storage.write(k, as_written(bytes))) {
            std::fprintf(stderr, "make_entries: cannot write entry %ld: %s\n", i, ec.message().c_str());
            return 1;
        }
        if (!records) continue;
        std::string const identity = compile_cache::kernel_identity({}, m.name, m.origin_file);
        compile_cache::key const digest8(k.data(), compile_cache::identity_record_digest_size);
        compile_cache::recorded_entry newest{k, m.created_ns, m.compile_ns, {{"id", digest8}}};
        std::string const record = compile_cache::detail::sealed_identity_record(identity, newest, nullptr, m, auth);
        if (std::error_code const ec =
                storage.write(compile_cache::identity_record_key(identity), as_written(record))) {
            std::fprintf(stderr, "make_entries: cannot write the record of entry %ld: %s\n", i, ec.message().c_str());
            return 1;
        }
    }
    if (std::error_code const ec = storage.flush_deferred()) { // the last batch of records, in its pack
        std::fprintf(stderr, "make_entries: cannot write the identity records: %s\n", ec.message().c_str());
        return 1;
    }
    return 0;
}
