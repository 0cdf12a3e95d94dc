// compile_cache: number objects by first visit, for canonical IR text that depends
// neither on addresses (different in every process) nor on names (renaming an SSA
// value must not change a key).
#pragma once

#include <compile_cache/detail/config.hpp>

#include <cstddef>
#include <optional>
#include <unordered_map>

namespace compile_cache {

/// \code
/// compile_cache::ordinal_map<value> numbers;
/// for (auto* v : values_in_visiting_order) text += "%" + std::to_string(numbers(v));
/// \endcode
template <class T = void>
class ordinal_map {
public:
    /// The number of `object`: 0 for the first object seen, 1 for the next new one, ...
    std::size_t operator()(T const* object) {
        return map_.try_emplace(object, map_.size()).first->second;
    }

    /// The number of an object already seen, without numbering a new one.
    std::optional<std::size_t> find(T const* object) const {
        auto it = map_.find(object);
        if (it == map_.end()) return std::nullopt;
        return it->second;
    }

    std::size_t size() const noexcept { return map_.size(); }
    void clear() noexcept { map_.clear(); }

private:
    std::unordered_map<T const*, std::size_t> map_;
};

} // namespace compile_cache
