// compile-cache: a command-line tool over a compile_cache cache — what is in it,
// whether it is sound, making it smaller, moving it — the way `ccache -s` and friends
// work over theirs. The cache is a directory, a SQLite file, a Redis server or
// cluster, or an HTTP server (linked in when CMake found their libraries:
// COMPILE_CACHE_TOOL_WITH_SQLITE / _REDIS / _HTTP), opened as one storage
// (opened_cache.hpp); each command is one function (commands.hpp). Every command lists the cache once and reads each entry at most once.
#include "cache_directory.hpp"
#include "command_line.hpp"
#include "commands.hpp"
#include "opened_cache.hpp"

#include <compile_cache/version.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

using namespace compile_cache_tool;

#define COMPILE_CACHE_TOOL_STRINGIFY2(x) #x
#define COMPILE_CACHE_TOOL_STRINGIFY(x) COMPILE_CACHE_TOOL_STRINGIFY2(x)

char const* const version_text =
    "compile-cache " COMPILE_CACHE_TOOL_STRINGIFY(COMPILE_CACHE_VERSION_MAJOR) "." COMPILE_CACHE_TOOL_STRINGIFY(
        COMPILE_CACHE_VERSION_MINOR) "." COMPILE_CACHE_TOOL_STRINGIFY(COMPILE_CACHE_VERSION_PATCH)
#if defined(COMPILE_CACHE_TOOL_WITH_SQLITE)
    " (+sqlite"
#else
    " (-sqlite"
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_REDIS)
    " +redis"
#else
    " -redis"
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_HTTP)
    " +http"
#else
    " -http"
#endif
#if defined(COMPILE_CACHE_TOOL_WITH_SIGNING)
    " +signing)\n"
    "signed entries (Ed25519, libsodium): built in: keygen, and signatures checked by list, show,\n"
    "  verify and copy with --trusted-keys-file (explain: a signer's copy of a record only while\n"
    "  they list its signer)\n"
#else
    " -signing)\n"
    "signed entries (Ed25519): not built in (libsodium was not found): listed as signed, never\n"
    "  checked; no keygen, no --trusted-keys-file\n"
#endif
    "compressed entries (zstd): checked, listed, shown and copied as stored; this tool never\n"
    "  decompresses a payload, so it needs no libzstd\n";

char const* const usage_line = "usage: compile-cache COMMAND DIR [OPTIONS]";

char const* const help_head =
    "usage: compile-cache COMMAND DIR [OPTIONS]\n"
    "       compile-cache COMMAND --help, compile-cache --version\n"
    "\n"
    "Looks at, checks, trims and copies a compile_cache directory (what PREFIX_DIR names),\n"
    "or a SQLite file or Redis server in its place (see \"On another storage\" below).\n"
    "\n"
    "commands:\n";

char const* const help_tail =
    "\n"
    "On another storage (CACHE instead of DIR), every command but prune, zero and set works:\n"
    "  sqlite:FILE, or FILE        a SQLite database a compile_cache host made (what PREFIX_FILE\n"
    "                              names with sqlite_storage); an existing file that is an SQLite\n"
    "                              database is taken as one without the sqlite: prefix\n"
    "  redis://[[user][:password]@]host[:port][/db], redis+cluster://host:port[,...],\n"
    "  unix:///path.sock           a Redis server or cluster (what PREFIX_REMOTE names); the\n"
    "                              password is never printed\n"
    "  http[s]://[user@]host[:port][/path]\n"
    "                              an HTTP cache server (WebDAV, bazel-remote: what PREFIX_REMOTE\n"
    "                              names); listed with WebDAV PROPFIND, so a server without it\n"
    "                              can be copied into but not listed\n"
    "  Entries are listed with the storage's listing (SQLite: one query; Redis: SCAN, and\n"
    "  OBJECT IDLETIME for the last use, unknown under an LFU policy; HTTP: PROPFIND, the\n"
    "  last change as the last use); entries are read without counting as a use where the\n"
    "  storage can (SQLite: yes; Redis: a read moves its LRU clock). Counters are recorded in\n"
    "  directories only. A SQLite file is never repaired or emptied by the tool: clear and\n"
    "  verify --remove refuse a damaged one.\n"
    "\n"
    "options:\n"
    "  --json                      output for scripts: one JSON document on stdout (as\n"
    "                              --format=json; with another --format, a usage error)\n"
    "  --namespace NS              (Redis) the namespace of the keys, as PREFIX_REMOTE_NAMESPACE;\n"
    "                              compile_cache by default\n"
    "  --secret-file F             (list, show, verify, explain, copy) the file whose content is the\n"
    "                              secret of a cache with PREFIX_SECRET_FILE: checks HMACs under it\n"
    "  --trusted-keys-file F       (list, show, verify, explain, copy) a trusted-keys file, as\n"
    "                              PREFIX_TRUSTED_KEYS_FILE (NAME:BASE64 public-key lines,\n"
    "                              compile-cache keygen prints them): checks signed entries'\n"
    "                              Ed25519 signatures against them, and refuses a signer's local\n"
    "                              copy whose signer they do not list, as hosts do\n"
    "  --password-file F           (Redis, HTTP) the file holding the server's password (HTTP:\n"
    "                              of the URL's user), as PREFIX_REMOTE_PASSWORD_FILE (not on the\n"
    "                              command line, where every user can read it); a trailing\n"
    "                              newline is dropped\n"
    "  --layout L                  (HTTP) where entries are under the URL, as PREFIX_REMOTE_LAYOUT:\n"
    "                              flat (URL/KEY, the default), fanout (URL/ab/KEY) or bazel\n"
    "                              (URL/ac/KEY)\n"
    "  --ca-file F, --token-file F (HTTP) the CA to check the server's certificate with, a bearer\n"
    "                              token: as PREFIX_REMOTE_CA_FILE and PREFIX_REMOTE_TOKEN_FILE\n"
    "  --allow-unchecked           (verify) entries that cannot be checked leave the exit status 0\n"
    "                              (not those the storage would not let it read: exit 3)\n"
    "  --progress                  the progress line on stderr even for a small cache\n"
    "  -h, --help                  this text (after a command: that command's)\n"
    "  --version                   the tool's version, and the storages it was built with\n"
    "  --                          the end of the options: what follows is operands (a directory\n"
    "                              whose name starts with -)\n"
    "\n"
    "A cache of more than 10,000 entries gets a progress line on stderr: on a terminal, one\n"
    "line kept up to date with the rate and the time left; otherwise a line at each tenth.\n"
    "Identity records (what a host writes beside each entry so that a miss can be explained;\n"
    "a directory keeps them in packs, DIR/ab/<66 hex digits ending 1e>) are not counted as\n"
    "entries; verify checks them too, prune evicts them like entries, clear removes them, copy\n"
    "copies them. Record files of an earlier release (DIR/ab/<66 hex digits ending 1d>), which\n"
    "no host of this release reads, are counted apart by stats and verify, and not read.\n"
    "Nothing but entries (DIR/ab/<hex key>), the library's temp files (DIR/ab/.tmp- and\n"
    "32 hex digits), claims whose owner is gone (DIR/ab/<hex key>.claim) and markers whose\n"
    "pack is gone (DIR/.cc-records/<hex>, verify --remove) is ever deleted, and nothing is\n"
    "deleted in a directory that is not a\n"
    "compile_cache one, nor written by copy or set in one with entries but no ledger (.cc-stats);\n"
    "clear and prune exit 3 when they could not delete what they meant to.\n"
    "Reading an entry does not change its use time.\n"
    "\n";

char const* const exit_text =
    "exit status:\n"
    "  0  done (verify: no bad entry)\n"
    "  1  verify found bad entries (removed with --remove); show: the entry does not check;\n"
    "     copy skipped bad entries\n"
    "  2  usage error; DIR missing, not a directory, or not a compile_cache directory (or\n"
    "     FILE not a compile_cache database; a bad server address; a storage this build lacks;\n"
    "     set: an unknown setting or a bad value; zero on a cache that keeps no counters;\n"
    "     clear: a Redis --namespace that holds no entry);\n"
    "     KEY_PREFIX unknown or ambiguous; explain: no record of NAME shown (none, or each\n"
    "     refused for its signer); the secret or trusted-keys file cannot be used; keygen: a\n"
    "     key name a trusted-keys line cannot hold, or a key file that exists\n"
    "  3  the file system or the storage refused something (a folder or an entry that cannot be read, a\n"
    "     removal, a write, a damaged SQLite file to remove from, a Redis server that does not\n"
    "     answer or refuses the credentials; set: the directory's lock held by another process\n"
    "     for 2 s)\n"
    "  4  verify (or copy) found no bad entry but could not check some (keyed entries without\n"
    "     --secret-file, signed ones without --trusted-keys-file or by a key it does not list,\n"
    "     unsigned ones with --trusted-keys-file alone, another envelope version); verify\n"
    "     --allow-unchecked makes it 0\n";

std::string full_help() {
    std::string out = help_head;
    for (command_spec const& c : commands()) out += c.help;
    return out + help_tail + rule_text() + "\n" + exit_text;
}

/// `compile-cache COMMAND --help`: that command's usage and what it does.
std::string command_help(command_spec const& c) {
    return usage_of(c) + "\n\n" + c.help +
           "\nEvery command takes --json and --progress; for a server --password-file, for Redis\n"
           "--namespace, for HTTP --layout, --ca-file and --token-file. compile-cache --help has the\n"
           "caches it works on, every option and the exit statuses.\n";
}

/// --version, -h and --help anywhere win over the rest of the line.
bool answered_alone(std::vector<std::string> const& args) {
    // (Read as the parse reads them: an operand or an option's value of -h is no request.)
    argument_words const words = read_words(args);
    auto const asked = [&](char const* name) {
        return std::find(words.options.begin(), words.options.end(), name) != words.options.end();
    };
    if (asked("--version")) {
        std::fputs(version_text, stdout);
        return true;
    }
    if (asked("--help") || asked("-h")) {
        command_spec const* c = nullptr;
        for (std::string const& word : words.operands)
            if (!c && (c = find_command(word)) != nullptr) break;
        std::fputs((c ? command_help(*c) : full_help()).c_str(), stdout);
        return true;
    }
    return false;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> const args(argv + 1, argv + argc);
    if (answered_alone(args)) return exit_ok;
    try {
        return run_command(parse(args));
    } catch (usage_error const& e) {
        std::fprintf(stderr, "compile-cache: %s\n%s (compile-cache --help)\n", e.message.c_str(), usage_line);
        return exit_usage;
    } catch (std::exception const& e) {
        return fail(std::string("failed: ") + e.what(), exit_failed);
    }
}
