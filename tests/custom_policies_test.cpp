// Policies a user writes, composed into basic_cache as docs/policies.md says: a Storage
// whose members throw is counted under the storage's reasons; a Storage can say it is
// unusable and hear of a corrupt entry; Hashers with integer or struct results, no
// block_size, and update on byte pointers key the default composition.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/hashers.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#include <compile_cache/storage/memory_storage.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

namespace cc = compile_cache;
using compile_cache_test::captured_stderr;
using compile_cache_test::temp_dir;

struct artifact {
    std::string code;
    std::vector<int> lines;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & code & lines;
    }
};

artifact build() { return artifact{"bytecode", {1, 2, 3}}; }

// --- storages ------------------------------------------------------------------

/// memory_storage, with switches that make read or write throw.
struct throwing_storage {
    cc::memory_storage* inner;
    bool throw_on_read = false;
    bool throw_on_write = false;
    bool throw_foreign = false; ///< throw an int instead of a std::exception

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max_size) {
        if (throw_on_read) {
            if (throw_foreign) throw 42;
            throw std::runtime_error("read exploded");
        }
        return inner->read(k, out, max_size);
    }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        if (throw_on_write) {
            if (throw_foreign) throw 42;
            throw std::runtime_error("write exploded");
        }
        return inner->write(k, bytes);
    }
    std::error_code remove(cc::key const& k) { return inner->remove(k); }
};

/// A storage that can say it is unusable, and that hears of corrupt entries.
struct repairing_storage {
    cc::memory_storage* inner;
    bool is_usable = true;
    std::vector<cc::key>* told_corrupt = nullptr;

    bool usable() const { return is_usable; }
    void corrupt(cc::key const& k) {
        if (told_corrupt) told_corrupt->push_back(k);
        inner->remove(k);
    }
    cc::read_result read(cc::key const& k, std::string& out, std::size_t max_size) {
        return inner->read(k, out, max_size);
    }
    std::error_code write(cc::key const& k, std::string_view bytes) { return inner->write(k, bytes); }
    std::error_code remove(cc::key const& k) { return inner->remove(k); }
};

template <class Storage>
using cache_over = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, Storage>;

using compile_cache_test::fnv1a_64;
using compile_cache_test::fnv1a_two_lanes;
using compile_cache_test::two_lanes;

} // namespace

// --- exceptions from a Storage ---------------------------------------------------

TEST_CASE("a Storage whose read throws gives a read-error miss, never a deserialize-error", "[custom-policies]") {
    cc::memory_storage memory;
    throwing_storage storage{&memory};
    bool const foreign = GENERATE(false, true);
    storage.throw_on_read = true;
    storage.throw_foreign = foreign;
    cache_over<throwing_storage> cache(storage);
    auto const k = cache.make_key_builder("custom 1").add("ir", "read throws").finish();

    cc::cached<artifact> r;
    CHECK_NOTHROW(r = cache.get_or_compile<artifact>(k, {"k", "f", 1}, build));
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(r.reason == "read-error");
    CHECK(r.value.code == "bytecode");
    CHECK(cache.stats().miss_count(cc::miss_reason::read_error) == 1);
    CHECK(cache.stats().miss_count(cc::miss_reason::deserialize_error) == 0);
    CHECK(cache.stats().stores == 1); // the write does not throw: stored
}

TEST_CASE("a Storage whose write throws gives a write-error, never a serialize-error", "[custom-policies]") {
    cc::memory_storage memory;
    throwing_storage storage{&memory};
    bool const foreign = GENERATE(false, true);
    storage.throw_on_write = true;
    storage.throw_foreign = foreign;
    cache_over<throwing_storage> cache(storage);
    std::vector<std::string> lines;
    cache.set_logger([&](std::string_view line) { lines.emplace_back(line); });
    auto const k = cache.make_key_builder("custom 1").add("ir", "write throws").finish();

    bool stored = true;
    CHECK_NOTHROW(stored = cache.store(k, build(), {"k", "f", 1}));
    CHECK(!stored);
    CHECK(cache.stats().failure_count(cc::store_failure::write_error) == 1);
    CHECK(cache.stats().failure_count(cc::store_failure::serialize_error) == 0);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("write-error") != std::string::npos);
    CHECK(memory.size() == 0);
}

// --- usable() and corrupt(key) ---------------------------------------------------

TEST_CASE("a Storage that says it is unusable disables the cache, with one line", "[custom-policies]") {
    cc::memory_storage memory;
    repairing_storage storage{&memory};
    storage.is_usable = false;

    SECTION("through the logger") {
        std::vector<std::string> lines;
        cc::cache_options options;
        options.logger = [&](std::string_view line) { lines.emplace_back(line); };
        cache_over<repairing_storage> cache(storage, options);
        CHECK(!cache.enabled());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0] == "the storage reports it cannot be used; the cache is disabled");
        auto const k = cache.make_key_builder("custom 1").add("ir", "unusable").finish();
        auto const r = cache.get_or_compile<artifact>(k, {}, build);
        CHECK(r.outcome == cc::outcome::compiled);
        CHECK(r.reason == "disabled");
        CHECK(memory.size() == 0); // nothing was written
        CHECK(lines.size() == 1);
    }
    SECTION("on stderr when there is no logger") {
        temp_dir dir;
        captured_stderr err(dir.path() / "stderr");
        cache_over<repairing_storage> cache(storage);
        CHECK(!cache.enabled());
        CHECK(err.text() == "compile_cache: the storage reports it cannot be used; the cache is disabled\n");
    }
    SECTION("a usable one is enabled, silently") {
        storage.is_usable = true;
        temp_dir dir;
        captured_stderr err(dir.path() / "stderr");
        cache_over<repairing_storage> cache(storage);
        CHECK(cache.enabled());
        CHECK(err.text().empty());
    }
}

TEST_CASE("a Storage hears of an entry that failed the envelope check, and can remove it", "[custom-policies]") {
    cc::memory_storage memory;
    std::vector<cc::key> told;
    repairing_storage storage{&memory, true, &told};
    cache_over<repairing_storage> cache(storage);
    auto const k = cache.make_key_builder("custom 1").add("ir", "to be damaged").finish();
    auto const other = cache.make_key_builder("custom 1").add("ir", "another kernel").finish();
    REQUIRE(cache.store(k, build()));
    REQUIRE(cache.store(other, build()));

    SECTION("damaged bytes: corrupt") {
        std::string bytes;
        REQUIRE(memory.read(k.value(), bytes, 1 << 20).status == cc::read_status::found);
        bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x40);
        REQUIRE(!memory.write(k.value(), bytes));
        auto const r = cache.get_or_compile<artifact>(k, {}, build);
        CHECK(r.reason == "corrupt");
    }
    SECTION("another key's entry: key-mismatch") {
        std::string bytes;
        REQUIRE(memory.read(other.value(), bytes, 1 << 20).status == cc::read_status::found);
        REQUIRE(!memory.write(k.value(), bytes));
        auto const r = cache.get_or_compile<artifact>(k, {}, build);
        CHECK(r.reason == "key-mismatch");
    }
    REQUIRE(told.size() == 1);
    CHECK(told[0] == k.value());
    // The storage removed it, the miss stored a sound entry again: the next load hits.
    auto const again = cache.get_or_compile<artifact>(k, {}, build);
    CHECK(again.outcome == cc::outcome::loaded);
    CHECK(told.size() == 1);
}

TEST_CASE("a sound entry from another format is not reported as corrupt", "[custom-policies]") {
    cc::memory_storage memory;
    std::vector<cc::key> told;
    repairing_storage storage{&memory, true, &told};
    cc::basic_cache<cc::sha256, cc::boost_text, cc::registry, repairing_storage> text_cache(storage);
    cache_over<repairing_storage> binary_cache(storage);
    auto const k = binary_cache.make_key_builder("custom 1").add("ir", "shared").finish();
    REQUIRE(text_cache.store(k, build()));
    auto const r = binary_cache.get_or_compile<artifact>(k, {}, build);
    CHECK(r.reason == "foreign-version");
    CHECK(told.empty());
}

// --- wider Hasher requirements ---------------------------------------------------

TEST_CASE("an integer result is keyed by its little-endian bytes", "[custom-policies][hasher]") {
    STATIC_REQUIRE(cc::detail::is_hasher_v<fnv1a_64>);
    fnv1a_64 h;
    h.update("a", 1);
    CHECK(h.state == 0xaf63dc4c8601ec8cull); // FNV-1a 64 of "a", the published vector
    cc::key const k = cc::detail::key_of_digest(std::uint64_t{0x0123456789abcdefull});
    CHECK(k.hex() == "efcdab8967452301");
    CHECK(cc::detail::key_of_digest(std::uint16_t{0xbeef}).hex() == "efbe");
}

TEST_CASE("a struct result is keyed by its bytes, in member order on this machine", "[custom-policies][hasher]") {
    STATIC_REQUIRE(cc::detail::is_hasher_v<fnv1a_two_lanes>);
    two_lanes const r{1, 2};
    cc::key const k = cc::detail::key_of_digest(r);
    REQUIRE(k.size() == 16);
    CHECK(std::memcmp(k.data(), &r, 16) == 0);
}

TEMPLATE_TEST_CASE("a Hasher with an integer or a struct result works in the default composition",
                   "[custom-policies][hasher]", fnv1a_64, fnv1a_two_lanes) {
    using cache_type = cc::basic_cache<TestType, cc::boost_binary, cc::registry, cc::directory_storage>;
    temp_dir dir;
    auto key_for = [](cache_type const& c, std::string const& ir) {
        return c.make_key_builder("custom 1").add("ir", ir).finish();
    };
    int compiles = 0;
    auto compile = [&] {
        ++compiles;
        return build();
    };
    {
        cache_type cold(cc::directory_storage(dir.path().string()));
        auto const k = key_for(cold, "kernel");
        REQUIRE(k.ok());
        CHECK(k.value().size() == sizeof(typename TestType::result_type));
        auto const r = cold.template get_or_compile<artifact>(k, {"kernel", "f", 1}, compile);
        CHECK(r.outcome == cc::outcome::compiled);
        CHECK(r.reason == "absent");
        CHECK(cold.stats().stores == 1);
    }
    cache_type warm(cc::directory_storage(dir.path().string()));
    auto const k = key_for(warm, "kernel");
    auto const r = warm.template get_or_compile<artifact>(k, {"kernel", "f", 1}, compile);
    CHECK(r.outcome == cc::outcome::loaded);
    CHECK(r.value.code == "bytecode");
    CHECK(r.value.lines == std::vector<int>{1, 2, 3});
    CHECK(compiles == 1);
    // Another kernel, another key: a miss, not a wrong hit.
    auto const changed = warm.template get_or_compile<artifact>(key_for(warm, "kernel v2"), {"kernel", "f", 1}, compile);
    CHECK(changed.outcome == cc::outcome::compiled);
    CHECK(compiles == 2);
}

namespace {
/// A Hasher that throws something that is not a std::exception from result().
struct throwing_hasher {
    using result_type = std::uint32_t;
    void update(void const*, std::size_t) {}
    result_type result() { throw 7; }
};
} // namespace

TEST_CASE("a Hasher that throws makes the kernel bypass the cache, and the host gets its kernel",
          "[custom-policies][hasher]") {
    cc::basic_cache<throwing_hasher, cc::boost_binary, cc::registry, cc::memory_storage> cache{cc::memory_storage()};
    cc::key_result k;
    CHECK_NOTHROW(k = cache.make_key_builder("custom 1").add("ir", "x").finish());
    CHECK(!k.ok());
    cc::cached<artifact> r;
    CHECK_NOTHROW(r = cache.get_or_compile<artifact>(k, {}, build));
    CHECK(r.outcome == cc::outcome::bypassed);
    CHECK(r.value.code == "bytecode");
}
