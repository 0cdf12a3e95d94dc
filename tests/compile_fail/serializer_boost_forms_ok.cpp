// Control for run.sh: every form Boost.Serialization accepts passes the library's
// "Boost cannot serialize the artifact" check, so that the check never refuses what
// Boost would have serialized.
// expect: success
#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/split_free.hpp>
#include <boost/serialization/split_member.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/utility.hpp>
#include <boost/serialization/vector.hpp>

#include <string>
#include <utility>
#include <vector>

namespace host {
class private_member { // serialize is private, reached through boost::serialization::access
    friend class boost::serialization::access;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & value;
    }
    int value = 0;
};

struct split_member {
    int value = 0;
    template <class Archive>
    void save(Archive& ar, unsigned) const {
        ar & value;
    }
    template <class Archive>
    void load(Archive& ar, unsigned) {
        ar & value;
    }
    BOOST_SERIALIZATION_SPLIT_MEMBER()
};

struct free_function { // a free serialize beside the type, found by argument-dependent lookup
    int value = 0;
};
template <class Archive>
void serialize(Archive& ar, free_function& f, unsigned) {
    ar & f.value;
}

struct split_free {
    int value = 0;
};

enum class colour { red, green };
} // namespace host

namespace boost::serialization {
template <class Archive>
void save(Archive& ar, host::split_free const& s, unsigned) {
    ar & s.value;
}
template <class Archive>
void load(Archive& ar, host::split_free& s, unsigned) {
    ar & s.value;
}
} // namespace boost::serialization
BOOST_SERIALIZATION_SPLIT_FREE(host::split_free)

template <class Artifact, class Cache>
void use(Cache& cache, compile_cache::key_result const& k) {
    cache.template get_or_compile<Artifact>(k, {}, [] { return Artifact{}; });
}

void all(compile_cache::default_cache& binary,
         compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_text, compile_cache::registry,
                                    compile_cache::memory_storage>& text,
         compile_cache::key_result const& k) {
    use<host::private_member>(binary, k);
    use<host::split_member>(binary, k);
    use<host::free_function>(binary, k);
    use<host::split_free>(binary, k);
    use<host::colour>(binary, k);
    use<int>(binary, k);
    use<std::string>(binary, k);
    use<std::vector<int>>(binary, k);
    use<std::pair<int, std::string>>(binary, k);
    use<host::private_member>(text, k);
    use<host::free_function>(text, k);
    use<std::vector<std::string>>(text, k);
}
