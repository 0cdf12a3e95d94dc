// tinyk: the pointer wrapper an artifact uses for what it references but does not
// own: compile_cache::ref, written as a stable reference and relinked on load
// (serializer/reference.hpp: ref and its Boost.Serialization form).
#pragma once

#include <compile_cache/serializer/reference.hpp>

namespace tinyk {

template <class T>
using ref = compile_cache::ref<T>;

} // namespace tinyk
