// compile_cache: the Storage policy. A Storage keeps opaque, already-enveloped
// bytes under a key; it knows nothing of what they mean.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/key/key.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/statistics.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace compile_cache {

enum class read_status {
    found,     ///< the bytes were read into the output buffer
    absent,    ///< no entry under that key
    too_large, ///< an entry exists but is larger than the caller's bound; nothing was read
    error,     ///< the entry could not be read (permission, I/O error, ...)
};

struct read_result {
    read_status status = read_status::absent;
    std::error_code error{}; ///< set when status is error
};

/// The miss a load counts for a read that ended with `s`; nullopt for found.
inline std::optional<miss_reason> miss_reason_of(read_status s) noexcept {
    switch (s) {
    case read_status::found: return std::nullopt;
    case read_status::absent: return miss_reason::absent;
    case read_status::too_large: return miss_reason::too_large;
    case read_status::error: return miss_reason::read_error;
    }
    return miss_reason::read_error;
}

/// One entry as a storage lists it (the optional `list` member), for tools: its key,
/// its size in bytes, and when it was last used (seconds since the epoch; a storage
/// that refreshes use times lazily, as the shipped ones do hourly, gives that time;
/// 0 when the storage cannot know it).
struct stored_entry {
    key k;
    std::uint64_t size = 0;
    std::int64_t last_use_s = 0;
};

namespace detail {
template <class S, class = void>
struct has_read : std::false_type {};
template <class S>
struct has_read<S, std::enable_if_t<std::is_same_v<
    decltype(std::declval<S&>().read(std::declval<key const&>(), std::declval<std::string&>(),
                                     std::declval<std::size_t>())),
    read_result>>> : std::true_type {};

template <class S, class = void>
struct has_write : std::false_type {};
template <class S>
struct has_write<S, std::enable_if_t<std::is_same_v<
    decltype(std::declval<S&>().write(std::declval<key const&>(), std::declval<std::string_view>())),
    std::error_code>>> : std::true_type {};

template <class S, class = void>
struct has_remove : std::false_type {};
template <class S>
struct has_remove<S, std::enable_if_t<std::is_same_v<
    decltype(std::declval<S&>().remove(std::declval<key const&>())), std::error_code>>>
    : std::true_type {};
/// Optional: a Storage that keeps cumulative counters (directory_storage does) gets
/// a cache's counts when the cache is flushed or destroyed.
template <class S, class = void>
struct has_record_counters : std::false_type {};
template <class S>
struct has_record_counters<S, std::enable_if_t<std::is_same_v<
    decltype(std::declval<S&>().record_counters(
        std::declval<std::vector<std::pair<std::string, std::uint64_t>> const&>())),
    std::error_code>>> : std::true_type {};
/// Optional: `bool usable() const`, false when the storage cannot work at all (its
/// file is not a database, its server refuses it): the cache then says so in one line
/// and runs disabled, instead of failing every read and write.
template <class S, class = void>
struct has_usable : std::false_type {};
template <class S>
struct has_usable<S, std::enable_if_t<std::is_convertible_v<decltype(std::declval<S const&>().usable()), bool>>>
    : std::true_type {};
/// Optional: `void corrupt(key const&)`, called by the cache when the entry it read
/// under that key failed the envelope check (damaged, or another key's entry), so that
/// the storage can remove or repair it.
template <class S, class = void>
struct has_corrupt : std::false_type {};
template <class S>
struct has_corrupt<S, std::void_t<decltype(std::declval<S&>().corrupt(std::declval<key const&>()))>>
    : std::true_type {};
/// Optional: a Storage that configures itself from the environment
/// (`static std::optional<S> from_env(settings_reader&)`); basic_cache::from_env
/// delegates to it.
template <class S, class = void>
struct has_from_env : std::false_type {};
template <class S>
struct has_from_env<S, std::enable_if_t<std::is_same_v<decltype(S::from_env(std::declval<settings_reader&>())),
                                                       std::optional<S>>>> : std::true_type {};
/// Optional: the settings that from_env reads
/// (`static std::vector<environment_setting> environment_settings(std::string_view prefix)`).
template <class S, class = void>
struct has_environment_settings : std::false_type {};
template <class S>
struct has_environment_settings<
    S, std::enable_if_t<std::is_same_v<decltype(S::environment_settings(std::declval<std::string_view>())),
                                       std::vector<environment_setting>>>> : std::true_type {};
/// Optional: `void entry_checked(key const&, std::string_view entry, envelope_status)`,
/// called by the cache right after it checked the envelope of an entry the storage's
/// read returned `found` (on the same thread): tiered_storage copies a sound remote
/// entry to its local storage, and counts a corrupt or unauthenticated one.
template <class S, class Status, class = void>
struct has_entry_checked_with : std::false_type {};
template <class S, class Status>
struct has_entry_checked_with<S, Status, std::void_t<decltype(std::declval<S&>().entry_checked(
                                             std::declval<key const&>(), std::declval<std::string_view>(),
                                             std::declval<Status>()))>> : std::true_type {};
/// Optional: `std::vector<std::pair<std::string, std::uint64_t>> storage_counters() const`,
/// the storage's own counters, added to the cache's statistics (names with a `.`).
template <class S, class = void>
struct has_storage_counters : std::false_type {};
template <class S>
struct has_storage_counters<S, std::enable_if_t<std::is_same_v<
    decltype(std::declval<S const&>().storage_counters()), std::vector<std::pair<std::string, std::uint64_t>>>>>
    : std::true_type {};
/// Optional: `void set_logger(std::function<void(std::string_view)>)`, given the
/// cache's logger when the cache is made and by basic_cache::set_logger.
template <class S, class = void>
struct has_set_logger : std::false_type {};
template <class S>
struct has_set_logger<S, std::void_t<decltype(std::declval<S&>().set_logger(
                             std::declval<std::function<void(std::string_view)>>()))>> : std::true_type {};
/// Optional: `read_result peek(key const&, std::string& out, std::size_t max_size)`,
/// as read but leaving the entry's use time (eviction order) alone; the compile-cache
/// tool's show and verify use it when there is one.
template <class S, class = void>
struct has_peek : std::false_type {};
template <class S>
struct has_peek<S, std::enable_if_t<std::is_same_v<
    decltype(std::declval<S&>().peek(std::declval<key const&>(), std::declval<std::string&>(),
                                     std::declval<std::size_t>())), read_result>>> : std::true_type {};
/// Optional: `std::error_code list(std::vector<stored_entry>& out) const`, appends every
/// entry (key, size, last use) without reading a value or touching a use time, so that
/// the compile-cache tool works on the storage; stops at the first error, returned.
/// directory_storage, sqlite_storage and redis_storage have it.
template <class S, class = void>
struct has_list : std::false_type {};
template <class S>
struct has_list<S, std::enable_if_t<std::is_same_v<
    decltype(std::declval<S const&>().list(std::declval<std::vector<stored_entry>&>())), std::error_code>>>
    : std::true_type {};
} // namespace detail

/// Checks a Storage policy, one requirement at a time, so that a user's own backend
/// that misses one gets a sentence naming it instead of a page of template errors.
template <class S>
struct check_storage {
    static_assert(detail::has_read<S>::value,
                  "compile_cache: the Storage has no read member; expected "
                  "`compile_cache::read_result read(compile_cache::key const&, std::string& out, "
                  "std::size_t max_size)`");
    static_assert(detail::has_write<S>::value,
                  "compile_cache: the Storage has no write member; expected "
                  "`std::error_code write(compile_cache::key const&, std::string_view bytes)` "
                  "that replaces any entry under that key atomically");
    static_assert(detail::has_remove<S>::value,
                  "compile_cache: the Storage has no remove member; expected "
                  "`std::error_code remove(compile_cache::key const&)` (removing an absent entry "
                  "is not an error)");
    static constexpr bool value = true;
};

} // namespace compile_cache

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
namespace compile_cache {

/// C++20, for users' own templates: the traits check_storage asserts, as a concept.
/// basic_cache checks with the static_asserts, so that its diagnostic is the sentence.
template <class S>
concept Storage = detail::has_read<S>::value && detail::has_write<S>::value && detail::has_remove<S>::value;

} // namespace compile_cache
#endif
