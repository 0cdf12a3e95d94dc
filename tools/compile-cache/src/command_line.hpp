// compile-cache: the command line — the table of commands (their operands, options and
// help) and the parse of the arguments into one command_line, in named steps.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace compile_cache_tool {

/// A command line the tool cannot run: said on stderr with the usage line, exit 2.
struct usage_error {
    std::string message;
};

/// What the arguments asked for.
struct command_line {
    std::string command;
    std::string cache;       ///< DIR or CACHE (copy: SRC), without trailing slashes
    std::string destination; ///< copy's DST
    std::string key_prefix;  ///< show's KEY_PREFIX
    std::string kernel_name; ///< explain's NAME
    std::string setting;     ///< set's NAME
    std::string setting_value; ///< set's VALUE
    bool json = false;
    bool remove = false;
    bool allow_unchecked = false;
    bool progress = false;   ///< --progress: the progress line even when stderr is no terminal
    std::string sort = "name";
    std::string format = "text"; ///< stats: text, json or openmetrics (--json is --format=json)
    std::optional<std::string> secret_file;
    std::optional<std::string> trusted_keys_file; ///< --trusted-keys-file (list, show, verify, explain, copy)
    std::optional<std::string> password_file; ///< --password-file (Redis)
    std::optional<std::string> max_size;
    std::optional<std::string> name_space; ///< --namespace (Redis)
    std::optional<std::string> layout;     ///< --layout (HTTP)
    std::optional<std::string> ca_file;    ///< --ca-file (HTTP)
    std::optional<std::string> token_file; ///< --token-file (HTTP)
    std::optional<std::string> name_glob;  ///< copy --name GLOB
    std::optional<std::string> since;      ///< copy --since AGE
    std::optional<std::string> prefix;     ///< config --prefix PREFIX
};

/// One command of the tool: what it takes and what its --help says.
struct command_spec {
    char const* name;
    std::vector<char const*> operands; ///< "DIR", "KEY_PREFIX", ...: all required (in brackets: optional)
    std::vector<char const*> options;  ///< the options it takes besides those every command takes
    char const* help;                  ///< its --help text: a usage line, then what it does
};

/// Every command, in the order --help lists them.
std::vector<command_spec> const& commands();

/// The command named `name`, or nullptr.
command_spec const* find_command(std::string const& name);

/// "usage: compile-cache show DIR KEY_PREFIX [--secret-file F] [--json] [--progress]".
std::string usage_of(command_spec const& spec);

/// The arguments as parse() reads their shape, without judging them: the options' names
/// (without their values; unknown ones too, unless given `=value`, as `--help=x`, which
/// the parse refuses) and the other words (all those after `--`).
struct argument_words {
    std::vector<std::string> options;
    std::vector<std::string> operands;
};
argument_words read_words(std::vector<std::string> const& args);

/// Reads `args` (without the program name); throws usage_error.
command_line parse(std::vector<std::string> const& args);

} // namespace compile_cache_tool
