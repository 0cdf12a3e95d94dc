// compile-cache: what the commands share (command_support.hpp).
#include "command_support.hpp"

#include <compile_cache/secret_file.hpp>
#if defined(COMPILE_CACHE_TOOL_WITH_SIGNING)
#include <compile_cache/signing/signed_entries.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

namespace compile_cache_tool {

namespace {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace

std::int64_t age_s(std::int64_t use_ns) { return (now_ns() - use_ns) / 1000000000; }

/// "2026-11-29 18:41:01 (5 min ago)", or "unknown" when the storage does not know.
std::string last_use_text(std::int64_t use_ns, bool with_date) {
    if (use_ns == 0) return "unknown";
    std::string const ago = human_age(age_s(use_ns)) + " ago";
    return with_date ? local_time(use_ns) + " (" + ago + ")" : ago;
}

/// The JSON fields of a last use: the time, ns, and age; null each when unknown.
void use_fields(json_writer& j, std::int64_t use_ns) {
    j.key("last_use");
    if (use_ns == 0) j.null(); else j.value(utc_time(use_ns));
    j.key("last_use_ns");
    if (use_ns == 0) j.null(); else j.value(use_ns);
    j.key("age_s");
    if (use_ns == 0) j.null(); else j.value(age_s(use_ns));
}

/// Opens the JSON document of a command's output: `"directory": DIR` or `"storage": ...`.
json_writer& begin_document(json_writer& j, opened_cache const& cache) {
    return j.begin_object().field(cache.is_directory() ? "directory" : "storage", cache.shown);
}

/// The envelope_auth --secret-file asks for, read the way a cache reads
/// PREFIX_SECRET_FILE (a file any user may read is refused); false (after the message)
/// when the file cannot be used.
bool auth_from(command_line const& c, compile_cache::envelope_auth& auth) {
    if (!c.secret_file) return true;
    std::string secret;
    std::string const why =
        compile_cache::read_secret_file(*c.secret_file, secret, compile_cache::secret_file_rule::hmac_secret);
    if (!why.empty()) {
        fail("--secret-file " + *c.secret_file + ": " + why, exit_usage);
        return false;
    }
    auth = compile_cache::envelope_auth(secret);
    std::fill(secret.begin(), secret.end(), '\0');
    return true;
}

bool trusted_from(command_line const& c, trusted_signers& trusted) {
    if (!c.trusted_keys_file) return true;
#if defined(COMPILE_CACHE_TOOL_WITH_SIGNING)
    std::string why;
    std::optional<compile_cache::trusted_keys> keys = compile_cache::trusted_keys::from_file(*c.trusted_keys_file, why);
    if (!keys) {
        fail("--trusted-keys-file " + *c.trusted_keys_file + ": " + why, exit_usage);
        return false;
    }
    for (auto const& k : keys->keys()) trusted.names.emplace_back(k.id, k.name);
    trusted.auth = compile_cache::envelope_auth::signed_by(
        std::make_shared<compile_cache::ed25519_entry_signatures>(std::move(*keys)));
    return true;
#else
    fail("--trusted-keys-file: this compile-cache was built without signed entries (libsodium was not found)",
         exit_usage);
    return false;
#endif
}

/// Opens and lists `arg` for `c`; exit_ok or the status of the failure said.
int open_and_list(command_line const& c, std::string const& arg, cache_use use, progress_line& progress,
                  listed_cache& out) {
    // copy's server options are for whichever of its caches is a server of their kind.
    std::string location;
    cache_kind const kind = kind_of(arg, location);
    bool const copy = c.command == "copy";
    reach_options reach;
    if (!copy || kind == cache_kind::redis) reach.name_space = c.name_space;
    if (!copy || kind == cache_kind::redis || kind == cache_kind::http) reach.password_file = c.password_file;
    if (!copy || kind == cache_kind::http) {
        reach.layout = c.layout;
        reach.ca_file = c.ca_file;
        reach.token_file = c.token_file;
    }
    if (int const s = open_cache(arg, use, reach, out.cache); s != exit_ok) return s;
    return out.cache.list(out.listing, progress);
}

/// The progress line a command shows: on a large cache, or whenever --progress asks.
progress_line progress_for(command_line const& c) { return progress_line(true, c.progress); }

} // namespace compile_cache_tool
