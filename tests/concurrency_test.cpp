// The thread-safe parts used from many threads at once: memory_storage, statistics,
// the registry, a basic_cache shared by threads, and one directory_storage object
// shared by writers, readers and a pruner. Every test checks what it reads, and the
// suite is meant to run under ThreadSanitizer too (tag [concurrency]).
#include "catch2_compat.hpp"
#include "support/storage_model.hpp"
#include "support/model.hpp"
#include "support/posix.hpp"

#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/string.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace cc = compile_cache;
using compile_cache_test::temp_dir;

constexpr int threads_n = 8;

cc::key key_n(std::uint32_t n) { return storage_test::key_of(n).value(); }

std::string value_of(std::uint32_t k, std::uint32_t variant) {
    return "key " + std::to_string(k) + " variant " + std::to_string(variant) + std::string(k % 200, '.');
}

/// True when `v` is one of the values written for key `k`.
bool is_value_of(std::string const& v, std::uint32_t k) {
    std::string const prefix = "key " + std::to_string(k) + " variant ";
    if (v.compare(0, prefix.size(), prefix) != 0) return false;
    std::uint32_t const variant = static_cast<std::uint32_t>(std::atoi(v.c_str() + prefix.size()));
    return v == value_of(k, variant);
}

template <class F>
void run_threads(int n, F const& f) {
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) threads.emplace_back([&f, t] { f(t); });
    for (auto& t : threads) t.join();
}

using compile_cache_test::model::kernel;

/// An artifact that refers to its callee through the registry.
struct linked_artifact {
    std::uint32_t id = 0;
    std::string body;
    cc::ref<kernel> callee;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & id & body & callee;
    }
};

} // namespace

TEST_CASE("memory_storage: writers, readers and removers on shared keys", "[concurrency]") {
    cc::memory_storage s;
    std::atomic<int> wrong{0};
    run_threads(threads_n, [&](int t) {
        std::string out;
        for (std::uint32_t i = 0; i < 3000; ++i) {
            std::uint32_t const k = (i * 7 + static_cast<std::uint32_t>(t)) % 64;
            switch (i % 4) {
            case 0:
            case 1:
                if (s.write(key_n(k), value_of(k, static_cast<std::uint32_t>(t)))) ++wrong;
                break;
            case 2: {
                auto const r = s.read(key_n(k), out, 1 << 20);
                if (r.status == cc::read_status::found ? !is_value_of(out, k) : r.status != cc::read_status::absent)
                    ++wrong;
                break;
            }
            default:
                if (i % 32 == 3 && s.remove(key_n(k))) ++wrong;
            }
        }
    });
    CHECK(wrong == 0);
    CHECK(s.size() <= 64);
}

TEST_CASE("statistics: counters from many threads add up, snapshots meanwhile", "[concurrency]") {
    cc::statistics st;
    std::atomic<bool> done{false};
    std::atomic<int> bad_snapshots{0};
    std::thread reader([&] {
        std::uint64_t last_hits = 0;
        while (!done.load()) {
            auto const s = st.snapshot();
            if (s.hits < last_hits) ++bad_snapshots; // counters only grow
            last_hits = s.hits;
            (void)s.summary();
        }
    });
    run_threads(threads_n, [&](int t) {
        for (int i = 0; i < 5000; ++i) {
            st.hit(10, cc::statistics::hit_phases{1, 0, 0, 0});
            st.miss(cc::miss_reason::absent, 0, 1);
            st.stored(5, 1);
            st.store_failed(cc::store_failure::write_error, 1);
            st.compiled(2);
            if (i % 10 == 0) st.bypassed("reason " + std::to_string(t % 2));
        }
    });
    done = true;
    reader.join();
    auto const s = st.snapshot();
    CHECK(bad_snapshots == 0);
    CHECK(s.hits == threads_n * 5000u);
    CHECK(s.miss_count(cc::miss_reason::absent) == threads_n * 5000u);
    CHECK(s.stores == threads_n * 5000u);
    CHECK(s.failure_count(cc::store_failure::write_error) == threads_n * 5000u);
    CHECK(s.bytes_read == threads_n * 50000u);
    CHECK(s.bypasses == threads_n * 500u);
    CHECK(s.bypass_reasons.at("reason 0") + s.bypass_reasons.at("reason 1") == threads_n * 500u);
}

TEST_CASE("registry: binding, lookups, references and forgetting from many threads", "[concurrency]") {
    cc::registry reg;
    std::vector<kernel> kernels(threads_n * 50);
    kernel shared{"shared"};
    reg.add_shared("dialects", &shared);
    std::atomic<int> wrong{0};
    run_threads(threads_n, [&](int t) {
        for (std::uint32_t round = 0; round < 20; ++round) {
            for (std::uint32_t i = 0; i < 50; ++i) {
                std::uint32_t const n = static_cast<std::uint32_t>(t) * 50 + i;
                kernel* const k = &kernels[n];
                reg.bind(k, key_n(n));
                if (reg.kernel<kernel>(key_n(n)) != k) ++wrong;
                auto const bound = reg.key_of(k);
                if (!bound || *bound != key_n(n)) ++wrong;
                auto const r = reg.to_reference(k, typeid(kernel), nullptr);
                if (!r || reg.from_reference(*r, typeid(kernel), nullptr) != k) ++wrong;
                if (i > 0) reg.record_call(k, &kernels[n - 1]);
                auto const sr = reg.to_reference(&shared, typeid(kernel), nullptr);
                if (!sr || reg.from_reference(*sr, typeid(kernel), nullptr) != &shared) ++wrong;
                // Another thread's kernel: bound to its own key or not at all.
                std::uint32_t const m = (n + 50) % static_cast<std::uint32_t>(kernels.size());
                if (auto const other = reg.key_of(&kernels[m]); other && *other != key_n(m)) ++wrong;
            }
            // Forgetting the first kernel of this thread drops its callers' keys too.
            auto const dropped = reg.forget(&kernels[static_cast<std::size_t>(t) * 50]);
            if (dropped.size() != 50) ++wrong;
            if (reg.key_of(&kernels[static_cast<std::size_t>(t) * 50 + 49])) ++wrong;
        }
    });
    CHECK(wrong == 0);
}

TEST_CASE("one basic_cache shared by threads, over memory_storage and the registry", "[concurrency]") {
    using cache_t = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::memory_storage>;
    cache_t cache{cc::memory_storage{}};
    std::vector<kernel> kernels(32);
    for (std::uint32_t i = 0; i < 32; ++i) {
        kernels[i].name = "k" + std::to_string(i);
        cache.resolver().bind(&kernels[i], key_n(i));
    }
    std::atomic<int> wrong{0};
    run_threads(threads_n, [&](int t) {
        for (std::uint32_t i = 0; i < 400; ++i) {
            std::uint32_t const id = (i * 13 + static_cast<std::uint32_t>(t) * 5) % 32;
            kernel const* const callee = &kernels[(id + 1) % 32];
            auto const r = cache.get_or_compile<linked_artifact>(
                storage_test::key_of(id), {kernels[id].name, "concurrency", 1},
                [&] { return linked_artifact{id, value_of(id, 0), cc::ref<kernel>(const_cast<kernel*>(callee))}; },
                &kernels[id]);
            if (r.value.id != id || r.value.body != value_of(id, 0) || r.value.callee.get() != callee) ++wrong;
        }
    });
    CHECK(wrong == 0);
    auto const s = cache.stats();
    CHECK(s.hits + s.total_misses() == threads_n * 400u);
    CHECK(s.total_misses() == s.miss_count(cc::miss_reason::absent));
    CHECK(s.total_store_failures() == 0);
    CHECK(s.hits > 0);
}

TEST_CASE("one directory_storage shared by writers, readers and a pruner", "[concurrency]") {
    temp_dir dir;
    cc::directory_options o;
    o.max_size = 64 * 4096; // small: cleanups run all the time
    cc::directory_storage s((dir.path() / "cache").string(), o);
    std::atomic<int> wrong{0};
    std::atomic<bool> done{false};
    std::thread pruner([&] {
        while (!done.load())
            if (s.prune().error) ++wrong;
    });
    run_threads(4, [&](int t) {
        std::string out;
        for (std::uint32_t i = 0; i < 400; ++i) {
            std::uint32_t const k = (i * 11 + static_cast<std::uint32_t>(t)) % 128;
            if (i % 3 == 0) {
                if (s.write(key_n(k), value_of(k, static_cast<std::uint32_t>(t)))) ++wrong;
            } else {
                auto const r = s.read(key_n(k), out, 1 << 20);
                if (r.status == cc::read_status::found ? !is_value_of(out, k) : r.status != cc::read_status::absent)
                    ++wrong;
            }
        }
    });
    done = true;
    pruner.join();
    CHECK(wrong == 0);
    auto const c = s.counters();
    CHECK(c.evicted > 0);
    CHECK(s.prune().bytes <= o.max_size);
}
