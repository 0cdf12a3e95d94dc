// The CPU-dispatched functions (SHA-256's block function, CRC-32C) under test on every
// implementation this machine runs: which ones are available, a scope that forces one,
// and what /proc/cpuinfo says the CPU has.
#pragma once

#include "catch2_compat.hpp"

#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace compile_cache_test {

/// What the tests need of one CPU-dispatched function, by its backend enum.
template <class Backend>
struct cpu_dispatch;

template <>
struct cpu_dispatch<compile_cache::sha256_backend> {
    using backend = compile_cache::sha256_backend;
    static constexpr backend all[] = {backend::portable, backend::x86_sha_ni, backend::arm_sha2};
    static bool available(backend b) { return compile_cache::sha256_implementation_available(b); }
    static backend current() { return compile_cache::sha256_implementation(); }
    static bool set(backend b) { return compile_cache::set_sha256_implementation(b); }
    /// What a process takes for COMPILE_CACHE_SHA256=`setting` (nullptr: unset), and
    /// whether it understood the setting.
    static backend choose(char const* setting, bool* not_understood = nullptr) {
        return compile_cache::detail::sha256_choose_backend(setting, not_understood);
    }
};

template <>
struct cpu_dispatch<compile_cache::crc32c_backend> {
    using backend = compile_cache::crc32c_backend;
    static constexpr backend all[] = {backend::portable, backend::x86_sse42, backend::arm_crc, backend::x86_avx512};
    static bool available(backend b) { return compile_cache::crc32c_implementation_available(b); }
    static backend current() { return compile_cache::crc32c_implementation(); }
    static bool set(backend b) { return compile_cache::set_crc32c_implementation(b); }
    /// What a process takes for COMPILE_CACHE_CRC32C=`setting` (nullptr: unset), and
    /// whether it understood the setting.
    static backend choose(char const* setting, bool* not_understood = nullptr) {
        return compile_cache::detail::crc32c_choose_backend(setting, not_understood);
    }
};

/// The implementations this build has and this CPU runs, the portable one first
/// (always there).
template <class Backend>
std::vector<Backend> available_backends() {
    std::vector<Backend> v;
    for (auto b : cpu_dispatch<Backend>::all)
        if (cpu_dispatch<Backend>::available(b)) v.push_back(b);
    return v;
}

/// Makes every call use `b` for the scope's lifetime, then restores the one before.
template <class Backend>
class backend_scope {
public:
    explicit backend_scope(Backend b) : previous_(cpu_dispatch<Backend>::current()) {
        REQUIRE(cpu_dispatch<Backend>::set(b));
        REQUIRE(cpu_dispatch<Backend>::current() == b);
    }
    backend_scope(backend_scope const&) = delete;
    backend_scope& operator=(backend_scope const&) = delete;
    ~backend_scope() { cpu_dispatch<Backend>::set(previous_); }

private:
    Backend previous_;
};

/// Runs `f` once under each available implementation, each in a backend_scope.
template <class Backend, class F>
void on_every_backend(F&& f) {
    for (auto b : available_backends<Backend>()) {
        INFO("backend " << compile_cache::to_string(b));
        backend_scope<Backend> scope(b);
        f(b);
    }
}

/// The words of /proc/cpuinfo's lines that start with `field`: "flags" on x86,
/// "Features" on arm64. Empty where there is no such file or line (e.g. an arm64
/// binary run under qemu-user on an x86 host sees the host's file).
inline std::vector<std::string> cpuinfo_words(std::string const& field) {
    std::vector<std::string> out;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(field, 0) != 0 || line.find(':') == std::string::npos) continue;
        std::istringstream words(line.substr(line.find(':') + 1));
        std::string w;
        while (words >> w) out.push_back(w);
    }
    return out;
}

inline bool contains(std::vector<std::string> const& words, char const* w) {
    for (auto const& x : words)
        if (x == w) return true;
    return false;
}

} // namespace compile_cache_test
