// Built by the find_package consumer test: a host written against the earlier release,
// with the old include paths (now forwarding headers) and a storage of its own with the
// deprecated `std::optional<S> from_env(settings_reader&)` form, still compiles (its build
// shows the deprecation sentence, which run.cmake looks for) and works.
//
// Usage: old_host DIR   prints "old host: compiled loaded" (and " sqlite enabled" when
// built with OLD_HOST_WITH_SQLITE); exit 0 when so, 1 otherwise.
#include <compile_cache/cache.hpp>
#include <compile_cache/storage/directory_storage.hpp>
#ifdef OLD_HOST_WITH_SQLITE
#include <compile_cache/storage/sqlite_storage.hpp>
#endif

#include <boost/serialization/string.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <stdlib.h>

namespace cc = compile_cache;

// The host's storage, as the earlier contract had it: OLD_HOST_DIR names a directory.
class host_storage {
public:
    host_storage() = default;
    explicit host_storage(cc::directory_storage directory) : directory_(std::move(directory)) {}

    static std::optional<host_storage> from_env(cc::settings_reader& env) {
        std::string const dir = env.value("_DIR");
        if (env.is_off("_DIR") || !env.confirm()) return std::nullopt;
        return host_storage(cc::directory_storage(dir));
    }

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return directory_.read(k, out, max); }
    std::error_code write(cc::key const& k, std::string_view bytes) { return directory_.write(k, bytes); }
    std::error_code remove(cc::key const& k) { return directory_.remove(k); }

private:
    cc::directory_storage directory_;
};

using host_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, host_storage>;

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    std::string const dir = argv[1];
    ::setenv("OLD_HOST_DIR", dir.c_str(), 1);
    host_cache cache = host_cache::from_env("OLD_HOST");
    cc::key_result const k = cache.make_key_builder("old host 1").add("ir", "x + 1").finish();
    std::string said = "old host:";
    bool ok = cache.enabled();
    for (char const* expected : {"compiled", "loaded"}) {
        auto const r = cache.get_or_compile<std::string>(k, {"main", "old.dsl", 1}, [] { return std::string("code"); });
        said += std::string(" ") + cc::to_string(r.outcome);
        ok = ok && std::string(cc::to_string(r.outcome)) == expected && r.value == "code";
    }
#ifdef OLD_HOST_WITH_SQLITE
    ::setenv("OLD_HOST_SQL_FILE", (dir + "/cache.db").c_str(), 1);
    using sqlite_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::sqlite_storage>;
    bool const sqlite_on = sqlite_cache::from_env("OLD_HOST_SQL").enabled();
    said += sqlite_on ? " sqlite enabled" : " sqlite disabled";
    ok = ok && sqlite_on;
#endif
    std::printf("%s\n", said.c_str());
    return ok ? 0 : 1;
}
