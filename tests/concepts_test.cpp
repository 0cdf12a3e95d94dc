// C++20: the policy concepts (compile_cache::Hasher, Storage, Resolver, Serializer,
// SerializerFor), for users' own templates, accept the library's models and agree
// with the C++17 checks. basic_cache is not constrained by them: its diagnostics are
// the library's sentences under both standards (tests/headers/check_concept_errors.cmake
// checks them, and that a user's template constrained by a concept names it). In a
// C++17 build this file has one test that says so, and both builds check the C++17
// static_asserts' verdict on the same models.
#include "catch2_compat.hpp"

#include <compile_cache/compile_cache.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

// Both standards: each model the library ships passes the C++17 check basic_cache makes
// of it (the headers do not assert this of themselves: every translation unit would
// pay for instantiating the models).
TEST_CASE("The library's policy models pass the checks basic_cache makes of its policies", "[concepts]") {
    namespace cc17 = compile_cache;
    STATIC_REQUIRE(cc17::check_hasher<cc17::sha256>::value);
    STATIC_REQUIRE(cc17::check_serializer_policy<cc17::boost_binary>::value);
    STATIC_REQUIRE(cc17::check_serializer_policy<cc17::boost_text>::value);
    STATIC_REQUIRE(cc17::check_resolver<cc17::registry>::value);
    STATIC_REQUIRE(cc17::check_storage<cc17::directory_storage>::value);
    STATIC_REQUIRE(cc17::check_storage<cc17::memory_storage>::value);
    STATIC_REQUIRE(cc17::check_storage<cc17::null_storage>::value);
}

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L

namespace cc = compile_cache;

namespace {

struct concept_artifact {
    std::string text;
    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        ar & text;
    }
};

struct hasher_without_update {
    using result_type = std::array<unsigned char, 32>;
    static constexpr std::size_t block_size = 64;
    result_type result() { return {}; }
};

struct hasher_with_huge_result {
    using result_type = std::array<unsigned char, 65>;
    static constexpr std::size_t block_size = 64;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

struct int_serializer {
    static std::string format_id() { return "int"; }
    static void save(std::string&, int const&, cc::resolver_context const&) {}
    static void load(std::string_view, int&, cc::resolver_context const&) {}
};

struct integer_result_hasher { // Boost.Hash2's fnv1a_64 shape
    using result_type = std::uint64_t;
    void update(void const*, std::size_t) {}
    result_type result() { return 0; }
};

/// A user's own template over the four policies, constrained by the concepts.
template <class H, class S, class R, class St>
concept composable = cc::Hasher<H> && cc::Serializer<S> && cc::Resolver<R> && cc::Storage<St>;

} // namespace

TEST_CASE("C++20: the library's policy models satisfy their concepts", "[concepts]") {
    STATIC_REQUIRE(cc::Hasher<cc::sha256>);
    STATIC_REQUIRE(cc::Storage<cc::directory_storage>);
    STATIC_REQUIRE(cc::Storage<cc::memory_storage>);
    STATIC_REQUIRE(cc::Storage<cc::null_storage>);
    STATIC_REQUIRE(cc::Resolver<cc::registry>);
    STATIC_REQUIRE(cc::Serializer<cc::boost_binary>);
    STATIC_REQUIRE(cc::SerializerFor<cc::boost_binary, concept_artifact>);
    STATIC_REQUIRE(cc::SerializerFor<cc::boost_text, concept_artifact>);
    STATIC_REQUIRE(composable<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage>);
}

TEST_CASE("C++20: the Hasher concept agrees with the C++17 check", "[concepts]") {
    STATIC_REQUIRE(cc::Hasher<cc::sha256> == cc::detail::is_hasher_v<cc::sha256>);
    STATIC_REQUIRE(cc::Hasher<hasher_without_update> == cc::detail::is_hasher_v<hasher_without_update>);
    STATIC_REQUIRE(cc::Hasher<hasher_with_huge_result> == cc::detail::is_hasher_v<hasher_with_huge_result>);
    STATIC_REQUIRE(cc::Hasher<int> == cc::detail::is_hasher_v<int>);
    STATIC_REQUIRE_FALSE(cc::Hasher<hasher_without_update>);
    STATIC_REQUIRE_FALSE(cc::Hasher<hasher_with_huge_result>);
    STATIC_REQUIRE(cc::Hasher<integer_result_hasher>);
    STATIC_REQUIRE(cc::detail::is_hasher_v<integer_result_hasher>);
}

TEST_CASE("C++20: a template constrained by the concepts refuses a policy that misses a requirement",
          "[concepts]") {
    STATIC_REQUIRE_FALSE(composable<hasher_without_update, cc::boost_binary, cc::registry, cc::memory_storage>);
    STATIC_REQUIRE_FALSE(composable<cc::sha256, int, cc::registry, cc::memory_storage>);
    STATIC_REQUIRE_FALSE(composable<cc::sha256, cc::boost_binary, int, cc::memory_storage>);
    STATIC_REQUIRE_FALSE(composable<cc::sha256, cc::boost_binary, cc::registry, int>);
}

TEST_CASE("C++20: SerializerFor says which artifacts a serializer handles", "[concepts]") {
    STATIC_REQUIRE(cc::SerializerFor<int_serializer, int>);
    STATIC_REQUIRE_FALSE(cc::SerializerFor<int_serializer, concept_artifact>);
    STATIC_REQUIRE(cc::SerializerFor<cc::boost_binary, concept_artifact>);
}

#else

TEST_CASE("C++20 policy concepts: not in this build (C++17: check_* static_asserts instead)", "[concepts]") {
    SUCCEED("compiled as C++17");
}

#endif
