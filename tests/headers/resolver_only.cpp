// The resolver folder needs no Boost.Serialization: how a ref<T> is written in an
// archive is serializer/reference.hpp's, so a translation unit that only registers
// objects and keys includes none of the archive machinery.
#include <compile_cache/resolver/concept.hpp>
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/resolver/registry.hpp>

#if defined(BOOST_SERIALIZATION_SERIALIZATION_HPP) || defined(BOOST_SERIALIZATION_ACCESS_HPP) ||                 \
    defined(BOOST_SERIALIZATION_SPLIT_MEMBER_HPP) || defined(BOOST_SERIALIZATION_STRING_HPP) ||                 \
    defined(BOOST_ARCHIVE_BASIC_ARCHIVE_HPP)
#error "compile_cache/resolver/ includes Boost.Serialization: ref<T>'s archive code belongs in serializer/reference.hpp"
#endif
