// compile-cache: listing a cache directory and checking its entries (cache_directory.hpp).
#include "cache_directory.hpp"

#include <compile_cache/storage/directory/directory_layout.hpp>
#include <compile_cache/storage/directory/directory_settings_file.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache_tool {

namespace layout = compile_cache::directory_layout;

namespace {

/// The counter `compile-cache zero` records the time of the zeroing in (seconds since
/// the epoch), in shard 0 alone: hosts keep a shard's lines as they add to it, so the
/// sum over the shards is that time. The tool's own; stats shows it as "since".
constexpr char zeroed_counter[] = "zeroed-s";

void scan_folder(int root, std::string const& folder, directory_scan& scan) {
    using kind = layout::folder_item::kind_type;
    std::error_code const listed = layout::walk_folder(root, folder, [&](layout::folder_item const& item) {
        if (item.kind == kind::entry) {
            scan.entries.push_back({std::string(item.name), item.size, item.use_ns});
        } else if (item.kind == kind::temp) {
            ++scan.temp_files;
        } else if (layout::is_claim_name(item.name, folder)) {
            ++scan.claim_files;
        } else {
            // A hex name that is not an entry of this folder contradicts the layout; an
            // entry's name on a symlink or folder does not (the library refuses it too).
            if (!layout::is_entry_name(item.name, folder) && item.name.size() >= 2 && layout::is_lower_hex(item.name) &&
                scan.contradiction.empty())
                scan.contradiction = folder + "/" + std::string(item.name) +
                                     " is named by hex digits but is not an entry of folder " + folder;
            ++scan.other_files;
        }
    });
    if (listed && scan.error.empty()) scan.error = folder + ": " + listed.message();
}

} // namespace

std::string entry_file::relative_path() const { return layout::entry_relative_path(name); }

std::string rule_text() {
    return "DIR counts as a compile_cache directory when nothing in it contradicts the layout and it\n"
           "is empty, or has the ledger file .cc-stats, the counters folder .cc-counters or the\n"
           "settings file .cc-settings (compile-cache set), or holds at least one entry\n"
           "(DIR/ab/<the key's lower-case hex, starting with ab>) or claim (the same name and\n"
           ".claim: a process's claim on a key it compiles). Contradictions: a .cc-stats that\n"
           "is not a compile_cache ledger, a .cc-counters that is not a folder, a .cc-settings that\n"
           "is not a file, and a hex-named file in a two-hex-digit folder that is not an entry of it\n"
           "(other leading digits, or an odd length: a git object store looks like that). Anything\n"
           "else (a README, notes) is allowed, and never deleted. clear, prune and verify --remove\n"
           "delete only where there is also the ledger, the counters or the settings file (or no\n"
           "entry at all): files named like entries alone may be another tool's content-addressed\n"
           "store.\n";
}

directory_kind scan_directory(std::string const& dir, directory_scan& scan, std::string& message,
                              scan_progress const& progress) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        int const e = errno;
        message = e == ENOENT ? "no such directory" : std::strerror(e);
        return e == ENOENT ? directory_kind::missing : directory_kind::unreadable;
    }
    if (!S_ISDIR(st.st_mode)) {
        message = "not a directory";
        return directory_kind::not_directory;
    }
    int const root = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        message = std::string("cannot open it: ") + std::strerror(errno);
        return directory_kind::unreadable;
    }
    DIR* top = ::fdopendir(root);
    if (top == nullptr) {
        ::close(root);
        message = std::string("cannot list it: ") + std::strerror(errno);
        return directory_kind::unreadable;
    }
    std::vector<std::string> folders;
    errno = 0;
    while (dirent* e = ::readdir(top)) {
        std::string_view const name = e->d_name;
        if (name == "." || name == "..") continue;
        scan.empty = false;
        struct stat nst {};
        bool const known = ::fstatat(root, e->d_name, &nst, AT_SYMLINK_NOFOLLOW) == 0;
        if (name == layout::ledger_file_name) {
            scan.has_ledger = true;
            std::string const path = dir + "/" + std::string(name);
            if (!known || !S_ISREG(nst.st_mode) ||
                !layout::looks_like_ledger(path, static_cast<std::uint64_t>(nst.st_size)))
                scan.contradiction = std::string(name) + " is not a compile_cache ledger";
        } else if (name == layout::counters_folder_name) {
            scan.has_counters = true;
            if (!known || !S_ISDIR(nst.st_mode)) scan.contradiction = std::string(name) + " is not a folder";
        } else if (name == compile_cache::directory_settings_file_name) {
            scan.has_settings = true;
            if (!known || !S_ISREG(nst.st_mode)) scan.contradiction = std::string(name) + " is not a file";
        } else if (layout::is_folder_name(name) && known && S_ISDIR(nst.st_mode)) {
            folders.emplace_back(name);
        }
        errno = 0;
    }
    int const list_errno = errno;
    if (list_errno != 0) {
        ::closedir(top);
        message = std::string("cannot list it: ") + std::strerror(list_errno);
        return directory_kind::unreadable;
    }
    std::uint64_t done = 0;
    for (std::string const& folder : folders) {
        scan_folder(root, folder, scan);
        progress(++done, folders.size(), scan.entries.size());
    }
    ::closedir(top);

    if (!scan.contradiction.empty()) {
        message = "not a compile_cache directory: " + scan.contradiction;
        return directory_kind::foreign;
    }
    // A claim's name (an entry's, and .claim) is the library's own: a cache whose first
    // process died while it compiled holds only that.
    if (!scan.empty && !scan.has_ledger && !scan.has_counters && !scan.has_settings && scan.entries.empty() &&
        scan.claim_files == 0) {
        message = "not a compile_cache directory: it has no ledger (.cc-stats), no counters (.cc-counters), "
                  "no settings (.cc-settings), no entries (ab/<hex key>) and no claims (ab/<hex key>.claim)";
        return directory_kind::foreign;
    }
    return directory_kind::cache;
}

directory_counters read_directory_counters(std::string const& dir) {
    directory_counters c;
    c.all = compile_cache::directory_storage(dir).recorded_counters();
    auto const zeroed = c.all.find(zeroed_counter);
    if (zeroed != c.all.end()) {
        c.zeroed_s = zeroed->second;
        c.all.erase(zeroed);
    }
    return c;
}

namespace {
/// A file `zero` made in the counters folder, run as root in another user's cache: given
/// to the folder's owner and group, whose hosts could not otherwise open it (0600).
void give_to_folder_owner(int fd, struct stat const& folder) noexcept {
    struct stat st {};
    if (::geteuid() == 0 && ::fstat(fd, &st) == 0 && (st.st_uid != folder.st_uid || st.st_gid != folder.st_gid))
        (void)::fchown(fd, folder.st_uid, folder.st_gid);
}
} // namespace

int zero_directory_counters(std::string const& dir) {
    namespace impl = compile_cache::detail::directory_storage_impl;
    int const folder = impl::open_counters_folder(dir, 0, -1, false);
    if (folder < 0) return errno == ENOENT ? 0 : errno; // no counters: nothing to zero
    impl::file_descriptor const folder_guard{folder};
    // The mode a host gives the files it makes here, set exactly as it sets them: its
    // folder's without the execute bits (0700: 0600; a shared directory's 02770: 0660).
    struct stat folder_st {};
    if (::fstat(folder, &folder_st) != 0) return errno;
    auto const made_mode = static_cast<mode_t>(folder_st.st_mode & 0666);
    static constexpr char digits[] = "0123456789abcdef";
    auto const now = static_cast<std::uint64_t>(impl::now_s());
    for (unsigned shard = 0; shard < impl::counter_shards; ++shard) {
        std::string const name(1, digits[shard]), lock_name = name + ".lock", new_name = name + ".new";
        struct stat st {};
        if (::fstatat(folder, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT && shard != 0) continue; // (shard 0 carries the time of the zeroing)
            if (errno != ENOENT) return errno;
        }
        // As a host adds to a shard (directory_counters.ipp): under its lock, the new
        // text to N.new, renamed over N.
        int const lock = impl::open_shard_lock(folder, lock_name.c_str(), made_mode, true);
        if (lock < 0) return errno;
        impl::file_descriptor const lock_guard{lock};
        give_to_folder_owner(lock, folder_st);
        if (int const e = impl::lock_fd(lock, impl::counters_lock_wait)) return e;
        std::string old_text;
        if (!impl::read_small_file(folder, name.c_str(), old_text)) return EIO;
        std::map<std::string, std::uint64_t> counters = impl::parse_counters(old_text);
        for (auto& [counter, n] : counters)
            if (!impl::is_gauge(counter)) n = 0;
        if (shard == 0) counters[zeroed_counter] = now; // one shard: the sum of the shards is that time
        else counters.erase(zeroed_counter);
        std::string text;
        for (auto const& [counter, n] : counters) text += counter + " " + std::to_string(n) + "\n";
        if (::unlinkat(folder, new_name.c_str(), 0) != 0 && errno != ENOENT) return errno;
        auto const mode = static_cast<mode_t>(st.st_mode != 0 ? st.st_mode & 07777 : made_mode);
        int const out = ::openat(folder, new_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
                                 mode);
        if (out < 0) return errno;
        {
            impl::file_descriptor const out_guard{out};
            (void)::fchmod(out, mode); // (the umask would strip the group's bits)
            give_to_folder_owner(out, folder_st);
            if (int const e = impl::write_all(out, text.data(), text.size())) return e;
        }
        if (::renameat(folder, new_name.c_str(), folder, name.c_str()) != 0) return errno;
    }
    return 0;
}

} // namespace compile_cache_tool
