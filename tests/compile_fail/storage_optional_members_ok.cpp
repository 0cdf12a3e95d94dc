// Control for run.sh: a storage with every optional member, each with the signature the
// cache, the tier and the tool call, composes into a cache, and storage_capabilities
// names them all; a storage with none has none; one with the deprecated from_env form
// composes too, and storage_capabilities says which form it is.
// expect: success
#include <compile_cache/cache.hpp>
#include <compile_cache/storage/memory_storage.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

struct full_store {
    compile_cache::read_result read(compile_cache::key const&, std::string&, std::size_t) { return {}; }
    std::error_code write(compile_cache::key const&, std::string_view) { return {}; }
    std::error_code remove(compile_cache::key const&) { return {}; }
    bool usable() const { return true; }
    void corrupt(compile_cache::key const&) {}
    compile_cache::read_result peek(compile_cache::key const&, std::string&, std::size_t) { return {}; }
    std::error_code list(std::vector<compile_cache::stored_entry>&) const { return {}; }
    void entry_checked(compile_cache::key const&, std::string_view, compile_cache::envelope_status) {}
    void set_logger(std::function<void(std::string_view)>) {}
    std::string entry_path(compile_cache::key const&) const { return {}; }
    compile_cache::claim_answer try_claim(compile_cache::key const&, compile_cache::claim_request const&) { return {}; }
    void release_claim(compile_cache::key const&) {}
    std::vector<std::pair<std::string, std::uint64_t>> storage_counters() const { return {}; }
    std::error_code record_counters(std::vector<std::pair<std::string, std::uint64_t>> const&) { return {}; }
    static compile_cache::from_env_result<full_store> from_env(compile_cache::storage_settings const&) {
        return compile_cache::from_env_result<full_store>::not_configured();
    }
    static std::vector<compile_cache::environment_setting> environment_settings(std::string_view) { return {}; }
};

using cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, compile_cache::registry,
                                         full_store>;
static_assert(sizeof(cache) > 0);

struct old_form_store {
    compile_cache::read_result read(compile_cache::key const&, std::string&, std::size_t) { return {}; }
    std::error_code write(compile_cache::key const&, std::string_view) { return {}; }
    std::error_code remove(compile_cache::key const&) { return {}; }
    static std::optional<old_form_store> from_env(compile_cache::settings_reader&) { return std::nullopt; }
};
using old_form_cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary,
                                                  compile_cache::registry, old_form_store>;
static_assert(sizeof(old_form_cache) > 0);
static_assert(compile_cache::storage_capabilities<old_form_store>::from_env &&
              compile_cache::storage_capabilities<old_form_store>::from_env_is_deprecated);
static_assert(!compile_cache::storage_capabilities<full_store>::from_env_is_deprecated);

template <class S>
constexpr bool has_all() {
    for (auto const& member : compile_cache::storage_capabilities<S>::members)
        if (!member.second) return false;
    return true;
}
template <class S>
constexpr bool has_none() {
    for (auto const& member : compile_cache::storage_capabilities<S>::members)
        if (member.second) return false;
    return true;
}
static_assert(has_all<full_store>());
static_assert(has_none<compile_cache::memory_storage>());
