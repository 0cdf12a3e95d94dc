// The compile-cache tool's tests' support: running the tool as a child, and reading
// its JSON with Python's json module.
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include "tinyk_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#ifndef COMPILE_CACHE_TOOL
#error "COMPILE_CACHE_TOOL (the path of the compile-cache binary) must be defined by the build"
#endif

namespace compile_cache_tool_test {

using namespace tinyk_test;

// Requires that the run `r` exited with `code`, its output shown when not; `r` (a call
// to tool(), say) is evaluated once.
#define REQUIRE_EXIT(r, code)                               \
    do {                                                    \
        auto const& compile_cache_tool_run = (r);           \
        INFO(compile_cache_tool_run.describe());            \
        REQUIRE(compile_cache_tool_run.exited(code));       \
    } while (0)

inline std::vector<std::string> tool_environment() { return compile_cache_test::clean_environment({"TZ=UTC"}); }

/// compile-cache ARGS... as a child (in `cwd`, when given).
inline process_result tool(std::vector<std::string> const& args, fs::path const& cwd = {}) {
    process_spec spec;
    spec.cwd = cwd.string();
    spec.argv = {COMPILE_CACHE_TOOL};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = tool_environment();
    spec.timeout = std::chrono::milliseconds(120000);
    return run_process(spec);
}

inline std::string python3() {
    for (char const* p : {"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"})
        if (::access(p, X_OK) == 0) return p;
    FAIL("python3 is needed to parse the tool's JSON");
    return {};
}

/// Parses `json` with Python's json module and prints the Python expression `expr`
/// over it (the document is `d`); fails the test when the JSON does not parse.
inline std::string json_query(std::string const& json, std::string const& expr) {
    temp_dir scratch("compile-cache-json");
    fs::path const file = scratch.path() / "doc.json";
    write_file(file, json);
    process_spec spec;
    spec.argv = {python3(), "-c", "import json, sys\nd = json.load(open(sys.argv[1], encoding='utf-8'))\nprint(" +
                                      expr + ")",
                 file.string()};
    spec.env = tool_environment();
    process_result const r = run_process(spec);
    INFO("JSON: " << json);
    INFO(r.describe());
    REQUIRE(r.exited(0));
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

inline std::string count_lines(std::string const& text, std::string const& needle) {
    std::size_t n = 0;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
    return std::to_string(n);
}

/// The rest of the first line of `text` that starts with `label`, without the spaces
/// after it ("" when there is none).
inline std::string line_starting(std::string const& text, std::string const& label) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(label, 0) == 0) {
            std::size_t const start = line.find_first_not_of(' ', label.size());
            return start == std::string::npos ? std::string() : line.substr(start);
        }
    return {};
}

/// The lines of `text`, without their newlines.
inline std::vector<std::string> lines_of(std::string const& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

/// Every entry and identity record file of a cache directory (`ab/<hex>`, the files of a
/// fan-out folder whose names start with its two digits) and its bytes, by `ab/<name>`;
/// empty when `dir` does not exist. Packs of identity records (`ab/<hex ending 1e>`),
/// named anew at each write, are left out: pack_files counts them.
inline std::map<std::string, std::string> entry_files(fs::path const& dir) {
    std::map<std::string, std::string> out;
    if (!fs::exists(dir)) return out;
    for (auto const& folder : fs::directory_iterator(dir)) {
        std::string const f = folder.path().filename().string();
        if (f.size() != 2 || !folder.is_directory()) continue;
        for (auto const& e : fs::directory_iterator(folder.path()))
            if (e.path().filename().string().rfind(f, 0) == 0 &&
                !compile_cache::directory_layout::is_pack_name(e.path().filename().string()))
                out[f + "/" + e.path().filename().string()] = compile_cache_test::read_file(e.path());
    }
    return out;
}

/// The packs of identity records in a cache directory, by `ab/<name>`.
inline std::vector<std::string> pack_files(fs::path const& dir) {
    std::vector<std::string> out;
    if (!fs::exists(dir)) return out;
    for (auto const& folder : fs::directory_iterator(dir)) {
        std::string const f = folder.path().filename().string();
        if (f.size() != 2 || !folder.is_directory()) continue;
        for (auto const& e : fs::directory_iterator(folder.path()))
            if (compile_cache::directory_layout::is_pack_name(e.path().filename().string()))
                out.push_back(f + "/" + e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

#ifdef FILL_CACHE
/// fill_cache ARGS... (fill_cache.cpp): kernels stored through a real cache on a SQLite
/// file or a Redis server, or one entry damaged; returns what it printed (the keys).
inline std::string fill_cache(std::vector<std::string> const& args) {
    process_spec spec;
    spec.argv = {FILL_CACHE};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = tool_environment();
    spec.timeout = std::chrono::milliseconds(60000);
    process_result const r = run_process(spec);
    REQUIRE_EXIT(r, 0);
    return r.out;
}
#endif

} // namespace compile_cache_tool_test
