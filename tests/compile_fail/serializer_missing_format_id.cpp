// expect: compile_cache: the Serializer has no format_id
#include <compile_cache/serializer/concept.hpp>

#include <string>
#include <string_view>

struct unnamed_format {
    template <class T>
    static void save(std::string&, T const&, compile_cache::resolver_context const&) {}
    template <class T>
    static void load(std::string_view, T&, compile_cache::resolver_context const&) {}
};

struct artifact {
    int value = 0;
};

static_assert(compile_cache::check_serializer<unnamed_format, artifact>::value);
