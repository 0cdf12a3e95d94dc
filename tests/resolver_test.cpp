// References and the registry, through a real cache: what an artifact points at but
// does not own (callee kernels, its dialect group, type singletons, itself) is stored
// as a reference and relinked to the live object on load. A reference that cannot be
// relinked is a miss with a reason, never a dangling pointer. Each test has a
// "writer" and a "reader": two caches over one directory, each with its own registry
// and its own live objects, as two runs of a host would.
#include "catch2_compat.hpp"
#include "support/model.hpp"
#include "support/posix.hpp"
#include "support/entries.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/resolver/registry.hpp>
#include <compile_cache/storage/memory_storage.hpp>

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <typeinfo>
#include <vector>

namespace {

namespace cc = compile_cache;
using compile_cache_test::entries_under;
using compile_cache_test::temp_dir;

using namespace compile_cache_test::model;
struct pass_pipeline {
    std::string name;
};

/// A kernel of one instruction that refers to nothing.
compiled_kernel bytecode_only(std::uint8_t instruction) {
    compiled_kernel k;
    k.bytecode = {instruction};
    return k;
}

using cache_type = cc::default_cache;

/// The key a host would compute for a kernel: its IR text and its callees' keys.
cc::key_result key_for(cache_type const& cache, std::string const& ir, std::vector<cc::key> const& callees = {}) {
    auto kb = cache.make_key_builder("resolver_test 1");
    kb.add("ir", ir);
    for (auto const& c : callees) kb.add("callee", c);
    return kb.finish();
}

/// One run of the host: its live objects, registered with its cache's registry.
struct host_run {
    cache_type cache;
    dialect_group core{"core+arith"};
    type f64{"f64"};
    kernel fma{"fma"};
    kernel saxpy{"saxpy"};

    explicit host_run(std::filesystem::path const& dir) : cache(cc::directory_storage(dir.string())) {
        cache.resolver().add_shared("mydsl.dialects.core", &core);
        cache.resolver().add_singleton("mydsl.type.f64", &f64);
    }

    cc::key_result fma_key() const { return key_for(cache, "fma(a,b,c) = a*b+c"); }
    cc::key_result saxpy_key() const { return key_for(cache, "saxpy(a,x,y) = fma(a,x,y)", {fma_key().value()}); }

    void bind_fma() { cache.resolver().bind(&fma, fma_key().value()); }

    /// saxpy calls fma, in the core dialects, returning f64.
    compiled_kernel compile_saxpy() {
        compiled_kernel k;
        k.bytecode = {0x10, 0x00, 0x01, 0x02, 0x30, 0xff};
        k.callees = {&fma};
        k.dialects = &core;
        k.result_type = &f64;
        return k;
    }

    cc::cached<compiled_kernel> get_saxpy() {
        return cache.get_or_compile<compiled_kernel>(saxpy_key(), {"saxpy", "blas.dsl", 3},
                                                     [&] { return compile_saxpy(); }, &saxpy);
    }
    std::optional<compiled_kernel> load_saxpy() {
        return cache.load<compiled_kernel>(saxpy_key(), {"saxpy", "blas.dsl", 3}, &saxpy);
    }
};


} // namespace

TEST_CASE("a stored kernel loads with every reference relinked to the reader's live objects", "[resolver]") {
    temp_dir dir;
    host_run writer(dir.path());
    writer.bind_fma();
    REQUIRE(writer.get_saxpy().outcome == cc::outcome::compiled);
    REQUIRE(writer.cache.stats().stores == 1);

    host_run reader(dir.path()); // other objects at other addresses, same names and keys
    reader.bind_fma();
    cc::cached<compiled_kernel> r = reader.get_saxpy();
    REQUIRE(r.outcome == cc::outcome::loaded);
    CHECK(r.value.bytecode == writer.compile_saxpy().bytecode);

    SECTION("a kernel reference relinks to the live kernel bound to its key") {
        REQUIRE(r.value.callees.size() == 1);
        CHECK(r.value.callees[0].get() == &reader.fma);
        CHECK(r.value.callees[0]->name == "fma");
    }
    SECTION("a shared object is found by its stable name") {
        CHECK(r.value.dialects.get() == &reader.core);
    }
    SECTION("a singleton loads as the very same object, so identity comparisons hold") {
        CHECK(r.value.result_type.get() == &reader.f64);
        CHECK(r.value.result_type == cc::ref<type>(&reader.f64));
        CHECK(r.value.result_type != cc::ref<type>(&writer.f64));
    }
}

TEST_CASE("a singleton is referred to by a name-based uuid", "[resolver]") {
    auto const id = cc::registry::singleton_id("mydsl.type.f64");
    CHECK(id.version() == boost::uuids::uuid::version_name_based_sha1);
    CHECK(id == cc::registry::singleton_id("mydsl.type.f64")); // the same in every process
    CHECK(id != cc::registry::singleton_id("mydsl.type.f32"));

    cc::registry reg;
    type f64{"f64"};
    reg.add_singleton("mydsl.type.f64", &f64);
    auto r = reg.to_reference(&f64, typeid(type), nullptr);
    REQUIRE(r);
    CHECK(r->kind == cc::reference_kind::singleton);
    CHECK(r->id == std::string(reinterpret_cast<char const*>(id.data), id.size()));
    CHECK(reg.from_reference(*r, typeid(type), nullptr) == &f64);
}

TEST_CASE("a kernel that calls itself loads calling the kernel it is loaded for", "[resolver]") {
    temp_dir dir;
    auto fact_compiled = [](kernel* self) {
        compiled_kernel k;
        k.bytecode = {0x01, 0x20, 0x40};
        k.callees = {self}; // fact(n) = n * fact(n - 1)
        return k;
    };
    host_run writer(dir.path());
    kernel fact_w{"fact"};
    cc::key_result const k = key_for(writer.cache, "fact(n) = n <= 1 ? 1 : n * fact(n - 1)");
    // The kernel is not bound to its key: a self reference needs no key.
    auto w = writer.cache.get_or_compile<compiled_kernel>(k, {"fact", "math.dsl", 1},
                                                          [&] { return fact_compiled(&fact_w); }, &fact_w);
    REQUIRE(w.outcome == cc::outcome::compiled);
    REQUIRE(writer.cache.stats().stores == 1);

    host_run reader(dir.path());
    kernel fact_r{"fact"};
    SECTION("loaded for a kernel: the self reference is that kernel") {
        auto loaded = reader.cache.load<compiled_kernel>(k, {"fact", "math.dsl", 1}, &fact_r);
        REQUIRE(loaded);
        REQUIRE(loaded->callees.size() == 1);
        CHECK(loaded->callees[0].get() == &fact_r);
    }
    SECTION("loaded for no kernel: the self reference cannot be relinked, so it is a miss") {
        auto loaded = reader.cache.load<compiled_kernel>(k, {"fact", "math.dsl", 1});
        CHECK(!loaded);
        CHECK(reader.cache.stats().miss_count(cc::miss_reason::unresolved_reference) == 1);
    }
    SECTION("loaded for an object of another type: the self reference is refused, so it is a miss") {
        dialect_group not_a_kernel{"fact"};
        auto loaded = reader.cache.load<compiled_kernel>(k, {"fact", "math.dsl", 1}, &not_a_kernel);
        CHECK(!loaded);
        CHECK(reader.cache.stats().miss_count(cc::miss_reason::unresolved_reference) == 1);
    }
}

TEST_CASE("a removed object is unknown to the registry, even when a new one takes its address", "[resolver]") {
    cc::registry reg;
    kernel callee{"callee"}, caller{"caller"};
    dialect_group core{"core"};
    cc::key const k = cc::key_builder<>().add("ir", "callee").finish().value();
    reg.bind(&callee, k);
    reg.add_shared("core", &core);
    reg.record_call(&caller, &callee);

    reg.remove(&callee);
    reg.remove(&core);
    CHECK_FALSE(reg.key_of(&callee));
    CHECK(reg.kernel<kernel>(k) == nullptr);
    CHECK_FALSE(reg.to_reference(&callee, typeid(kernel), &caller));
    CHECK_FALSE(reg.to_reference(&core, typeid(dialect_group), nullptr));
    CHECK(reg.from_reference(cc::reference{cc::reference_kind::shared, "core"}, typeid(dialect_group), nullptr) ==
          nullptr);
    CHECK(reg.callers_of(&callee).empty());
}

TEST_CASE("a reference with no live object is a miss, never a dangling pointer", "[resolver]") {
    temp_dir dir;
    {
        host_run writer(dir.path());
        writer.bind_fma();
        REQUIRE(writer.get_saxpy().outcome == cc::outcome::compiled);
    } // the writer's objects are gone: a stored address would now dangle

    host_run reader(dir.path());
    dialect_group impostor{"not a kernel"};
    pass_pipeline pipeline{"O2"};
    SECTION("the callee was never bound in this run") {}
    SECTION("the callee was forgotten") {
        reader.bind_fma();
        reader.cache.resolver().forget(&reader.fma);
    }
    SECTION("the callee's key is now bound to an object of another C++ type") {
        reader.cache.resolver().bind(&impostor, reader.fma_key().value());
    }
    SECTION("the shared object's name now names an object of another C++ type") {
        reader.bind_fma();
        reader.cache.resolver().add_shared("mydsl.dialects.core", &pipeline);
    }
    SECTION("the shared object was removed") {
        reader.bind_fma();
        reader.cache.resolver().remove(&reader.core);
    }
    SECTION("the singleton is not registered") {
        reader.bind_fma();
        reader.cache.resolver().remove(&reader.f64);
    }

    CHECK(!reader.load_saxpy());
    CHECK(reader.cache.stats().miss_count(cc::miss_reason::unresolved_reference) == 1);
    CHECK(reader.cache.stats().total_misses() == 1);

    // The host just compiles: it gets its own kernel, pointing at its own objects.
    cc::cached<compiled_kernel> r = reader.get_saxpy();
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(r.reason == "unresolved-reference");
    REQUIRE(r.value.callees.size() == 1);
    CHECK(r.value.callees[0].get() == &reader.fma);
    CHECK(r.value.dialects.get() == &reader.core);
    CHECK(r.value.result_type.get() == &reader.f64);
    CHECK(reader.cache.stats().miss_count(cc::miss_reason::unresolved_reference) == 2);
}

TEST_CASE("storing a kernel that calls a kernel without a key is skipped and counted", "[resolver]") {
    temp_dir dir;
    host_run h(dir.path()); // fma is never bound: it has no key to be referred to by
    cc::cached<compiled_kernel> r = h.get_saxpy();

    CHECK(r.outcome == cc::outcome::compiled);
    REQUIRE(r.value.callees.size() == 1);
    CHECK(r.value.callees[0].get() == &h.fma);
    auto const s = h.cache.stats();
    CHECK(s.failure_count(cc::store_failure::unresolved_reference) == 1);
    CHECK(s.total_store_failures() == 1);
    CHECK(s.stores == 0);
    CHECK(entries_under(dir.path()) == 0);

    dialect_group impostor{"fma"};
    SECTION("nor can an object registered as another C++ type stand in for it") {
        h.cache.resolver().bind(&impostor, h.fma_key().value());
        h.get_saxpy();
        CHECK(h.cache.stats().failure_count(cc::store_failure::unresolved_reference) == 2);
        CHECK(entries_under(dir.path()) == 0);
    }
    SECTION("once bound, the next compile is stored, and the one after loads") {
        h.bind_fma();
        CHECK(h.get_saxpy().outcome == cc::outcome::compiled);
        CHECK(h.cache.stats().stores == 1);
        CHECK(h.get_saxpy().outcome == cc::outcome::loaded);
    }
}

namespace {
/// A host kernel object whose first member is a kernel of the model: it has the address
/// of the kernel object, but is not it.
struct kernel_object {
    kernel head{"head"};
    int runs = 0;
};

/// The registry, except that every reference it gives has kind `Kind`, none it knows.
template <std::uint8_t Kind>
struct resolver_of_kind : cc::registry {
    std::optional<cc::reference> to_reference(void const*, std::type_info const&, void const*) {
        return cc::reference{static_cast<cc::reference_kind>(Kind), "f64"};
    }
};
} // namespace

TEST_CASE("an object at the kernel's own address through a ref of another type is not stored as self",
          "[resolver]") {
    // A self reference loads only into a ref of the kernel's type; stored, it would be
    // refused at every load, compiled and stored again at every run.
    temp_dir dir;
    cache_type cache(cc::directory_storage(dir.path().string()));
    kernel_object self;
    compiled_kernel artifact = bytecode_only(0x10);
    artifact.callees = {&self.head};
    cc::key_result const k = key_for(cache, "calls the head of its own kernel object");
    for (int run = 0; run < 2; ++run) {
        cc::cached<compiled_kernel> r =
            cache.get_or_compile<compiled_kernel>(k, {"head", "self.dsl", 1}, [&] { return artifact; }, &self);
        CHECK(r.outcome == cc::outcome::compiled);
        REQUIRE(r.value.callees.size() == 1);
        CHECK(r.value.callees[0].get() == &self.head);
    }
    auto const s = cache.stats();
    CHECK(s.stores == 0);
    CHECK(s.failure_count(cc::store_failure::unresolved_reference) == 2);
    CHECK(s.miss_count(cc::miss_reason::unresolved_reference) == 0);
    CHECK(entries_under(dir.path()) == 0);
}

TEMPLATE_TEST_CASE("a resolver's reference of a kind load does not know is not stored", "[resolver]",
                   resolver_of_kind<4>, resolver_of_kind<0xff>) {
    // Kind 0xff is what a null ref is written as: stored, the kernel's type would load null.
    using kind_cache = cc::basic_cache<cc::sha256, cc::boost_binary, TestType, cc::memory_storage>;
    kind_cache cache(cc::memory_storage{});
    type f64{"f64"};
    kernel self{"k"};
    compiled_kernel artifact = bytecode_only(0x20);
    artifact.result_type = &f64;
    cc::key_result const k = cc::key_builder<>().add("ir", "returns f64").finish();
    for (int run = 0; run < 2; ++run) {
        cc::cached<compiled_kernel> r =
            cache.template get_or_compile<compiled_kernel>(k, {"k", "kinds.dsl", 1}, [&] { return artifact; }, &self);
        CHECK(r.outcome == cc::outcome::compiled);
        CHECK(r.value.result_type.get() == &f64);
    }
    CHECK(cache.stats().stores == 0);
    CHECK(cache.stats().failure_count(cc::store_failure::unresolved_reference) == 2);
}

TEST_CASE("bind refuses a bypass's empty key: the kernel is left with no key, so a caller is not stored",
          "[resolver]") {
    temp_dir dir;
    host_run h(dir.path());
    h.bind_fma();
    REQUIRE(h.cache.resolver().key_of(&h.fma));

    cc::key_result const bypass = cc::key_result::bypass("reads a global through a pointer");
    REQUIRE(bypass.value().empty());
    CHECK_FALSE(h.cache.resolver().bind(&h.fma, bypass.value()));
    CHECK_FALSE(h.cache.resolver().key_of(&h.fma)); // its earlier key is gone too
    CHECK(h.cache.resolver().kernel<kernel>(cc::key{}) == nullptr);
    CHECK_FALSE(h.cache.resolver().to_reference(&h.fma, typeid(kernel), &h.saxpy));

    CHECK(h.get_saxpy().outcome == cc::outcome::compiled);
    CHECK(h.cache.stats().failure_count(cc::store_failure::unresolved_reference) == 1);
    CHECK(entries_under(dir.path()) == 0);
    CHECK(h.cache.resolver().bind(&h.fma, h.fma_key().value()));
    CHECK(h.cache.resolver().key_of(&h.fma) == h.fma_key().value());
}

TEST_CASE("get_or_compile with bind_self binds the kernel to its key and compiles or loads it as self, in one call",
          "[resolver]") {
    temp_dir dir;
    {
        host_run writer(dir.path());
        auto fma = writer.cache.get_or_compile<compiled_kernel>(writer.fma_key(), {"fma", "blas.dsl", 1},
                                                                [] { return bytecode_only(0x01); },
                                                                cc::bind_self(&writer.fma));
        CHECK(fma.outcome == cc::outcome::compiled);
        CHECK(writer.cache.resolver().key_of(&writer.fma) == writer.fma_key().value());
        // saxpy refers to fma: storable only because fma is bound now
        CHECK(writer.get_saxpy().outcome == cc::outcome::compiled);
        CHECK(writer.cache.stats().stores == 2);
    }
    host_run reader(dir.path());
    auto fma = reader.cache.get_or_compile<compiled_kernel>(reader.fma_key(), {"fma", "blas.dsl", 1},
                                                            [] { return bytecode_only(0x01); },
                                                            cc::bind_self(&reader.fma));
    CHECK(fma.outcome == cc::outcome::loaded);
    cc::cached<compiled_kernel> saxpy = reader.get_saxpy();
    CHECK(saxpy.outcome == cc::outcome::loaded);
    REQUIRE(saxpy.value.callees.size() == 1);
    CHECK(saxpy.value.callees[0].get() == &reader.fma);

    SECTION("a bypass leaves the kernel with no key, so its callers are not stored") {
        auto r = reader.cache.get_or_compile<compiled_kernel>(
            cc::key_result::bypass("reads a global through a pointer"), {"fma", "blas.dsl", 1},
            [] { return bytecode_only(0x02); }, cc::bind_self(&reader.fma));
        CHECK(r.outcome == cc::outcome::bypassed);
        CHECK_FALSE(reader.cache.resolver().key_of(&reader.fma));
        CHECK(reader.cache.store(key_for(reader.cache, "another saxpy"), reader.compile_saxpy(),
                                 {"saxpy2", "blas.dsl", 9}, &reader.saxpy) == false);
        CHECK(reader.cache.stats().failure_count(cc::store_failure::unresolved_reference) == 1);
    }
}

TEST_CASE("forget drops a kernel's key and, transitively, its callers' keys", "[resolver]") {
    // a <- b <- c (c calls b, b calls a), and d, which calls nothing of theirs.
    temp_dir dir;
    struct chain {
        cache_type cache;
        kernel a{"a"}, b{"b"}, c{"c"}, d{"d"};
        cc::key_result ka, kb, kc, kd;

        explicit chain(std::filesystem::path const& p) : cache(cc::directory_storage(p.string())) {
            ka = key_for(cache, "a() = 1");
            kb = key_for(cache, "b() = a() + 1", {ka.value()});
            kc = key_for(cache, "c() = b() * 2", {kb.value()});
            kd = key_for(cache, "d() = 4");
            cc::registry& reg = cache.resolver();
            reg.bind(&a, ka.value());
            reg.bind(&b, kb.value());
            reg.bind(&c, kc.value());
            reg.bind(&d, kd.value());
        }
        cc::outcome get(kernel& k, cc::key_result const& key, kernel* callee) {
            auto compile = [&] {
                compiled_kernel ck;
                ck.bytecode = {static_cast<std::uint8_t>(k.name[0])};
                if (callee) ck.callees = {callee};
                return ck;
            };
            return cache.get_or_compile<compiled_kernel>(key, {k.name, "chain.dsl", 1}, compile, &k).outcome;
        }
        void get_all(cc::outcome expected) {
            CHECK(get(a, ka, nullptr) == expected);
            CHECK(get(b, kb, &a) == expected);
            CHECK(get(c, kc, &b) == expected);
            CHECK(get(d, kd, nullptr) == expected);
        }
        void check_forget_a() {
            cc::registry& reg = cache.resolver();
            CHECK(reg.callers_of(&a) == std::vector<void const*>{&b});
            CHECK(reg.callers_of(&b) == std::vector<void const*>{&c});
            CHECK(reg.callers_of(&d).empty());

            std::vector<void const*> dropped = reg.forget(&a);
            CHECK(std::set<void const*>(dropped.begin(), dropped.end()) == std::set<void const*>{&a, &b, &c});
            CHECK(!reg.key_of(&a));
            CHECK(!reg.key_of(&b));
            CHECK(!reg.key_of(&c));
            REQUIRE(reg.key_of(&d));
            CHECK(*reg.key_of(&d) == kd.value());
            CHECK(reg.kernel<kernel>(kb.value()) == nullptr);
            CHECK(reg.kernel<kernel>(kd.value()) == &d);
        }
    };

    SECTION("callers recorded as their artifacts are stored") {
        chain w(dir.path());
        w.get_all(cc::outcome::compiled);
        REQUIRE(w.cache.stats().stores == 4);
        w.check_forget_a();

        // c refers to b, which has no key any more: c can be neither stored nor loaded.
        auto before = w.cache.stats();
        CHECK(!w.cache.load<compiled_kernel>(w.kc, {"c", "chain.dsl", 1}, &w.c));
        CHECK(w.cache.stats().miss_count(cc::miss_reason::unresolved_reference) ==
              before.miss_count(cc::miss_reason::unresolved_reference) + 1);
        CHECK(w.get(w.c, w.kc, &w.b) == cc::outcome::compiled);
        CHECK(w.cache.stats().failure_count(cc::store_failure::unresolved_reference) ==
              before.failure_count(cc::store_failure::unresolved_reference) + 1);
        CHECK(w.get(w.d, w.kd, nullptr) == cc::outcome::loaded);
    }
    SECTION("callers recorded as their artifacts are loaded") {
        {
            chain w(dir.path());
            w.get_all(cc::outcome::compiled);
        }
        chain r(dir.path());
        r.get_all(cc::outcome::loaded);
        r.check_forget_a();
    }
}

TEST_CASE("an artifact in a plain Boost archive has no resolver: its references cannot be written",
          "[resolver]") {
    kernel fma{"fma"};
    compiled_kernel k;
    k.callees = {&fma};
    std::ostringstream os;
    boost::archive::binary_oarchive ar(os);
    CHECK_THROWS_AS(ar << k, cc::unresolved_reference);

    compiled_kernel no_refs; // null references need no resolver
    no_refs.bytecode = {1, 2, 3};
    std::ostringstream os2;
    {
        boost::archive::binary_oarchive ar2(os2);
        CHECK_NOTHROW(ar2 << no_refs);
    }
    std::istringstream is(os2.str());
    boost::archive::binary_iarchive in(is);
    compiled_kernel back;
    in >> back;
    CHECK(back.bytecode == no_refs.bytecode);
    CHECK(!back.dialects);
}

TEST_CASE("the registry can be used from several threads at once", "[resolver]") {
    cc::registry reg;
    constexpr int threads = 8;
    constexpr int per_thread = 200;
    dialect_group core{"core"};
    reg.add_shared("core", &core);
    std::vector<std::vector<kernel>> kernels(threads, std::vector<kernel>(per_thread));
    std::atomic<int> wrong{0};

    auto work = [&](int t) {
        kernel caller{"caller"};
        for (int i = 0; i < per_thread; ++i) {
            kernel* k = &kernels[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)];
            std::string const text = std::to_string(t) + ":" + std::to_string(i);
            cc::key const key(cc::sha256_digest(text.data(), text.size()));
            reg.bind(k, key);
            auto r = reg.to_reference(k, typeid(kernel), &caller);
            if (!r || r->kind != cc::reference_kind::kernel) ++wrong;
            else if (reg.from_reference(*r, typeid(kernel), &caller) != k) ++wrong;
            if (reg.from_reference({cc::reference_kind::shared, "core"}, typeid(dialect_group), nullptr) != &core)
                ++wrong;
            if (i % 3 == 0) {
                reg.forget(k);
                if (reg.key_of(k)) ++wrong;
                if (reg.kernel<kernel>(key) != nullptr) ++wrong;
            } else if (reg.kernel<kernel>(key) != k) {
                ++wrong;
            }
        }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (auto& th : pool) th.join();

    CHECK(wrong == 0);
    int bound = 0;
    for (auto& ks : kernels)
        for (auto& k : ks) bound += reg.key_of(&k).has_value();
    CHECK(bound == threads * (per_thread - (per_thread + 2) / 3));
}
