// compile-cache: checking an entry (entry_check.hpp).
#include "entry_check.hpp"

#include <compile_cache/storage/directory/directory_layout.hpp>

namespace compile_cache_tool {

char const* to_string(verdict v) noexcept {
    switch (v) {
    case verdict::sound: return "sound";
    case verdict::bad: return "bad";
    case verdict::unchecked: return "unchecked";
    case verdict::untrusted: return "untrusted-signer";
    }
    return "?";
}

std::string trusted_signers::name_of(compile_cache::entry_signer_id const& id) const {
    for (auto const& [known, name] : names)
        if (known == id) return name;
    return {};
}

std::string signer_hex(compile_cache::entry_signer_id const& id) { return compile_cache::key(id.data(), id.size()).hex(); }

checked_entry check_bytes(std::string const& bytes, std::string const& name, compile_cache::envelope_auth const& auth,
                          trusted_signers const* trusted) {
    using compile_cache::envelope_status;
    checked_entry c;
    c.file_size = bytes.size();
    if (compile_cache::directory_layout::is_pack_name(name)) { // listed as an entry: not sound (list_directory)
        c.problem = "a pack of identity records that does not check (its header, index or bounds: damaged or "
                    "truncated), so its records are lost to the hosts";
        return c;
    }
    c.envelope = compile_cache::inspect_envelope(bytes, auth);
    c.check_size = auth.check_size();
    // A signed entry (its header says so) is checked by signature when keys were given.
    if (c.envelope.signed_entry && trusted && trusted->given()) {
        c.envelope = compile_cache::inspect_envelope(bytes, trusted->auth);
        c.check_size = trusted->auth.check_size();
    }
    c.payload_size = c.envelope.payload.size();
    c.envelope.payload = {};
    switch (c.envelope.status) {
    case envelope_status::ok:
        if (c.envelope.stored_key.hex() != name) {
            c.problem = "holds the entry of another key (" + c.envelope.stored_key.hex() + ")";
        } else if (c.envelope.signer_copy && !(trusted && trusted->given())) {
            // A local copy of a signed entry: used by a host only while it trusts the signer,
            // which only the trusted keys can say (and never by a host without them).
            c.result = verdict::unchecked;
            c.problem = "a local copy of an entry signed by key id " + signer_hex(c.envelope.signer_id) +
                        ": give --trusted-keys-file to check that its signer is trusted (a host that does not "
                        "trust it, or has no trusted keys, misses it)";
        } else if (c.envelope.signer_copy && !trusted->trusts(c.envelope.signer_id)) {
            c.result = verdict::untrusted;
            c.problem = "a local copy of an entry signed by key id " + signer_hex(c.envelope.signer_id) +
                        ", which is none of the trusted keys: a host that trusts these keys misses it";
        } else if (c.envelope.signer_copy && trusted && trusted->given() && !auth.keyed()) {
            // A signer's copy under a CRC-32C: anyone who can write the storage can make one.
            c.result = verdict::unchecked;
            c.problem = "a local copy of an entry signed by key id " + signer_hex(c.envelope.signer_id) +
                        " (a trusted key), under a CRC-32C: with --trusted-keys-file and no --secret-file, only an "
                        "entry a trusted key signed is taken for sound";
        } else if (!c.envelope.signed_entry && !c.envelope.signer_copy && trusted && trusted->given()) {
            // Trusted keys: what is asked is whether a trusted key wrote it, which neither a
            // CRC-32C nor the HMAC can say (every holder of the secret, every reader, makes one).
            c.result = verdict::unchecked;
            c.problem = std::string("not signed: with --trusted-keys-file only an entry a trusted key signed is "
                                    "taken for sound, whatever the secret (every holder of ") +
                        (auth.keyed() ? "the secret can make an HMAC entry)" : "the storage can make a CRC entry)");
        } else {
            c.result = verdict::sound;
        }
        break;
    case envelope_status::untrusted_signer:
        c.result = verdict::untrusted;
        c.problem = "signed (Ed25519) by key id " + signer_hex(c.envelope.signer_id) +
                    ", which is none of the trusted keys (a key taken out of them, or never in them)";
        break;
    case envelope_status::unauthenticated:
        if (c.envelope.signed_entry && trusted && trusted->given()) {
            c.problem = "its Ed25519 signature does not verify under the trusted key " +
                        trusted->name_of(c.envelope.signer_id) + " (key id " + signer_hex(c.envelope.signer_id) +
                        ") whose id it carries (damaged or forged)";
        } else if (c.envelope.signed_entry) {
            // A signed entry (Ed25519, envelope flags 2) is CI's on a shared remote: never
            // judged bad by a check of another mode, so that verify --remove keeps it.
            c.result = verdict::unchecked;
            c.problem = "signed (Ed25519) by key id " + signer_hex(c.envelope.signer_id) +
                        ": give --trusted-keys-file to check its signature";
        } else if (auth.keyed()) {
            c.problem = "unauthenticated: its HMAC does not verify under the given secret "
                        "(unkeyed, another secret, damaged or forged)";
        } else {
            c.result = verdict::unchecked;
            c.problem = "keyed (HMAC-SHA256): give --secret-file to check it";
        }
        break;
    case envelope_status::foreign_version:
        c.result = verdict::unchecked;
        c.problem = "envelope version " + std::to_string(c.envelope.version) + ", which this tool (versions " +
                    std::to_string(compile_cache::envelope_version_plain) + ", " +
                    std::to_string(compile_cache::envelope_version) + " and " +
                    std::to_string(compile_cache::envelope_version_signer_copy) + ") does not read";
        break;
    case envelope_status::corrupt:
        c.problem = "corrupt: its check value does not match its bytes, or its fields are out of bounds "
                    "(damaged, truncated, or not an entry)";
        break;
    default:
        c.problem = "not readable as an entry";
        break;
    }
    return c;
}

checked_entry read_and_check(opened_cache const& cache, listed_entry const& e, compile_cache::envelope_auth const& auth,
                             std::string& bytes, trusted_signers const* trusted) {
    compile_cache::read_result const r = cache.read(e.k, bytes, max_entry_read);
    checked_entry c;
    switch (r.status) {
    case compile_cache::read_status::found: return check_bytes(bytes, e.name, auth, trusted);
    case compile_cache::read_status::absent: // (neither is bad: never removed for it, never an exit 1)
        c.result = verdict::unchecked;
        c.problem = "gone since it was listed (evicted or removed)";
        c.read_cause = "entries gone since the listing";
        c.gone = true;
        break;
    case compile_cache::read_status::too_large:
        c.result = verdict::unchecked;
        c.problem = "larger than 64 MiB (the default bound on an entry), so not read: a host with a larger "
                    "max_entry_size may have written it";
        break;
    default:
        c.result = verdict::unchecked;
        c.problem = "cannot read it: " + r.error.message();
        c.read_cause = "entries it could not read";
        c.read_failed = true;
        break;
    }
    bytes.clear();
    return c;
}

checked_entry check_bytes(std::string const& bytes, std::string const& name, compile_cache::envelope_auth const& auth) {
    return check_bytes(bytes, name, auth, nullptr);
}

checked_entry read_and_check(opened_cache const& cache, listed_entry const& e, compile_cache::envelope_auth const& auth,
                             std::string& bytes) {
    return read_and_check(cache, e, auth, bytes, nullptr);
}

std::string unchecked_cause(checked_entry const& e) {
    if (!e.read_cause.empty()) return e.read_cause;
    switch (e.envelope.status) {
    case compile_cache::envelope_status::ok: // (unsigned, with --trusted-keys-file)
        return "unsigned entries: with --trusted-keys-file only signed ones are sound";
    case compile_cache::envelope_status::unauthenticated:
        return e.envelope.signed_entry ? "signed entries: give --trusted-keys-file" : "HMAC entries: give --secret-file";
    case compile_cache::envelope_status::foreign_version:
        return "entries of envelope version " + std::to_string(e.envelope.version) + ": use that version's tool";
    default: return "entries over 64 MiB: not read";
    }
}

} // namespace compile_cache_tool
