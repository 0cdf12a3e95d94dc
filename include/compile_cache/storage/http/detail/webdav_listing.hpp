// compile_cache: the reading of a WebDAV PROPFIND answer (RFC 4918 multistatus XML) into
// names, sizes and modification times, for the HTTP storage's listing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace compile_cache::detail {

/// One `<response>` of a multistatus answer: the last segment of its href (without a
/// trailing `/`), whether it is a collection (its href ends in `/`), its
/// getcontentlength and getlastmodified (seconds since the epoch; 0 when absent or not
/// understood).
struct webdav_item {
    std::string name;
    bool collection = false;
    std::uint64_t size = 0;
    std::int64_t modified_s = 0;
};

/// Seconds since the epoch of an RFC 1123 date (`Wed, 02 Dec 2026 07:35:59 GMT`); 0 when
/// it is not one.
inline std::int64_t parse_http_date(std::string_view s) noexcept {
    std::size_t const comma = s.find(',');
    if (comma != std::string_view::npos) s.remove_prefix(comma + 1);
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    auto number = [&](std::size_t digits, int& out) {
        out = 0;
        for (std::size_t i = 0; i < digits; ++i) {
            if (s.empty() || s.front() < '0' || s.front() > '9') return false;
            out = out * 10 + (s.front() - '0');
            s.remove_prefix(1);
        }
        return true;
    };
    auto skip = [&](char c) {
        if (s.empty() || s.front() != c) return false;
        s.remove_prefix(1);
        return true;
    };
    int day = 0, year = 0, hour = 0, minute = 0, second = 0, month = -1;
    if (!number(2, day) || !skip(' ') || s.size() < 4) return 0;
    static char const* const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int m = 0; m < 12; ++m)
        if (s.substr(0, 3) == months[m]) month = m;
    if (month < 0) return 0;
    s.remove_prefix(3);
    if (!skip(' ') || !number(4, year) || !skip(' ') || !number(2, hour) || !skip(':') || !number(2, minute) ||
        !skip(':') || !number(2, second))
        return 0;
    // Days from the civil date (proleptic Gregorian), as timegm would, without its locale.
    int const y = year - (month < 2 ? 1 : 0);
    int const era = (y >= 0 ? y : y - 399) / 400;
    int const yoe = y - era * 400;
    int const mp = (month + 10) % 12; // March is 0
    int const doy = (153 * mp + 2) / 5 + day - 1;
    int const doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    std::int64_t const days = static_cast<std::int64_t>(era) * 146097 + doe - 719468;
    return days * 86400 + hour * 3600 + minute * 60 + second;
}

/// The `<response>` elements of a multistatus body, whatever the namespace prefix the
/// server uses (`D:`, `d:`, `lp1:`, none). Malformed parts are skipped, never a failure:
/// the caller keeps only names that are keys. At most `max_items` of them: past that,
/// `over` is set and the items read so far are returned (a server cannot make the list
/// grow past the caller's bound).
inline std::vector<webdav_item> parse_webdav_multistatus(std::string_view xml, std::size_t max_items, bool& over) {
    over = false;
    std::vector<webdav_item> items;
    webdav_item current;
    bool in_response = false;
    std::size_t pos = 0;
    auto local_name = [](std::string_view tag) {
        std::size_t const end = tag.find_first_of(" \t\r\n/>");
        tag = tag.substr(0, end);
        std::size_t const colon = tag.rfind(':');
        return colon == std::string_view::npos ? tag : tag.substr(colon + 1);
    };
    auto text_after = [&](std::size_t tag_end) {
        std::size_t const next = xml.find('<', tag_end);
        return xml.substr(tag_end, next == std::string_view::npos ? std::string_view::npos : next - tag_end);
    };
    while ((pos = xml.find('<', pos)) != std::string_view::npos) {
        std::size_t const close = xml.find('>', pos);
        if (close == std::string_view::npos) break;
        std::string_view tag = xml.substr(pos + 1, close - pos - 1);
        pos = close + 1;
        if (tag.empty() || tag.front() == '?' || tag.front() == '!') continue;
        bool const closing = tag.front() == '/';
        if (closing) tag.remove_prefix(1);
        std::string_view const name = local_name(tag);
        if (name == "response") {
            if (!closing) {
                current = webdav_item{};
                in_response = true;
            } else if (in_response) {
                if (items.size() >= max_items) {
                    over = true;
                    return items;
                }
                items.push_back(current);
                in_response = false;
            }
            continue;
        }
        if (closing || !in_response || (!tag.empty() && tag.back() == '/')) continue;
        if (name == "href") {
            std::string_view href = text_after(pos);
            while (!href.empty() && (href.back() == ' ' || href.back() == '\n' || href.back() == '\r')) href.remove_suffix(1);
            current.collection = !href.empty() && href.back() == '/';
            while (!href.empty() && href.back() == '/') href.remove_suffix(1);
            std::size_t const slash = href.rfind('/');
            current.name = std::string(slash == std::string_view::npos ? href : href.substr(slash + 1));
        } else if (name == "getcontentlength") {
            std::uint64_t n = 0;
            for (char const c : text_after(pos)) {
                if (c < '0' || c > '9') break;
                if (n > (UINT64_MAX - 9) / 10) break;
                n = n * 10 + static_cast<std::uint64_t>(c - '0');
            }
            current.size = n;
        } else if (name == "getlastmodified") {
            current.modified_s = parse_http_date(text_after(pos));
        } else if (name == "collection") {
            current.collection = true;
        }
    }
    return items;
}

/// Every `<response>` of a multistatus body (parse_webdav_multistatus without a bound).
inline std::vector<webdav_item> parse_webdav_multistatus(std::string_view xml) {
    bool over = false;
    return parse_webdav_multistatus(xml, SIZE_MAX, over);
}

} // namespace compile_cache::detail
