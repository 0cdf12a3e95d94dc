// compile-cache set: a setting kept by the cache directory itself (DIR/.cc-settings,
// the library's directory_settings_file.hpp), for every host that uses it — as ccache -M
// keeps a size limit in the cache's own configuration. A host's environment still wins.
#include "cache_directory.hpp"
#include "command_support.hpp"

#include <compile_cache/storage/directory/directory_settings_file.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace compile_cache_tool {

namespace {

/// "max-size and durability": the names a directory keeps.
std::string kept_names() {
    std::string out;
    auto const& kept = compile_cache::directory_settings_kept();
    for (std::size_t i = 0; i < kept.size(); ++i)
        out += (i == 0 ? "" : i + 1 == kept.size() ? " and " : ", ") + std::string(kept[i].name);
    return out;
}

} // namespace

int run_set(command_line const& c) {
    std::string location;
    if (kind_of(c.cache, location) != cache_kind::directory)
        return fail("set works on a cache directory only: " + printable(c.cache) +
                        " keeps no settings of its own (its hosts' environment configures them)",
                    exit_usage);
    compile_cache::directory_setting_spec const* spec = compile_cache::find_directory_setting(c.setting);
    if (spec == nullptr)
        return fail("\"" + printable(c.setting) + "\" is not a setting a cache directory keeps: it keeps " +
                        kept_names() + " (compile-cache set --help)",
                    exit_usage);
    bool const unset = c.setting_value == "default";
    std::string value = c.setting_value;
    if (!unset) {
        std::string const bad = compile_cache::check_directory_setting(spec->name, value);
        if (!bad.empty()) return fail(std::string(spec->name) + " \"" + printable(value) + "\" " + bad, exit_usage);
        if (std::string(spec->name) == "durability" || std::string(spec->name) == "compress") // on, not On
            for (char& ch : value) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    }

    // DIR: made as a first store would make it, or one the rule takes for a cache.
    std::string const& dir = c.cache;
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) {
        std::filesystem::create_directories(dir, ec);
        if (ec) return fail(dir + ": cannot make it: " + ec.message(), exit_failed);
        std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
    }
    directory_scan scan;
    std::string message;
    switch (scan_directory(dir, scan, message, [](std::uint64_t, std::uint64_t, std::uint64_t) {})) {
    case directory_kind::cache: break;
    case directory_kind::unreadable: return fail(dir + ": " + message, exit_failed);
    case directory_kind::foreign:
        return fail(dir + ": " + message + "; no settings are written in a directory that may be another tool's",
                    exit_usage);
    default: return fail(dir + ": " + message, exit_usage);
    }
    // As clear and prune, which delete nothing there: a settings file written would let them.
    if (!scan.entries.empty() && !scan.has_ledger && !scan.has_counters && !scan.has_settings)
        return fail(dir + ": it has files named like entries but neither the ledger (.cc-stats) nor the counters "
                          "(.cc-counters) a compile_cache host writes; no settings are written in a directory that "
                          "may be another tool's",
                    exit_usage);

    // The other settings stay as they are (read as the least strict host would).
    compile_cache::directory_settings file;
    std::string why;
    std::string const path = dir + "/" + compile_cache::directory_settings_file_name;
    if (compile_cache::read_directory_settings(dir, compile_cache::sharing::group, file, why) != 0)
        return fail(path + " " + why + "; remove it first", exit_failed);
    if (unset) file.values.erase(spec->name);
    else file.values[spec->name] = value;
    if (int const e = compile_cache::write_directory_settings(dir, file.values))
        return fail(path + ": cannot write it: " + std::strerror(e), exit_failed);

    if (c.json) {
        json_writer j;
        j.begin_object().field("directory", dir).field("settings_file", path).field("setting", spec->name).key("value");
        if (unset) j.null(); else j.value(value);
        j.end_object();
        std::fputs(j.str().c_str(), stdout);
        return exit_ok;
    }
    std::string const env = std::string("PREFIX") + spec->suffix;
    std::string const out =
        unset ? printable(dir) + " no longer keeps " + spec->name + ": its hosts use their " + env +
                    ", else the default\n"
              : printable(dir) + " keeps " + spec->name + " = " + printable(value) + " (in " + printable(path) +
                    "); a host's " + env + ", when set, wins over it\n";
    std::fputs(out.c_str(), stdout);
    return exit_ok;
}

} // namespace compile_cache_tool
