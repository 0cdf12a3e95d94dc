// compile_cache: the PREFIX_RECORD_IDENTITIES setting, which switches a cache's
// identity records (the ones that explain a miss) on or off from the environment.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/settings.hpp>

namespace compile_cache::detail {

/// Reads `PREFIX_RECORD_IDENTITIES` into `record_identities`: `0`, `off`, `false` or
/// `no` turn the records off, `1`, `on`, `true` or `yes` on; unset or empty leaves
/// the value as it is (on by default); anything else is reported once through `env`
/// and leaves it as it is.
COMPILE_CACHE_DECL void record_identities_from_env(settings_reader const& env, bool& record_identities);

} // namespace compile_cache::detail

#include <compile_cache/detail/impl/record_identities_setting.ipp>
