// expect: compile_cache: the Serializer cannot load this artifact; expected `static void load(std::string_view in, Artifact& value, compile_cache::resolver_context const& ctx)`
// load takes a std::string const& instead of a std::string_view of the fetched bytes.
#include <compile_cache/serializer/concept.hpp>

#include <string>

struct string_loader {
    static std::string format_id() { return "string_loader 1"; }
    template <class T>
    static void save(std::string&, T const&, compile_cache::resolver_context const&) {}
    template <class T>
    static void load(std::string const&, T&) {}
};

struct artifact {
    int value = 0;
};

static_assert(compile_cache::check_serializer<string_loader, artifact>::value);
