// expect: compile_cache: the artifact type must be default constructible
#include <compile_cache/serializer/boost_archive.hpp>
#include <compile_cache/serializer/concept.hpp>

#include <boost/serialization/vector.hpp>

#include <vector>

struct sized_kernel {
    explicit sized_kernel(std::size_t n) : bytecode(n) {}
    std::vector<unsigned char> bytecode;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & bytecode;
    }
};

static_assert(compile_cache::check_serializer<compile_cache::boost_binary, sized_kernel>::value);
