// compile_cache: the definitions of storage/directory/directory_settings_file.hpp's non-template functions; included
// by it alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache {

std::vector<directory_setting_spec> const& directory_settings_kept() {
    // Never destroyed: a cache of static storage duration opens a directory at exit too.
    static std::vector<directory_setting_spec> const& kept = *new std::vector<directory_setting_spec>{
        {"max-size", "_MAX_SIZE",
         "the size limit: bytes, or with K, M, G (powers of 1024): 500M, 5G; 0: no limit, nothing evicted", false},
        {"durability", "_DURABILITY", "none (rename only), file (fsync each entry) or full (also its folder)", false},
        {"compress", "_COMPRESS",
         "0 (or off): entries stored uncompressed; 1 (or on): compressed at the default level; 2 to 19: at that "
         "level (hosts whose cache compresses: zstd_compression)",
         true},
    };
    return kept;
}

directory_setting_spec const* find_directory_setting(std::string_view name) noexcept {
    for (directory_setting_spec const& s : directory_settings_kept())
        if (name == s.name) return &s;
    return nullptr;
}

std::string check_directory_setting(std::string_view name, std::string_view value) {
    if (name == "max-size") {
        if (parse_byte_size(value)) return {};
        return "is not a size (a number of bytes, or one with a K, M or G suffix in powers of 1024, such as 48K, "
               "500M or 2G)";
    }
    if (name == "durability") {
        std::string const v = detail::lower(value);
        if (v == "none" || v == "file" || v == "full") return {};
        return "is not a durability (none, file or full)";
    }
    if (name == "compress") {
        if (!detail::trim_blanks(value).empty() &&
            detail::parse_compression_level(value, kept_compression_max_level).understood)
            return {};
        return "is not a compression level (" + detail::compression_values_text(kept_compression_max_level) + ")";
    }
    return "is not a setting a cache directory keeps";
}

namespace detail::directory_settings_impl {

inline std::string settings_path(std::string const& directory) {
    return directory + (!directory.empty() && directory.back() == '/' ? "" : "/") + directory_settings_file_name;
}

/// `name = value` lines into `out`; other lines (not blank, not a comment) as problems.
inline void parse_settings_text(std::string const& text, directory_settings& out) {
    std::size_t start = 0, number = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string_view line = detail::trim_blanks(std::string_view(text).substr(start, end - start));
        start = end + 1;
        ++number;
        if (!line.empty() && line.back() == '\r') line = detail::trim_blanks(line.substr(0, line.size() - 1));
        if (line.empty() || line.front() == '#') continue;
        std::size_t const eq = line.find('=');
        std::string_view const name = eq == std::string_view::npos ? line : detail::trim_blanks(line.substr(0, eq));
        if (eq == std::string_view::npos || name.empty()) {
            out.problems.push_back("line " + std::to_string(number) + " is not \"name = value\"");
            continue;
        }
        out.values[std::string(name)] = std::string(detail::trim_blanks(line.substr(eq + 1)));
    }
}

/// Says through `env` the first line of `file` that is not `name = value` (with how many
/// more), and each name that is none a directory keeps but one of them misspelled (the
/// nearest, 2 letters apart at most: `max_size`); a name far from every one (a newer
/// tool's) is left alone.
inline void report_unusable_lines(std::string const& where, directory_settings const& file,
                                  settings_reader const& env) {
    if (!file.problems.empty())
        env.report(where + ": " + file.problems.front() +
                   (file.problems.size() > 1 ? " (and " + std::to_string(file.problems.size() - 1) + " more such lines)"
                                             : std::string()) +
                   "; it is ignored");
    for (auto const& [name, value] : file.values) {
        if (find_directory_setting(name)) continue;
        if (directory_setting_spec const* s = nearest_setting(name, directory_settings_kept()))
            env.report(where + ": " + name + " = \"" + value + "\" is no setting a cache directory keeps (" +
                       s->name + ", misspelled?); it is ignored");
    }
}

} // namespace detail::directory_settings_impl

int read_directory_settings(std::string const& directory, sharing access, directory_settings& out,
                            std::string& why) {
    out = {};
    std::string const path = detail::directory_settings_impl::settings_path(directory);
    detail::file_descriptor const file{detail::open_no_follow(AT_FDCWD, path.c_str())};
    if (!file) {
        int const e = errno;
        if (e == ENOENT || e == ENOTDIR) return 0; // no file, or no directory yet: nothing kept
        why = e == ELOOP ? "is a symbolic link, which is never followed" : std::strerror(e);
        return e == ELOOP ? EINVAL : e;
    }
    std::string text;
    struct stat st {};
    switch (detail::read_regular_file(file.fd, text, directory_settings_file_max_bytes, st)) {
    case detail::file_read_status::read: break;
    case detail::file_read_status::not_regular: why = "is not a regular file"; return EINVAL;
    case detail::file_read_status::too_large:
        why = "is larger than a settings file may be (" + std::to_string(directory_settings_file_max_bytes) +
              " bytes)";
        return EFBIG;
    case detail::file_read_status::error: {
        int const e = errno != 0 ? errno : EIO;
        why = std::strerror(e);
        return e;
    }
    }
    bool const trusted = access == sharing::group ? (st.st_mode & S_IWOTH) == 0
                                                  : st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
    if (!trusted) {
        why = access == sharing::group ? "is writable by every user, so it is not trusted"
                                       : "is owned by another user or writable by others, so it is not trusted";
        return EACCES;
    }
    detail::directory_settings_impl::parse_settings_text(text, out);
    return 0;
}

int write_directory_settings(std::string const& directory, std::map<std::string, std::string> const& values) {
    std::string const path = detail::directory_settings_impl::settings_path(directory);
    if (values.empty()) {
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno;
        return 0;
    }
    std::string text = "# compile_cache: this cache directory's own settings (compile-cache set DIR NAME VALUE).\n"
                       "# A host's environment (PREFIX_MAX_SIZE, ...) wins over them.\n";
    for (auto const& [name, value] : values) text += name + " = " + value + "\n";
    // The mode: the old file's, without the write bits that would make a reader distrust it
    // (others', and the group's outside a directory a group shares); else private, or the
    // group's in a directory a group shares.
    struct stat st {};
    bool const group_shared = ::stat(directory.c_str(), &st) == 0 && (st.st_mode & S_IWGRP) != 0;
    unsigned mode = group_shared ? 0660 : 0600;
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        mode = st.st_mode & (group_shared ? 0664u : 0644u);
    std::string temp = path + ".tmp-";
    detail::directory_storage_impl::append_temp_name(temp);
    int const fd = detail::directory_storage_impl::open_exclusive(temp, mode);
    if (fd < 0) return errno;
    detail::directory_storage_impl::temp_file file(fd, temp.c_str());
    if (::fchmod(fd, static_cast<mode_t>(mode)) != 0) return errno; // exactly, whatever the umask
    if (int const e = detail::directory_storage_impl::write_all(fd, text.data(), text.size())) return e;
    if (int const e = detail::directory_storage_impl::fsync_fd(fd)) return e;
    if (int const e = file.close()) return e;
    if (::rename(temp.c_str(), path.c_str()) != 0) return errno;
    file.committed = true;
    detail::directory_storage_impl::fsync_directory(directory.c_str()); // best effort: the rename is made
    return 0;
}

void detail::apply_directory_settings_file(std::string const& directory, settings_reader const& env,
                                           directory_options& options, std::vector<kept_cache_setting>& for_cache) {
    try {
        directory_settings file;
        std::string why;
        std::string const where = directory_settings_impl::settings_path(directory);
        if (read_directory_settings(directory, options.access, file, why) != 0) {
            env.report(where + " " + why + "; it is ignored");
            return;
        }
        directory_settings_impl::report_unusable_lines(where, file, env);
        for (directory_setting_spec const& s : directory_settings_kept()) {
            auto const it = file.values.find(s.name);
            if (it == file.values.end()) continue;
            if (s.read_by_cache) { // the cache checks it, and lets its environment win
                for_cache.push_back({s.suffix, s.name, it->second, where});
                continue;
            }
            if (!env.value(s.suffix).empty()) continue; // the environment wins
            std::string const& v = it->second;
            std::string const bad = check_directory_setting(s.name, v);
            if (!bad.empty()) {
                env.report(where + ": " + s.name + " = \"" + v + "\" " + bad + "; using the default");
                continue;
            }
            if (std::string_view(s.name) == "max-size") options.max_size = *parse_byte_size(v);
            if (std::string_view(s.name) == "durability") {
                std::string const d = lower(v);
                options.sync = d == "full" ? durability::full : d == "file" ? durability::file : durability::none;
            }
        }
    } catch (...) { // bad_alloc: the options stay as the environment made them
    }
}

} // namespace compile_cache

#endif
