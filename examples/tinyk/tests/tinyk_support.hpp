// What the tinyk tests share: running the tinyk binary as a child with a controlled
// environment, reading its `-v` lines, and a listing of the entry
// files under a cache directory (with the kernel each one holds) to tell which were
// written or rewritten by a run.
#pragma once

#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/directory/directory_layout.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#ifndef TINYK_EXECUTABLE
#error "TINYK_EXECUTABLE (the path of the tinyk binary) must be defined by the build"
#endif

namespace tinyk_test {

namespace fs = std::filesystem;

// The project's test support (tests/support/): temporary directories, files, and
// running programs as fresh children.
using compile_cache_test::process_result;
using compile_cache_test::process_spec;
using compile_cache_test::read_file;
using compile_cache_test::run_process;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;

/// Every file and folder below `dir` (relative paths), for "nothing was written here".
inline std::vector<std::string> everything_under(fs::path const& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        out.push_back(fs::relative(it->path(), dir).string());
    std::sort(out.begin(), out.end());
    return out;
}

/// The 1-based line of the first line of `text` that contains `needle` (0 if none).
inline int line_of(std::string const& text, std::string const& needle) {
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
        if (line.find(needle) != std::string::npos) return n;
    return 0;
}

// ---------------------------------------------------------------------------------
// The cache directory as files: DIR/ab/abcdef... (two hex digits, then the key's
// whole hex). Other files (the size ledger, temp files, kernels' identity records)
// are not entries.

struct entry_file {
    ino_t inode = 0;
    std::int64_t mtime_ns = 0;
    std::uintmax_t size = 0;
    std::string kernel; ///< the name in the entry's envelope; empty when it does not open
};

using cache_listing = std::map<std::string, entry_file>; // relative path -> entry

inline bool all_hex(std::string const& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
}

/// The kernel an entry file holds, read from its envelope through the library's
/// own check (so a damaged entry gives "").
inline std::string kernel_of_entry(fs::path const& file) {
    auto k = compile_cache::key::from_hex(file.filename().string());
    if (!k) return {};
    std::string bytes;
    try {
        bytes = read_file(file);
    } catch (std::exception const&) {
        return {};
    }
    auto env = compile_cache::open_envelope(bytes, *k, compile_cache::default_cache::format_id(),
                                            std::size_t{64} << 20);
    return env.status == compile_cache::envelope_status::ok ? env.metadata.name : std::string();
}

inline cache_listing list_entries(fs::path const& cache_dir) {
    cache_listing out;
    std::error_code ec;
    for (fs::directory_iterator folder(cache_dir, ec), end; !ec && folder != end; folder.increment(ec)) {
        std::string fname = folder->path().filename().string();
        if (fname.size() != 2 || !all_hex(fname) || !folder->is_directory()) continue;
        std::error_code ec2;
        for (fs::directory_iterator f(folder->path(), ec2), fend; !ec2 && f != fend; f.increment(ec2)) {
            std::string name = f->path().filename().string();
            if (!all_hex(name) || name.compare(0, 2, fname) != 0) continue;
            if (compile_cache::is_identity_record_name(name)) continue; // what a kernel's misses are explained by
            if (compile_cache::directory_layout::is_pack_name(name)) continue; // a pack of such records
            struct stat st {};
            if (::lstat(f->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
            entry_file e;
            e.inode = st.st_ino;
            e.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
            e.size = static_cast<std::uintmax_t>(st.st_size);
            e.kernel = kernel_of_entry(f->path());
            out.emplace(fname + "/" + name, e);
        }
    }
    return out;
}

/// What a run did to the entries: the kernels of the entries it created or rewrote
/// (a new file, or another inode or modification time at the same path), sorted,
/// and how many it removed.
struct entry_changes {
    std::vector<std::string> written; ///< kernel names, sorted ("" for an entry that does not open)
    std::vector<std::string> paths;   ///< their relative paths
    std::size_t removed = 0;
};

inline entry_changes changes(cache_listing const& before, cache_listing const& after) {
    entry_changes c;
    for (auto const& [path, e] : after) {
        auto it = before.find(path);
        if (it == before.end() || it->second.inode != e.inode || it->second.mtime_ns != e.mtime_ns ||
            it->second.size != e.size) {
            c.written.push_back(e.kernel);
            c.paths.push_back(path);
        }
    }
    for (auto const& [path, e] : before)
        if (!after.count(path)) ++c.removed;
    std::sort(c.written.begin(), c.written.end());
    return c;
}

/// The entry of kernel `name` (its relative path); "" if none or several.
inline std::string entry_of(cache_listing const& l, std::string const& name) {
    std::string found;
    for (auto const& [path, e] : l)
        if (e.kernel == name) {
            if (!found.empty()) return {};
            found = path;
        }
    return found;
}

// ---------------------------------------------------------------------------------
// Running tinyk.

/// The environment every tinyk run starts from: nothing inherited but the
/// sanitizers' settings (so the sanitizer build's options reach the child).
inline std::vector<std::string> base_environment(std::string const& home) {
    return compile_cache_test::clean_environment({"HOME=" + home, "TMPDIR=" + home});
}

/// One `-v` line: `tinyk: compiled NAME (REASON[: EXPLANATION])`, `tinyk: loaded
/// NAME` or `tinyk: bypass NAME: REASON`.
struct verbose_line {
    std::string what; ///< compiled, loaded or bypass
    std::string name;
    std::string reason;
    std::string explanation; ///< of an absent miss: `callee:helper, ir changed`, `new`, `evicted`
};

struct tinyk_result : process_result {
    std::vector<verbose_line> lines; ///< the -v lines, in order
    std::vector<std::string> other_err; ///< every other stderr line

    std::vector<std::string> names(std::string const& what) const {
        std::vector<std::string> found;
        for (auto const& l : lines)
            if (l.what == what) found.push_back(l.name);
        return found;
    }
    std::vector<std::string> compiled() const { return names("compiled"); }
    std::vector<std::string> loaded() const { return names("loaded"); }
    std::vector<std::string> bypassed() const { return names("bypass"); }
    std::string reason(std::string const& name) const {
        for (auto const& l : lines)
            if (l.name == name) return l.reason;
        return "(no -v line for " + name + ")";
    }
    std::string explanation(std::string const& name) const {
        for (auto const& l : lines)
            if (l.name == name) return l.explanation;
        return "(no -v line for " + name + ")";
    }
    /// The line `tinyk: stats: ...` (empty without --stats).
    std::string stats() const {
        for (auto const& l : other_err)
            if (l.rfind("tinyk: stats: ", 0) == 0) return l;
        return {};
    }
};

inline tinyk_result parse_tinyk_output(process_result r) {
    tinyk_result t;
    static_cast<process_result&>(t) = std::move(r);
    std::istringstream in(t.err);
    std::string line;
    while (std::getline(in, line)) {
        verbose_line v;
        if (line.rfind("tinyk: compiled ", 0) == 0) {
            std::string rest = line.substr(16);
            auto open = rest.find(" (");
            v.what = "compiled";
            v.name = rest.substr(0, open);
            if (open != std::string::npos && rest.back() == ')') v.reason = rest.substr(open + 2, rest.size() - open - 3);
            auto const colon = v.reason.find(": ");
            if (colon != std::string::npos) {
                v.explanation = v.reason.substr(colon + 2);
                v.reason.resize(colon);
            }
        } else if (line.rfind("tinyk: loaded ", 0) == 0) {
            v.what = "loaded";
            v.name = line.substr(14);
        } else if (line.rfind("tinyk: bypass ", 0) == 0) {
            std::string rest = line.substr(14);
            auto colon = rest.find(": ");
            v.what = "bypass";
            v.name = rest.substr(0, colon);
            if (colon != std::string::npos) v.reason = rest.substr(colon + 2);
        } else {
            t.other_err.push_back(line);
            continue;
        }
        t.lines.push_back(v);
    }
    return t;
}

/// A tinyk invocation: `tinyk ARGS...` in `cwd` with base_environment(home) plus
/// `extra_env` (TINYK_CACHE_DIR among them when a cache is wanted). `prefix` goes
/// before the binary (e.g. setarch -R).
struct tinyk_run {
    std::vector<std::string> args;
    std::string home;
    std::vector<std::string> extra_env;
    std::string cwd;
    std::vector<std::string> prefix;
    std::string executable = TINYK_EXECUTABLE; ///< another build of tinyk, for a test that needs one

    tinyk_result operator()() const {
        process_spec spec;
        spec.argv = prefix;
        spec.argv.push_back(executable);
        spec.argv.insert(spec.argv.end(), args.begin(), args.end());
        spec.env = base_environment(home);
        spec.env.insert(spec.env.end(), extra_env.begin(), extra_env.end());
        spec.cwd = cwd;
        return parse_tinyk_output(run_process(spec));
    }
};

/// One scenario's world: a temp dir with the program (prog.tk), a home, and a
/// cache directory that does not exist until tinyk creates it; runs use `backend`
/// (TINYK_BACKEND; empty: tinyk's default).
class scenario {
public:
    explicit scenario(std::string backend = {})
        : program_(root_.path() / "src" / "prog.tk"), cache_(root_.path() / "cache"), backend_(std::move(backend)) {
        fs::create_directories(root_.path() / "src");
        fs::create_directories(root_.path() / "home");
    }

    fs::path const& program() const noexcept { return program_; }
    fs::path const& cache_dir() const noexcept { return cache_; }
    fs::path home() const { return root_.path() / "home"; }
    fs::path root() const { return root_.path(); }

    void write_program(std::string const& text) { write_file(program_, text); }

    /// The environment of every run but the one given to run(): the cache directory
    /// and the backend.
    std::vector<std::string> environment() const {
        std::vector<std::string> env = {"TINYK_CACHE_DIR=" + cache_.string()};
        if (!backend_.empty()) env.push_back("TINYK_BACKEND=" + backend_);
        return env;
    }

    /// tinyk run -v ARGS... (ARGS: options, then --call NAME ARGS) on prog.tk with
    /// the scenario's cache; `extra_env` is added to the environment.
    tinyk_result run(std::vector<std::string> const& call, std::vector<std::string> const& options = {},
                     std::vector<std::string> const& extra_env = {}, std::string const& cwd = {},
                     std::vector<std::string> const& prefix = {}, std::string const& executable = {}) const {
        tinyk_run r;
        if (!executable.empty()) r.executable = executable;
        r.args = {"run", "-v"};
        r.args.insert(r.args.end(), options.begin(), options.end());
        r.args.push_back(program_.string());
        r.args.push_back("--call");
        r.args.insert(r.args.end(), call.begin(), call.end());
        r.home = home().string();
        r.extra_env = environment();
        r.extra_env.insert(r.extra_env.end(), extra_env.begin(), extra_env.end());
        r.cwd = cwd.empty() ? root_.str() : cwd;
        r.prefix = prefix;
        return r();
    }

    cache_listing entries() const { return list_entries(cache_); }
    std::string const& backend() const noexcept { return backend_; }

private:
    temp_dir root_;
    fs::path program_;
    fs::path cache_;
    std::string backend_;
};

/// The backends to run the scenarios on: tinyk's VM always, and its native backend
/// (LLVM) when this tinyk was built with it, i.e. unless asking for it is refused as
/// unavailable. Any other failure keeps it in the list, to fail the tests loudly.
inline std::vector<std::string> const& backends() {
    static std::vector<std::string> const list = [] {
        std::vector<std::string> b = {"vm"};
        scenario probe;
        probe.write_program("kernel main(x) { return x; }\n");
        tinyk_run t;
        t.args = {"run", probe.program().string(), "--call", "main", "1"};
        t.home = probe.home().string();
        t.extra_env = {"TINYK_BACKEND=native"};
        tinyk_result r = t();
        if (!(r.exited(2) && r.err.find("without LLVM") != std::string::npos)) b.push_back("native");
        return b;
    }();
    return list;
}

/// One of backends(), a Catch2 generator: a test case that starts with
/// `scenario s(each_backend());` runs once per backend, each run on its own.
inline std::string each_backend() { return GENERATE(from_range(backends())); }

using names = std::vector<std::string>;

/// `setarch MACHINE -R` if it works here (it needs personality(2), which some
/// sandboxes refuse); empty otherwise.
inline std::vector<std::string> setarch_no_randomization() {
    for (char const* path : {"/usr/bin/setarch", "/bin/setarch"}) {
        if (::access(path, X_OK) != 0) continue;
        struct utsname u {};
        if (::uname(&u) != 0) return {};
        std::vector<std::string> prefix = {path, u.machine, "-R"};
        process_spec spec;
        spec.argv = prefix;
        spec.argv.push_back("/bin/true");
        spec.env = {"PATH=/usr/bin:/bin"};
        try {
            if (run_process(spec).exited(0)) return prefix;
        } catch (std::exception const&) {
        }
        return {};
    }
    return {};
}

} // namespace tinyk_test
