// compile_cache: the definitions of detail/record_identities_setting.hpp's functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

void record_identities_from_env(settings_reader const& env, bool& record_identities) {
    if (env.value("_RECORD_IDENTITIES").empty()) return;
    record_identities = env.flag("_RECORD_IDENTITIES", record_identities,
                                 record_identities ? "identity records stay on" : "identity records stay off");
}

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_INCLUDE_IMPL
