// tinyk: the command line driver.
#include "cache_glue.hpp"
#include "compiler.hpp"
#include "diag.hpp"
#include "keying.hpp"
#include "native_backend.hpp"
#include "vm.hpp"

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr char const* tinyk_version = "0.1";

enum exit_code { ok = 0, internal = 1, program_error = 2, runtime_error = 3 };

// The settings come from the library (what from_env reads), each description
// wrapped to 80 columns beside its name.
void print_environment_settings(std::FILE* out) {
    constexpr std::size_t indent = 26, width = 80;
    for (auto const& setting : tinyk::glue::cache::environment_settings()) {
        std::string line = "  " + setting.name; // a long name gets its own line
        if (line.size() + 1 < indent) line.append(indent - line.size(), ' ');
        else line += "\n" + std::string(indent, ' ');
        std::size_t column = indent;
        std::istringstream words(setting.description);
        std::string word;
        bool first = true;
        while (words >> word) {
            if (!first && column + 1 + word.size() > width) {
                line += "\n" + std::string(indent, ' ');
                column = indent;
            } else if (!first) {
                line += ' ';
                ++column;
            }
            line += word;
            column += word.size();
            first = false;
        }
        std::fprintf(out, "%s\n", line.c_str());
    }
}

void print_help(std::FILE* out) {
    std::fprintf(out,
        "usage: tinyk run [options] FILE --call NAME [ARG...]\n"
        "       tinyk --help | --version\n"
        "\n"
        "Compiles every kernel of FILE in definition order (as importing a module would),\n"
        "then calls kernel NAME with the numeric ARGs and prints the result (%%.17g).\n"
        "FILE may be '-' for standard input (then no kernel is cached).\n"
        "\n"
        "options (anywhere before --call):\n"
        "  -O0, -O1         optimization level (default -O1: inlining, constant folding,\n"
        "                   common-subexpression and dead-code elimination); part of the key\n"
        "  -v, --verbose    one line per kernel on stderr, one of\n"
        "                     tinyk: compiled NAME (REASON[: WHAT CHANGED])\n"
        "                     tinyk: loaded NAME\n"
        "                     tinyk: bypass NAME: REASON\n"
        "                   where a compile's REASON is the cache's miss reason (absent,\n"
        "                   corrupt, ...) or disabled, and a bypass's why NAME has no key;\n"
        "                   an absent kernel also says what changed since it was last\n"
        "                   stored (callee:helper, ir changed), or new, or evicted\n"
        "  --stats          one line of cache statistics on stderr at exit (hits, misses\n"
        "                   by reason, stores, bytes; time loading, with a hit's read,\n"
        "                   verify, deserialize and relocate; compiling; storing; keying\n"
        "                   (key-ms) and parsing and lowering (front-ms))\n"
        "  --dump-ir        print each kernel's lowered and optimized IR on stderr\n"
        "  --dump-bytecode  print each kernel's bytecode on stderr\n"
        "  --backend=native|vm\n"
        "                   native: machine code through LLVM (the default when tinyk was\n"
        "                   built with LLVM); vm: bytecode for tinyk's VM; part of the key\n"
        "  -h, --help       this text\n"
        "\n"
        "environment (the kernel cache; without TINYK_CACHE_DIR or _FILE, none):\n");
    print_environment_settings(out);
    std::fprintf(out,
        "environment (the backend):\n"
        "  TINYK_BACKEND           native or vm: the backend when --backend is not given\n"
        "  TINYK_NATIVE_TIMING     1: where the native backend spent its time, on stderr\n"
        "  TINYK_CPU               the CPU native code is generated for (e.g. generic, x86-64,\n"
        "                          skylake); default: this machine's, with its features\n");
    std::fprintf(out,
        "\n"
        "exit status: 0 success, 2 error in the program or the command line,\n"
        "             3 failed assertion (or call depth limit) at run time,\n             1 internal error\n");
}

struct options {
    bool verbose = false;
    bool stats = false;
    bool dump_ir = false;
    bool dump_bytecode = false;
    tinyk::opt_level level = tinyk::opt_level::O1;
    std::string backend; // "native" or "vm"
    std::string file;
    std::string call;
    std::vector<double> args;
};

[[noreturn]] void usage_error(std::string const& msg) {
    std::fprintf(stderr, "tinyk: error: %s\n", msg.c_str());
    std::fprintf(stderr, "usage: tinyk run [-v] [-O0|-O1] [--stats] FILE --call NAME [ARG...]  (tinyk --help)\n");
    std::exit(program_error);
}

std::optional<double> parse_number(char const* s) {
    if (!*s) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s, &end);
    if (end == s || *end != '\0') return std::nullopt;
    return v; // overflow gives +-inf, as the language's literals do
}

options parse_command_line(int argc, char** argv) {
    options o;
    int i = 2;
    bool have_file = false, have_call = false;
    for (; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--call") {
            have_call = true;
            ++i;
            break;
        }
        if (a == "-v" || a == "--verbose") o.verbose = true;
        else if (a == "--stats") o.stats = true;
        else if (a == "-O0") o.level = tinyk::opt_level::O0;
        else if (a == "-O1") o.level = tinyk::opt_level::O1;
        else if (a == "--dump-ir") o.dump_ir = true;
        else if (a == "--dump-bytecode") o.dump_bytecode = true;
        else if (a.rfind("--backend=", 0) == 0) o.backend = a.substr(10);
        else if (a == "-h" || a == "--help") {
            print_help(stdout);
            std::exit(ok);
        } else if (a.size() > 1 && a[0] == '-') usage_error("unknown option '" + a + "'");
        else if (have_file) usage_error("unexpected argument '" + a + "' (one FILE; arguments go after --call NAME)");
        else {
            o.file = a;
            have_file = true;
        }
    }
    if (o.backend.empty()) {
        // A setting, unlike --backend: a bad value is one line and the default, and
        // the program runs.
        std::string const fallback = tinyk::native::available() ? "native" : "vm";
        char const* env = std::getenv("TINYK_BACKEND");
        std::string setting = env ? env : "";
        for (char& c : setting) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (setting.empty()) {
            o.backend = fallback;
        } else if (setting != "native" && setting != "vm") {
            std::fprintf(stderr, "tinyk: TINYK_BACKEND=\"%s\" is not a backend (native or vm); using %s\n", env,
                         fallback.c_str());
            o.backend = fallback;
        } else {
            o.backend = setting;
        }
    }
    if (o.backend != "native" && o.backend != "vm")
        usage_error("unknown backend '" + o.backend + "' (native or vm)");
    if (o.backend == "native" && !tinyk::native::available())
        usage_error("this tinyk was built without LLVM: the native backend is not available (--backend=vm)");
    if (!have_file) usage_error("no FILE given");
    if (!have_call) usage_error("missing --call NAME");
    if (i >= argc) usage_error("--call needs a kernel NAME");
    o.call = argv[i++];
    for (; i < argc; ++i) {
        auto v = parse_number(argv[i]);
        if (!v) usage_error("argument '" + std::string(argv[i]) + "' to " + o.call + " is not a number");
        o.args.push_back(*v);
    }
    return o;
}

bool read_source(std::string const& file, std::string& out, std::string& error) {
    if (file == "-") {
        out.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        return true;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        error = std::strerror(errno);
        return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return true;
}

tinyk::key_context key_context_for(options const& o) {
    tinyk::key_context ctx;
    ctx.level = o.level;
    if (o.file == "-") {
        ctx.no_file_reason = "source read from standard input";
        return ctx;
    }
    std::error_code ec;
    auto abs = std::filesystem::absolute(o.file, ec);
    if (!ec) abs = std::filesystem::weakly_canonical(abs, ec);
    if (ec) ctx.no_file_reason = "cannot resolve the source path: " + ec.message();
    else ctx.file_identity = abs.generic_string();
    return ctx;
}

int run(options const& o) {
    std::string source, error;
    if (!read_source(o.file, source, error)) {
        std::fprintf(stderr, "tinyk: error: cannot read %s: %s\n", o.file.c_str(), error.c_str());
        return program_error;
    }
    tinyk::glue::cache cache = tinyk::glue::cache::from_env();
    tinyk::glue::driver_times times;
    struct stats_at_exit {
        tinyk::glue::cache& c;
        tinyk::glue::driver_times const& t;
        bool on;
        ~stats_at_exit() {
            if (on) std::fprintf(stderr, "tinyk: stats: %s\n", c.stats_summary(t).c_str());
        }
    } stats_guard{cache, times, o.stats};
    auto ns_since = [](std::chrono::steady_clock::time_point since) {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count());
    };

    tinyk::module m;
    auto front_start = std::chrono::steady_clock::now();
    try {
        m = tinyk::build_module(source, o.file);
        times.front_ns = ns_since(front_start);
    } catch (tinyk::compile_error const& e) {
        std::fprintf(stderr, "%s:%d:%d: error: %s\n", o.file.c_str(), e.pos().line, e.pos().col, e.what());
        return program_error;
    }

    // The native backend's LLVM version and target go into the toolchain of every key.
    std::unique_ptr<tinyk::native::backend> native;
    if (o.backend == "native") {
        native = std::make_unique<tinyk::native::backend>(o.level);
        cache.add_to_toolchain(native->toolchain());
    }

    auto key_start = std::chrono::steady_clock::now();
    auto sccs = tinyk::strongly_connected_components(m);
    tinyk::key_context kctx = key_context_for(o);
    kctx.backend = native ? native->key_id() : "vm";
    auto keys = tinyk::compute_keys(m, sccs, cache, kctx);
    times.key_ns = ns_since(key_start);
    std::string const& origin_file = kctx.file_identity.empty() ? o.file : kctx.file_identity;

    // Every kernel is bound to its key before any is compiled or loaded, so that a
    // loaded artifact can reference a kernel defined later in the file.
    cache.register_shared_objects();
    for (auto& k : m.kernels) cache.bind(*k, keys[static_cast<std::size_t>(k->index)]);
    // Keys need no compiled code: every kernel's entry is asked for at once (one round
    // trip to a remote), before the first is compiled or loaded.
    cache.prefetch(m.kernels, keys, origin_file);

    for (auto& kp : m.kernels) {
        tinyk::kernel& k = *kp;
        if (o.dump_ir) std::fprintf(stderr, "; lowered\n%s", k.canonical_ir.c_str());
        std::string optimized;
        auto r = native ? cache.get_or_compile_native(k, keys[static_cast<std::size_t>(k.index)], origin_file, [&] {
            return native->compile(m, k, o.dump_ir ? &optimized : nullptr);
        }) : cache.get_or_compile(k, keys[static_cast<std::size_t>(k.index)], origin_file, [&] {
            return tinyk::compile_kernel(m, k, o.level, o.dump_ir ? &optimized : nullptr);
        });
        if (native) native->add(k); // checks the artifact's references too
        else if (!k.code || k.code->result_type.get() != tinyk::f64_type() ||
                 k.code->dialects.get() != &tinyk::core_dialects())
            throw tinyk::internal_error("kernel '" + k.name + "': its artifact does not reference the live singletons");
        if (o.verbose) {
            switch (r.how) {
            case tinyk::glue::outcome::compiled:
                std::fprintf(stderr, "tinyk: compiled %s (%s%s%s)\n", k.name.c_str(), r.reason.c_str(),
                             r.explanation.empty() ? "" : ": ", r.explanation.c_str());
                break;
            case tinyk::glue::outcome::loaded: std::fprintf(stderr, "tinyk: loaded %s\n", k.name.c_str()); break;
            case tinyk::glue::outcome::bypassed:
                std::fprintf(stderr, "tinyk: bypass %s: %s\n", k.name.c_str(), r.reason.c_str());
                break;
            }
        }
        if (o.dump_ir && !optimized.empty()) std::fprintf(stderr, "; optimized\n%s", optimized.c_str());
        if (o.dump_bytecode && native)
            std::fprintf(stderr, "; native code of %s\n%s", k.name.c_str(), native->describe(k).c_str());
        else if (o.dump_bytecode)
            std::fprintf(stderr, "; bytecode of %s\n%s", k.name.c_str(), tinyk::disassemble(*k.code).c_str());
    }

    tinyk::kernel const* entry = m.find(o.call);
    if (!entry) {
        std::fprintf(stderr, "tinyk: error: no kernel named '%s' in %s\n", o.call.c_str(), o.file.c_str());
        return program_error;
    }
    if (static_cast<int>(o.args.size()) != entry->nparams) {
        std::fprintf(stderr, "tinyk: error: kernel '%s' takes %d argument%s, %zu given\n", entry->name.c_str(),
                     entry->nparams, entry->nparams == 1 ? "" : "s", o.args.size());
        return program_error;
    }
    try {
        double v = native ? native->execute(*entry, o.args) : tinyk::execute(*entry, o.args);
        std::printf("%.17g\n", v);
    } catch (tinyk::runtime_failure const& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s:%d: %s in %s\n", o.file.c_str(), e.line(), e.what(), e.kernel_name().c_str());
        return runtime_error;
    }
    return ok;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) usage_error("no command");
    std::string cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        print_help(stdout);
        return ok;
    }
    if (cmd == "--version") {
        std::printf("tinyk %s (backends: vm%s)\n", tinyk_version, tinyk::native::available() ? ", native" : "");
        return ok;
    }
    if (cmd != "run") usage_error("unknown command '" + cmd + "'");
    options o = parse_command_line(argc, argv);
    try {
        return run(o);
    } catch (tinyk::internal_error const& e) {
        std::fprintf(stderr, "tinyk: internal error: %s\n", e.what());
        return internal;
    } catch (std::exception const& e) {
        std::fprintf(stderr, "tinyk: internal error: %s\n", e.what());
        return internal;
    }
}
