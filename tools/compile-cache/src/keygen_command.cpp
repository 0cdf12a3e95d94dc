// compile-cache keygen: makes a new Ed25519 signing key for signed entries
// (compile_cache/signing/signed_entries.hpp), writes its secret line to a new file of
// mode 0600 (never over an existing one), and prints the public-key line that readers
// add to their trusted-keys file (PREFIX_TRUSTED_KEYS_FILE).
#include "command_support.hpp"
#include "output.hpp"

#if defined(COMPILE_CACHE_TOOL_WITH_SIGNING)
#include <compile_cache/signing/ed25519.hpp>
#endif

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache_tool {

#if defined(COMPILE_CACHE_TOOL_WITH_SIGNING)
namespace {

/// The key's name: --name, else the file's name without its extension, else "compile-cache".
std::string key_name_for(command_line const& c) {
    if (c.name_glob) return *c.name_glob;
    std::string const stem = std::filesystem::path(c.cache).stem().string();
    return compile_cache::detail::is_key_name(stem) ? stem : "compile-cache";
}

/// Writes `text` to a new file at `path` (mode 0600; O_EXCL: an existing file, or a
/// link, is never followed or replaced); empty, or why not (`exists`: because it exists).
std::string write_new_secret_file(std::string const& path, std::string const& text, bool& exists) {
    int const fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        exists = errno == EEXIST;
        if (exists) return "it exists already; a key file is never overwritten (remove it first, or name "
                                    "another file)";
        return std::strerror(errno);
    }
    std::string why;
    if (::fchmod(fd, 0600) != 0) why = std::strerror(errno);
    std::size_t done = 0;
    while (why.empty() && done < text.size()) {
        ssize_t const n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) why = std::strerror(errno);
        else done += static_cast<std::size_t>(n);
    }
    if (why.empty() && ::fsync(fd) != 0) why = std::strerror(errno);
    if (::close(fd) != 0 && why.empty()) why = std::strerror(errno);
    if (!why.empty()) ::unlink(path.c_str());
    return why;
}

} // namespace

int run_keygen(command_line const& c) {
    std::string why;
    std::string const name = key_name_for(c);
    std::optional<compile_cache::ed25519_signer> key = compile_cache::ed25519_signer::generate(name, why);
    if (!key) // (a name no trusted-keys line can hold: the operator's to change)
        return fail("keygen: " + why, compile_cache::detail::is_key_name(name) ? exit_failed : exit_usage);
    std::string secret = key->secret_key_line() + "\n";
    bool exists = false;
    why = write_new_secret_file(c.cache, secret, exists);
    sodium_memzero(secret.data(), secret.size());
    if (!why.empty()) // (an existing file is never replaced: the operator names another)
        return fail("keygen: " + printable(c.cache) + ": " + why, exists ? exit_usage : exit_failed);
    std::string const line = key->public_key().line();
    if (c.json) {
        std::string out = "{\"public_key\": ";
        append_json_string(out, line);
        out += ", \"key_id\": ";
        append_json_string(out, compile_cache::to_hex(key->id()));
        out += "}\n";
        std::fputs(out.c_str(), stdout);
    } else {
        std::printf("%s\n", line.c_str());
    }
    return exit_ok;
}

#else

int run_keygen(command_line const&) {
    return fail("keygen: this compile-cache was built without libsodium (signed entries)", exit_usage);
}

#endif

} // namespace compile_cache_tool
