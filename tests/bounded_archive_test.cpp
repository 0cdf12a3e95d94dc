// The bounded archives the serializers load through (serializer/boost_archive.hpp):
// they read exactly what Boost's binary_oarchive and text_oarchive write, and refuse a
// string length or collection count larger than what is left of the payload before
// anything is allocated for it. Found by the load fuzzer (tests/fuzz/): behind a valid
// envelope, a payload of a few bytes claiming a string of 2^40 characters made Boost
// allocate that much.
#include "catch2_compat.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/serializer/boost_archive.hpp>
#include <compile_cache/storage/memory_storage.hpp>

#include <boost/archive/archive_exception.hpp>
#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/text_iarchive.hpp>
#include <boost/serialization/array.hpp>
#include <boost/serialization/map.hpp>
#include <boost/serialization/optional.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <boost/optional.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace cc = compile_cache;

/// The largest single allocation made through counting_allocator since the last reset.
std::size_t largest_allocation = 0;

template <class T>
struct counting_allocator {
    using value_type = T;
    counting_allocator() = default;
    template <class U>
    counting_allocator(counting_allocator<U> const&) noexcept {}
    T* allocate(std::size_t n) {
        if (n * sizeof(T) > largest_allocation) largest_allocation = n * sizeof(T);
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
    friend bool operator==(counting_allocator const&, counting_allocator const&) { return true; }
    friend bool operator!=(counting_allocator const&, counting_allocator const&) { return false; }
};

struct point {
    std::int32_t x = 0, y = 0;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & x & y;
    }
    friend bool operator==(point const& a, point const& b) { return a.x == b.x && a.y == b.y; }
};

struct everything {
    std::string name;
    std::wstring wide;
    std::vector<std::uint8_t, counting_allocator<std::uint8_t>> bytes;
    std::vector<double, counting_allocator<double>> numbers;
    std::vector<point, counting_allocator<point>> points;
    std::vector<std::string> strings;
    std::vector<std::vector<std::int64_t>> nested;
    std::vector<bool> flags;
    std::map<std::string, double> table;
    boost::optional<std::string> maybe;
    std::string last; // at the very end: its length is exactly what is left

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & name & wide & bytes & numbers & points & strings & nested & flags & table & maybe & last;
    }
    friend bool operator==(everything const& a, everything const& b) {
        return a.name == b.name && a.wide == b.wide && a.bytes == b.bytes && a.numbers == b.numbers &&
               a.points == b.points && a.strings == b.strings && a.nested == b.nested && a.flags == b.flags &&
               a.table == b.table && a.maybe == b.maybe && a.last == b.last;
    }
};

/// A class that writes nothing.
struct nothing {
    template <class Archive>
    void serialize(Archive&, unsigned) {}
};

everything sample() {
    everything e;
    e.name = "saxpy";
    e.wide = L"wide \u00e9";
    e.bytes = {1, 2, 3, 0, 255};
    e.numbers = {1.5, -0.0, 1e300};
    e.points = {{1, 2}, {-3, 4}};
    e.strings = {"", "a", std::string(300, 'z')};
    e.nested = {{}, {1, 2, 3}, {std::numeric_limits<std::int64_t>::min()}};
    e.flags = {true, false, true};
    e.table = {{"alpha", 2.0}, {"beta", 0.5}};
    e.maybe = std::string("doc");
    e.last = std::string(100, 'L');
    return e;
}

template <class Serializer>
std::string save(everything const& e) {
    std::string out;
    cc::registry r;
    Serializer::save(out, e, cc::resolver_context::of(r, static_cast<void const*>(nullptr)));
    return out;
}

template <class Serializer>
everything load(std::string const& bytes) {
    everything e;
    cc::registry r;
    Serializer::load(bytes, e, cc::resolver_context::of(r, static_cast<void const*>(nullptr)));
    return e;
}

/// Loads with Boost's own archive, unbounded, for comparison.
template <class Serializer>
everything load_with_boost(std::string const& bytes) {
    everything e;
    std::istringstream is(bytes);
    if constexpr (std::is_same_v<Serializer, cc::boost_binary>) {
        boost::archive::binary_iarchive ar(is, cc::detail::archive_flags);
        ar >> e;
    } else {
        is.imbue(cc::detail::text_archive_locale());
        boost::archive::text_iarchive ar(is, cc::detail::archive_flags);
        ar >> e;
    }
    return e;
}

/// Overwrites the length or count field that precedes `marker` in `bytes` with `value`.
template <class Serializer>
void set_length_before(std::string& bytes, std::string const& marker, std::size_t marker_count_or_length,
                       std::uint64_t value) {
    if constexpr (std::is_same_v<Serializer, cc::boost_binary>) {
        std::size_t const at = bytes.find(marker);
        REQUIRE(at != std::string::npos);
        REQUIRE(at >= 8);
        for (std::size_t i = 0; i < 8; ++i) bytes[at - 8 + i] = static_cast<char>((value >> (8 * i)) & 0xff);
    } else {
        std::string const field = std::to_string(marker_count_or_length) + " " + marker;
        std::size_t const at = bytes.find(field);
        REQUIRE(at != std::string::npos);
        bytes.replace(at, std::to_string(marker_count_or_length).size(), std::to_string(value));
    }
}

} // namespace

TEMPLATE_TEST_CASE("the bounded archives read what Boost's archives write, as Boost's own do", "[serializer][bounded]",
                   cc::boost_binary, cc::boost_text) {
    everything const original = sample();
    std::string const bytes = save<TestType>(original);
    everything const bounded = load<TestType>(bytes);
    CHECK(bounded == original);
    CHECK(load_with_boost<TestType>(bytes) == original);

    everything const empty;
    CHECK(load<TestType>(save<TestType>(empty)) == empty);
}

TEMPLATE_TEST_CASE("a string length beyond the payload is refused", "[serializer][bounded]", cc::boost_binary,
                   cc::boost_text) {
    std::string bytes = save<TestType>(sample());
    std::uint64_t const lengths[] = {std::numeric_limits<std::uint64_t>::max(), std::uint64_t{1} << 40,
                                     std::uint64_t{1} << 30, bytes.size()};
    for (std::uint64_t length : lengths) {
        INFO("claimed length " << length);
        std::string damaged = bytes;
        set_length_before<TestType>(damaged, "saxpy", 5, length);
        CHECK_THROWS_AS(load<TestType>(damaged), boost::archive::archive_exception);
    }
    // The last string may claim what is left (a text archive has a byte after it), and no more.
    std::string const ls(100, 'L');
    std::size_t const left = bytes.size() - bytes.find(ls);
    CHECK(load<TestType>(bytes).last == ls);
    std::string beyond = bytes;
    set_length_before<TestType>(beyond, ls, 100, left + 1);
    CHECK_THROWS_AS(load<TestType>(beyond), boost::archive::archive_exception);
}

TEMPLATE_TEST_CASE("a wide string length beyond the payload is refused", "[serializer][bounded]", cc::boost_binary,
                   cc::boost_text) {
    everything const e = sample();
    std::string const bytes = save<TestType>(e);
    // Both archives write a wide string as its length in characters, then its bytes.
    std::string const wide_bytes(reinterpret_cast<char const*>(e.wide.data()), e.wide.size() * sizeof(wchar_t));
    std::uint64_t const lengths[] = {std::numeric_limits<std::uint64_t>::max(), std::uint64_t{1} << 40,
                                     std::uint64_t{1} << 30, 50000000, bytes.size()};
    for (std::uint64_t length : lengths) {
        INFO("claimed length " << length);
        std::string damaged = bytes;
        set_length_before<TestType>(damaged, wide_bytes, e.wide.size(), length);
        CHECK_THROWS_AS(load<TestType>(damaged), boost::archive::archive_exception);
    }
}

TEMPLATE_TEST_CASE("a collection count beyond the payload is refused before the collection is allocated",
                   "[serializer][bounded]", cc::boost_binary, cc::boost_text) {
    everything e;
    e.name = "marker";
    e.bytes.assign(7, 0x42);
    std::string const bytes = save<TestType>(e);
    // In both archives the count of `bytes` comes right after the (empty) wide string:
    // find it by its value next to the 7 bytes that follow.
    std::string damaged = bytes;
    if constexpr (std::is_same_v<TestType, cc::boost_binary>) {
        std::string const payload(7, '\x42');
        std::size_t const at = damaged.find(payload);
        REQUIRE(at != std::string::npos);
        REQUIRE(at >= 8);
        for (std::size_t i = 0; i < 8; ++i) damaged[at - 8 + i] = static_cast<char>(i == 4 ? 1 : 0); // 2^32
    } else {
        std::size_t const at = damaged.find(" 7 ");
        REQUIRE(at != std::string::npos);
        damaged.replace(at + 1, 1, "4294967296");
    }
    largest_allocation = 0;
    CHECK_THROWS_AS(load<TestType>(damaged), boost::archive::archive_exception);
    CHECK(largest_allocation < 4096);

    largest_allocation = 0;
    CHECK(load<TestType>(bytes).bytes.size() == 7);
    CHECK(largest_allocation >= 7);
}

TEMPLATE_TEST_CASE("through the cache, a valid envelope around a lying payload is a deserialize-error miss",
                   "[serializer][bounded]", cc::boost_binary, cc::boost_text) {
    using cache_type = cc::basic_cache<cc::sha256, TestType, cc::registry, cc::memory_storage>;
    cache_type cache(cc::memory_storage{});
    cc::key_result const k = cc::key_builder<>().add("ir", "lying payload").finish();
    std::string payload = save<TestType>(sample());
    set_length_before<TestType>(payload, "saxpy", 5, std::uint64_t{1} << 40);

    cc::entry_metadata m;
    m.name = "saxpy";
    m.format_id = cache_type::template entry_format_id<everything>();
    std::string entry;
    std::size_t const at = cc::begin_envelope(entry, k.value(), m);
    entry += payload;
    cc::seal_envelope(entry, at);
    REQUIRE(!cache.storage().write(k.value(), entry));

    CHECK(!cache.template load<everything>(k));
    CHECK(cache.stats().miss_count(cc::miss_reason::deserialize_error) == 1);
}

TEST_CASE("known limit: more elements of an empty class than bytes left are refused too", "[serializer][bounded]") {
    // An empty class writes no bytes per element, so the bound cannot tell such a
    // collection from a lie. It is a miss (the host compiles), never a wrong result.
    std::vector<nothing> many(1000), loaded;
    std::string bytes;
    cc::registry r;
    cc::boost_binary::save(bytes, many, cc::resolver_context::of(r, static_cast<void const*>(nullptr)));
    CHECK(bytes.size() < 1000);
    CHECK_THROWS_AS(cc::boost_binary::load(bytes, loaded, cc::resolver_context::of(r, static_cast<void const*>(nullptr))),
                    boost::archive::archive_exception);
}

TEST_CASE("a binary bool other than 0 or 1 is refused, not read into a bool", "[serializer][bounded]") {
    // Found by the load fuzzer: boost::optional's flag is a bool, and Boost's binary
    // archive copies the byte into it whatever it is (undefined behaviour).
    boost::optional<std::string> const some = std::string("doc"), none;
    cc::registry r;
    auto const ctx = cc::resolver_context::of(r, static_cast<void const*>(nullptr));
    for (auto const* value : {&some, &none}) {
        std::string bytes;
        cc::boost_binary::save(bytes, *value, ctx);
        boost::optional<std::string> loaded;
        cc::boost_binary::load(bytes, loaded, ctx);
        bool const same = loaded == *value;
        CHECK(same);
        // The flag follows the class information (a tracking byte and a 4-byte version);
        // make it 2, then 0xff.
        std::size_t const at = 5;
        REQUIRE(bytes.size() > at);
        REQUIRE(static_cast<unsigned char>(bytes[at]) == (value == &some ? 1 : 0));
        for (char bad : {'\2', '\xff'}) {
            std::string damaged = bytes;
            damaged[at] = bad;
            CHECK_THROWS_AS(cc::boost_binary::load(damaged, loaded, ctx), boost::archive::archive_exception);
        }
    }
}

namespace {
struct bool_arrays {
    bool plain[4] = {true, false, true, true};
    std::array<bool, 3> standard{{false, true, false}};
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & plain & standard;
    }
};
} // namespace

TEST_CASE("a binary bool array's element other than 0 or 1 is refused, as a lone bool is", "[serializer][bounded]") {
    // Boost's binary archive reads arrays of bitwise types as raw bytes, bool ones too.
    cc::registry r;
    auto const ctx = cc::resolver_context::of(r, static_cast<void const*>(nullptr));
    std::string bytes;
    cc::boost_binary::save(bytes, bool_arrays{}, ctx);
    bool_arrays loaded;
    loaded.plain[0] = false;
    loaded.standard[1] = false;
    cc::boost_binary::load(bytes, loaded, ctx);
    CHECK(loaded.plain[0]);
    CHECK(loaded.plain[3]);
    CHECK(loaded.standard[1]);
    // The std::array's elements are the payload's last bytes; the plain array's are the
    // bytes 1 0 1 1 before them.
    std::size_t const last_standard = bytes.size() - 1;
    std::size_t const last_plain = bytes.find(std::string("\x01\x00\x01\x01", 4));
    REQUIRE(last_plain != std::string::npos);
    for (std::size_t at : {last_standard, last_plain + 3}) {
        INFO("byte " << at);
        std::string damaged = bytes;
        damaged[at] = '\2';
        CHECK_THROWS_AS(cc::boost_binary::load(damaged, loaded, ctx), boost::archive::archive_exception);
    }
}

namespace {
/// One artifact type as two builds of a host define it: the writer's has a field more at
/// the end (its name, and so its entry format, is the same).
struct kernel_as_read {
    std::string name;
    std::vector<std::int32_t> code;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & name & code;
    }
};
struct kernel_as_written {
    std::string name;
    std::vector<std::int32_t> code;
    std::string calling_convention;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & name & code & calling_convention;
    }
};
} // namespace

TEMPLATE_TEST_CASE("bytes left in a payload after the artifact was read are refused",
                   "[serializer][bounded]", cc::boost_binary, cc::boost_text) {
    cc::registry r;
    auto const ctx = cc::resolver_context::of(r, static_cast<void const*>(nullptr));
    std::string bytes;
    TestType::save(bytes, kernel_as_read{"saxpy", {1, 2, 3}}, ctx);
    kernel_as_read loaded;
    TestType::load(bytes, loaded, ctx);
    CHECK(loaded.code.size() == 3);
    for (std::string const& tail : {std::string(1, '\0'), std::string("x"), std::string("7 garbage")}) {
        INFO("tail of " << tail.size() << " bytes");
        CHECK_THROWS_AS(TestType::load(bytes + tail, loaded, ctx), boost::archive::archive_exception);
    }
}

TEMPLATE_TEST_CASE("through the cache, an entry holding a field more than the artifact read is a miss",
                   "[serializer][bounded]", cc::boost_binary, cc::boost_text) {
    // A build whose artifact has a field more wrote the entry (same key, same type name):
    // read as this build's artifact it would lose the field and be taken for the kernel.
    using cache_type = cc::basic_cache<cc::sha256, TestType, cc::registry, cc::memory_storage>;
    cache_type cache(cc::memory_storage{});
    cc::key_result const k = cc::key_builder<>().add("ir", "a field more").finish();
    cc::registry r;
    std::string payload;
    TestType::save(payload, kernel_as_written{"saxpy", {1, 2, 3}, "fastcall"},
                   cc::resolver_context::of(r, static_cast<void const*>(nullptr)));
    cc::entry_metadata m;
    m.name = "saxpy";
    m.format_id = cache_type::template entry_format_id<kernel_as_read>();
    std::string entry;
    std::size_t const at = cc::begin_envelope(entry, k.value(), m);
    entry += payload;
    cc::seal_envelope(entry, at);
    REQUIRE(!cache.storage().write(k.value(), entry));

    CHECK(!cache.template load<kernel_as_read>(k));
    CHECK(cache.stats().miss_count(cc::miss_reason::deserialize_error) == 1);
}
