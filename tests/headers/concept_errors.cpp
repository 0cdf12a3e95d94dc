// Diagnostics under C++17 and C++20: a basic_cache over a policy that misses a
// requirement fails to compile with the library's sentence for it, first and alone;
// the concepts, for users' own templates, name themselves. Compiled once per CASE and
// standard by check_concept_errors.cmake, which checks the first error line.
#include <compile_cache/compile_cache.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace cc = compile_cache;

struct hasher_without_result { // no result()
    using result_type = std::array<unsigned char, 32>;
    static constexpr std::size_t block_size = 64;
    void update(void const*, std::size_t) {}
};

struct serializer_without_format_id {
    template <class T>
    static void save(std::string&, T const&, cc::resolver_context const&) {}
    template <class T>
    static void load(std::string_view, T&, cc::resolver_context const&) {}
};

struct int_serializer { // saves and loads int only
    static std::string format_id() { return "int"; }
    static void save(std::string&, int const&, cc::resolver_context const&) {}
    static void load(std::string_view, int&, cc::resolver_context const&) {}
};

struct resolver_without_from_reference {
    std::optional<cc::reference> to_reference(void const*, std::type_info const&, void const*) { return {}; }
};

struct storage_without_remove {
    cc::read_result read(cc::key const&, std::string&, std::size_t) { return {}; }
    std::error_code write(cc::key const&, std::string_view) { return {}; }
};

struct storage_with_unbounded_read { // read has no max_size
    cc::read_result read(cc::key const&, std::string&) { return {}; }
    std::error_code write(cc::key const&, std::string_view) { return {}; }
    std::error_code remove(cc::key const&) { return {}; }
};

struct artifact {
    std::string text;
};

struct artifact_without_serialize { // Boost cannot serialize it
    std::string text;
};

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
template <cc::Storage S>
void use_storage(S&) {}
#endif

#if CASE_Hasher
cc::basic_cache<hasher_without_result, cc::boost_binary, cc::registry, cc::memory_storage> cache;
#elif CASE_Serializer
cc::basic_cache<cc::sha256, serializer_without_format_id, cc::registry, cc::memory_storage> cache;
#elif CASE_Resolver
cc::basic_cache<cc::sha256, cc::boost_binary, resolver_without_from_reference, cc::memory_storage> cache;
#elif CASE_Storage
cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, storage_without_remove> cache;
#elif CASE_StorageRead
cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, storage_with_unbounded_read> cache;
#elif CASE_Unserializable
artifact_without_serialize get(cc::default_cache& cache, cc::key_result const& k) {
    return cache.get_or_compile<artifact_without_serialize>(k, {}, [] { return artifact_without_serialize{}; }).value;
}
#elif CASE_UserConcept
void use() {
    storage_without_remove s;
    use_storage(s);
}
#elif CASE_SerializerFor
void store(cc::basic_cache<cc::sha256, int_serializer, cc::registry, cc::memory_storage>& cache,
           cc::key_result const& k) {
    cache.store(k, artifact{"not an int"});
}
#elif CASE_None
cc::basic_cache<cc::sha256, int_serializer, cc::registry, cc::memory_storage> cache; // the control: compiles
void store(cc::key_result const& k) { cache.store(k, 42); }
#endif
