// compile-cache config: every setting a host's cache reads from its environment under
// a prefix (the cache's own and its storage's: basic_cache::environment_settings),
// the value the environment gives, and where it comes from — as ccache -p does.
// Passwords are shown as "set", and a password in a Redis URL as ***.
#include "command_support.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/resolver/registry.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
#include <compile_cache/storage/redis/redis_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace compile_cache_tool {

namespace {

/// The settings of a host whose cache is on `Storage`.
template <class Storage>
std::vector<compile_cache::environment_setting> settings_of(std::string const& prefix) {
    return compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, compile_cache::registry,
                                      Storage>::environment_settings(prefix);
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

} // namespace

int run_config(command_line const& c) {
    if (!c.prefix) throw usage_error{"config needs --prefix PREFIX (the host's, e.g. TINYK_CACHE)"};
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
    }
    if (c.json) {
        json_writer j;
        j.begin_object().field("prefix", *c.prefix).field("storage", storage).key("settings").begin_array();
        for (auto const& s : settings) {
            char const* value = std::getenv(s.name.c_str());
            j.begin_object().field("name", s.name).key("value");
            if (value) j.value(shown_value(s.name, value)); else j.null();
            j.field("from", value ? "environment" : "default").field("description", s.description).end_object();
        }
        j.end_array().end_object();
        std::fputs(j.str().c_str(), stdout);
        return exit_ok;
    }
    text_table t;
    for (auto const& s : settings) {
        char const* value = std::getenv(s.name.c_str());
        t.add({value ? "(environment)" : "(default)", s.name, value ? "= " + printable(shown_value(s.name, value)) : "",
               s.description});
    }
    std::string const out = "settings a host with prefix " + printable(*c.prefix) + " reads (" + storage +
                            " storage); the environment's values, else the default the description gives:\n" + t.str();
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

} // namespace compile_cache_tool
