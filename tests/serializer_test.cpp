// The Serializer models, boost_binary and boost_text: a compiled kernel goes to bytes
// and back with its references relinked, the format id says what the bytes depend
// on, and bad input comes back as a std::exception (which the cache counts), never
// as anything else.
#include "catch2_compat.hpp"
#include "support/model.hpp"

#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/resolver/registry.hpp>
#include <compile_cache/serializer/boost_archive.hpp>
#include <compile_cache/serializer/concept.hpp>

#include <boost/archive/basic_archive.hpp>
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <boost/version.hpp>

#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <locale>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace cc = compile_cache;

// --- what a small host compiler keeps alive, and what it caches -----------------

using namespace compile_cache_test::model;

cc::key key_of_text(std::string_view s) { return cc::key(cc::sha256_digest(s.data(), s.size())); }

/// A host's live world: a callee bound to its key, a dialect group and a type
/// singleton registered, and the kernel being compiled.
struct host {
    kernel self{"saxpy_f64"};
    kernel callee{"fma_f64"};
    dialect_group core{"core+arith"};
    type f64{"f64"};
    cc::registry reg;

    host() {
        reg.bind(&callee, key_of_text("fma_f64 ir"));
        reg.add_shared("mydsl.dialects.core", &core);
        reg.add_singleton("mydsl.type.f64", &f64);
    }
    cc::resolver_context context() { return cc::resolver_context::of(reg, &self); }

    compiled_kernel compile() {
        compiled_kernel k;
        k.name = "saxpy_f64";
        k.bytecode = {0x01, 0x00, 0x02, 0x01, 0x10, 0x00, 0x01, 0x20, 0xff};
        k.constants = {2.5, -0.0, 1e-300, 6.02214076e23};
        k.source_map = {{0, {12, 5}}, {4, {13, 9}}, {8, {14, 1}}};
        k.callees = {&callee, &self}; // calls fma_f64, and itself
        k.dialects = &core;
        k.result_type = &f64;
        return k;
    }
};

template <class S>
std::string save(compiled_kernel const& k, cc::resolver_context const& ctx) {
    std::string out;
    S::save(out, k, ctx);
    return out;
}

} // namespace

TEMPLATE_TEST_CASE("a compiled kernel survives a round trip through the archive", "[serializer]",
                   cc::boost_binary, cc::boost_text) {
    static_assert(cc::check_serializer<TestType, compiled_kernel>::value);
    host h;
    compiled_kernel const original = h.compile();

    std::string const bytes = save<TestType>(original, h.context());
    REQUIRE(!bytes.empty());

    compiled_kernel loaded;
    TestType::load(bytes, loaded, h.context());
    CHECK(same_kernel(loaded, original));
    // References come back as the live objects themselves, not as copies.
    REQUIRE(loaded.callees.size() == 2);
    CHECK(loaded.callees[0].get() == &h.callee);
    CHECK(loaded.callees[1].get() == &h.self);
    CHECK(loaded.dialects.get() == &h.core);
    CHECK(loaded.result_type.get() == &h.f64);
}

TEMPLATE_TEST_CASE("save appends to what the entry already holds", "[serializer]", cc::boost_binary,
                   cc::boost_text) {
    // The cache writes the envelope's header first and lets the serializer append.
    host h;
    std::string out = "HEADER";
    TestType::save(out, h.compile(), h.context());
    REQUIRE(out.compare(0, 6, "HEADER") == 0);
    compiled_kernel loaded;
    TestType::load(std::string_view(out).substr(6), loaded, h.context());
    CHECK(same_kernel(loaded, h.compile()));
}

TEST_CASE("format_id names the archive kind, the archive version and the ABI", "[serializer]") {
    // Through a const object: a cast of the temporary picks the non-const conversion
    // operator, which -Wconversion reports.
    boost::serialization::library_version_type const version = boost::archive::BOOST_ARCHIVE_VERSION();
    std::string const archive = "archive=" + std::to_string(static_cast<unsigned>(version));
    std::string const binary = cc::boost_binary::format_id();
    std::string const text = cc::boost_text::format_id();

    CHECK(binary.find("boost_binary") != std::string::npos);
    CHECK(binary.find(archive) != std::string::npos);
    CHECK(binary.find("boost=" + std::to_string(BOOST_VERSION)) != std::string::npos);
    // A binary archive holds native integers: its id names their sizes and byte order.
    CHECK(binary.find("abi=") != std::string::npos);
    CHECK(binary.find("p" + std::to_string(sizeof(void*))) != std::string::npos);
    CHECK(binary.find("l" + std::to_string(sizeof(long))) != std::string::npos);
    CHECK((binary.find("le") != std::string::npos || binary.find("be") != std::string::npos));
    // And the raw bytes of long double and wchar_t: x86-64's and AArch64's long double are
    // both 16 bytes, but one is x87's 64-digit format and the other binary128.
    CHECK(binary.find("ld" + std::to_string(sizeof(long double)) + "m" +
                      std::to_string(std::numeric_limits<long double>::digits) + "w" +
                      std::to_string(sizeof(wchar_t))) != std::string::npos);

    CHECK(text.find("boost_text") != std::string::npos);
    CHECK(text.find(archive) != std::string::npos);
    CHECK(text.find("abi=") == std::string::npos); // text is readable on any platform

    CHECK(binary != text);
    CHECK(cc::boost_binary::format_id() == binary); // stable within a process
}

TEMPLATE_TEST_CASE("loading garbage throws a std::exception", "[serializer]", cc::boost_binary,
                   cc::boost_text) {
    // The cache counts a std::exception from load as a deserialize error; anything else
    // would be a bug. (Inputs here are chosen so that Boost fails before allocating:
    // the envelope's digest is what keeps arbitrary bytes away from Boost.)
    host h;
    std::string const input = GENERATE(std::string(), std::string(64, '\xff'), std::string(3, '\0'),
                                       std::string("this is not an archive"));
    compiled_kernel loaded;
    CHECK_THROWS_AS(TestType::load(input, loaded, h.context()), std::exception);
}

TEMPLATE_TEST_CASE("a truncated payload throws a std::exception at every length", "[serializer]",
                   cc::boost_binary, cc::boost_text) {
    host h;
    compiled_kernel const original = h.compile();
    std::string const bytes = save<TestType>(original, h.context());

    // A text archive ends in a newline: a prefix that drops only trailing whitespace
    // is the whole archive. Every prefix that cuts into the content must throw.
    std::size_t content = bytes.size();
    if (std::is_same_v<TestType, cc::boost_text>)
        while (content > 0 && std::isspace(static_cast<unsigned char>(bytes[content - 1]))) --content;

    std::size_t loaded_ok = 0;
    for (std::size_t n = 0; n < content; ++n) {
        compiled_kernel loaded;
        try {
            TestType::load(std::string_view(bytes.data(), n), loaded, h.context());
            ++loaded_ok;
            UNSCOPED_INFO("a prefix of " << n << " of " << bytes.size() << " bytes loaded");
        } catch (std::exception const&) {
        } catch (...) {
            FAIL("a prefix of " << n << " bytes threw something that is not a std::exception");
        }
    }
    CHECK(loaded_ok == 0);
}

TEMPLATE_TEST_CASE("a corrupt length is refused as an archive_exception before anything is allocated",
                   "[serializer]", cc::boost_binary, cc::boost_text) {
    // Boost believes the lengths it reads (unbounded, this one was a std::length_error);
    // the serializers load through bounded archives that refuse a length longer than
    // what is left of the payload. bounded_archive_test.cpp has the rest.
    host h;
    std::string bytes = save<TestType>(h.compile(), h.context());
    std::string const name = "saxpy_f64";
    std::size_t const at = bytes.find(name);
    REQUIRE(at != std::string::npos);
    if (std::is_same_v<TestType, cc::boost_binary>) {
        REQUIRE(at >= sizeof(std::size_t)); // the name's length, a native size_t, precedes it
        for (std::size_t i = at - sizeof(std::size_t); i < at; ++i) bytes[i] = '\xff';
    } else {
        std::string const field = std::to_string(name.size()) + " " + name;
        std::size_t const f = bytes.find(field);
        REQUIRE(f != std::string::npos);
        bytes.replace(f, std::to_string(name.size()).size(), "18446744073709551615");
    }
    compiled_kernel loaded;
    CHECK_THROWS_AS(TestType::load(bytes, loaded, h.context()), boost::archive::archive_exception);
}

TEMPLATE_TEST_CASE("infinite and NaN constants survive a round trip", "[serializer]", cc::boost_binary,
                   cc::boost_text) {
    // A max-reduction starts from -inf: such a kernel must load, not miss every time.
    host h;
    compiled_kernel original = h.compile();
    original.constants = {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::quiet_NaN(), -0.0, std::numeric_limits<double>::denorm_min()};
    std::string const bytes = save<TestType>(original, h.context());
    compiled_kernel loaded;
    TestType::load(bytes, loaded, h.context());
    REQUIRE(loaded.constants.size() == 5);
    CHECK(loaded.constants[0] == -std::numeric_limits<double>::infinity());
    CHECK(loaded.constants[1] == std::numeric_limits<double>::infinity());
    CHECK(std::isnan(loaded.constants[2]));
    CHECK(loaded.constants[3] == 0.0);
    CHECK(std::signbit(loaded.constants[3]));
    CHECK(loaded.constants[4] == std::numeric_limits<double>::denorm_min());
}

namespace {
/// A host's global locale that writes 1.234,5 for 1234.5.
struct comma_decimal : std::numpunct<char> {
    char do_decimal_point() const override { return ','; }
    char do_thousands_sep() const override { return '.'; }
    std::string do_grouping() const override { return "\3"; }
};

class global_locale {
public:
    explicit global_locale(std::locale const& l) : old_(std::locale::global(l)) {}
    global_locale(global_locale const&) = delete;
    global_locale& operator=(global_locale const&) = delete;
    ~global_locale() { std::locale::global(old_); }

private:
    std::locale old_;
};
} // namespace

TEST_CASE("a text archive is the same whatever the host's global locale", "[serializer]") {
    host h;
    compiled_kernel original = h.compile();
    original.bytecode.assign(1500, 0x01); // a count that a grouping locale would write as 1.500
    original.constants.push_back(1234.5);
    std::string const classic_bytes = save<cc::boost_text>(original, h.context());

    std::string localized_bytes;
    compiled_kernel read_under_locale;
    {
        global_locale german(std::locale(std::locale::classic(), new comma_decimal));
        localized_bytes = save<cc::boost_text>(original, h.context());
        cc::boost_text::load(classic_bytes, read_under_locale, h.context());
    }
    CHECK(localized_bytes == classic_bytes);
    CHECK(same_kernel(read_under_locale, original));
    compiled_kernel read_back;
    cc::boost_text::load(localized_bytes, read_back, h.context());
    CHECK(same_kernel(read_back, original));
}

namespace {
/// An artifact that looks for the resolver from inside serialize, as a host's own
/// reference type would.
struct introspecting_artifact {
    int value = 0;
    mutable void* seen_resolver = nullptr;
    mutable void const* seen_self = nullptr;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        cc::resolver_context& ctx = cc::resolver_context_of(ar);
        seen_resolver = ctx.resolver;
        seen_self = ctx.self;
        ar & value;
    }
};
} // namespace

TEMPLATE_TEST_CASE("serialize reaches the resolver through resolver_context_of(ar)", "[serializer]",
                   cc::boost_binary, cc::boost_text) {
    host h;
    introspecting_artifact out_artifact;
    out_artifact.value = 42;
    std::string bytes;
    TestType::save(bytes, out_artifact, h.context());
    CHECK(out_artifact.seen_resolver == &h.reg);
    CHECK(out_artifact.seen_self == &h.self);

    kernel other_self{"another kernel"};
    introspecting_artifact in_artifact;
    TestType::load(bytes, in_artifact, cc::resolver_context::of(h.reg, &other_self));
    CHECK(in_artifact.value == 42);
    CHECK(in_artifact.seen_resolver == &h.reg);
    CHECK(in_artifact.seen_self == &other_self);
}
