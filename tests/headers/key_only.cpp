// A translation unit that only builds keys needs no Boost: compile_cache/key/builder.hpp
// includes no Boost header, so none of the archive machinery (docs/benchmarks.md,
// "Header cost").
#include <compile_cache/key/builder.hpp>

#if defined(BOOST_VERSION) || defined(BOOST_ARCHIVE_BASIC_ARCHIVE_HPP) || defined(BOOST_SERIALIZATION_ACCESS_HPP)
#error "compile_cache/key/builder.hpp includes Boost: a translation unit that only builds keys must not need it"
#endif
