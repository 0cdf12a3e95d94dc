// Control for run.sh: the compositions a host writes, used the way a host uses them.
// expect: success
#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
#include <compile_cache/storage/null_storage.hpp>

#include <boost/serialization/vector.hpp>

#include <cstdint>
#include <vector>

struct kernel {};

struct compiled_kernel {
    std::vector<unsigned char> bytecode;
    std::vector<std::int64_t> lines;
    compile_cache::ref<kernel> callee;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & bytecode & lines & callee;
    }
    friend void relocate_source(compiled_kernel& k, std::int64_t delta) {
        for (auto& l : k.lines) l += delta;
    }
};

template <class Cache>
compiled_kernel use(Cache& cache, kernel& self) {
    compile_cache::key_result k = cache.make_key_builder("host 1").add("ir", "k() = 1").finish();
    cache.store(k, compiled_kernel{}, {"k", "k.dsl", 1}, &self);
    auto loaded = cache.template load<compiled_kernel>(k, {"k", "k.dsl", 1}, &self);
    auto r = cache.template get_or_compile<compiled_kernel>(k, {"k", "k.dsl", 1}, [] { return compiled_kernel{}; },
                                                            &self);
    return loaded ? *loaded : r.value;
}

template compiled_kernel use(compile_cache::default_cache&, kernel&);
template compiled_kernel use(compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_text,
                                                        compile_cache::registry, compile_cache::null_storage>&,
                             kernel&);

compile_cache::default_cache from_environment() { return compile_cache::default_cache::from_env("HOST_CACHE"); }
