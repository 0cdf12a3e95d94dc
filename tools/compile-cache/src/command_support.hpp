// compile-cache: what the commands share — their cache opened and listed once, the
// secret, the progress line, and how a last use and a document's head are written.
#pragma once

#include "command_line.hpp"
#include "entry_check.hpp"
#include "opened_cache.hpp"
#include "output.hpp"

#include <compile_cache/envelope.hpp>

#include <cstdint>
#include <string>

namespace compile_cache_tool {

/// Seconds since `use_ns` (ns since the epoch).
std::int64_t age_s(std::int64_t use_ns);

/// "2026-11-29 18:41:01 (5 min ago)" (or without the date: "5 min ago"), or "unknown"
/// when the storage does not know.
std::string last_use_text(std::int64_t use_ns, bool with_date);

/// The JSON fields of a last use: the time, ns, and age; null each when unknown.
void use_fields(json_writer& j, std::int64_t use_ns);

/// Opens the JSON document of a command's output: `"directory": DIR` or `"storage": ...`.
json_writer& begin_document(json_writer& j, opened_cache const& cache);

/// The envelope_auth --secret-file asks for, read the way a cache reads
/// PREFIX_SECRET_FILE; false (after the message) when the file cannot be used.
bool auth_from(command_line const& c, compile_cache::envelope_auth& auth);

/// The trusted keys --trusted-keys-file names, read by the library's reader of
/// PREFIX_TRUSTED_KEYS_FILE (bounded, no FIFO hang, a file others may write refused);
/// false (after the message) when the file cannot be used, or the tool was built
/// without signing (libsodium).
bool trusted_from(command_line const& c, trusted_signers& trusted);

/// A command's cache, opened for `use` and listed once.
struct listed_cache {
    opened_cache cache;
    cache_listing listing;
};

/// Opens and lists `arg` for `c`; exit_ok or the status of the failure said.
int open_and_list(command_line const& c, std::string const& arg, cache_use use, progress_line& progress,
                  listed_cache& out);

/// The progress line a command shows: on a large cache, or whenever --progress asks.
progress_line progress_for(command_line const& c);

// The commands with files of their own.
int run_explain(command_line const& c); ///< explain_command.cpp
int run_copy(command_line const& c);    ///< copy_command.cpp
int run_config(command_line const& c);  ///< config_command.cpp
int run_set(command_line const& c);     ///< set_command.cpp
int run_keygen(command_line const& c);  ///< keygen_command.cpp

} // namespace compile_cache_tool
