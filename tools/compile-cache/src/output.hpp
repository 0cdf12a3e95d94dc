// compile-cache: how the tool writes what it found — JSON for scripts, aligned text
// for people — and its progress line on stderr for large directories.
#pragma once

#include <compile_cache/printable.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compile_cache_tool {

// ---- JSON --------------------------------------------------------------------

/// Appends `s` as a JSON string. Names and paths in entries are arbitrary bytes:
/// valid UTF-8 passes through, control characters are escaped, and each byte that is
/// not part of valid UTF-8 becomes U+FFFD, so that the output always parses.
void append_json_string(std::string& out, std::string_view s);

/// A JSON document written front to back; the writer puts in the commas.
class json_writer {
public:
    json_writer& begin_object() { return open('{'); }
    json_writer& end_object() { return close('}'); }
    json_writer& begin_array() { return open('['); }
    json_writer& end_array() { return close(']'); }

    json_writer& key(std::string_view name);
    json_writer& value(std::string_view s);
    json_writer& value(char const* s) { return value(std::string_view(s)); }
    json_writer& value(std::string const& s) { return value(std::string_view(s)); }
    json_writer& value(std::uint64_t n) { return raw(std::to_string(n)); }
    json_writer& value(std::int64_t n) { return raw(std::to_string(n)); }
    json_writer& value(bool b) { return raw(b ? "true" : "false"); }
    json_writer& null() { return raw("null"); }
    /// A number that is not whole (a rate), with 6 significant digits.
    json_writer& raw_number(double d);

    template <class T>
    json_writer& field(std::string_view name, T const& v) {
        key(name);
        return value(v);
    }

    /// The document, with a final newline.
    std::string str() const { return out_ + "\n"; }

private:
    void separate();
    json_writer& open(char c);
    json_writer& close(char c);
    json_writer& raw(std::string const& text);

    std::string out_;
    std::vector<bool> first_; ///< per open container: nothing written in it yet
    bool after_key_ = false;
};

// ---- text for people -------------------------------------------------------

/// `s` with every byte that could upset a terminal (control characters, escape
/// sequences) written as \xNN: entry names come from files anyone may have written.
/// The library's own (compile_cache/printable.hpp), which its log lines use too.
using compile_cache::printable;

/// 1536 -> "1.5 KiB", 10239 -> "10 KiB", 1048575 -> "1.0 MiB" (never "1024 KiB"); below 1 KiB, bytes.
std::string human_size(std::uint64_t bytes);

/// A duration in seconds as people say it: "42 s", "5 min", "3 h", "12 days".
std::string human_age(std::int64_t seconds);

/// Nanoseconds as milliseconds or seconds, for compile and load times.
std::string human_duration_ns(std::uint64_t ns);

/// A time (ns since the epoch) in local time, to the second: "2026-11-29 18:41:01".
std::string local_time(std::int64_t ns);

/// A time (ns since the epoch) in UTC, ISO 8601: "2026-11-29T18:41:01Z", for JSON.
std::string utc_time(std::int64_t ns);

/// Rows of cells printed in columns separated by two spaces; the last column is not
/// padded.
class text_table {
public:
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    /// `right[i]`: column i is aligned right (numbers).
    std::string str(std::vector<bool> const& right = {}) const;

private:
    std::vector<std::vector<std::string>> rows_;
};

// ---- OpenMetrics -----------------------------------------------------------

/// `"value"` with \\, \" and newlines escaped, as a label's value is written.
std::string openmetrics_label_value(std::string_view value);

/// Prometheus text exposition (what node_exporter's textfile collector reads): each
/// family's HELP and TYPE lines, then its samples; `# EOF` at the end.
class openmetrics_writer {
public:
    void family(std::string const& name, char const* type, std::string const& help);
    /// `labels`: `name="value"` each (openmetrics_label_value).
    void sample(std::string const& name, std::vector<std::string> const& labels, std::uint64_t value);
    void sample_seconds(std::string const& name, std::vector<std::string> const& labels, std::int64_t ns);
    std::string str() const { return out_ + "# EOF\n"; }

private:
    void sample_text(std::string const& name, std::vector<std::string> const& labels, std::string const& value);
    std::string out_;
};

// ---- progress ----------------------------------------------------------------

/// The progress line on stderr, for caches of more than `threshold` entries (smaller
/// ones finish before anyone would look), or for any when `forced` (--progress). On a
/// terminal one line updated in place with \r, with the rate and the time left;
/// otherwise (a log, a pipe) a full line at each tenth of the work.
class progress_line {
public:
    static constexpr std::uint64_t threshold = 10000;

    explicit progress_line(bool enabled = true, bool forced = false);
    ~progress_line() { finish(); }
    progress_line(progress_line const&) = delete;
    progress_line& operator=(progress_line const&) = delete;

    /// `done` of `total` units of `what`; shown only once `entries` is over the threshold.
    void update(std::string const& what, std::uint64_t done, std::uint64_t total, std::uint64_t entries);

    /// Ends an in-place line, so that what follows starts on a line of its own.
    void finish() { end_line(); }

private:
    void end_line();

    bool enabled_;
    bool forced_;
    bool tty_;
    std::int64_t started_ns_ = 0; ///< when the phase began (steady clock)
    bool open_ = false;
    std::string what_;
    int last_tenth_ = 0;
};

} // namespace compile_cache_tool
