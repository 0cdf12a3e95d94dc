// compile_cache: the steps of basic_cache::from_env (read the cache's settings, then ask
// the Storage), and the settings it lists for a host's --help; used by cache.hpp only.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/cache_options.hpp>
#include <compile_cache/compression.hpp>
#include <compile_cache/cache/signed_entry_checks.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/concept.hpp>

#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compile_cache::detail {

/// Reads PREFIX_COMPRESS into `settings` after the cache's other settings (its lines held
/// with theirs); for a Compression policy that cannot compress, only the line that says so.
template <class Compression>
void read_compression_setting(cache_env_settings& settings) {
    if constexpr (compresses<Compression>::value) {
        compression_level_from_env(settings.storage.env, Compression::max_level, settings.options.compression_level);
    } else {
        std::string line = compression_unavailable_line(settings.storage.env);
        if (!line.empty()) settings.held->hold(std::move(line));
    }
}

/// Uses the cache's own settings that the Storage found kept with its data
/// (from_env_result::kept_cache_settings: a cache directory's `compress`) where the
/// environment leaves them unset or empty; their lines are held with the cache's others.
/// A setting the cache does not read is left alone.
template <class Compression>
void apply_kept_cache_settings(std::vector<kept_cache_setting> const& kept, cache_env_settings& settings) {
    settings_reader const& env = settings.storage.env;
    try {
        for (kept_cache_setting const& k : kept) {
            if (k.suffix != "_COMPRESS" || !env.value("_COMPRESS").empty()) continue; // the environment wins
            if constexpr (compresses<Compression>::value) {
                compression_level_from_kept(env, k, Compression::max_level, settings.options.compression_level);
            } else {
                std::string line = compression_unavailable_line(k);
                if (!line.empty()) settings.held->hold(std::move(line));
            }
        }
    } catch (...) { // bad_alloc: what was not read stays as the environment made it
    }
}

/// For a Storage that is not a tier: signatures read from PREFIX_SIGNING_KEY_FILE or
/// PREFIX_TRUSTED_KEYS_FILE disable the cache (settings.storage.cache_off, one line naming
/// the setting), since nothing would check them; never a cache checked by the HMAC or a
/// CRC-32C instead. Never throws; should the line not be made (bad_alloc), the signatures
/// stay, and the constructor refuses them (signatures_honoured_or_said).
inline void refuse_signatures_without_a_tier(cache_env_settings& settings) noexcept {
    if (!settings.options.signatures || !settings.storage.cache_off.empty()) return;
    try {
        settings_reader const& env = settings.storage.env;
        std::string const setting =
            env.value("_TRUSTED_KEYS_FILE").empty() ? "_SIGNING_KEY_FILE" : "_TRUSTED_KEYS_FILE";
        settings.storage.cache_off = env.name(setting) + " is set, but " + signatures_need_a_tier_line +
                                     "; the cache is disabled rather than check its entries by less";
    } catch (...) {
    }
}

/// basic_cache::environment_settings(prefix): the Storage's settings (its static
/// `environment_settings(prefix)`, or `PREFIX_DIR` for a Storage without one), then the
/// cache's own.
template <class Storage, class Compression>
std::vector<environment_setting> cache_environment_settings(std::string_view prefix) {
    std::vector<environment_setting> s;
    if constexpr (has_environment_settings<Storage>::value)
        s = Storage::environment_settings(prefix);
    else
        s.push_back({std::string(prefix) + "_DIR",
                     "the cache directory; unset, empty, 0, off, false or no disable the cache"});
    int max_level = 0;
    if constexpr (compresses<Compression>::value) max_level = Compression::max_level;
    add_cache_environment_settings(prefix, s, max_level);
    return s;
}

/// Holds (in `held`, said with the cache's other lines) one line for each variable of
/// the prefix (`PREFIX_...`) set that looks like a misspelling of a setting of the cache
/// or of Storage (misspelled_setting_line): PREFIX_TRUSTED_KEY_FILE for
/// PREFIX_TRUSTED_KEYS_FILE would otherwise leave a security setting unset without a
/// word. Other unknown names are left alone: a Storage may read settings it does not
/// list, and a host may use the prefix too. Only for a Storage that lists its settings
/// (environment_settings). Never throws.
template <class Storage, class Compression>
void hold_unknown_settings(std::string_view prefix, held_lines& held) noexcept {
    if constexpr (has_environment_settings<Storage>::value) {
        try {
            std::vector<environment_setting> known = cache_environment_settings<Storage, Compression>(prefix);
            // Read, to say it cannot be honoured, by a cache whose Compression policy does not compress.
            known.push_back({std::string(prefix) + "_COMPRESS", {}});
            for (std::string const& name : environment_names_with_prefix(std::string(prefix) + "_")) {
                std::string line = misspelled_setting_line(name, known);
                if (!line.empty()) held.hold(std::move(line));
            }
        } catch (...) { // bad_alloc: nothing more said
        }
    }
    (void)prefix, (void)held;
}

/// storage_and_options_from_env's steps; may throw (bad_alloc).
template <class Storage, class Compression>
std::optional<std::pair<Storage, cache_options>> storage_and_options_from_env_steps(std::string_view prefix) {
    cache_env_settings settings = read_cache_env_settings(prefix);
    hold_unknown_settings<Storage, Compression>(prefix, *settings.held);
    if constexpr (!has_from_remote_origin<Storage>::value)
        settings.storage.remote_trusted = settings.remote_trusted_without_signatures;
    if constexpr (!has_from_remote_origin<Storage>::value) refuse_signatures_without_a_tier(settings);
    if (settings.storage.cache_off.empty()) read_compression_setting<Compression>(settings);
    std::optional<from_env_result<Storage>> answer;
    try {
        answer.emplace(storage_from_env<Storage>(settings.storage, "_DIR"));
    } catch (std::exception const& e) {
        settings.held->say(std::string(prefix) + ": the storage could not be set up (" + e.what() +
                           "); the cache is disabled");
        return std::nullopt;
    } catch (...) {
        settings.held->say(std::string(prefix) + ": the storage could not be set up; the cache is disabled");
        return std::nullopt;
    }
    if (!*answer) {
        if (answer->why_off().empty())
            settings.held->drop(); // not configured: nobody asked for a cache
        else
            settings.held->say(answer->why_off());
        return std::nullopt;
    }
    if (!settings.storage.cache_off.empty()) { // a storage that did not look
        settings.held->say(settings.storage.cache_off);
        return std::nullopt;
    }
    apply_kept_cache_settings<Compression>(answer->kept_cache_settings(), settings);
    settings.held->release();
    return std::optional<std::pair<Storage, cache_options>>(std::in_place, std::move(**answer),
                                                            std::move(settings.options));
}

/// What basic_cache::from_env(prefix) makes a cache of: the Storage and the options, or
/// nullopt for a disabled cache. The cache's own lines are said only when the Storage is
/// configured; the Storage's answer "off" is said, "not configured" is not; a Storage
/// that throws while it is set up is said and is no cache. Never throws: memory that runs
/// out while the settings are read is a disabled cache too.
template <class Storage, class Compression>
std::optional<std::pair<Storage, cache_options>> storage_and_options_from_env(std::string_view prefix) noexcept {
    try {
        return storage_and_options_from_env_steps<Storage, Compression>(prefix);
    } catch (...) {
        return std::nullopt;
    }
}

} // namespace compile_cache::detail
