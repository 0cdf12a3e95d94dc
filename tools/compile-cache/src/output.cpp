// compile-cache: JSON, aligned text and the progress line (output.hpp).
#include "output.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <unistd.h>

namespace compile_cache_tool {

void append_json_string(std::string& out, std::string_view s) {
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

json_writer& json_writer::key(std::string_view name) {
    separate();
    append_json_string(out_, name);
    out_ += ':';
    after_key_ = true;
    return *this;
}

json_writer& json_writer::value(std::string_view s) {
    separate();
    append_json_string(out_, s);
    return *this;
}

void json_writer::separate() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_.empty()) {
        if (!first_.back()) out_ += ',';
        first_.back() = false;
    }
}

json_writer& json_writer::open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
    return *this;
}

json_writer& json_writer::close(char c) {
    out_ += c;
    first_.pop_back();
    return *this;
}

json_writer& json_writer::raw(std::string const& text) {
    separate();
    out_ += text;
    return *this;
}

std::string human_size(std::uint64_t bytes) {
    static char const* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::size_t const last = sizeof units / sizeof units[0] - 1;
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double v = static_cast<double>(bytes) / 1024.0;
    std::size_t u = 0;
    while (v >= 1024.0 && u < last) {
        v /= 1024.0;
        ++u;
    }
    // Chosen by the value as printed: 1023.6 KiB prints as 1.0 MiB, never 1024 KiB; 9.96 as 10, not 10.0.
    bool whole = std::round(v * 10.0) >= 100.0;
    if (whole && std::round(v) >= 1024.0 && u < last) {
        v /= 1024.0;
        ++u;
        whole = false;
    }
    char buf[32];
    if (whole) std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
    else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

std::string human_age(std::int64_t seconds) {
    if (seconds < 0) return "in the future";
    if (seconds < 120) return std::to_string(seconds) + " s";
    if (seconds < 2 * 3600) return std::to_string(seconds / 60) + " min";
    if (seconds < 2 * 86400) return std::to_string(seconds / 3600) + " h";
    return std::to_string(seconds / 86400) + " days";
}

std::string human_duration_ns(std::uint64_t ns) {
    char buf[48];
    if (ns < 1000000000ull)
        std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
    return buf;
}

namespace {

/// A time (ns since the epoch) as strftime's `format` writes it, in UTC or local time.
std::string formatted_time(std::int64_t ns, bool utc, char const* format) {
    std::time_t const t = static_cast<std::time_t>(ns / 1000000000);
    std::tm tm{};
    if ((utc ? ::gmtime_r(&t, &tm) : ::localtime_r(&t, &tm)) == nullptr) return "?";
    char buf[64];
    std::strftime(buf, sizeof buf, format, &tm);
    return buf;
}

} // namespace

std::string local_time(std::int64_t ns) { return formatted_time(ns, false, "%Y-%m-%d %H:%M:%S"); }

std::string utc_time(std::int64_t ns) { return formatted_time(ns, true, "%Y-%m-%dT%H:%M:%SZ"); }

std::string text_table::str(std::vector<bool> const& right) const {
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

json_writer& json_writer::raw_number(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", d);
    return raw(buf);
}

std::string openmetrics_label_value(std::string_view value) {
    std::string out = "\"";
    for (char c : value) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out + "\"";
}

void openmetrics_writer::family(std::string const& name, char const* type, std::string const& help) {
    out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void openmetrics_writer::sample(std::string const& name, std::vector<std::string> const& labels, std::uint64_t value) {
    sample_text(name, labels, std::to_string(value));
}

void openmetrics_writer::sample_seconds(std::string const& name, std::vector<std::string> const& labels,
                                        std::int64_t ns) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(ns) / 1e9);
    sample_text(name, labels, buf);
}

void openmetrics_writer::sample_text(std::string const& name, std::vector<std::string> const& labels,
                                     std::string const& value) {
    out_ += name;
    for (std::size_t i = 0; i < labels.size(); ++i) out_ += (i == 0 ? "{" : ",") + labels[i];
    out_ += (labels.empty() ? " " : "} ") + value + "\n";
}

namespace {
std::int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
} // namespace

progress_line::progress_line(bool enabled, bool forced)
    : enabled_(enabled), forced_(forced), tty_(::isatty(2) == 1) {}

void progress_line::update(std::string const& what, std::uint64_t done, std::uint64_t total, std::uint64_t entries) {
    if (!enabled_ || (entries <= threshold && !forced_) || total == 0) return;
    if (what != what_) {
        end_line();
        what_ = what;
        started_ns_ = steady_ns();
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
    std::string line = "compile-cache: " + what + ": " + std::to_string(done) + " of " + std::to_string(total) + " (" +
                       std::to_string(entries) + " entries)";
    if (tty_) {
        // For people watching: how fast, and how long it still takes at that pace.
        double const seconds = static_cast<double>(steady_ns() - started_ns_) / 1e9;
        if (seconds > 0 && done > 0) {
            double const per_second = static_cast<double>(done) / seconds;
            char pace[64];
            std::snprintf(pace, sizeof pace, ", %.0f/s, ", per_second);
            line += pace + human_age(static_cast<std::int64_t>(static_cast<double>(total - done) / per_second + 0.5)) +
                    " left";
        }
        std::fprintf(stderr, "\r%s\033[K", line.c_str());
        open_ = true;
    } else {
        std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
}

void progress_line::end_line() {
    if (open_) {
        std::fputc('\n', stderr);
        std::fflush(stderr);
    }
    open_ = false;
}

} // namespace compile_cache_tool
