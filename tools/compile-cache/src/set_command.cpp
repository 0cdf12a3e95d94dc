// compile-cache set: a setting kept by the cache directory itself (DIR/.cc-settings,
// the library's directory_settings_file.hpp), for every host that uses it — as ccache -M
// keeps a size limit in the cache's own configuration. A host's environment still wins.
#include "cache_directory.hpp"
#include "command_support.hpp"

#include <compile_cache/storage/directory/directory_settings_file.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

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

/// How long set waits for the directory's lock before it gives up, writing nothing.
constexpr std::chrono::milliseconds lock_wait{2000};

/// The directory itself, opened and flocked (the library's cleanup lock, which a host
/// holds for moments and a prune or clear for their run): two sets never read, change
/// and write the settings file at once, so neither loses the other's setting. Released
/// when the descriptor is closed, a killed set's too.
struct directory_lock {
    int fd = -1;
    int error = 0; ///< 0 when held; EWOULDBLOCK past lock_wait; else why it could not be opened or locked
    explicit directory_lock(std::string const& dir) {
        fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            error = errno;
            return;
        }
        auto const deadline = std::chrono::steady_clock::now() + lock_wait;
        for (;;) {
            if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
            int const e = errno;
            if (e == EINTR) continue;
            if (e != EWOULDBLOCK || std::chrono::steady_clock::now() >= deadline) {
                error = e;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    directory_lock(directory_lock const&) = delete;
    directory_lock& operator=(directory_lock const&) = delete;
    ~directory_lock() {
        if (fd >= 0) ::close(fd);
    }
};

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

    // The other settings stay as they are (read as the least strict host would), under the
    // directory's lock: another set's change between this read and this write would be lost.
    directory_lock const lock(dir);
    if (lock.error == EWOULDBLOCK)
        return fail(dir + ": another process held the directory's lock (a prune, a clear, another set or a host's "
                          "cleanup) for " + std::to_string(lock_wait.count() / 1000) +
                        " s: nothing was written; run set again",
                    exit_failed);
    if (lock.error != 0) return fail(dir + ": cannot lock it: " + std::strerror(lock.error), exit_failed);
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
