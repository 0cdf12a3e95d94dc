// compile-cache: listing a cache directory and checking its entries (cache_directory.hpp).
#include "cache_directory.hpp"

#include <compile_cache/storage/directory/directory_layout.hpp>

#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache_tool {

namespace layout = compile_cache::directory_layout;

namespace {

void scan_folder(int root, std::string const& folder, directory_scan& scan) {
    using kind = layout::folder_item::kind_type;
    std::error_code const listed = layout::walk_folder(root, folder, [&](layout::folder_item const& item) {
        if (item.kind == kind::entry) {
            scan.entries.push_back({std::string(item.name), item.size, item.use_ns});
        } else if (item.kind == kind::temp) {
            ++scan.temp_files;
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
           "is empty, or has the ledger file .cc-stats or the counters folder .cc-counters, or holds\n"
           "at least one entry (DIR/ab/<the key's lower-case hex, starting with ab>). Contradictions:\n"
           "a .cc-stats that is not a compile_cache ledger, a .cc-counters that is not a folder, and\n"
           "a hex-named file in a two-hex-digit folder that is not an entry of it (other leading\n"
           "digits, or an odd length: a git object store looks like that). Anything else (a README,\n"
           "notes) is allowed, and never deleted. clear, prune and verify --remove delete only where\n"
           "there is also the ledger or the counters (or no entry at all): files named like entries\n"
           "alone may be another tool's content-addressed store.\n";
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
    if (!scan.empty && !scan.has_ledger && !scan.has_counters && scan.entries.empty()) {
        message = "not a compile_cache directory: it has no ledger (.cc-stats), no counters (.cc-counters) "
                  "and no entries (ab/<hex key>)";
        return directory_kind::foreign;
    }
    return directory_kind::cache;
}

bool read_entry(std::string const& path, std::string& bytes, std::string& why, bool* too_large) {
    switch (layout::read_entry_file(path, max_entry_read, bytes, why)) {
    case layout::entry_file_status::ok: return true;
    case layout::entry_file_status::too_large:
        why = "larger than 64 MiB (the default bound on an entry), so not read: a host with a larger "
              "max_entry_size may have written it";
        if (too_large) *too_large = true;
        return false;
    default: return false;
    }
}

char const* to_string(verdict v) noexcept {
    switch (v) {
    case verdict::sound: return "sound";
    case verdict::bad: return "bad";
    case verdict::unchecked: return "unchecked";
    }
    return "?";
}

checked_entry check_bytes(std::string const& bytes, std::string const& name,
                                 compile_cache::envelope_auth const& auth) {
    using compile_cache::envelope_status;
    checked_entry c;
    c.file_size = bytes.size();
    c.envelope = compile_cache::inspect_envelope(bytes, auth);
    c.payload_size = c.envelope.payload.size();
    c.envelope.payload = {};
    c.check_size = auth.check_size();
    switch (c.envelope.status) {
    case envelope_status::ok:
        if (c.envelope.stored_key.hex() == name) {
            c.result = verdict::sound;
        } else {
            c.problem = "holds the entry of another key (" + c.envelope.stored_key.hex() + ")";
        }
        break;
    case envelope_status::unauthenticated:
        if (auth.keyed()) {
            c.problem = "unauthenticated: its HMAC does not verify under the given secret "
                        "(unkeyed, another secret, damaged or forged)";
        } else {
            c.result = verdict::unchecked;
            c.problem = "keyed (HMAC-SHA256): give --secret-file to check it";
        }
        break;
    case envelope_status::foreign_version:
        c.result = verdict::unchecked;
        c.problem = "envelope version " + std::to_string(c.envelope.version) + ", which this tool (version " +
                    std::to_string(compile_cache::envelope_version) + ") does not read";
        break;
    case envelope_status::corrupt:
        c.problem = "corrupt: its check value does not match its bytes, or its fields are out of bounds "
                    "(damaged, truncated, or not an entry)";
        break;
    default:
        c.problem = "not readable as an entry";
        break;
    }
    return c;
}

checked_entry check_entry(std::string const& dir, std::string const& name,
                                 compile_cache::envelope_auth const& auth) {
    checked_entry c;
    std::string bytes, why;
    bool too_large = false;
    if (!read_entry(dir + "/" + name.substr(0, 2) + "/" + name, bytes, why, &too_large)) {
        c.problem = why;
        if (too_large) c.result = verdict::unchecked;
        return c;
    }
    return check_bytes(bytes, name, auth);
}

} // namespace compile_cache_tool
