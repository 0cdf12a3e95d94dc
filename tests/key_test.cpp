// Specification of keys: key_writer's canonical message, the `describe` customization
// point, key_builder / key_result, ordinal_map, the toolchain component, and the same
// key in every fresh process.
//
// Every test asserts on keys (what a host sees), not on the bytes of the message.
#include "catch2_compat.hpp"
#include "support/process.hpp"

#include <compile_cache/detail/build_id.hpp>
#include <compile_cache/key/detail/executable_digest.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/key/ordinal_map.hpp>
#include <compile_cache/key/toolchain.hpp>
#include <compile_cache/key/writer.hpp>
#include <compile_cache/version.hpp>

#include <boost/version.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <sys/wait.h>

namespace {

namespace cc = compile_cache;

/// The key of a builder holding exactly one component, "v", with this value.
template <class T>
cc::key key_of(T const& value) {
    cc::key_result r = cc::key_builder<>().add("v", value).finish();
    REQUIRE(r.ok());
    return r.value();
}

/// Checks that no two keys in the list are equal, naming the pair that collides.
void check_all_distinct(std::vector<cc::key> const& keys) {
    for (std::size_t i = 0; i < keys.size(); ++i)
        for (std::size_t j = i + 1; j < keys.size(); ++j) {
            INFO("values #" << i << " and #" << j << " gave the same key " << keys[i].hex());
            CHECK(keys[i] != keys[j]);
        }
}

bool is_lower_hex(std::string const& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
}

template <class Float, class Bits>
Float from_bits(Bits bits) {
    static_assert(sizeof(Float) == sizeof(Bits));
    Float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

enum class color : int { red = 1, green = 2 };
enum class small_color : std::uint8_t { red = 1 };

// User types, described through a hidden friend found by argument-dependent lookup.
struct options {
    int level = 2;
    bool fast_math = false;
    std::vector<std::string> flags;
    friend void describe(cc::key_writer& w, options const& o) { w(o.level, o.fast_math, o.flags); }
};

/// Derived from a described type: it must describe itself, base part included (a
/// derived type with no describe of its own does not compile: tests/compile_fail).
struct gpu_options : options {
    std::string arch = "sm_90";
    friend void describe(cc::key_writer& w, gpu_options const& o) { w(static_cast<options const&>(o), o.arch); }
};

/// A describe written as a template: vouched for with describes_whole (unmarked, it
/// does not compile: tests/compile_fail/key_describe_template_unmarked.cpp).
template <class T>
struct box {
    T value;
};
template <class T>
void describe(cc::key_writer& w, box<T> const& b) {
    w(b.value);
}

} // namespace

template <class T>
struct compile_cache::describes_whole<box<T>> : std::true_type {};

namespace {

struct two_lists {
    std::vector<int> first;
    std::vector<int> second;
    friend void describe(cc::key_writer& w, two_lists const& r) { w(r.first, r.second); }
};

struct two_strings {
    std::string first;
    std::string second;
    friend void describe(cc::key_writer& w, two_strings const& r) { w(r.first, r.second); }
};

struct throws_std {
    friend void describe(cc::key_writer&, throws_std const&) {
        throw std::runtime_error("global 'g' is a live file handle");
    }
};

struct throws_other {
    friend void describe(cc::key_writer&, throws_other const&) { throw 42; }
};

// Constructing it from an int throws, and its move may throw, so a variant cannot
// keep its old value while emplacing one: it is left valueless.
struct throws_on_construction {
    throws_on_construction() = default;
    explicit throws_on_construction(int) { throw std::runtime_error("no"); }
    throws_on_construction(throws_on_construction&&) noexcept(false) {}
    throws_on_construction& operator=(throws_on_construction&&) noexcept(false) { return *this; }
    friend void describe(cc::key_writer& w, throws_on_construction const&) { w(0); }
};

// A tiny SSA IR, as a host compiler would have one: values have names (which a user
// may rename) and addresses (different in every process); neither may reach a key.
namespace fake_ir {

struct value {
    std::string name; // "%sum": for people, never for keys
    std::string op;   // "arg", "const", "mul", "add", "ret"
    long constant = 0;
    std::vector<value const*> operands;
};

struct function {
    std::unique_ptr<value[]> pool;  // where the values live: their addresses
    std::vector<value const*> body; // program order
};

/// f(x, y) = x * 2 + y. `slots[i]` is where in the pool the i-th value of the program
/// is created, so a permutation changes which value gets which address.
function make_kernel(std::array<std::size_t, 6> slots, std::array<std::string, 6> names,
                     std::string add_op = "add") {
    function f;
    f.pool.reset(new value[6]);
    auto at = [&](std::size_t i) -> value& { return f.pool[slots[i]]; };
    at(0) = value{names[0], "arg", 0, {}};
    at(1) = value{names[1], "arg", 0, {}};
    at(2) = value{names[2], "const", 2, {}};
    at(3) = value{names[3], "mul", 0, {&at(0), &at(2)}};
    at(4) = value{names[4], add_op, 0, {&at(3), &at(1)}};
    at(5) = value{names[5], "ret", 0, {&at(4)}};
    for (std::size_t i = 0; i < 6; ++i) f.body.push_back(&at(i));
    return f;
}

/// The canonical text: each value numbered by first visit through ordinal_map.
std::string canonical_text(function const& f) {
    cc::ordinal_map<value> numbers;
    std::string text;
    for (value const* v : f.body) {
        text += "%" + std::to_string(numbers(v)) + " = " + v->op;
        if (v->op == "const") text += " " + std::to_string(v->constant);
        for (value const* o : v->operands) text += " %" + std::to_string(numbers(o));
        text += "\n";
    }
    return text;
}

/// What a careless host might print: names instead of numbers.
std::string named_text(function const& f) {
    std::string text;
    for (value const* v : f.body) {
        text += v->name + " = " + v->op;
        for (value const* o : v->operands) text += " " + o->name;
        text += "\n";
    }
    return text;
}

std::array<std::string, 6> const default_names{"%x", "%y", "%two", "%t", "%sum", "%r"};
std::array<std::size_t, 6> const in_order{0, 1, 2, 3, 4, 5};

} // namespace fake_ir

/// Runs a shell command, returns what it printed on stdout; fails the test if it
/// does not exit with status 0.
std::string run(std::string const& command) {
    compile_cache_test::process_result const r = compile_cache_test::run_shell(command);
    INFO("command: " << command);
    INFO(r.describe());
    REQUIRE(r.exited(0));
    return r.out;
}

std::string trim_newline(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

} // namespace

// ---------------------------------------------------------------------------------
// Equal content gives equal keys.

TEST_CASE("the same components give the same key, a 32-byte SHA-256 digest", "[key]") {
    auto build = [] {
        options o;
        o.flags = {"-O2", "-g"};
        return cc::key_builder<>().add("ir", std::string("%0 = arg\n")).add("options", o).finish();
    };
    cc::key_result a = build(), b = build();
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a.value() == b.value());
    CHECK(a.value().size() == 32);
    CHECK(a.value().hex().size() == 64);
    CHECK(is_lower_hex(a.value().hex()));
}

// ---------------------------------------------------------------------------------
// Every kind of change that must move the key moves it.

TEST_CASE("each integer width and signedness gives its own key for the same number", "[key]") {
    check_all_distinct({key_of(std::int8_t{1}), key_of(std::uint8_t{1}), key_of(std::int16_t{1}),
                        key_of(std::uint16_t{1}), key_of(std::int32_t{1}), key_of(std::uint32_t{1}),
                        key_of(std::int64_t{1}), key_of(std::uint64_t{1})});
}

TEST_CASE("a different integer value gives another key", "[key]") {
    check_all_distinct({key_of(0), key_of(1), key_of(-1), key_of(256), key_of(std::numeric_limits<int>::max()),
                        key_of(std::numeric_limits<int>::min())});
    // The same bits, read as signed or unsigned, are different content.
    CHECK(key_of(std::int32_t{-1}) != key_of(std::uint32_t{0xffffffffu}));
    CHECK(key_of(std::uint64_t{1}) != key_of(std::uint64_t{1} << 32));
}

TEST_CASE("a bool is neither the integer 0 nor 1, and true differs from false", "[key]") {
    check_all_distinct({key_of(true), key_of(false), key_of(std::uint8_t{1}), key_of(std::uint8_t{0}), key_of(1)});
}

TEST_CASE("floats are keyed by bit pattern: +0.0 and -0.0 differ, float and double differ", "[key]") {
    CHECK(key_of(0.0) != key_of(-0.0));
    CHECK(key_of(0.0f) != key_of(-0.0f));
    CHECK(key_of(1.0f) != key_of(1.0));
    CHECK(key_of(1.0) != key_of(std::nextafter(1.0, 2.0)));
    CHECK(key_of(std::numeric_limits<double>::infinity()) != key_of(-std::numeric_limits<double>::infinity()));
    CHECK(key_of(1.0) != key_of(std::int64_t{1}));
}

namespace {

/// Checks that every value of `nans` is a NaN, keyed apart from every other one and
/// from infinity (each has other bits: a kernel may fold a NaN's sign or payload).
template <class Float>
void each_nan_its_own_key(std::vector<Float> const& nans) {
    std::set<cc::key> keys;
    for (std::size_t i = 0; i < nans.size(); ++i) {
        INFO("NaN #" << i);
        REQUIRE(std::isnan(nans[i]));
        keys.insert(key_of(nans[i]));
    }
    CHECK(keys.size() == nans.size());
    CHECK(keys.count(key_of(std::numeric_limits<Float>::infinity())) == 0);
}

} // namespace

TEST_CASE("a NaN's sign and payload are keyed: NaNs of other bits give other keys", "[key]") {
    SECTION("double") {
        each_nan_its_own_key(std::vector<double>{
            std::numeric_limits<double>::quiet_NaN(),
            -std::numeric_limits<double>::quiet_NaN(),
            std::numeric_limits<double>::signaling_NaN(),
            -std::numeric_limits<double>::signaling_NaN(),
            from_bits<double>(std::uint64_t{0x7ff8000000000001}), // quiet, payload 1
            from_bits<double>(std::uint64_t{0xfff8000000000001}), // quiet, negative, payload 1
            from_bits<double>(std::uint64_t{0x7ff0000000000002}), // signaling, payload 2
            from_bits<double>(std::uint64_t{0xfff0000000000002}), // signaling, negative
            from_bits<double>(std::uint64_t{0x7fffffffffffffff}), // all payload bits
            from_bits<double>(std::uint64_t{0xffffffffffffffff}),
        });
        // The NaN every earlier version wrote for all of them keeps its key.
        CHECK(key_of(std::numeric_limits<double>::quiet_NaN()) == key_of(from_bits<double>(std::uint64_t{0x7ff8000000000000})));
    }
    SECTION("float") {
        each_nan_its_own_key(std::vector<float>{
            std::numeric_limits<float>::quiet_NaN(),
            -std::numeric_limits<float>::quiet_NaN(),
            from_bits<float>(std::uint32_t{0x7fc00001}),
            from_bits<float>(std::uint32_t{0xffc00001}),
            from_bits<float>(std::uint32_t{0x7f800001}),
            from_bits<float>(std::uint32_t{0xff800001}),
            from_bits<float>(std::uint32_t{0x7fffffff}),
        });
        CHECK(key_of(std::numeric_limits<float>::quiet_NaN()) != key_of(std::numeric_limits<double>::quiet_NaN()));
    }
}

TEST_CASE("a string and the same bytes give different keys", "[key]") {
    std::string const text = "abc";
    std::vector<unsigned char> const bytes{'a', 'b', 'c'};
    std::vector<std::byte> const std_bytes{std::byte{'a'}, std::byte{'b'}, std::byte{'c'}};
    CHECK(key_of(text) != key_of(bytes));
    // Bytes are bytes whatever the container; a string is a string however it is held.
    CHECK(key_of(bytes) == key_of(std_bytes));
    CHECK(key_of(text) == key_of(std::string_view("abc")));
    CHECK(key_of(text) == key_of("abc"));
    CHECK(key_of(text) != key_of(std::string("abd")));
    CHECK(key_of(std::string()) != key_of(std::vector<unsigned char>()));
    CHECK(key_of(std::string("a")) != key_of(std::string("a\0", 2)));
}

namespace {
extern char const unsized_source[]; // its bound unknown here, as an embedded file's is
cc::key key_of_unsized_source() { return key_of(unsized_source); }
char const unsized_source[] = "kernel axpy";
} // namespace

TEST_CASE("the tutorial's table of values holds: a char is a number, a char array is keyed to its last non-NUL, "
          "containers of one shape key alike, a bypassed or empty key makes a bypass",
          "[key]") {
    CHECK(key_of('a') == key_of(static_cast<char>(97)));
    CHECK(key_of('a') != key_of("a"));
    // Bytes after an inner NUL count (a magic number, a table); the NULs at the end do not.
    CHECK(key_of("ab\0cd") != key_of("ab"));
    CHECK(key_of("ab\0cd") != key_of("ab\0xy"));
    CHECK(key_of("ab\0cd") == key_of(std::string("ab\0cd", 5)));
    char const padded[8] = "ab";
    CHECK(key_of(padded) == key_of("ab"));
    // A null char pointer is no string: not the empty one, and no crash.
    char const* const null_text = nullptr;
    CHECK(key_of(null_text) != key_of(""));
    CHECK(key_of(null_text) == key_of(std::nullopt));
    // A path (a range of paths): its string.
    CHECK(key_of(std::filesystem::path("src/kernels/axpy.k")) == key_of(std::string("src/kernels/axpy.k")));
    CHECK(key_of(std::filesystem::path("a")) != key_of(std::filesystem::path("b")));
    // A char array without a NUL: all of it, and not a byte past it (its neighbour here).
    struct {
        char unterminated[3];
        char after[4];
    } const arrays = {{'a', 'b', 'c'}, {'x', 'y', 'z', '\0'}};
    CHECK(key_of(arrays.unterminated) == key_of("abc"));
    // An array of unknown bound (embedded source, say): up to its NUL.
    CHECK(key_of_unsized_source() == key_of("kernel axpy"));
    CHECK(key_of_unsized_source() != key_of(""));
    char const* pointer = "ab";
    CHECK(key_of(pointer) == key_of(std::string("ab")));
    CHECK(key_of(std::vector<int>{1, 2}) == key_of(std::list<int>{1, 2}));
    CHECK(key_of(std::vector<int>{1, 2}) == key_of(std::array<int, 2>{1, 2}));
    CHECK(key_of(std::vector<int>{1, 2}) != key_of(std::vector<int>{2, 1}));
    CHECK(key_of(std::pair<int, long>{1, 2}) == key_of(std::tuple<int, long>{1, 2}));
    CHECK(key_of(std::array<std::byte, 2>{std::byte{1}, std::byte{2}}) ==
          key_of(std::vector<unsigned char>{1, 2}));
    cc::key_result const bypass = cc::key_result::bypass("reads a global through a pointer");
    CHECK_FALSE(cc::key_builder<>().add("callee", bypass).finish().ok());
    CHECK_FALSE(cc::key_builder<>().add("callee", bypass.value()).finish().ok());
    CHECK_FALSE(cc::key_builder<>().add("callees", std::vector<cc::key_result>{bypass}).finish().ok());
}

TEST_CASE("a string split across two fields at another place gives another key", "[key]") {
    SECTION("in a pair") {
        CHECK(key_of(std::pair<std::string, std::string>("ab", "c")) !=
              key_of(std::pair<std::string, std::string>("a", "bc")));
        CHECK(key_of(std::pair<std::string, std::string>("abc", "")) !=
              key_of(std::pair<std::string, std::string>("", "abc")));
    }
    SECTION("in a user record") {
        CHECK(key_of(two_strings{"ab", "c"}) != key_of(two_strings{"a", "bc"}));
    }
    SECTION("in a sequence") {
        CHECK(key_of(std::vector<std::string>{"ab", "c"}) != key_of(std::vector<std::string>{"a", "bc"}));
        CHECK(key_of(std::vector<std::string>{"abc"}) != key_of(std::vector<std::string>{"ab", "c"}));
    }
    SECTION("in two components") {
        cc::key_result a = cc::key_builder<>().add("x", "ab").add("y", "c").finish();
        cc::key_result b = cc::key_builder<>().add("x", "a").add("y", "bc").finish();
        CHECK(a.value() != b.value());
    }
}

TEST_CASE("nested sequences keep their shape: [[1],[],[]] differs from [[],[1],[]]", "[key]") {
    using vv = std::vector<std::vector<int>>;
    check_all_distinct({key_of(vv{{1}, {}, {}}), key_of(vv{{}, {1}, {}}), key_of(vv{{}, {}, {1}}),
                        key_of(vv{{1}}), key_of(vv{}), key_of(vv{{}}), key_of(vv{{1, 1}}),
                        key_of(vv{{1}, {1}})});
    CHECK(key_of(std::vector<int>{1, 2}) != key_of(vv{{1}, {2}}));
    CHECK(key_of(std::vector<int>{1, 2}) != key_of(std::vector<int>{2, 1}));
    CHECK(key_of(std::vector<int>{}) != key_of(std::vector<int>{0}));
}

TEST_CASE("an empty optional, a present one, and the bare value all differ", "[key]") {
    check_all_distinct({key_of(std::optional<int>()), key_of(std::optional<int>(0)), key_of(0),
                        key_of(std::optional<int>(1)), key_of(std::optional<std::optional<int>>(std::optional<int>()))});
}

TEST_CASE("a variant holding the same value in another alternative gives another key", "[key]") {
    using v2 = std::variant<int, int>;
    CHECK(key_of(v2(std::in_place_index<0>, 7)) != key_of(v2(std::in_place_index<1>, 7)));
    CHECK(key_of(v2(std::in_place_index<0>, 7)) == key_of(v2(std::in_place_index<0>, 7)));
    CHECK(key_of(v2(std::in_place_index<0>, 7)) != key_of(v2(std::in_place_index<0>, 8)));
    CHECK(key_of(std::variant<int, std::string>(7)) != key_of(7));
    CHECK(key_of(std::variant<std::monostate, int>()) != key_of(std::variant<std::monostate, int>(0)));
}

TEST_CASE("pairs and tuples are keyed by each element in place", "[key]") {
    CHECK(key_of(std::make_pair(1, 2)) != key_of(std::make_pair(2, 1)));
    CHECK(key_of(std::make_tuple(1, 2, 3)) != key_of(std::make_tuple(1, 2)));
    CHECK(key_of(std::make_tuple(1, std::string("a"), 2.5)) != key_of(std::make_tuple(1, std::string("a"), 2.25)));
    CHECK(key_of(std::make_tuple(1, 2)) != key_of(std::vector<int>{1, 2}));
    // Structural: a pair is a tuple of two.
    CHECK(key_of(std::make_pair(1, 2)) == key_of(std::make_tuple(1, 2)));
}

TEST_CASE("an enumerator differs from its underlying integer", "[key]") {
    CHECK(key_of(color::red) != key_of(1));
    CHECK(key_of(color::red) != key_of(color::green));
    CHECK(key_of(small_color::red) != key_of(std::uint8_t{1}));
    CHECK(key_of(small_color::red) != key_of(color::red)); // other underlying width
}

TEST_CASE("a callee's key as a component: another callee key gives another key", "[key]") {
    cc::key_result callee_a = cc::key_builder<>().add("ir", "%0 = arg").finish();
    cc::key_result callee_b = cc::key_builder<>().add("ir", "%0 = const 1").finish();
    REQUIRE(callee_a.ok());
    REQUIRE(callee_b.ok());
    auto caller = [](cc::key const& callee) {
        return cc::key_builder<>().add("ir", "call @f").add("callee", callee).finish();
    };
    CHECK(caller(callee_a.value()).value() != caller(callee_b.value()).value());
    CHECK(caller(callee_a.value()).value() == caller(callee_a.value()).value());
    // A digest is not the same content as its bytes or its hex.
    cc::key const k = callee_a.value();
    CHECK(key_of(k) != key_of(std::vector<unsigned char>(k.data(), k.data() + k.size())));
    CHECK(key_of(k) != key_of(k.hex()));
}

TEST_CASE("a bypassed callee's empty key makes its caller bypass, never a key", "[key]") {
    cc::key_result callee = cc::key_builder<>().fail("captures a live socket").finish();
    REQUIRE_FALSE(callee.ok());
    REQUIRE(callee.value().empty());
    cc::key_result caller;
    REQUIRE_NOTHROW(caller = cc::key_builder<>().add("ir", "call @f").add("callee", callee.value()).finish());
    CHECK_FALSE(caller.ok());
    CHECK(caller.bypass_reason().find("callee") != std::string::npos);
}

TEST_CASE("a user type is keyed through its describe hidden friend", "[key]") {
    options base;
    base.flags = {"-O2"};
    options other_level = base, other_bool = base, other_flags = base;
    other_level.level = 3;
    other_bool.fast_math = true;
    other_flags.flags.push_back("-g");
    CHECK(key_of(base) == key_of(options(base)));
    check_all_distinct({key_of(base), key_of(other_level), key_of(other_bool), key_of(other_flags)});
    // A record is not the bare tuple of its fields.
    CHECK(key_of(base) != key_of(std::make_tuple(base.level, base.fast_math, base.flags)));
    // And it nests: in sequences, optionals, maps.
    CHECK(key_of(std::vector<options>{base}) != key_of(std::vector<options>{other_level}));
    CHECK(key_of(std::map<std::string, options>{{"k", base}}) !=
          key_of(std::map<std::string, options>{{"k", other_flags}}));
}

TEST_CASE("a derived type is keyed by its own describe: base fields and its own both count", "[key]") {
    gpu_options const a;
    gpu_options other_arch = a, other_level = a;
    other_arch.arch = "sm_80";
    other_level.level = 3;
    check_all_distinct({key_of(a), key_of(other_arch), key_of(other_level)});
    CHECK(key_of(a) != key_of(static_cast<options const&>(a)));
    CHECK(cc::detail::has_exact_describe<gpu_options>::value);
    CHECK(cc::detail::has_exact_describe<options>::value);
    // What the static_assert refuses: a describe reachable only through the base.
    struct bare : options {
        int extra = 0;
    };
    CHECK(cc::detail::has_describe<bare>::value);
    CHECK(!cc::detail::has_exact_describe<bare>::value);
}

namespace generic_host {
struct options {
    int level = 2;
};
void describe(cc::key_writer& w, options const& o) { w(o.level); }
/// A generic describe for the host's aggregates: it must not stand in for the
/// exact-type check's probe (which is no aggregate).
template <class T, std::enable_if_t<std::is_aggregate_v<T>, int> = 0>
void describe(cc::key_writer& w, T const&) {
    w(0);
}
struct gpu_options : options { // base-only describe: still refused
    gpu_options() {}
    std::string arch;
};
} // namespace generic_host

TEST_CASE("an aggregate-only generic describe does not hide a base-only describe from the check", "[key]") {
    CHECK(cc::detail::has_describe<generic_host::gpu_options>::value);
    CHECK(!cc::detail::has_exact_describe<generic_host::gpu_options>::value);
}

TEST_CASE("a describe template vouched for with describes_whole keys its type", "[key]") {
    CHECK(key_of(box<int>{3}) != key_of(box<int>{4}));
    CHECK(key_of(box<int>{3}) != key_of(box<long>{3}));
    CHECK(key_of(box<int>{3}) != key_of(3));
}

namespace container_host {
struct arguments : std::vector<int> {}; // a container under another name
struct tagged_arguments : std::vector<int> { // fields of its own, so described
    int level = 2;
    friend void describe(cc::key_writer& w, tagged_arguments const& a) {
        w(static_cast<std::vector<int> const&>(a), a.level);
    }
};
struct untagged_arguments : std::vector<int> { // what compile_fail/key_container_with_fields.cpp adds
    int level = 2;
};
struct iterated_arguments : std::vector<int> { // a begin() of its own does not hide the base
    int level = 2;
    std::vector<int>::const_iterator begin() const { return std::vector<int>::begin(); }
    std::vector<int>::const_iterator end() const { return std::vector<int>::end(); }
};
struct named_table : std::map<std::string, int> {
    std::string name;
};
} // namespace container_host

TEST_CASE("a type derived from a standard container is keyed as it, or by its describe when it has fields",
          "[key]") {
    container_host::arguments plain;
    plain.assign({1, 2, 3});
    CHECK(key_of(plain) == key_of(std::vector<int>{1, 2, 3}));
    container_host::tagged_arguments tagged, other_level;
    tagged.assign({1, 2, 3});
    other_level.assign({1, 2, 3});
    other_level.level = 3;
    check_all_distinct({key_of(tagged), key_of(other_level), key_of(plain)});
    // What the static_assert refuses, and what it lets through as a range.
    CHECK(cc::detail::is_container_with_fields_of_its_own<container_host::untagged_arguments>::value);
    CHECK(!cc::detail::is_container_with_fields_of_its_own<container_host::arguments>::value);
    CHECK(!cc::detail::is_container_with_fields_of_its_own<std::vector<int>>::value);
    CHECK(!cc::detail::is_container_with_fields_of_its_own<std::map<int, int>>::value);
    CHECK(cc::detail::is_container_with_fields_of_its_own<container_host::iterated_arguments>::value);
    CHECK(cc::detail::is_container_with_fields_of_its_own<container_host::named_table>::value);
    CHECK(!cc::detail::is_container_with_fields_of_its_own<std::string>::value);
    CHECK(!cc::detail::is_container_with_fields_of_its_own<int[]>::value); // (incomplete: no size asked)
}

TEST_CASE("two records whose fields would concatenate alike give different keys", "[key]") {
    CHECK(key_of(two_lists{{1, 2}, {}}) != key_of(two_lists{{1}, {2}}));
    CHECK(key_of(two_lists{{1}, {2}}) != key_of(two_lists{{}, {1, 2}}));
    // Sequences of records: record boundaries count too.
    CHECK(key_of(std::vector<two_lists>{{{1}, {}}, {{}, {}}}) != key_of(std::vector<two_lists>{{{}, {}}, {{1}, {}}}));
}

TEST_CASE("component names, order and count are part of the key", "[key]") {
    cc::key const base = cc::key_builder<>().add("ir", 1).add("options", 2).finish().value();
    SECTION("a component's name matters") {
        CHECK(cc::key_builder<>().add("ir", 1).add("flags", 2).finish().value() != base);
    }
    SECTION("the order of components matters") {
        CHECK(cc::key_builder<>().add("options", 2).add("ir", 1).finish().value() != base);
    }
    SECTION("adding a component changes the key") {
        CHECK(cc::key_builder<>().add("ir", 1).add("options", 2).add("source", "").finish().value() != base);
    }
    SECTION("no components at all is still a key, and another one") {
        cc::key_result empty = cc::key_builder<>().finish();
        REQUIRE(empty.ok());
        CHECK(empty.value() != base);
    }
    SECTION("a name and a value do not run into each other") {
        CHECK(cc::key_builder<>().add("ab", "c").finish().value() != cc::key_builder<>().add("a", "bc").finish().value());
    }
}

// ---------------------------------------------------------------------------------
// What must not move the key.

TEST_CASE("a set filled in another order gives the same key", "[key]") {
    std::vector<int> values(200);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int>((i * 7919) % 1009);
    std::vector<int> reversed(values.rbegin(), values.rend());

    SECTION("std::set") {
        CHECK(key_of(std::set<int>(values.begin(), values.end())) ==
              key_of(std::set<int>(reversed.begin(), reversed.end())));
    }
    SECTION("std::set with a comparator that orders the other way") {
        // The encoding sorts the element encodings, so a set's comparator never leaks
        // into its key: the same elements give the same key.
        CHECK(key_of(std::set<int, std::greater<int>>(values.begin(), values.end())) ==
              key_of(std::set<int>(values.begin(), values.end())));
    }
    SECTION("std::unordered_set, also with other bucket counts") {
        std::unordered_set<int> a(values.begin(), values.end());
        std::unordered_set<int> b;
        b.rehash(4096);
        b.insert(reversed.begin(), reversed.end());
        std::unordered_set<std::string> sa, sb;
        for (int v : values) sa.insert("s" + std::to_string(v));
        sb.reserve(10000);
        for (int v : reversed) sb.insert("s" + std::to_string(v));
        CHECK(key_of(a) == key_of(b));
        CHECK(key_of(sa) == key_of(sb));
    }
    SECTION("but different elements give another key") {
        std::set<int> a(values.begin(), values.end()), b = a;
        b.erase(b.begin());
        CHECK(key_of(a) != key_of(b));
        CHECK(key_of(std::multiset<int>{1, 1, 2}) != key_of(std::multiset<int>{1, 2}));
        // A set is not a sequence of the same elements.
        CHECK(key_of(std::set<int>{1, 2}) != key_of(std::vector<int>{1, 2}));
    }
}

namespace {
/// Orders strings without regard to case: "A" and "a" are equivalent keys.
struct case_insensitive_less {
    bool operator()(std::string const& a, std::string const& b) const {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
            return std::tolower(static_cast<unsigned char>(x)) < std::tolower(static_cast<unsigned char>(y));
        });
    }
};
} // namespace

TEST_CASE("in a multimap or multiset, the order of elements with equivalent keys counts, and nothing else's",
          "[key]") {
    using pairs = std::vector<std::pair<std::string, int>>;
    pairs const first_then_second{{"unroll", 4}, {"opt", 1}, {"opt", 3}, {"arch", 0}};
    pairs const second_then_first{{"unroll", 4}, {"opt", 3}, {"opt", 1}, {"arch", 0}};
    pairs const other_keys_reordered{{"arch", 0}, {"opt", 1}, {"unroll", 4}, {"opt", 3}};
    using multimap = std::multimap<std::string, int>;
    using unordered_multimap = std::unordered_multimap<std::string, int>;
    auto const mm = [](pairs const& p) { return multimap(p.begin(), p.end()); };
    auto const umm = [](pairs const& p) { return unordered_multimap(p.begin(), p.end()); };
    // A host reading "opt" gets 1 then 3 from one and 3 then 1 from the other.
    CHECK(key_of(mm(first_then_second)) != key_of(mm(second_then_first)));
    CHECK(key_of(umm(first_then_second)) != key_of(umm(second_then_first)));
    CHECK(key_of(mm(first_then_second)) == key_of(mm(other_keys_reordered)));
    CHECK(key_of(umm(first_then_second)) == key_of(umm(other_keys_reordered)));
    // Equivalent, not equal: "A" and "a" under a comparator that ignores case.
    std::multiset<std::string, case_insensitive_less> const upper_first{"A", "a", "b"};
    std::multiset<std::string, case_insensitive_less> lower_first;
    for (char const* v : {"b", "a", "A"}) lower_first.insert(v);
    CHECK(key_of(upper_first) != key_of(lower_first));

    // Without such a run, the encoding is what it was: the elements' own, sorted, as a
    // map's and a set's are (equal elements are alike, so they need no order).
    pairs const distinct{{"unroll", 4}, {"opt", 1}, {"arch", 0}};
    CHECK(key_of(mm(distinct)) == key_of(std::map<std::string, int>(distinct.begin(), distinct.end())));
    std::string message;
    cc::key_writer written(message);
    written(std::multiset<int>{2, 1, 1});
    std::string expected(1, '\x09'); // collection_begin
    cc::key_writer by_hand(expected);
    by_hand(1, 1, 2);
    expected += '\x0a'; // collection_end, then the count, 64-bit little-endian
    expected += std::string("\x03\0\0\0\0\0\0\0", 8);
    CHECK(message == expected);
}

TEST_CASE("a map filled in another order gives the same key", "[key]") {
    std::vector<std::pair<std::string, int>> entries;
    for (int i = 0; i < 300; ++i) entries.emplace_back("global_" + std::to_string(i * 31 % 997), i);
    std::unordered_map<std::string, int> a(entries.begin(), entries.end());
    std::unordered_map<std::string, int> b;
    b.reserve(5000);
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) b.insert(*it);
    std::map<std::string, int> ordered(entries.begin(), entries.end());
    CHECK(key_of(a) == key_of(b));
    CHECK(key_of(ordered) == key_of(a));

    SECTION("but a changed value gives another key") {
        b["global_0"] += 1;
        CHECK(key_of(a) != key_of(b));
    }
    SECTION("and a key and its value are not interchangeable") {
        CHECK(key_of(std::map<int, int>{{1, 2}}) != key_of(std::map<int, int>{{2, 1}}));
    }
}

TEST_CASE("a renamed SSA value gives the same key when the text is numbered by ordinal_map", "[key]") {
    using namespace fake_ir;
    function const original = make_kernel(in_order, default_names);
    std::string const text = canonical_text(original);
    CHECK(text == "%0 = arg\n%1 = arg\n%2 = const 2\n%3 = mul %0 %2\n%4 = add %3 %1\n%5 = ret %4\n");
    cc::key const k = key_of(text);

    SECTION("renaming a value") {
        auto names = default_names;
        names[4] = "%total";
        function const renamed = make_kernel(in_order, names);
        CHECK(named_text(renamed) != named_text(original)); // the rename is real
        CHECK(key_of(canonical_text(renamed)) == k);
    }
    SECTION("creating the values at other addresses, in another order") {
        function const shuffled = make_kernel({5, 3, 0, 4, 1, 2}, default_names);
        function const reversed = make_kernel({5, 4, 3, 2, 1, 0}, default_names);
        CHECK(std::less<value const*>()(original.body[0], original.body[1]));
        CHECK(std::less<value const*>()(reversed.body[1], reversed.body[0]));
        CHECK(key_of(canonical_text(shuffled)) == k);
        CHECK(key_of(canonical_text(reversed)) == k);
    }
    SECTION("but a changed instruction gives another key") {
        CHECK(key_of(canonical_text(make_kernel(in_order, default_names, "sub"))) != k);
    }
}

TEST_CASE("ordinal_map numbers objects by first visit", "[key]") {
    int a = 0, b = 0, c = 0;
    cc::ordinal_map<int> numbers;
    CHECK(numbers(&b) == 0);
    CHECK(numbers(&a) == 1);
    CHECK(numbers(&b) == 0);
    CHECK(numbers.find(&a) == std::optional<std::size_t>(1));
    CHECK(numbers.find(&c) == std::nullopt);
    CHECK(numbers.size() == 2); // find numbers nothing new
    CHECK(numbers(&c) == 2);
    numbers.clear();
    CHECK(numbers.size() == 0);
    CHECK(numbers(&c) == 0);
}

// ---------------------------------------------------------------------------------
// key_result: components, explanations of a miss, bypasses.

TEST_CASE("a key result lists its components in order with their names", "[key]") {
    options o;
    cc::key_result r = cc::key_builder<>().add("ir", "%0 = arg").add("options", o).add("callee", key_of(1)).finish();
    REQUIRE(r.ok());
    REQUIRE(r.components().size() == 3);
    CHECK(r.components()[0].name == "ir");
    CHECK(r.components()[1].name == "options");
    CHECK(r.components()[2].name == "callee");
    for (auto const& c : r.components()) CHECK(c.digest.size() == 32);
    CHECK(r.bypass_reason().empty());
    CHECK(static_cast<bool>(r));
    // A component's digest depends on its value only; the key also on its name.
    cc::key_result renamed = cc::key_builder<>().add("text", "%0 = arg").finish();
    cc::key_result same = cc::key_builder<>().add("ir", "%0 = arg").finish();
    CHECK(renamed.components()[0].digest == r.components()[0].digest);
    CHECK(renamed.value() != same.value());
}

TEST_CASE("a repeated component name is made distinct (callee#2) for explanations, the key unchanged", "[key]") {
    // The key of these components as computed before names were made distinct: pinned,
    // so that no existing entry is re-keyed (at format_version 2: the value under 1 was
    // d10ea6f8..., and the message differs only in that number).
    cc::key_result const r = cc::key_builder<>()
                                 .add("ir", "%0 = call @a, @b, @a")
                                 .add("callee", std::string("a"))
                                 .add("callee", std::string("b"))
                                 .add("callee", std::string("a"))
                                 .finish();
    REQUIRE(r.ok());
    CHECK(r.value().hex() == "3ec50713344e5abc118f6c7b061ca4b3c29c2c9ef74ed74a87a59244d127b340");
    std::vector<std::string> names;
    for (auto const& c : r.components()) names.push_back(c.name);
    CHECK(names == std::vector<std::string>{"ir", "callee", "callee#2", "callee#3"});
    CHECK(r.components()[1].digest == r.components()[3].digest);

    SECTION("a name the host gave that looks like a made one is skipped, and that key is unchanged too") {
        cc::key_result const given = cc::key_builder<>()
                                         .add("ir", "x")
                                         .add("callee", std::string("a"))
                                         .add("callee#2", std::string("b"))
                                         .add("callee", std::string("c"))
                                         .finish();
        CHECK(given.value().hex() == "2129db9ca8bf40b14bed99d387398122679211948aeddbec3f4e0805a70d4d42");
        std::vector<std::string> given_names;
        for (auto const& c : given.components()) given_names.push_back(c.name);
        CHECK(given_names == std::vector<std::string>{"ir", "callee", "callee#2", "callee#3"});
    }
    SECTION("differing_components names the changed callee once") {
        cc::key_result const other = cc::key_builder<>()
                                         .add("ir", "%0 = call @a, @b, @a")
                                         .add("callee", std::string("a"))
                                         .add("callee", std::string("B"))
                                         .add("callee", std::string("a"))
                                         .finish();
        CHECK(r.differing_components(other) == std::vector<std::string>{"callee#2"});
    }
}

TEST_CASE("differing_components names exactly the components that changed", "[key]") {
    auto build = [](int level, std::string const& ir, std::optional<std::string> source) {
        options o;
        o.level = level;
        cc::key_builder<> kb;
        kb.add("toolchain", cc::toolchain::current("host 1.0")).add("ir", ir);
        if (source) kb.add("source", *source);
        kb.add("options", o);
        return kb.finish();
    };
    cc::key_result const base = build(2, "%0 = arg", std::string("f(x)"));
    CHECK(base.differing_components(base).empty());
    CHECK(base.differing_components(build(2, "%0 = arg", std::string("f(x)"))).empty());

    using names = std::vector<std::string>;
    CHECK(base.differing_components(build(3, "%0 = arg", std::string("f(x)"))) == names{"options"});
    CHECK(base.differing_components(build(2, "%0 = const", std::string("f(x)"))) == names{"ir"});
    CHECK(base.differing_components(build(3, "%0 = const", std::string("f(x)"))) == names{"ir", "options"});
    SECTION("a component present in one result only is named, and only it") {
        CHECK(base.differing_components(build(2, "%0 = arg", std::nullopt)) == names{"source"});
        CHECK(build(2, "%0 = arg", std::nullopt).differing_components(base) == names{"source"});
    }
    SECTION("it is symmetric in what it names") {
        cc::key_result other = build(3, "%0 = const", std::string("g(x)"));
        names ab = base.differing_components(other), ba = other.differing_components(base);
        std::sort(ab.begin(), ab.end());
        std::sort(ba.begin(), ba.end());
        CHECK(ab == ba);
        CHECK(ab == names{"ir", "options", "source"});
    }
    SECTION("when only the order changed, the key differs and the moved components are named") {
        cc::key_result a = cc::key_builder<>().add("x", 1).add("y", 2).finish();
        cc::key_result b = cc::key_builder<>().add("y", 2).add("x", 1).finish();
        REQUIRE(a.value() != b.value());
        CHECK(a.differing_components(b) == names{"x", "y"});
    }
}

TEST_CASE("fail gives a bypass with the first reason given, never a key", "[key]") {
    cc::key_builder<> kb;
    kb.add("ir", "%0 = arg");
    CHECK_FALSE(kb.failed());
    kb.fail("global 'g' holds a live file handle");
    kb.fail("a second reason");
    kb.add("options", 3); // ignored once failed; must not throw
    CHECK(kb.failed());
    cc::key_result r = kb.finish();
    CHECK_FALSE(r.ok());
    CHECK_FALSE(static_cast<bool>(r));
    CHECK(r.bypass_reason() == "global 'g' holds a live file handle");
    CHECK(r.value().empty());

    SECTION("an empty reason still reads as a reason") {
        cc::key_result e = cc::key_builder<>().fail("").finish();
        CHECK_FALSE(e.ok());
        CHECK_FALSE(e.bypass_reason().empty());
    }
}

TEST_CASE("an exception thrown inside a user's describe becomes a bypass naming the component", "[key]") {
    SECTION("a std::exception: the reason has the component and the message") {
        cc::key_result r;
        REQUIRE_NOTHROW(r = cc::key_builder<>().add("ir", "%0 = arg").add("globals", throws_std{}).add("options", 1).finish());
        CHECK_FALSE(r.ok());
        CHECK(r.bypass_reason().find("globals") != std::string::npos);
        CHECK(r.bypass_reason().find("live file handle") != std::string::npos);
    }
    SECTION("anything else thrown") {
        cc::key_result r;
        REQUIRE_NOTHROW(r = cc::key_builder<>().add("globals", throws_other{}).finish());
        CHECK_FALSE(r.ok());
        CHECK(r.bypass_reason().find("globals") != std::string::npos);
    }
    SECTION("deep inside a container") {
        std::map<int, std::vector<throws_std>> nested{{1, {throws_std{}}}};
        cc::key_result r;
        REQUIRE_NOTHROW(r = cc::key_builder<>().add("env", nested).finish());
        CHECK_FALSE(r.ok());
        CHECK(r.bypass_reason().find("env") != std::string::npos);
    }
    SECTION("a variant left valueless by an exception") {
        std::variant<int, throws_on_construction> v;
        try {
            v.emplace<1>(5);
        } catch (std::exception const&) {
        }
        REQUIRE(v.valueless_by_exception());
        cc::key_result r;
        REQUIRE_NOTHROW(r = cc::key_builder<>().add("state", v).finish());
        CHECK_FALSE(r.ok());
        CHECK(r.bypass_reason().find("state") != std::string::npos);
    }
}

// ---------------------------------------------------------------------------------
// The toolchain component.

TEST_CASE("the toolchain describes compiler, Boost, pointer size, byte order and host version", "[key]") {
    cc::toolchain const t = cc::toolchain::current("host 1.0");
    CHECK(t.library_format == cc::format_version);
#if defined(__clang__)
    CHECK(t.compiler.rfind("clang ", 0) == 0);
#elif defined(__GNUC__)
    CHECK(t.compiler.rfind("gcc ", 0) == 0);
    CHECK(t.compiler.find(__VERSION__) != std::string::npos);
#endif
    CHECK(t.boost_version == BOOST_VERSION);
    CHECK(t.pointer_size == sizeof(void*));
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
    CHECK(t.little_endian == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__));
#endif
    CHECK(t.host_version == "host 1.0");
    CHECK(key_of(t) == key_of(cc::toolchain::current("host 1.0")));
}

TEST_CASE("the toolchain names the CPU architecture and operating system the host was compiled for", "[key]") {
    // A cross compiler's version string is the same as the native one's, and x86-64 and
    // arm64 share pointer size and byte order: only this field tells their entries apart.
    std::string const platform = cc::toolchain::current().platform;
#if defined(__x86_64__) && defined(__linux__)
    CHECK(platform == "x86_64-linux");
#elif defined(__aarch64__) && defined(__linux__)
    CHECK(platform == "aarch64-linux");
#else
    CHECK(!platform.empty());
    WARN("platform not covered by this test: " << platform);
#endif
}

TEST_CASE("without a build-id the host program is identified by the SHA-256 of its executable", "[key]") {
    // In a small helper program, which prints what identifies it: its own build-id, the
    // digest of its executable as the library computes it, and what the key holds.
    std::string const helper = COMPILE_CACHE_HELPER_platform_report;
    std::string const ids = run("'" + helper + "' --ids");
    auto field = [&](std::string const& name) {
        std::size_t const at = ids.find(name + "=");
        REQUIRE(at != std::string::npos);
        std::size_t const begin = at + name.size() + 1;
        return ids.substr(begin, ids.find('\n', begin) - begin);
    };
    std::string const exe = field("exe"), build_id = field("build-id"), file_id = field("file-id"),
                      key_host_id = field("key-host-id");
    if (exe.empty()) {
        CHECK(file_id.empty());
        WARN("no /proc/self/exe here: the host is identified by its build-id or version string alone");
        return;
    }
    // The digest of the file itself, computed here by coreutils, independently of the library.
    std::string const sum = run("sha256sum '" + exe + "'");
    CHECK(file_id == "exe-sha256:" + sum.substr(0, 64));
    CHECK(cc::detail::file_sha256_id("/nonexistent/compile_cache/file").empty());
    CHECK(key_host_id == (build_id.empty() ? file_id : build_id));
#if defined(COMPILE_CACHE_NO_LINUX_EXTENSIONS)
    CHECK(build_id.empty()); // the portable build reads no ELF notes: the fallback is in the key
#endif
}

TEST_CASE("any change in the toolchain changes the key", "[key]") {
    cc::toolchain const t = cc::toolchain::current("host 1.0", "boost_binary 19");
    cc::key const k = key_of(t);
    CHECK(key_of(cc::toolchain::current("host 1.1", "boost_binary 19")) != k);
    CHECK(key_of(cc::toolchain::current("host 1.0", "boost_text 19")) != k);
    std::vector<cc::toolchain> changed(8, t);
    changed[0].library_format += 1;
    changed[1].compiler += "x";
    changed[2].boost_version += 100;
    changed[3].pointer_size = 4;
    changed[4].little_endian = !t.little_endian;
    changed[5].host_build_id += "00";
    changed[6].serializer_format.clear();
    changed[7].platform = t.platform == "aarch64-linux" ? "x86_64-linux" : "aarch64-linux";
    for (std::size_t i = 0; i < changed.size(); ++i) {
        INFO("changed field #" << i);
        CHECK(key_of(changed[i]) != k);
    }
}

TEST_CASE("the test program's GNU build-id is read from its own ELF notes", "[key]") {
    std::string const& id = cc::detail::main_program_build_id();
#if defined(__linux__) && defined(__ELF__)
    if (id.empty()) {
        WARN("this test program has no GNU build-id (linked without --build-id?); "
             "the toolchain component then relies on the host version string alone");
        return;
    }
    CHECK(is_lower_hex(id));
    CHECK(id.size() % 2 == 0);
    CHECK(id.size() >= 16);
    CHECK(cc::toolchain::current().host_build_id == id);

    // When readelf is there, it must agree.
    std::error_code ec;
    std::filesystem::path const self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && std::system("command -v readelf >/dev/null 2>&1") == 0) {
        std::string const notes = run("readelf -n '" + self.string() + "' 2>/dev/null");
        auto at = notes.find("Build ID: ");
        if (at == std::string::npos) {
            FAIL("readelf shows no build-id, but one was read: " << id);
        } else {
            std::string const printed = notes.substr(at + 10, notes.find('\n', at) - at - 10);
            CHECK(printed == id);
        }
    } else {
        WARN("readelf not found: the build-id's shape was checked, not its value");
    }
#else
    WARN("not a Linux/ELF build: no build-id expected, got '" << id << "'");
#endif
}

// ---------------------------------------------------------------------------------
// The same inputs, the same key, in every fresh process.

TEST_CASE("the same inputs give the same key in fresh processes", "[key]") {
#if defined(COMPILE_CACHE_HELPER_key_determinism_helper)
    std::string const helper = COMPILE_CACHE_HELPER_key_determinism_helper;
    std::string const first = trim_newline(run("'" + helper + "'"));
    std::string const second = trim_newline(run("'" + helper + "'"));
    // Another environment: another stack layout, malloc perturbation, locale and
    // more, so that any address or seed that leaked into the key would show.
    std::string const padding(4000, 'x');
    std::string const third = trim_newline(run("env COMPILE_CACHE_TEST_PADDING=" + padding +
                                               " MALLOC_PERTURB_=165 LC_ALL=C TZ=Asia/Tokyo '" + helper + "'"));
    INFO("first: " << first << "\nsecond: " << second << "\nthird: " << third);
    CHECK(first.size() == 64);
    CHECK(is_lower_hex(first));
    CHECK(first == second);
    CHECK(first == third);
    // And the helper is not printing a constant: other inputs, another key.
    std::string const changed = trim_newline(run("'" + helper + "' changed"));
    CHECK(changed.size() == 64);
    CHECK(changed != first);
#else
    WARN("COMPILE_CACHE_HELPER_key_determinism_helper is not defined: built outside CMake, "
         "the fresh-process test did not run");
#endif
}
