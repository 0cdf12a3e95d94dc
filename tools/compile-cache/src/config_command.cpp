// compile-cache config: every setting a host's cache reads under a prefix (the cache's
// own and its storage's: basic_cache::environment_settings), the value in effect, and
// where it comes from — the environment, the cache directory's own settings file
// (compile-cache set), or the default — as ccache -p does. Passwords are shown as
// "set", and a password in a URL as ***.
#include "command_support.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/resolver/registry.hpp>
#include <compile_cache/storage/directory/directory_settings_file.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
#include <compile_cache/storage/redis/redis_storage.hpp>
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_HTTP)
#include <compile_cache/storage/http/http_storage.hpp>
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS) || defined(COMPILE_CACHE_TOOL_WITH_HTTP)
#include <compile_cache/storage/tiered_storage.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace compile_cache_tool {

namespace {

/// The Compression policy of the host whose settings are listed: one that compresses,
/// up to the levels a cache directory keeps (zstd_compression's), so that PREFIX_COMPRESS
/// is listed. For the list only: the tool never compresses, and needs no libzstd.
struct listed_compression {
    static constexpr bool compresses = true;
    static constexpr int max_level = compile_cache::kept_compression_max_level;
};

/// The settings of a host whose cache is on `Storage`.
template <class Storage>
std::vector<compile_cache::environment_setting> settings_of(std::string const& prefix) {
    return compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, compile_cache::registry,
                                      Storage, listed_compression>::environment_settings(prefix);
}

bool ends_with(std::string const& s, char const* tail) {
    std::string const t(tail);
    return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

/// A value as it may be shown: a password never; a URL's password as ***.
std::string shown_value(std::string const& name, std::string const& value) {
    if (name.find("PASSWORD") != std::string::npos && !ends_with(name, "_FILE")) return "set";
    if (value.find("://") != std::string::npos) {
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
        return compile_cache::redis_address::redact(value);
#else
        if (value.find('@') != std::string::npos) return "set (a URL with credentials)";
#endif
    }
    return value;
}

/// What the cache directory keeps (DIR/.cc-settings), read as a host with `prefix` reads it.
struct kept_settings {
    std::string directory; ///< the directory whose file was read: CACHE, else PREFIX_DIR; empty: none
    std::string file;      ///< its settings file
    compile_cache::directory_settings values;
    std::string ignored; ///< why the file is not used, when it is not
    std::vector<std::string> bad; ///< its values hosts ignore (for the default), each with why
};

kept_settings read_kept(std::string const& prefix, std::string const& cache, cache_kind kind) {
    kept_settings k;
    if (kind == cache_kind::directory && !cache.empty()) {
        k.directory = cache;
    } else {
        char const* dir = std::getenv((prefix + "_DIR").c_str());
        if (dir != nullptr && !compile_cache::detail::is_off(dir)) k.directory = dir;
    }
    if (k.directory.empty()) return k;
    k.file = k.directory + "/" + compile_cache::directory_settings_file_name;
    char const* shared = std::getenv((prefix + "_SHARED").c_str());
    bool const group = shared != nullptr && !compile_cache::detail::is_off(shared);
    std::string why;
    if (compile_cache::read_directory_settings(
            k.directory, group ? compile_cache::sharing::group : compile_cache::sharing::owner_only, k.values, why) != 0)
        k.ignored = k.file + " " + why + ": hosts ignore it";
    // A value no host takes is not in effect: hosts use the default (apply_directory_settings_file).
    for (auto it = k.values.values.begin(); it != k.values.values.end();) {
        std::string const why_bad = compile_cache::find_directory_setting(it->first) == nullptr
                                        ? std::string()
                                        : compile_cache::check_directory_setting(it->first, it->second);
        if (why_bad.empty()) {
            ++it;
            continue;
        }
        k.bad.push_back(k.file + ": " + it->first + " = \"" + it->second + "\" " + why_bad + ": hosts use the default");
        it = k.values.values.erase(it);
    }
    return k;
}

/// The value a kept setting gives `name` (`PREFIX_MAX_SIZE`...), or nullptr.
std::string const* kept_value(kept_settings const& k, std::string const& prefix, std::string const& name) {
    if (!k.ignored.empty()) return nullptr;
    for (auto const& spec : compile_cache::directory_settings_kept()) {
        if (name != prefix + spec.suffix) continue;
        auto const it = k.values.values.find(spec.name);
        if (it == k.values.values.end()) return nullptr;
        return &it->second;
    }
    return nullptr;
}

} // namespace

int run_config(command_line const& c) {
    if (!c.prefix) throw usage_error{"config needs --prefix PREFIX (the host's, e.g. TINYK_CACHE)"};
    // A prefix names environment variables: letters, digits and _, not first a digit ("" would list "_DIR").
    bool name_like = !c.prefix->empty() && !(c.prefix->front() >= '0' && c.prefix->front() <= '9');
    for (char const ch : *c.prefix)
        name_like = name_like && ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                                  ch == '_');
    if (!name_like)
        throw usage_error{"--prefix \"" + printable(*c.prefix) +
                          "\" is not a prefix of environment variables (letters, digits and _, e.g. TINYK_CACHE)"};
    std::string location;
    cache_kind const kind = c.cache.empty() ? cache_kind::directory : kind_of(c.cache, location);
    std::vector<compile_cache::environment_setting> settings;
    char const* storage = "directory";
    switch (kind) {
    case cache_kind::directory: settings = settings_of<compile_cache::directory_storage>(*c.prefix); break;
    case cache_kind::sqlite:
#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
        settings = settings_of<compile_cache::sqlite_storage>(*c.prefix);
        storage = "sqlite";
        break;
#else
        return fail("this compile-cache was built without SQLite support", exit_usage);
#endif
    case cache_kind::redis:
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
        // A host with a Redis server has a local directory in front of it.
        settings = settings_of<compile_cache::tiered_storage<compile_cache::directory_storage,
                                                             compile_cache::redis_storage>>(*c.prefix);
        storage = "directory and redis";
        break;
#else
        return fail("this compile-cache was built without Redis support", exit_usage);
#endif
    case cache_kind::http:
#if defined(COMPILE_CACHE_TOOL_WITH_HTTP)
        settings = settings_of<compile_cache::tiered_storage<compile_cache::directory_storage,
                                                             compile_cache::http_storage>>(*c.prefix);
        storage = "directory and http";
        break;
#else
        return fail("this compile-cache was built without HTTP support", exit_usage);
#endif
    }
    kept_settings const kept = read_kept(*c.prefix, c.cache, kind);
    /// Each setting's value in effect (nullptr: the default) and where it comes from.
    struct effective {
        std::string const* value;
        std::string env;
        char const* from;
    };
    auto const effective_of = [&](compile_cache::environment_setting const& s) {
        char const* env = std::getenv(s.name.c_str());
        if (env != nullptr && *env != '\0') return effective{nullptr, env, "environment"};
        if (std::string const* v = kept_value(kept, *c.prefix, s.name)) return effective{v, {}, "settings file"};
        return effective{nullptr, {}, "default"};
    };
    if (c.json) {
        json_writer j;
        j.begin_object().field("prefix", *c.prefix).field("storage", storage).key("settings_file");
        if (kept.file.empty()) j.null(); else j.value(kept.file);
        if (!kept.ignored.empty()) j.field("settings_file_ignored", kept.ignored);
        if (!kept.bad.empty()) {
            j.key("settings_file_values_ignored").begin_array();
            for (std::string const& b : kept.bad) j.value(b);
            j.end_array();
        }
        j.key("settings").begin_array();
        for (auto const& s : settings) {
            effective const e = effective_of(s);
            j.begin_object().field("name", s.name).key("value");
            if (e.value) j.value(*e.value);
            else if (std::string_view(e.from) == "environment") j.value(shown_value(s.name, e.env));
            else j.null();
            j.field("from", e.from).field("description", s.description).end_object();
        }
        j.end_array().end_object();
        std::fputs(j.str().c_str(), stdout);
        return exit_ok;
    }
    text_table t;
    for (auto const& s : settings) {
        effective const e = effective_of(s);
        std::string const value = e.value ? *e.value : e.env.empty() ? std::string() : shown_value(s.name, e.env);
        t.add({"(" + std::string(e.from) + ")", s.name, value.empty() ? "" : "= " + printable(value), s.description});
    }
    std::string out = "settings a host with prefix " + printable(*c.prefix) + " reads (" + storage +
                      " storage); each value comes from the environment,\nelse ";
    out += kept.file.empty() ? "the directory's settings file (none here: no DIR given, and " + printable(*c.prefix) +
                                   "_DIR is unset)"
                             : "the directory's settings file " + printable(kept.file);
    out += ", else the default the description gives:\n" + t.str();
    if (!kept.ignored.empty()) out += "note: " + printable(kept.ignored) + "\n";
    for (std::string const& b : kept.bad) out += "note: " + printable(b) + "\n";
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

} // namespace compile_cache_tool
