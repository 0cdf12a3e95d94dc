// compile_cache: the definitions of cache_options.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <cstdio>

namespace compile_cache::detail {

void cache_settings_from_env(settings_reader const& env, cache_options& options) {
    std::string const verify = env.value("_VERIFY");
    if (!verify.empty() && !is_off(verify)) {
        std::optional<double> const v = is_on(verify) ? std::optional<double>(1.0) : parse_fraction(verify);
        if (v)
            options.verify_fraction = *v;
        else
            env.report_value("_VERIFY", verify,
                             "is not understood (1 to verify every hit, a fraction such as 0.01 for that share of "
                             "hits, 0 for none); hits are not verified");
    }
    std::string const min_time = env.value("_MIN_COMPILE_TIME");
    if (!min_time.empty()) {
        if (std::optional<std::uint64_t> const ms = parse_whole_number(trim_blanks(min_time), 9))
            options.min_compile_time = std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(*ms));
        else
            env.report_value("_MIN_COMPILE_TIME", min_time,
                             "is not a number of milliseconds; every compiled kernel is stored");
    }
    record_identities_from_env(env, options.record_identities);
    single_flight_from_env(env, options.single_flight);
}

std::string read_signature_files(settings_reader const& env, cache_options& options) {
    signature_files files{env.name("_SIGNING_KEY_FILE"), env.value("_SIGNING_KEY_FILE"),
                          env.name("_TRUSTED_KEYS_FILE"), env.value("_TRUSTED_KEYS_FILE")};
    if (files.signing_key_file.empty() && files.trusted_keys_file.empty()) return {};
    entry_signatures_loader const loader = registered_signatures_loader();
    if (!loader)
        return (files.signing_key_file.empty() ? files.trusted_keys_setting : files.signing_key_setting) +
               " is set, but this program was built without signed entries (compile_cache/signing/"
               "signed_entries.hpp, with libsodium); the cache is disabled, since its remote entries could not be "
               "checked";
    std::string why;
    try {
        options.signatures = loader(files, why);
    } catch (std::exception const& e) {
        why = e.what();
    } catch (...) {
        why = "the key files could not be read";
    }
    if (options.signatures) return {};
    return why + "; the cache is disabled, since its remote entries could not be " +
           (files.signing_key_file.empty() ? "checked" : "signed");
}

cache_env_settings read_cache_env_settings(std::string_view prefix_view) {
    std::string const prefix(prefix_view);
    cache_options options;
    settings_reader const plain{prefix};
    std::string const log = plain.value("_LOG");
    std::optional<bool> const log_on = parse_switch(log);
    if (log_on.value_or(false))
        options.logger = [](std::string_view line) {
            std::fprintf(stderr, "compile_cache: %.*s\n", static_cast<int>(line.size()), line.data());
        };
    auto held = std::make_shared<held_lines>(options.logger);
    // The cache's own bad values wait until the storage shows it is wanted.
    settings_reader const own(prefix, [held](std::string_view line) { held->hold(std::string(line)); });
    if (!log_on)
        own.report_value("_LOG", log,
                         "is not understood (1, on, true or yes to log; 0, off, false or no not to); logging stays off");
    std::string cache_off;
    std::string const secret_file = plain.value("_SECRET_FILE");
    if (!secret_file.empty()) {
        std::string why;
        try {
            why = read_secret_file(secret_file, options.secret, secret_file_rule::hmac_secret);
        } catch (std::exception const& e) {
            why = e.what();
        }
        if (!why.empty())
            cache_off = plain.name("_SECRET_FILE") + "=\"" + secret_file + "\": " + why +
                        "; the cache is disabled, since its entries could not be authenticated";
    }
    if (cache_off.empty()) cache_off = read_signature_files(plain, options);
    bool const authenticated = !options.secret.empty();
    // A shared server is trusted only with authentication: an HMAC secret, or trusted
    // keys (a writer trusts its own).
    bool const signatures = options.signatures != nullptr;
    bool insecure = false;
    if (cache_off.empty()) {
        cache_settings_from_env(own, options);
        if (!authenticated && !signatures && !plain.is_off("_REMOTE"))
            insecure = own.flag("_REMOTE_INSECURE", false, "the remote needs a secret");
    }
    storage_settings storage{settings_reader_access::holding(prefix, held), authenticated,
                             authenticated || signatures || insecure, options.logger, std::move(cache_off)};
    return cache_env_settings{std::move(options), std::move(storage), std::move(held), authenticated || insecure};
}

std::string misspelled_setting_line(std::string const& name, std::vector<environment_setting> const& known) {
    environment_setting const* nearest = nullptr;
    for (environment_setting const& s : known) {
        if (s.name == name) return {};
        // A file setting without its _FILE (PREFIX_TRUSTED_KEYS): as near as can be.
        if (!nearest && s.name == name + "_FILE") nearest = &s;
    }
    if (!nearest) nearest = nearest_setting(name, known);
    if (!nearest) return {};
    return name + " is set, but it is no setting of this cache or its storage (" + nearest->name +
           ", misspelled?); it is ignored";
}

void add_cache_environment_settings(std::string_view prefix, std::vector<environment_setting>& s,
                                    int compress_max_level) {
    std::string const p(prefix);
    s.push_back({p + "_LOG", "1 sends one-line diagnostics (misses with their reason, store failures) to stderr"});
    s.push_back({p + "_SECRET_FILE", "a file whose content is the secret that authenticates entries "
                                     "(HMAC-SHA256); if it cannot be read, or is empty, the cache is disabled"});
    s.push_back({p + "_SIGNING_KEY_FILE", "a writer's secret key (compile-cache keygen): entries it uploads to a "
                                          "remote are signed; needs compile_cache/signing/signed_entries.hpp"});
    s.push_back({p + "_TRUSTED_KEYS_FILE", "public keys, one NAME:BASE64 line each: only remote entries signed by "
                                           "one are loaded; without a signing key the remote is read-only"});
    s.push_back({p + "_VERIFY", "1 also compiles every hit and compares the bytes (a fraction such as 0.01: that "
                                "share of hits); a difference is reported unsound or nondeterministic"});
    s.push_back({p + "_MIN_COMPILE_TIME", "milliseconds: a kernel that compiled faster is not stored (default 0)"});
    s.push_back({p + "_RECORD_IDENTITIES", "0 turns off the identity records that explain a miss (default 1)"});
    s.push_back({p + "_SINGLE_FLIGHT", "which claims a miss takes so that one process compiles and the others wait "
                                       "for its entry: both (default), local, remote or 0"});
    s.push_back({p + "_WAIT_MAX", "milliseconds: the longest a miss waits for another process's compile "
                                  "(default 30000; less for a kernel with a recorded compile time)"});
    if (compress_max_level != 0)
        s.push_back({p + "_COMPRESS", "0 stores entries uncompressed; 1 compresses payloads of 512 bytes and more "
                                      "(the default); 2 to " + std::to_string(compress_max_level) +
                                      ": at that level (higher: smaller, slower to store)"});
}

} // namespace compile_cache::detail

#endif
