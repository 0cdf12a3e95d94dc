// compile_cache: the settings a cache directory keeps for itself, in `DIR/.cc-settings`
// (what `compile-cache set DIR NAME VALUE` writes): read by directory_storage::from_env
// where the environment sets nothing, and written atomically.
//
// The file is text, one `name = value` a line; `#` starts a comment. Only settings
// that belong to the cache rather than to one host are kept there (the table below:
// the size limit, the durability of its entries, compression's level). A host's
// environment wins over the file; the file wins over the defaults. The storage's own
// settings are applied by from_env here; the cache's (`compress`) are passed on to the
// cache in its from_env_result (kept_cache_setting), which applies them the same way.
// A storage made with explicit directory_options (not from_env) does not read it: its
// options are its host's code.
//
// Trust, as for entries: with sharing::owner_only the file must be owned by this user
// and writable by no one else; with sharing::group it must not be writable by others.
// A file that is not trusted, too large, or not a regular file is ignored with one
// line; a bad value is one line and the default; so is a line that is not `name = value`
// (the first one), and a name that is a kept one misspelled (`max_size`); a name this
// version does not know otherwise (one a newer tool wrote) is left alone, silently.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/compression.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace compile_cache {

/// One setting a cache directory may keep in its settings file.
struct directory_setting_spec {
    char const* name;        ///< as in the file and on the tool's command line: `max-size`
    char const* suffix;      ///< the environment variable that wins over it: `PREFIX` + `_MAX_SIZE`
    char const* description; ///< the values it takes, one line
    /// Read by the cache (basic_cache::from_env: `compress`) rather than by the storage:
    /// passed on as a kept_cache_setting, for the cache to apply.
    bool read_by_cache;
};

/// The settings a directory keeps, in the order the file lists them: `max-size`,
/// `durability` (the storage's) and `compress` (the cache's).
COMPILE_CACHE_DECL std::vector<directory_setting_spec> const& directory_settings_kept();

/// The spec named `name`, or nullptr when the directory keeps no such setting.
COMPILE_CACHE_DECL directory_setting_spec const* find_directory_setting(std::string_view name) noexcept;

/// The file's name, at the top of the cache directory.
inline constexpr char directory_settings_file_name[] = ".cc-settings";

/// The file bounds what it reads: a settings file is a few lines.
inline constexpr std::size_t directory_settings_file_max_bytes = 64 * 1024;

/// Empty when `value` is a value of setting `name`; otherwise why not, as a phrase that
/// follows the value ("is not a size (...)").
COMPILE_CACHE_DECL std::string check_directory_setting(std::string_view name, std::string_view value);

/// What a cache directory's settings file holds.
struct directory_settings {
    std::map<std::string, std::string> values; ///< every `name = value` line, known names or not
    std::vector<std::string> problems;         ///< lines that are not `name = value` (as "line N: ...")
};

/// Reads `directory`'s settings file, trusted as `access` says. 0 with `out` filled
/// (empty when there is no file); otherwise an errno value (EACCES for a file it does not
/// trust, EFBIG past directory_settings_file_max_bytes, EINVAL for no regular file) and
/// `why` says it in a phrase.
COMPILE_CACHE_DECL int read_directory_settings(std::string const& directory, sharing access, directory_settings& out,
                                               std::string& why);

/// Writes `values` as `directory`'s settings file (none: the file is removed), in one
/// rename of a temp file written and synced beside it, so that a reader sees the old file
/// or the new one. The mode is the old file's without the write bits a reader would
/// distrust (others', and the group's outside a group-writable directory), else 0600, or
/// 0660 in a group-writable directory (one shared by a group: directory_options::shared).
/// 0 or an errno value.
COMPILE_CACHE_DECL int write_directory_settings(std::string const& directory,
                                                std::map<std::string, std::string> const& values);

namespace detail {
/// directory_storage::from_env's hook: each kept setting of the storage's whose
/// `PREFIX_*` variable is unset or empty takes its value from the settings file in
/// `directory`, if any; what cannot be used is one line through `env`. The cache's
/// settings the file holds are added to `for_cache` as they are written (the cache
/// checks them, and lets its environment win).
COMPILE_CACHE_DECL void apply_directory_settings_file(std::string const& directory, settings_reader const& env,
                                                      directory_options& options,
                                                      std::vector<kept_cache_setting>& for_cache);
} // namespace detail

} // namespace compile_cache

#include <compile_cache/storage/directory/impl/directory_settings_file.ipp>
