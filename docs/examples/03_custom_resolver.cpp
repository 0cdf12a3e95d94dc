// Step 3 of docs/tutorial.md: a Resolver of the host's own. The toy host grows a
// context, as real compilers have one: value types that are singletons compared by
// address, and dialects (op sets) shared by every kernel. Artifacts point at both;
// the resolver names them when an artifact is stored, and finds the live objects of
// the new process's context when it is loaded. The same artifacts then go through the
// shipped registry instead.
#include "scratch_dir.hpp"
#include "toy_compiler.hpp"

#include <compile_cache/compile_cache.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <vector>

namespace cc = compile_cache;

// [tutorial:context]
struct value_type { // one object per type in a context: compared by address
    std::string name;
};

struct dialect { // a group of operations, shared by every kernel that uses it
    std::string name;
    int version = 1;
    std::vector<std::string> operations;
};

// A dialect's content goes into the keys of the kernels that use it: a new version
// re-keys them all. (describe is how the key builder learns a host type's content.)
void describe(cc::key_writer& w, dialect const& d) { w(d.name, d.version, d.operations); }

// What a compiler process holds. A new process has a new context, at new addresses.
struct context {
    std::map<std::string, value_type> types;  // by name; a std::map never moves them
    std::map<std::string, dialect> dialects;  // by name
    std::map<std::string, toy::kernel> kernels;
    std::unordered_map<cc::key, toy::kernel*> kernels_by_key;

    explicit context(int arith_version) {
        for (char const* name : {"i64", "f64"}) types[name].name = name;
        dialects["arith"] = dialect{"arith", arith_version, {"add", "sub", "mul", "call"}};
    }
};

// What a kernel compiles to now: its code, the dialect it was lowered with, and the
// type of its result.
struct typed_program {
    toy::program code;
    cc::ref<dialect> ops;
    cc::ref<value_type> result_type;

    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        ar & code & ops & result_type;
    }
};
// [tutorial:context]

// [tutorial:resolver]
// The Resolver requirements (resolver/concept.hpp): default constructible, and two
// members. Types are singletons named by their type name, dialects shared objects
// named by their dialect name, kernels named by their key. An object the context does
// not own has no name: nullopt, and the cache skips the store (counted).
class context_resolver {
public:
    void attach(context* ctx) noexcept { ctx_ = ctx; }

    std::optional<cc::reference> to_reference(void const* object, std::type_info const& type, void const* self) {
        if (ctx_ == nullptr) return std::nullopt;
        if (object == self) return cc::reference{cc::reference_kind::self, {}};
        if (type == typeid(value_type)) {
            auto const& name = static_cast<value_type const*>(object)->name;
            if (owned(ctx_->types, name, object)) return cc::reference{cc::reference_kind::singleton, name};
        } else if (type == typeid(dialect)) {
            auto const& name = static_cast<dialect const*>(object)->name;
            if (owned(ctx_->dialects, name, object)) return cc::reference{cc::reference_kind::shared, name};
        } else if (type == typeid(toy::kernel)) {
            for (auto const& [k, kernel] : ctx_->kernels_by_key)
                if (kernel == object)
                    return cc::reference{cc::reference_kind::kernel,
                                         std::string(reinterpret_cast<char const*>(k.data()), k.size())};
        }
        return std::nullopt;
    }

    // The live object of exactly `type`, or nullptr: the load is then a miss.
    void* from_reference(cc::reference const& r, std::type_info const& type, void const* self) {
        if (ctx_ == nullptr) return nullptr;
        switch (r.kind) {
        case cc::reference_kind::self: return const_cast<void*>(self);
        case cc::reference_kind::singleton:
            return type == typeid(value_type) ? find(ctx_->types, r.id) : nullptr;
        case cc::reference_kind::shared:
            return type == typeid(dialect) ? find(ctx_->dialects, r.id) : nullptr;
        case cc::reference_kind::kernel: {
            if (type != typeid(toy::kernel) || r.id.empty() || r.id.size() > cc::key::max_size) return nullptr;
            auto it = ctx_->kernels_by_key.find(cc::key(r.id.data(), r.id.size()));
            return it == ctx_->kernels_by_key.end() ? nullptr : it->second;
        }
        }
        return nullptr;
    }

private:
    template <class Map>
    static bool owned(Map const& map, std::string const& name, void const* object) {
        auto it = map.find(name);
        return it != map.end() && &it->second == object;
    }
    template <class Map>
    static void* find(Map& map, std::string const& name) {
        auto it = map.find(name);
        return it == map.end() ? nullptr : &it->second;
    }

    context* ctx_ = nullptr;
};

using context_cache = cc::basic_cache<cc::sha256, cc::boost_binary, context_resolver, cc::directory_storage>;
// [tutorial:resolver]

// [tutorial:host]
// How each resolver learns the live objects: the host's own reads the context; the
// registry is told about each one.
void register_objects(context_cache& cache, context& ctx) { cache.resolver().attach(&ctx); }
void register_objects(cc::default_cache& cache, context& ctx) {
    for (auto& [name, type] : ctx.types) cache.resolver().add_singleton("toy.type." + name, &type);
    for (auto& [name, d] : ctx.dialects) cache.resolver().add_shared("toy.dialect." + name, &d);
}
void register_kernel(context_cache&, context& ctx, toy::kernel& k, cc::key const& key) { ctx.kernels_by_key[key] = &k; }
void register_kernel(cc::default_cache& cache, context&, toy::kernel& k, cc::key const& key) {
    cache.resolver().bind(&k, key);
}

// One process: a context, a cache over `directory`, and three kernels, the last of
// which has a result type that is not in the context.
template <class Cache>
void compile_module(std::string const& directory, int arith_version) {
    context ctx(arith_version);
    Cache cache{cc::directory_storage(directory)};
    register_objects(cache, ctx);
    value_type pair_type{"pair<i64,i64>"}; // made on the fly, owned by no context
    std::map<std::string, cc::key_result> keys;

    struct source {
        char const* name;
        char const* text;
        value_type* result;
    };
    for (source const& s : {source{"square", "x * x", &ctx.types["i64"]},
                            source{"area", "square(x) * 3", &ctx.types["i64"]},
                            source{"pair", "x + 1", &pair_type}}) {
        toy::kernel& k = ctx.kernels[s.name];
        k.name = s.name;
        k.source = s.text;
        dialect& arith = ctx.dialects["arith"];

        cc::key_builder<cc::sha256> builder = cache.make_key_builder("toyc 1.0");
        builder.add("source", k.source).add("dialect", arith).add("result-type", s.result->name);
        for (std::string const& callee : toy::calls_in(k.source)) builder.add("callee", keys.at(callee));
        cc::key_result const& key = keys[k.name] = builder.finish();
        register_kernel(cache, ctx, k, key.value());

        auto lookup = [&](std::string const& name) { return &ctx.kernels.at(name); };
        cc::cached<typed_program> r = cache.template get_or_compile<typed_program>(
            key, {k.name, "module.toy", 1},
            [&] { return typed_program{toy::compile(k.source, lookup), &arith, s.result}; }, &k);
        k.compiled = r.value.code;
        bool const live = r.value.result_type.get() == s.result && r.value.ops.get() == &arith;
        std::printf("  %s: %s, %s, %s v%d, live objects: %s, %s(4) = %lld\n", s.name, cc::to_string(r.outcome),
                    r.value.result_type->name.c_str(), r.value.ops->name.c_str(), r.value.ops->version,
                    live ? "yes" : "no", s.name, static_cast<long long>(toy::run(k.compiled, 4)));
    }
    cc::statistics_snapshot const stats = cache.stats();
    std::printf("  stores=%llu store-failures: unresolved-reference=%llu\n",
                static_cast<unsigned long long>(stats.stores),
                static_cast<unsigned long long>(stats.failure_count(cc::store_failure::unresolved_reference)));
}
// [tutorial:host]

int main() {
    scratch_dir dir;
    // [tutorial:main]
    std::printf("context_resolver, run 1:\n");
    compile_module<context_cache>(dir / "own", 1);
    std::printf("context_resolver, run 2:\n");
    compile_module<context_cache>(dir / "own", 1);
    std::printf("context_resolver, run 3, dialect arith now at version 2:\n");
    compile_module<context_cache>(dir / "own", 2);
    std::printf("registry, run 1:\n");
    compile_module<cc::default_cache>(dir / "registry", 1);
    std::printf("registry, run 2:\n");
    compile_module<cc::default_cache>(dir / "registry", 1);
    // [tutorial:main]
    return 0;
}
