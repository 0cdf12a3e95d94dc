// compile_cache: one function chosen once per process among implementations that
// differ only in the CPU instructions they use (SHA-256, CRC-32C), and the ARM
// feature probe they share.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/env.hpp>
#include <compile_cache/detail/platform.hpp>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace compile_cache::detail {

/// Bits of AT_HWCAP in the Linux arm64 ABI (arch/arm64/include/uapi/asm/hwcap.h).
inline constexpr unsigned long arm_hwcap_sha2 = 1ul << 6;
inline constexpr unsigned long arm_hwcap_crc32 = 1ul << 7;

/// Whether the kernel says this CPU has the feature `hwcap_bit`: on AArch64 Linux only;
/// false elsewhere (code built for a target with the feature does not ask).
COMPILE_CACHE_DECL bool arm_cpu_has(unsigned long hwcap_bit) noexcept;

/// One implementation: which, its function, and whether this CPU runs it.
template <class Backend, class Function>
struct cpu_implementation {
    Backend backend;
    Function function;
    bool (*runs_here)() noexcept;
};

inline bool always_runs() noexcept { return true; }

/// The implementation in use of a function with several, described by `Traits`:
///   using backend = an enum with a `portable` enumerator;
///   using function = a noexcept function pointer type;
///   static constexpr char const* variable: the environment variable whose value
///       names the implementation to use (`portable`, or another's to_string name, if
///       this CPU runs it; unset, empty, `auto`: the fastest);
///   static constexpr cpu_implementation<backend, function> compiled[]: those this
///       build contains, fastest first, the portable one (always_runs) last;
/// and a `char const* to_string(backend) noexcept` that argument-dependent lookup finds,
/// naming each implementation (never null): what the variable accepts.
/// The pointer starts as first_call, which chooses, stores the choice and forwards:
/// after that every call is one relaxed load and one indirect call. Constant-
/// initialized, so usable from other static initializers; relaxed suffices since
/// every value ever stored computes the same results.
template <class Traits, class Fn = typename Traits::function>
struct cpu_dispatch;

template <class Traits, class R, class... Args>
struct cpu_dispatch<Traits, R (*)(Args...) noexcept> {
    using backend = typename Traits::backend;
    using function = R (*)(Args...) noexcept;

    static R first_call(Args... args) noexcept { return resolve()(args...); }

    inline static std::atomic<function> active{&first_call};

    static R call(Args... args) noexcept { return active.load(std::memory_order_relaxed)(args...); }

    /// The function of `b`; null when this build does not contain it.
    static function function_of(backend b) noexcept {
        for (auto const& i : Traits::compiled)
            if (i.backend == b) return i.function;
        return nullptr;
    }

    /// Whether `b` is compiled in and this CPU runs it (asks the CPU each time).
    static bool runs_here(backend b) noexcept {
        for (auto const& i : Traits::compiled)
            if (i.backend == b) return i.runs_here();
        return false;
    }

    /// The choice given the variable's value (null when unset): the implementation it
    /// names (to_string's name: `portable`, `x86-sse4.2`, ...) when this CPU runs it;
    /// otherwise the fastest that runs here. Sets *not_understood for a value other than
    /// unset, empty, `auto` or such a name.
    static backend choose(char const* env_value, bool* not_understood = nullptr) noexcept {
        bool const automatic = env_value == nullptr || *env_value == '\0' || std::strcmp(env_value, "auto") == 0;
        if (not_understood != nullptr) *not_understood = !automatic;
        if (!automatic)
            for (auto const& i : Traits::compiled)
                if (std::strcmp(env_value, to_string(i.backend)) == 0 && i.runs_here()) {
                    if (not_understood != nullptr) *not_understood = false;
                    return i.backend;
                }
        for (auto const& i : Traits::compiled)
            if (i.runs_here()) return i.backend;
        return backend::portable;
    }

    /// The names choose() accepts here besides `auto`, fastest first, comma-separated,
    /// into `out` (cut short if it does not fit).
    static void accepted_names(char* out, std::size_t size) noexcept {
        std::size_t used = 0;
        out[0] = '\0';
        for (auto const& i : Traits::compiled) {
            if (!i.runs_here()) continue;
            int const n = std::snprintf(out + used, size - used, "%s%s", used == 0 ? "" : ", ", to_string(i.backend));
            if (n < 0 || static_cast<std::size_t>(n) >= size - used) return;
            used += static_cast<std::size_t>(n);
        }
    }

    /// Makes the automatic choice (a value not understood is one line on stderr) and
    /// stores it, unless set() won a race with the first call: then set()'s stays.
    static function resolve() noexcept {
        char const* const setting = std::getenv(Traits::variable);
        bool not_understood = false;
        function const chosen = function_of(choose(setting, &not_understood));
        if (not_understood) {
            char names[256];
            accepted_names(names, sizeof names);
            report_unknown_implementation(Traits::variable, setting, names);
        }
        function expected = &first_call;
        if (active.compare_exchange_strong(expected, chosen, std::memory_order_relaxed)) return chosen;
        return expected;
    }

    /// The implementation in use (making the automatic choice now if none was made).
    static backend current() noexcept {
        function f = active.load(std::memory_order_relaxed);
        if (f == &first_call) f = resolve();
        for (auto const& i : Traits::compiled)
            if (i.function == f) return i.backend;
        return backend::portable;
    }

    /// Uses `b` from now on; false, and nothing changed, when it does not run here.
    static bool set(backend b) noexcept {
        if (!runs_here(b)) return false;
        active.store(function_of(b), std::memory_order_relaxed);
        return true;
    }
};

} // namespace compile_cache::detail

#include <compile_cache/detail/impl/cpu_dispatch.ipp>
