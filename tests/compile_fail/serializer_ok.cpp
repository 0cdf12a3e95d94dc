// Control for run.sh: both Boost serializers and a complete user serializer pass the
// check for an artifact with a serialize member.
// expect: success
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/serializer/boost_archive.hpp>
#include <compile_cache/serializer/concept.hpp>

#include <boost/serialization/vector.hpp>

#include <string>
#include <string_view>
#include <vector>

struct kernel {};

struct compiled_kernel {
    std::vector<unsigned char> bytecode;
    std::vector<compile_cache::ref<kernel>> callees;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & bytecode & callees;
    }
};

struct user_serializer {
    static std::string format_id() { return "user 1"; }
    static void save(std::string&, compiled_kernel const&, compile_cache::resolver_context const&) {}
    static void load(std::string_view, compiled_kernel&, compile_cache::resolver_context const&) {}
};

static_assert(compile_cache::check_serializer<compile_cache::boost_binary, compiled_kernel>::value);
static_assert(compile_cache::check_serializer<compile_cache::boost_text, compiled_kernel>::value);
static_assert(compile_cache::check_serializer<user_serializer, compiled_kernel>::value);
