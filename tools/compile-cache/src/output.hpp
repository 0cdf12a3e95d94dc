// compile-cache: how the tool writes what it found — JSON for scripts, aligned text
// for people — and its progress line on stderr for large directories.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>

namespace compile_cache_tool {

// ---- JSON --------------------------------------------------------------------

/// Appends `s` as a JSON string. Names and paths in entries are arbitrary bytes:
/// valid UTF-8 passes through, control characters are escaped, and each byte that is
/// not part of valid UTF-8 becomes U+FFFD, so that the output always parses.
inline void append_json_string(std::string& out, std::string_view s) {
    static char const hex[] = "0123456789abcdef";
    out += '"';
    std::size_t i = 0;
    while (i < s.size()) {
        auto const c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 0xf];
                } else {
                    out += static_cast<char>(c);
                }
            }
            ++i;
            continue;
        }
        // The length of a well-formed UTF-8 sequence starting here, or 0.
        std::size_t n = 0;
        std::uint32_t cp = 0;
        if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1fu;
        else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0fu;
        else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07u;
        bool valid = n != 0 && i + n <= s.size();
        for (std::size_t k = 1; valid && k < n; ++k) {
            auto const cc = static_cast<unsigned char>(s[i + k]);
            valid = (cc & 0xc0u) == 0x80u;
            cp = (cp << 6) | (cc & 0x3fu);
        }
        // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
        if (valid && ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
                      (cp >= 0xd800 && cp <= 0xdfff)))
            valid = false;
        if (valid) {
            out.append(s.data() + i, n);
            i += n;
        } else {
            out += "\\ufffd";
            ++i;
        }
    }
    out += '"';
}

/// A JSON document written front to back; the writer puts in the commas.
class json_writer {
public:
    json_writer& begin_object() { return open('{'); }
    json_writer& end_object() { return close('}'); }
    json_writer& begin_array() { return open('['); }
    json_writer& end_array() { return close(']'); }

    json_writer& key(std::string_view name) {
        separate();
        append_json_string(out_, name);
        out_ += ':';
        after_key_ = true;
        return *this;
    }
    json_writer& value(std::string_view s) {
        separate();
        append_json_string(out_, s);
        return *this;
    }
    json_writer& value(char const* s) { return value(std::string_view(s)); }
    json_writer& value(std::string const& s) { return value(std::string_view(s)); }
    json_writer& value(std::uint64_t n) { return raw(std::to_string(n)); }
    json_writer& value(std::int64_t n) { return raw(std::to_string(n)); }
    json_writer& value(bool b) { return raw(b ? "true" : "false"); }
    json_writer& null() { return raw("null"); }

    template <class T>
    json_writer& field(std::string_view name, T const& v) {
        key(name);
        return value(v);
    }

    /// The document, with a final newline.
    std::string str() const { return out_ + "\n"; }

private:
    void separate() {
        if (after_key_) {
            after_key_ = false;
            return;
        }
        if (!first_.empty()) {
            if (!first_.back()) out_ += ',';
            first_.back() = false;
        }
    }
    json_writer& open(char c) {
        separate();
        out_ += c;
        first_.push_back(true);
        return *this;
    }
    json_writer& close(char c) {
        out_ += c;
        first_.pop_back();
        return *this;
    }
    json_writer& raw(std::string const& text) {
        separate();
        out_ += text;
        return *this;
    }

    std::string out_;
    std::vector<bool> first_; ///< per open container: nothing written in it yet
    bool after_key_ = false;
};

// ---- text for people -------------------------------------------------------

/// `s` with every byte that could upset a terminal (control characters, escape
/// sequences) written as \xNN: entry names come from files anyone may have written.
inline std::string printable(std::string_view s) {
    static char const hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    auto escape = [&](unsigned char c) {
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 0xf];
    };
    std::size_t i = 0;
    while (i < s.size()) {
        auto const c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f || c == '\\') escape(c);
            else out += static_cast<char>(c);
            ++i;
            continue;
        }
        // A well-formed UTF-8 sequence is kept, unless it encodes a C1 control
        // (U+0080..U+009F: 0xc2 0x80..0x9f), which some terminals act on as they do on
        // the raw bytes 0x80..0x9f; anything malformed is escaped byte by byte.
        std::size_t const n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        bool ok = n != 0 && i + n <= s.size();
        for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
        if (ok && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) <= 0x9f) ok = false;
        if (ok && c == 0xe0 && static_cast<unsigned char>(s[i + 1]) < 0xa0) ok = false; // overlong
        if (ok && c == 0xf0 && static_cast<unsigned char>(s[i + 1]) < 0x90) ok = false; // overlong
        if (ok && c == 0xed && static_cast<unsigned char>(s[i + 1]) >= 0xa0) ok = false; // surrogates
        if (ok && c == 0xf4 && static_cast<unsigned char>(s[i + 1]) >= 0x90) ok = false; // over U+10FFFF
        if (!ok) {
            escape(c);
            ++i;
            continue;
        }
        out.append(s.data() + i, n);
        i += n;
    }
    return out;
}

/// 1536 -> "1.5 KiB"; below 1 KiB, bytes.
inline std::string human_size(std::uint64_t bytes) {
    static char const* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double v = static_cast<double>(bytes) / 1024.0;
    std::size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

/// A duration in seconds as people say it: "42 s", "5 min", "3 h", "12 days".
inline std::string human_age(std::int64_t seconds) {
    if (seconds < 0) return "in the future";
    if (seconds < 120) return std::to_string(seconds) + " s";
    if (seconds < 2 * 3600) return std::to_string(seconds / 60) + " min";
    if (seconds < 2 * 86400) return std::to_string(seconds / 3600) + " h";
    return std::to_string(seconds / 86400) + " days";
}

/// Nanoseconds as milliseconds or seconds, for compile and load times.
inline std::string human_duration_ns(std::uint64_t ns) {
    char buf[48];
    if (ns < 1000000000ull)
        std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
    return buf;
}

/// A time (ns since the epoch) in local time, to the second: "2026-11-29 18:41:01".
inline std::string local_time(std::int64_t ns) {
    std::time_t const t = static_cast<std::time_t>(ns / 1000000000);
    std::tm tm{};
    if (::localtime_r(&t, &tm) == nullptr) return "?";
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

/// A time (ns since the epoch) in UTC, ISO 8601: "2026-11-29T18:41:01Z", for JSON.
inline std::string utc_time(std::int64_t ns) {
    std::time_t const t = static_cast<std::time_t>(ns / 1000000000);
    std::tm tm{};
    if (::gmtime_r(&t, &tm) == nullptr) return "?";
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/// Rows of cells printed in columns separated by two spaces; the last column is not
/// padded.
class text_table {
public:
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    /// `right[i]`: column i is aligned right (numbers).
    std::string str(std::vector<bool> const& right = {}) const {
        std::vector<std::size_t> width;
        for (auto const& row : rows_)
            for (std::size_t i = 0; i < row.size(); ++i) {
                if (width.size() <= i) width.push_back(0);
                width[i] = std::max(width[i], row[i].size());
            }
        std::string out;
        for (auto const& row : rows_) {
            for (std::size_t i = 0; i < row.size(); ++i) {
                bool const last = i + 1 == row.size();
                std::size_t const pad = width[i] - row[i].size();
                bool const r = i < right.size() && right[i];
                if (r) out.append(pad, ' ');
                out += row[i];
                if (!last) out.append(r ? 2 : pad + 2, ' ');
            }
            while (!out.empty() && out.back() == ' ') out.pop_back(); // an empty last cell
            out += '\n';
        }
        return out;
    }

private:
    std::vector<std::vector<std::string>> rows_;
};

// ---- progress ----------------------------------------------------------------

/// The progress line on stderr, for directories of more than `threshold` entries
/// (smaller ones finish before anyone would look). On a terminal one line updated
/// in place with \r; otherwise (a log, a pipe) a full line at each tenth of the work.
class progress_line {
public:
    static constexpr std::uint64_t threshold = 10000;

    explicit progress_line(bool enabled = true) : enabled_(enabled), tty_(::isatty(2) == 1) {}
    ~progress_line() { finish(); }
    progress_line(progress_line const&) = delete;
    progress_line& operator=(progress_line const&) = delete;

    /// `done` of `total` units of `what`; shown only once `entries` is over the threshold.
    void update(std::string const& what, std::uint64_t done, std::uint64_t total, std::uint64_t entries) {
        if (!enabled_ || entries <= threshold || total == 0) return;
        if (what != what_) {
            end_line();
            what_ = what;
            last_tenth_ = 0; // the first line at a tenth done: the phase is known to be long by then
        }
        int const tenth = static_cast<int>(done * 10 / total);
        if (tty_) {
            // At most a few hundred updates per phase: enough to look alive.
            if (done != total && done % (total / 256 + 1) != 0) return;
        } else if (tenth == last_tenth_) {
            return;
        }
        last_tenth_ = tenth;
        std::string const line = "compile-cache: " + what + ": " + std::to_string(done) + " of " +
                                 std::to_string(total) + " (" + std::to_string(entries) + " entries)";
        if (tty_) {
            std::fprintf(stderr, "\r%s\033[K", line.c_str());
            open_ = true;
        } else {
            std::fprintf(stderr, "%s\n", line.c_str());
        }
        std::fflush(stderr);
    }

    /// Ends an in-place line, so that what follows starts on a line of its own.
    void finish() { end_line(); }

private:
    void end_line() {
        if (open_) {
            std::fputc('\n', stderr);
            std::fflush(stderr);
        }
        open_ = false;
    }

    bool enabled_;
    bool tty_;
    bool open_ = false;
    std::string what_;
    int last_tenth_ = 0;
};

} // namespace compile_cache_tool
