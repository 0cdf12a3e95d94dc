// fill_cache CACHE COUNT [NAMESPACE]: stores COUNT kernels through a real basic_cache on
// a SQLite file (CACHE = sqlite:FILE) or Redis (CACHE = redis://..., redis+cluster://...), for the
// tool's tests on those storages. Kernel i is named kernel_i, from fill.tk line i + 1;
// prints each key's hex on a line.
// fill_cache --corrupt CACHE KEY_HEX [NAMESPACE]: flips the last byte of that entry, as
// damage on the medium would, through the storage itself.
// fill_cache --tier DIR URL COUNT [NAMESPACE] [VERSION]: a machine with a cache directory
// in front of a Redis server: gets or compiles the same COUNT kernels (VERSION, 1 by
// default, changes their IR) through a tiered_storage; prints `loaded` or `compiled`
// per kernel. With FILL_CACHE_SIGNING_KEY_FILE set (a secret key file compile-cache
// keygen made), that machine signs what it uploads (cache_options::signatures).
#include <compile_cache/cache.hpp>
#include <compile_cache/resolver/registry.hpp>
#if defined(FILL_CACHE_WITH_SQLITE)
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#endif
#if defined(FILL_CACHE_WITH_REDIS)
#include <compile_cache/storage/directory/directory_storage.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>
#endif
#if defined(FILL_CACHE_WITH_SIGNING)
#include <compile_cache/signing/signed_entries.hpp>
#endif

#include <boost/serialization/string.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace {

struct kernel_artifact {
    std::string code;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & code;
    }
};

template <class Storage>
int fill(Storage storage, long count) {
    compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, compile_cache::registry, Storage>
        cache(std::move(storage));
    for (long i = 0; i < count; ++i) {
        std::string const name = "kernel_" + std::to_string(i);
        auto const k = cache.make_key_builder("fill_cache").add("ir", "body of " + name).finish();
        compile_cache::entry_info info;
        info.name = name;
        info.origin_file = "fill.tk";
        info.origin_line = i + 1;
        if (!cache.store(k, kernel_artifact{"code of " + name}, info)) {
            std::fprintf(stderr, "fill_cache: cannot store %s\n", name.c_str());
            return 1;
        }
        std::printf("%s\n", k.value().hex().c_str());
    }
    return 0;
}

template <class Storage>
int corrupt(Storage storage, std::string const& hex) {
    auto const k = compile_cache::key::from_hex(hex);
    std::string bytes;
    if (!k || storage.read(*k, bytes, std::size_t(1) << 26).status != compile_cache::read_status::found) {
        std::fprintf(stderr, "fill_cache: no entry %s\n", hex.c_str());
        return 1;
    }
    bytes.back() = static_cast<char>(bytes.back() ^ 0x5a);
    return storage.write(*k, bytes) ? 1 : 0;
}

template <class Storage>
int run(Storage storage, bool damage, char const* what) {
    return damage ? corrupt(std::move(storage), what) : fill(std::move(storage), std::strtol(what, nullptr, 10));
}

#if defined(FILL_CACHE_WITH_REDIS)
int tier(std::string const& dir, std::string const& url, long count, std::string const& name_space,
         std::string const& version) {
    compile_cache::redis_options o;
    o.url = url;
    if (!name_space.empty()) o.name_space = name_space;
    using tier_type = compile_cache::tiered_storage<compile_cache::directory_storage, compile_cache::redis_storage>;
    compile_cache::cache_options options;
    if (char const* key_file = std::getenv("FILL_CACHE_SIGNING_KEY_FILE")) {
#if defined(FILL_CACHE_WITH_SIGNING)
        std::string why;
        std::optional<compile_cache::ed25519_signer> signer = compile_cache::ed25519_signer::from_file(key_file, why);
        if (!signer) {
            std::fprintf(stderr, "fill_cache: %s: %s\n", key_file, why.c_str());
            return 2;
        }
        options.signatures = std::make_shared<compile_cache::ed25519_entry_signatures>(std::move(*signer));
#else
        std::fprintf(stderr, "fill_cache: built without signing, cannot sign with %s\n", key_file);
        return 2;
#endif
    }
    compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, compile_cache::registry, tier_type>
        cache{tier_type(compile_cache::directory_storage(dir), compile_cache::redis_storage(o)), options};
    for (long i = 0; i < count; ++i) {
        std::string const name = "kernel_" + std::to_string(i);
        auto const k = cache.make_key_builder("fill_cache").add("ir", "body " + version + " of " + name).finish();
        compile_cache::entry_info info;
        info.name = name;
        info.origin_file = "fill.tk";
        info.origin_line = i + 1;
        auto const r = cache.get_or_compile<kernel_artifact>(k, info, [&] { return kernel_artifact{"code of " + name}; });
        std::printf("%s\n", r.outcome == compile_cache::outcome::loaded ? "loaded" : "compiled");
    }
    return 0;
}
#endif

} // namespace

int main(int argc, char** argv) {
#if defined(FILL_CACHE_WITH_REDIS)
    if (argc >= 5 && argc <= 7 && std::string(argv[1]) == "--tier")
        return tier(argv[2], argv[3], std::strtol(argv[4], nullptr, 10), argc > 5 ? argv[5] : "",
                    argc > 6 ? argv[6] : "1");
#endif
    bool const damage = argc > 1 && std::string(argv[1]) == "--corrupt";
    int const first = damage ? 2 : 1;
    if (argc < first + 2 || argc > first + 3) {
        std::fprintf(stderr, "usage: fill_cache [--corrupt] CACHE COUNT|KEY_HEX [NAMESPACE]\n");
        return 2;
    }
    std::string const cache = argv[first];
#if defined(FILL_CACHE_WITH_SQLITE)
    if (cache.rfind("sqlite:", 0) == 0) return run(compile_cache::sqlite_storage(cache.substr(7)), damage, argv[first + 1]);
#endif
#if defined(FILL_CACHE_WITH_REDIS)
    if (cache.rfind("redis://", 0) == 0 || cache.rfind("redis+cluster://", 0) == 0) {
        compile_cache::redis_options o;
        o.url = cache;
        if (argc == first + 3) o.name_space = argv[first + 2];
        return run(compile_cache::redis_storage(o), damage, argv[first + 1]);
    }
#endif
    std::fprintf(stderr, "fill_cache: %s is not a storage this build has\n", cache.c_str());
    return 2;
}
