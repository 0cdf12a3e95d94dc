// compile-cache: the command table and the parse of the arguments (command_line.hpp).
#include "command_line.hpp"

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace compile_cache_tool {

std::vector<command_spec> const& commands() {
    static std::vector<command_spec> const table = {
        {"stats", {"DIR"}, {"--format"},
         "  stats DIR [--format F]      entries, their size, the size limit, the oldest and newest\n"
         "                              use, and the counters the hosts recorded (hits, misses, ...)\n"
         "                              with the rates; F: text (default), json (as --json), or\n"
         "                              openmetrics (Prometheus text, for node_exporter's textfile\n"
         "                              collector)\n"},
        {"list", {"DIR"}, {"--sort", "--secret-file", "--trusted-keys-file"},
         "  list DIR [--sort KEY]       one line per entry: name, key prefix, size, time since its\n"
         "                              last use, origin file:line. KEY: name (default), size\n"
         "                              (largest first), age (least recently used first: the order\n"
         "                              in which eviction takes them). A signed entry's signature is\n"
         "                              checked with --trusted-keys-file (as verify does); without,\n"
         "                              its line says \"signed (key id ...), not checked\"\n"},
        {"show", {"DIR", "KEY_PREFIX"}, {"--secret-file", "--trusted-keys-file"},
         "  show DIR KEY_PREFIX         one entry: its envelope (version, mode, key, sizes), the key id\n"
         "                              of its signer (a signed entry; with the key's name when\n"
         "                              --trusted-keys-file lists it), metadata (name, origin, format,\n"
         "                              the artifact type it was stored as, created, compile time)\n"
         "                              and the digests of its key's\n"
         "                              components. The prefix (hex, as list prints it) must name\n"
         "                              exactly one entry\n"},
        {"verify", {"DIR"}, {"--remove", "--allow-unchecked", "--secret-file", "--trusted-keys-file"},
         "  verify DIR [--remove]       checks every entry's envelope and check value (CRC-32C; the\n"
         "                              HMAC with --secret-file; the Ed25519 signature of a signed\n"
         "                              entry with --trusted-keys-file) and that it is stored under its\n"
         "                              own key; reports the bad ones and, with --remove, deletes them.\n"
         "                              Keyed entries without --secret-file, signed ones without\n"
         "                              --trusted-keys-file, unsigned ones with --trusted-keys-file\n"
         "                              alone, and entries of another envelope version are reported\n"
         "                              as not checked and kept; signed entries whose\n"
         "                              signer is none of the trusted keys are reported and counted as\n"
         "                              such, and kept (never removed). Either makes the exit status 4\n"
         "                              unless --allow-unchecked is given. A marker of a pack of\n"
         "                              identity records whose pack is gone is reported, not bad, and\n"
         "                              unlinked with --remove (as hosts unlink it at their next look)\n"},
        {"prune", {"DIR"}, {"--max-size"},
         "  prune DIR [--max-size SIZE] evicts least recently used entries until the directory is\n"
         "                              under 90% of SIZE (bytes, or with K, M, G: 48K, 500M, 2G;\n"
         "                              0 means no limit, so nothing is evicted), and removes temp\n"
         "                              files over an hour old and the claims of processes that are\n"
         "                              gone (a cache directory only). Without --max-size: the\n"
         "                              max-size the directory keeps (set)\n"},
        {"clear", {"DIR"}, {},
         "  clear DIR                   removes every entry and temp file, and the claims of\n"
         "                              processes that are gone; other files stay. On a Redis\n"
         "                              server, a --namespace that holds no entry is refused (exit 2:\n"
         "                              likely a typo), never \"removed 0 entries\"\n"},
        {"zero", {"DIR"}, {},
         "  zero DIR                    sets the counters the hosts recorded back to zero, as\n"
         "                              ccache -z; stats then counts from now (\"since\"); the entries\n"
         "                              and the size limit stay. A cache directory only: hosts record\n"
         "                              their counters there, also for a tier's remote (a SQLite file\n"
         "                              or a Redis or HTTP server keeps none: zero is refused, exit 2)\n"},
        {"set", {"DIR", "NAME", "VALUE"}, {},
         "  set DIR NAME VALUE          keeps a setting in the cache directory itself (DIR/.cc-settings,\n"
         "                              written atomically), for every host that uses it, as ccache -M\n"
         "                              does: max-size SIZE (5G; 0: no limit), durability none|file|full,\n"
         "                              compress 0|1|2..19 (off, zstd's default level, a level; read by\n"
         "                              hosts whose cache compresses, and said by the others). VALUE\n"
         "                              default removes it. A host's environment (PREFIX_MAX_SIZE,\n"
         "                              PREFIX_DURABILITY, PREFIX_COMPRESS) still wins; config shows\n"
         "                              what is in effect. DIR is made when it is not there\n"},
        {"explain", {"DIR", "NAME"}, {"--secret-file", "--trusted-keys-file"},
         "  explain DIR NAME            the entries recorded for kernel NAME (its identity record),\n"
         "                              newest first, and which key components changed between\n"
         "                              each one and the one before it: why it was recompiled.\n"
         "                              A local copy of a record a signer signed names that signer's\n"
         "                              key id; with --trusted-keys-file a copy whose signer is none\n"
         "                              of the trusted keys is not shown (hosts refuse it) but counted\n"
         "                              (\"1 record refused: signed by key id ...\"); without, it is\n"
         "                              shown, its signer \"not checked: give --trusted-keys-file\"\n"},
        {"copy", {"SRC", "DST"}, {"--secret-file", "--trusted-keys-file", "--name", "--since"},
         "  copy SRC DST                every entry and identity record of SRC into DST, byte for byte\n"
         "                              (sealed: an HMAC or a signature still holds), between any two\n"
         "                              caches (directory, sqlite:FILE, redis://...). Each is checked on\n"
         "                              the way (CRC-32C; the HMAC with --secret-file; a signature with\n"
         "                              --trusted-keys-file): bad ones, an untrusted signer's and ones\n"
         "                              that cannot be checked are skipped and counted; one already in\n"
         "                              DST with the same bytes is not written again. --name GLOB:\n"
         "                              only kernels whose name matches (* ? [...]); --since AGE: only\n"
         "                              entries used within AGE (30s, 15m, 12h, 7d). A summary line;\n"
         "                              exit 1 when some were skipped as bad, 3 when DST refused one.\n"
         "                              The CI recipe: copy DIR sqlite:cache.db at the end of a job,\n"
         "                              keep the one file, copy sqlite:cache.db DIR at the next start\n"},
        {"config", {"[CACHE]"}, {"--prefix"},
         "  config --prefix P [CACHE]   every setting a host with prefix P reads (the cache's and its\n"
         "                              storage's: a directory, or the kind CACHE names), the value in\n"
         "                              effect, where it comes from - (environment), (settings file):\n"
         "                              what the directory keeps (set; of CACHE, else of P_DIR), or\n"
         "                              (default) - and what each does; passwords are shown as set,\n"
         "                              a URL's password as ***\n"},
        {"keygen", {"SECRET_KEY_FILE"}, {"--name"},
         "  keygen SECRET_KEY_FILE      a new Ed25519 signing key for signed entries, written to a new\n"
         "                              file of mode 0600 (an existing one is never overwritten) for\n"
         "                              the writer's PREFIX_SIGNING_KEY_FILE; prints the public-key\n"
         "                              line (NAME:BASE64) for readers' PREFIX_TRUSTED_KEYS_FILE.\n"
         "                              --name NAME: the key's name (default: the file's name)\n"},
    };
    return table;
}

command_spec const* find_command(std::string const& name) {
    for (command_spec const& c : commands())
        if (name == c.name) return &c;
    return nullptr;
}

namespace {

/// An option as given: its name and its value (inline `--x=v`, or the next argument).
struct given_option {
    std::string name;
    std::optional<std::string> value;
};

/// What each option is: the name of its value, or nullptr when it takes none.
struct option_spec {
    char const* name;
    char const* value;
    bool takes_value() const { return value != nullptr; }
};

option_spec const option_table[] = {
    {"--json", nullptr},         {"--remove", nullptr},         {"--allow-unchecked", nullptr},
    {"--progress", nullptr},     {"--sort", "KEY"},             {"--secret-file", "F"},
    {"--max-size", "SIZE"},      {"--namespace", "NS"},         {"--password-file", "F"},
    {"--format", "F"},           {"--name", "GLOB"},            {"--since", "AGE"},
    {"--prefix", "PREFIX"},      {"--layout", "L"},             {"--ca-file", "F"},
    {"--token-file", "F"},       {"--trusted-keys-file", "F"},
};

/// The options every command takes.
char const* const common_options[] = {"--json",   "--namespace", "--password-file", "--progress",
                                      "--layout", "--ca-file",   "--token-file"};

/// The one reading of the arguments' shape: `--` ends the options (what follows is
/// operands: a directory named "-x" may follow), `--name=value` gives a value inline,
/// and an option of option_table that takes a value takes the next argument. Calls
/// `option(name, value, known)` for each option (known: null when not in option_table;
/// value: none given) and `operand(word)` for each other argument, in order.
template <class Option, class Operand>
void walk_arguments(std::vector<std::string> const& args, Option option, Operand operand) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        if (arg == "--") {
            for (++i; i < args.size(); ++i) operand(args[i]);
            return;
        }
        if (arg.size() < 2 || arg[0] != '-') {
            operand(arg);
            continue;
        }
        std::optional<std::string> value;
        if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
            value = arg.substr(arg.find('=') + 1);
            arg = arg.substr(0, arg.find('='));
        }
        auto const found = std::find_if(std::begin(option_table), std::end(option_table),
                                        [&](option_spec const& s) { return arg == s.name; });
        option_spec const* const known = found == std::end(option_table) ? nullptr : &*found;
        if (known && known->takes_value() && !value && i + 1 < args.size()) value = args[++i];
        option(arg, value, known);
    }
}

/// Step 1: the words, as options (with their values) and as the command and its operands.
void split_arguments(std::vector<std::string> const& args, std::vector<given_option>& options,
                     std::vector<std::string>& words) {
    walk_arguments(
        args,
        [&](std::string const& name, std::optional<std::string> const& value, option_spec const* known) {
            if (!known) throw usage_error{"unknown option " + name};
            if (known->takes_value() && !value) throw usage_error{name + " needs a value"};
            if (!known->takes_value() && value) throw usage_error{name + " takes no value"};
            options.push_back({name, value});
        },
        [&](std::string const& word) { words.push_back(word); });
}

/// Step 2: the command, known.
command_spec const& command_of(std::vector<std::string> const& words) {
    if (words.empty()) throw usage_error{"no command given"};
    command_spec const* spec = find_command(words[0]);
    if (spec == nullptr) throw usage_error{"unknown command \"" + words[0] + "\""};
    return *spec;
}

/// Step 3: options given to a command that does not take them are errors, not
/// silently ignored.
void check_options_belong(command_spec const& spec, std::vector<given_option> const& options) {
    for (given_option const& o : options) {
        bool const common = std::find(std::begin(common_options), std::end(common_options), o.name) !=
                            std::end(common_options);
        bool const own = std::find(spec.options.begin(), spec.options.end(), o.name) != spec.options.end();
        if (!common && !own) throw usage_error{o.name + " is not an option of " + spec.name};
    }
}

/// Step 4: the options' values, checked, into `c`.
void take_options(std::vector<given_option> const& options, command_line& c) {
    bool format_given = false;
    // An option's value given twice is a usage error, not the last one silently (a prune with two --max-size).
    for (std::size_t i = 0; i < options.size(); ++i)
        for (std::size_t k = 0; k < i; ++k)
            if (options[i].value && options[k].name == options[i].name)
                throw usage_error{options[i].name + " is given twice"};
    for (given_option const& o : options) {
        if (o.name == "--json") c.json = true;
        if (o.name == "--remove") c.remove = true;
        if (o.name == "--allow-unchecked") c.allow_unchecked = true;
        if (o.name == "--progress") c.progress = true;
        if (o.name == "--secret-file") c.secret_file = o.value;
        if (o.name == "--trusted-keys-file") c.trusted_keys_file = o.value;
        if (o.name == "--password-file") c.password_file = o.value;
        if (o.name == "--max-size") c.max_size = o.value;
        if (o.name == "--namespace") c.name_space = o.value;
        if (o.name == "--name") c.name_glob = o.value;
        if (o.name == "--since") c.since = o.value;
        if (o.name == "--prefix") c.prefix = o.value;
        if (o.name == "--layout") c.layout = o.value;
        if (o.name == "--ca-file") c.ca_file = o.value;
        if (o.name == "--token-file") c.token_file = o.value;
        if (o.name == "--sort") {
            c.sort = *o.value;
            if (c.sort != "name" && c.sort != "size" && c.sort != "age")
                throw usage_error{"--sort takes name, size or age, not \"" + c.sort + "\""};
        }
        if (o.name == "--format") {
            format_given = true;
            c.format = *o.value;
            if (c.format != "text" && c.format != "json" && c.format != "openmetrics")
                throw usage_error{"--format takes text, json or openmetrics, not \"" + c.format + "\""};
        }
    }
    if (c.json) {
        if (format_given && c.format != "json")
            throw usage_error{"--json and --format=" + c.format + " are two formats; give one"};
        c.format = "json";
    }
    c.json = c.format == "json";
}

/// "cache/" names "cache"; a URL keeps its scheme's "//" ("redis://" stays a Redis address, refused for its
/// empty host, never the directory "redis:").
std::string without_trailing_slashes(std::string s) {
    auto const ends_scheme = [&s] { return s.size() >= 3 && s.compare(s.size() - 3, 3, "://") == 0; };
    while (s.size() > 1 && s.back() == '/' && !ends_scheme()) s.pop_back();
    return s;
}

/// Step 5: the operands the command needs, no more, no fewer.
void take_operands(command_spec const& spec, std::vector<std::string> const& words, command_line& c) {
    std::size_t const given = words.size() - 1;
    std::size_t const wanted = spec.operands.size();
    bool const optional = wanted != 0 && spec.operands.back()[0] == '[';
    if (given + (optional ? 1 : 0) < wanted) {
        std::string names;
        for (std::size_t i = 0; i < wanted; ++i) names += (i == 0 ? "" : i + 1 == wanted ? " and " : ", ") + std::string(spec.operands[i]);
        throw usage_error{c.command + " needs " + names};
    }
    if (given > wanted) throw usage_error{"unexpected argument \"" + words[wanted + 1] + "\""};
    // An empty name is no cache (SQLite would take "" for a temporary database, gone at exit).
    if (given != 0 && words[1].empty()) {
        std::string name = spec.operands[0]; // ("[CACHE]": CACHE)
        name.erase(std::remove(name.begin(), name.end(), '['), name.end());
        name.erase(std::remove(name.begin(), name.end(), ']'), name.end());
        throw usage_error{c.command + ": " + name + " is empty"};
    }
    if (c.command == "copy" && words[2].empty()) throw usage_error{"copy: DST is empty"};
    if (given != 0) c.cache = without_trailing_slashes(words[1]);
    if (c.command == "show") c.key_prefix = words[2];
    if (c.command == "explain") c.kernel_name = words[2];
    if (c.command == "copy") c.destination = without_trailing_slashes(words[2]);
    if (c.command == "set") {
        c.setting = words[2];
        c.setting_value = words[3];
    }
}

} // namespace

std::string usage_of(command_spec const& spec) {
    std::string out = std::string("usage: compile-cache ") + spec.name;
    for (char const* operand : spec.operands) out += std::string(" ") + operand;
    for (char const* name : spec.options)
        for (option_spec const& o : option_table)
            if (std::string_view(name) == o.name)
                out += std::string(" [") + o.name + (o.value ? std::string(" ") + o.value : std::string()) + "]";
    return out + " [--json] [--progress]";
}

argument_words read_words(std::vector<std::string> const& args) {
    argument_words out;
    walk_arguments(
        args,
        [&](std::string const& name, std::optional<std::string> const& value, option_spec const* known) {
            // (`--help=x`: an option given a value it does not take, which the parse refuses)
            if (!value || (known && known->takes_value())) out.options.push_back(name);
        },
        [&](std::string const& word) { out.operands.push_back(word); });
    return out;
}

command_line parse(std::vector<std::string> const& args) {
    std::vector<given_option> options;
    std::vector<std::string> words;
    split_arguments(args, options, words);
    command_spec const& spec = command_of(words);
    command_line c;
    c.command = spec.name;
    check_options_belong(spec, options);
    take_options(options, c);
    take_operands(spec, words, c);
    return c;
}

} // namespace compile_cache_tool
