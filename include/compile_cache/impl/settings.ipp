// compile_cache: the definitions of settings.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <algorithm>
#include <cstdio>
#include <limits>

namespace compile_cache {

std::optional<std::uint64_t> parse_byte_size(std::string_view s) noexcept {
    s = detail::trim_blanks(s);
    std::size_t i = 0;
    std::uint64_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        auto const digit = static_cast<std::uint64_t>(s[i] - '0');
        if (n > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        n = n * 10 + digit;
        ++i;
    }
    if (i == 0) return std::nullopt;
    std::string_view rest = s.substr(i);
    unsigned shift = 0;
    if (!rest.empty()) {
        switch (rest.front()) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return std::nullopt;
        }
        rest.remove_prefix(1);
        if (rest == "B" || rest == "b" || rest == "iB" || rest == "ib") rest = {};
        if (!rest.empty()) return std::nullopt;
    }
    if (shift != 0 && n > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
    return n << shift;
}

namespace detail {
/// parse_milliseconds, saying why not: `too_long` is set when `s` is a whole number of
/// milliseconds or seconds past the bound.
inline std::optional<std::chrono::milliseconds> parse_milliseconds_or_why(std::string_view s, bool& too_long) {
    too_long = false;
    s = trim_blanks(s);
    std::size_t i = 0;
    std::int64_t n = 0;
    constexpr std::int64_t limit = std::int64_t{1} << 40; // about 35 years of milliseconds
    bool over = false;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
        if (over) continue;
        n = n * 10 + (s[i] - '0');
        over = n > limit;
    }
    if (i == 0) return std::nullopt;
    std::string const unit = lower(s.substr(i));
    if (!unit.empty() && unit != "ms" && unit != "s") return std::nullopt;
    // The bound holds in milliseconds, so that a deadline of now plus this never
    // overflows a clock's nanoseconds.
    if (unit == "s") {
        if (n > limit / 1000)
            over = true;
        else
            n *= 1000;
    }
    too_long = over;
    if (over) return std::nullopt;
    return std::chrono::milliseconds(n);
}
} // namespace detail

std::optional<std::chrono::milliseconds> parse_milliseconds(std::string_view s) noexcept {
    try {
        bool too_long = false;
        return detail::parse_milliseconds_or_why(s, too_long);
    } catch (...) { // bad_alloc
        return std::nullopt;
    }
}

std::optional<std::uint64_t> parse_whole_number(std::string_view s, std::size_t max_digits) noexcept {
    if (s.empty() || s.size() > max_digits || max_digits > 19) return std::nullopt;
    std::uint64_t n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return n;
}

std::optional<double> parse_fraction(std::string_view s) noexcept {
    s = detail::trim_blanks(s);
    std::uint64_t digits = 0;
    std::size_t count = 0, i = 0;
    int scale = 0; // the value is digits * 10^scale
    bool point = false;
    for (; i < s.size() && s[i] != 'e' && s[i] != 'E'; ++i) {
        char const c = s[i];
        if (c == '.' && !point) {
            point = true;
        } else if (c >= '0' && c <= '9') {
            if (++count > 18) return std::nullopt;
            digits = digits * 10 + static_cast<std::uint64_t>(c - '0');
            if (point) --scale;
        } else {
            return std::nullopt;
        }
    }
    if (count == 0) return std::nullopt;
    if (i < s.size()) { // an exponent: e, an optional sign, 1 to 3 digits
        std::string_view e = s.substr(i + 1);
        bool const negative = !e.empty() && e.front() == '-';
        if (!e.empty() && (e.front() == '-' || e.front() == '+')) e.remove_prefix(1);
        std::optional<std::uint64_t> const n = parse_whole_number(e, 3);
        if (!n) return std::nullopt;
        scale += negative ? -static_cast<int>(*n) : static_cast<int>(*n);
    }
    double v = static_cast<double>(digits);
    for (; scale < 0 && v != 0; ++scale) v /= 10;
    for (; scale > 0 && v != 0; --scale) {
        v *= 10;
        if (v > 1) return std::nullopt;
    }
    if (v > 1) return std::nullopt;
    return v;
}

std::optional<bool> parse_switch(std::string_view s) noexcept {
    try {
        if (detail::is_on(s)) return true;
        if (detail::is_off(s)) return false;
    } catch (...) {
    }
    return std::nullopt;
}

namespace detail {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t const above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// The line a remote gets as its reason when it is asked for without trust.
inline std::string untrusted_remote_line(settings_reader const& env) {
    return env.name("_REMOTE") +
           " is set but entries are not authenticated, and what a shared server returns runs as code "
           "here: the remote is off. Give every machine the same secret with " +
           env.name("_SECRET_FILE") + ", or set " + env.name("_REMOTE_INSECURE") +
           "=1 if only trusted machines can write to the server";
}

void held_lines::emit(std::string const& line) const noexcept {
    if (out_) {
        try {
            out_(line);
        } catch (...) {
        }
    } else {
        std::fprintf(stderr, "compile_cache: %s\n", line.c_str());
    }
}

void held_lines::hold(std::string line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (released_) {
        emit(line);
        return;
    }
    lines_.push_back(std::move(line));
}

void held_lines::release() noexcept {
    std::vector<std::string> lines;
    try {
        std::lock_guard<std::mutex> lock(mutex_);
        if (released_) return;
        released_ = true;
        lines.swap(lines_);
    } catch (...) {
        return;
    }
    for (std::string const& line : lines) emit(line);
}

void held_lines::drop() noexcept {
    try {
        std::lock_guard<std::mutex> lock(mutex_);
        lines_.clear();
    } catch (...) {
    }
}

void held_lines::say(std::string const& line) noexcept {
    release();
    emit(line);
}

settings_reader settings_reader_access::answering(storage_settings const& settings) {
    settings_reader r = settings.env;
    r.answers_ = std::make_shared<old_form_answers>();
    r.answers_->authenticated = settings.authenticated;
    r.answers_->remote_trusted = settings.remote_trusted;
    r.answers_->logger = settings.logger;
    r.answers_->cache_off = settings.cache_off;
    r.answers_->untrusted_line = settings.untrusted_remote_reason();
    return r;
}

} // namespace detail

void settings_reader::report(std::string const& line) const noexcept {
    if (answers_ && answers_->confirmed) {
        try {
            answers_->after_confirm.push_back(line); // the deprecated form: said when from_env returns
            return;
        } catch (...) {
        }
    }
    if (held_) {
        held_->say(line);
    } else if (report_) {
        try {
            report_(line);
        } catch (...) {
        }
    } else {
        std::fprintf(stderr, "compile_cache: %s\n", line.c_str());
    }
}

void settings_reader::report_value(std::string_view suffix, std::string const& value,
                                   std::string const& text) const noexcept {
    try {
        report(name(suffix) + "=\"" + value + "\" " + text);
    } catch (...) {
    }
}

std::uint64_t settings_reader::byte_size(std::string_view suffix, std::uint64_t fallback,
                                         std::string const& fallback_text) const {
    std::string const v = value(suffix);
    if (v.empty()) return fallback;
    if (auto const n = parse_byte_size(v)) return *n;
    report_value(suffix, v,
                 "is not a size (a number of bytes, or one with a K, M or G suffix in powers of 1024, such as "
                 "48K, 500M or 2G); using the default, " +
                     fallback_text);
    return fallback;
}

std::chrono::milliseconds settings_reader::milliseconds(std::string_view suffix,
                                                        std::chrono::milliseconds fallback) const {
    std::string const v = value(suffix);
    if (v.empty()) return fallback;
    bool too_long = false;
    if (auto const d = detail::parse_milliseconds_or_why(v, too_long)) return *d;
    report_value(suffix, v,
                 std::string(too_long ? "is longer than a duration may be (at most 1099511627776 ms, about 35 years)"
                                      : "is not a duration (milliseconds, such as 100 or 1500ms, or seconds, such "
                                        "as 2s)") +
                     "; using the default, " + std::to_string(fallback.count()) + " ms");
    return fallback;
}

bool settings_reader::flag(std::string_view suffix, bool fallback, std::string const& otherwise) const {
    std::string const v = value(suffix);
    if (detail::trim_blanks(v).empty()) return fallback;
    if (auto const b = parse_switch(v)) return *b;
    report_value(suffix, v, "is not understood (1, on, true or yes; 0, off, false or no); " + otherwise);
    return fallback;
}

bool settings_reader::confirm() noexcept {
    if (!answers_) return true;
    answers_->confirmed = true;
    if (held_) held_->release();
    return answers_->cache_off.empty();
}

bool settings_reader::remote_trusted() const {
    if (answers_) {
        if (!answers_->remote_trusted && !answers_->untrusted_said) {
            answers_->untrusted_said = true;
            report(answers_->untrusted_line);
        }
        return answers_->remote_trusted;
    }
    bool const trusted = flag("_REMOTE_INSECURE", false, "the remote needs a secret");
    if (!trusted) report(detail::untrusted_remote_line(*this));
    return trusted;
}

std::string storage_settings::untrusted_remote_reason() const { return detail::untrusted_remote_line(env); }

} // namespace compile_cache

#endif
