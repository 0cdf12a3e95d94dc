// compile_cache: a conformance kit for a Storage of your own. Not included by
// compile_cache.hpp; include it from your tests. Framework-free: each check returns the
// list of what failed (empty: conforms), so a Catch2, GoogleTest or plain main test
// asserts that the list is empty and prints it otherwise:
//
//   auto failures = compile_cache::testing::check_storage_conformance(
//       [&] { return my_storage(path); });    // a new handle on the same store each call
//   for (auto const& f : failures) std::puts(f.c_str());
//   assert(failures.empty());
//
// It checks what docs/policies.md asks of a Storage: absent keys, exact round trips
// (binary bytes, empty and large values), the size bound (too_large with nothing
// read), replace, remove (of an absent key too), keys kept apart, the empty key refused
// (what an over-long key becomes: key.hpp), writers in several
// threads (and, optionally, processes) never exposing a mix of two values, and
// damaged bytes becoming misses with a reason through a basic_cache, and a from_env
// (`static from_env_result<S> from_env(storage_settings const&)`) with none of its
// settings set being not configured, silently; and it prints which optional members it
// found (storage_capabilities), the form of from_env among them. Linux/POSIX (the process
// check forks).
#pragma once

// ---- inlined compile_cache/detail/config.hpp
// compile_cache: what the library needs from the compiler, said first. Every public
// header includes this before anything else, so that a translation unit compiled with
// the wrong flags (llvm-config --cxxflags gives -std=c++14 -fno-exceptions) stops at
// one sentence naming the flag, not at a page of errors from inside the library.
// An include guard as well: the LLVM adapter's single-header copies inline this
// header (scripts/amalgamate.py), and so does the single header.
#ifndef COMPILE_CACHE_DETAIL_CONFIG_HPP
#define COMPILE_CACHE_DETAIL_CONFIG_HPP

#if defined(_MSVC_LANG)
#define COMPILE_CACHE_CPLUSPLUS _MSVC_LANG
#else
#define COMPILE_CACHE_CPLUSPLUS __cplusplus
#endif

#if COMPILE_CACHE_CPLUSPLUS < 201703L
#error "compile_cache: needs C++17 or later (-std=c++17); with llvm-config --cxxflags, replace its -std=c++14"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && !defined(_CPPUNWIND)
#error "compile_cache: needs exceptions (drop -fno-exceptions; llvm-config --cxxflags adds it, LLVM's headers do not need it)"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

// #error lets g++ and clang go on, into hundreds of errors from the library's code: a
// missing include is fatal to both, so compilation stops here, at the sentences.
#if defined(COMPILE_CACHE_WRONG_FLAGS)
#include <compile_cache: compilation stopped; fix the flags named above>
#endif

// Separate compilation (docs/design.md, "What including the library costs"): a host that
// defines COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit and includes
// <compile_cache/src.hpp> in exactly one gets the library's non-template functions
// compiled once, there, instead of parsed and instantiated in each translation unit.
// COMPILE_CACHE_DECL marks their declarations (inline in the default, header-only mode);
// their definitions are in impl/*.ipp files, compiled where COMPILE_CACHE_INCLUDE_IMPL is 1.
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
#define COMPILE_CACHE_DECL
#if defined(COMPILE_CACHE_SOURCE)
#define COMPILE_CACHE_INCLUDE_IMPL 1
#else
#define COMPILE_CACHE_INCLUDE_IMPL 0
#endif
#else
#define COMPILE_CACHE_DECL inline
#define COMPILE_CACHE_INCLUDE_IMPL 1
#endif

// A build that mixes the modes, or has src.hpp in no translation unit or in two, is ill-formed
// (functions defined inline in some translation units and out of line in another, or not at
// all, or twice); it fails at link time with a symbol whose name says what to do:
// - every translation unit in separate-compilation mode references
//   compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit, which
//   src.hpp defines: "undefined reference" without src.hpp, "multiple definition" with two;
// - every header-only translation unit defines
//   compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none
//   in one COMDAT group (merged among them), and src.hpp defines it in another: "multiple
//   definition" when both kinds are linked together.
// (ELF, with GCC or Clang: the mark is a section-group directive of the assembler.)
#if defined(__GNUC__)
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
extern "C" char const compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
namespace compile_cache::detail {
namespace {
[[maybe_unused]] __attribute__((used)) char const* const separate_compilation_mark =
    &compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
} // namespace
} // namespace compile_cache::detail
#elif defined(__ELF__)
__asm__(".pushsection .rodata.compile_cache_header_only_mark,\"aG\",@progbits,compile_cache_header_only_mark,comdat\n"
        ".globl compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none\n"
        "compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none:\n"
        ".byte 0\n"
        ".popsection\n");
#endif
#endif

// A function each module (the main program, each shared library) has its own copy of,
// called within the module without going to another's: an ELF symbol of hidden visibility.
#if defined(__GNUC__) && defined(__ELF__)
#define COMPILE_CACHE_MODULE_LOCAL __attribute__((visibility("hidden")))
#else
#define COMPILE_CACHE_MODULE_LOCAL
#endif

// RTTI is checked by detail/config_rtti.hpp, in the headers that need it: the LLVM
// adapter's no-RTTI side (compile_cache/llvm/object_store.hpp, object_cache.hpp) does not.

#endif // COMPILE_CACHE_DETAIL_CONFIG_HPP
// ---- end of compile_cache/detail/config.hpp
#include <compile_cache/compile_cache.hpp>


#include <boost/serialization/string.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace compile_cache::testing {

/// What to check, and how hard.
struct storage_conformance_options {
    /// False for a storage that keeps nothing (null_storage): then only "every write is
    /// accepted, every read is absent, every remove succeeds" (and "the empty key is
    /// refused") is checked.
    bool keeps_entries = true;
    /// False for a storage that may read an empty value as absent (redis_storage: a
    /// bounded GETRANGE cannot tell the two apart). The cache never stores an empty
    /// value, so this costs a host nothing; an empty value must then read as absent or
    /// as an empty found entry, never as an error.
    bool keeps_empty_values = true;
    std::size_t large_value_size = std::size_t{1} << 20; ///< a value this large round-trips
    unsigned threads = 4;                                ///< concurrent writers (and one reader)
    unsigned writes_per_thread = 100;
    /// Writers in processes of their own (fork), each with its own handle from the
    /// factory: for storages shared between processes (a directory, a database file,
    /// a server). 0: not checked (memory_storage is per process).
    unsigned processes = 0;
    unsigned writes_per_process = 100;
    /// A child process that has not finished after this long is killed and reported.
    std::chrono::seconds process_timeout{60};
    /// Print, on standard output, the line storage_capabilities_line gives: a misspelt
    /// optional member shows as absent there.
    bool print_capabilities = true;
};

/// One line naming the optional members S has and those it has not
/// (storage_capabilities, storage/concept.hpp), e.g.
/// "storage optional members: has list, peek; has not usable, corrupt, ...".
template <class S>
std::string storage_capabilities_line() {
    std::string has, has_not;
    for (auto const& [name, present] : storage_capabilities<S>::members) {
        std::string& to = present ? has : has_not;
        to += to.empty() ? "" : ", ";
        to += name;
    }
    return "storage optional members: has " + (has.empty() ? "none" : has) + "; has not " +
           (has_not.empty() ? "none" : has_not);
}

/// A Storage that forwards to another object, so that a basic_cache (which owns its
/// storage) and a test can work on the same one. The optional members the cache calls
/// (usable, corrupt, entry_checked) are forwarded when the storage has them.
template <class Storage>
class storage_ref {
public:
    explicit storage_ref(Storage& s) noexcept : s_(&s) {}
    read_result read(key const& k, std::string& out, std::size_t max_size) { return s_->read(k, out, max_size); }
    std::error_code write(key const& k, std::string_view bytes) { return s_->write(k, bytes); }
    std::error_code remove(key const& k) { return s_->remove(k); }

    template <class S = Storage, std::enable_if_t<compile_cache::detail::has_usable<S>::value, int> = 0>
    bool usable() const {
        return static_cast<S const&>(*s_).usable();
    }
    template <class S = Storage, std::enable_if_t<compile_cache::detail::has_corrupt<S>::value, int> = 0>
    void corrupt(key const& k) {
        s_->corrupt(k);
    }
    template <class Status, class S = Storage,
              std::enable_if_t<compile_cache::detail::has_entry_checked_with<S, Status>::value, int> = 0>
    void entry_checked(key const& k, std::string_view entry, Status status) {
        s_->entry_checked(k, entry, status);
    }
    template <class S = Storage, std::enable_if_t<compile_cache::detail::has_entry_checked_answer<S>::value, int> = 0>
    void entry_checked(key const& k, std::string_view entry, read_result const& answer, entry_check check) {
        s_->entry_checked(k, entry, answer, check);
    }

private:
    Storage* s_;
};

namespace detail {

/// A key made of `size` bytes derived from (a, b).
inline key conformance_key(std::uint32_t a, std::uint32_t b, std::size_t size = 32) {
    unsigned char bytes[key::max_size];
    std::uint64_t x = (std::uint64_t{a} << 32 | b) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (std::size_t i = 0; i < size; ++i) {
        x ^= x >> 29;
        x *= 0xbf58476d1ce4e5b9ull;
        bytes[i] = static_cast<unsigned char>(x >> 56);
    }
    return key(bytes, size);
}

/// A value that says who wrote it and checks itself: 8 bytes of (writer, sequence),
/// then a length and bytes both derived from them. A reader that sees anything else
/// saw a torn or mixed write.
inline std::string conformance_value(std::uint32_t writer, std::uint32_t sequence) {
    std::size_t const length = 16 + (writer * 7919u + sequence * 104729u) % 20000u;
    std::string v(8 + length, '\0');
    compile_cache::detail::store_le(reinterpret_cast<unsigned char*>(&v[0]), writer);
    compile_cache::detail::store_le(reinterpret_cast<unsigned char*>(&v[4]), sequence);
    std::uint32_t x = writer * 2654435761u ^ sequence;
    for (std::size_t i = 8; i < v.size(); ++i) {
        x = x * 1103515245u + 12345u;
        v[i] = static_cast<char>(x >> 16);
    }
    return v;
}

inline bool is_conformance_value(std::string const& v) {
    if (v.size() < 8) return false;
    auto const* bytes = reinterpret_cast<unsigned char const*>(v.data());
    std::uint32_t const writer = compile_cache::detail::read_le<std::uint32_t>(bytes);
    std::uint32_t const sequence = compile_cache::detail::read_le<std::uint32_t>(bytes + 4);
    return v == conformance_value(writer, sequence);
}

inline std::string all_byte_values(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 256) & 0xff);
    return s;
}

inline char const* status_name(read_status s) {
    switch (s) {
    case read_status::found: return "found";
    case read_status::absent: return "absent";
    case read_status::too_large: return "too_large";
    case read_status::error: return "error";
    }
    return "?";
}

class conformance_report {
public:
    void fail(std::string const& check, std::string const& what) { failures_.push_back(check + ": " + what); }
    void expect(bool ok, std::string const& check, std::string const& what) {
        if (!ok) fail(check, what);
    }
    std::vector<std::string> take() { return std::move(failures_); }

private:
    std::vector<std::string> failures_;
};

/// What the cache check stores: a string, through Boost.Serialization.
struct conformance_artifact {
    std::string text;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & text;
    }
};

template <class Storage>
void check_basics(Storage& s, conformance_report& r, storage_conformance_options const& o) {
    std::string out;
    key const k = conformance_key(1, 1);

    out = "stale";
    read_result rr = s.read(k, out, 1 << 20);
    r.expect(rr.status == read_status::absent, "absent", std::string("a key never written reads ") +
                                                              status_name(rr.status) + ", not absent");
    r.expect(out.empty(), "absent", "the output buffer is not left empty");

    std::string const bytes = all_byte_values(70000);
    r.expect(!s.write(k, bytes), "round trip", "writing 70000 bytes of every value fails");
    rr = s.read(k, out, bytes.size());
    r.expect(rr.status == read_status::found && out == bytes, "round trip",
             std::string("70000 binary bytes do not come back exactly (") + status_name(rr.status) + ")");

    key const empty_key = conformance_key(1, 2);
    r.expect(!s.write(empty_key, std::string_view()), "round trip", "writing an empty value fails");
    out = "stale";
    rr = s.read(empty_key, out, 0);
    if (o.keeps_empty_values)
        r.expect(rr.status == read_status::found && out.empty(), "round trip",
                 std::string("an empty value reads ") + status_name(rr.status) + ", not an empty found entry");
    else
        r.expect((rr.status == read_status::found || rr.status == read_status::absent) && out.empty(), "round trip",
                 std::string("an empty value reads ") + status_name(rr.status) + ", not empty or absent");

    key const large_key = conformance_key(1, 3);
    std::string const large = all_byte_values(o.large_value_size);
    r.expect(!s.write(large_key, large), "round trip", "writing a large value fails");
    rr = s.read(large_key, out, large.size());
    r.expect(rr.status == read_status::found && out == large, "round trip",
             "a large value does not come back exactly");

    // The bound is inclusive; over it, nothing is read.
    key const bound_key = conformance_key(1, 4);
    r.expect(!s.write(bound_key, std::string(1000, 'x')), "size bound", "writing 1000 bytes fails");
    rr = s.read(bound_key, out, 1000);
    r.expect(rr.status == read_status::found && out.size() == 1000, "size bound",
             "an entry of exactly max_size bytes is not found whole");
    out = "stale";
    rr = s.read(bound_key, out, 999);
    r.expect(rr.status == read_status::too_large, "size bound",
             std::string("an entry over max_size reads ") + status_name(rr.status) + ", not too_large");
    r.expect(out.empty(), "size bound", "too_large left bytes in the output buffer");
    rr = s.read(bound_key, out, 0);
    r.expect(rr.status == read_status::too_large, "size bound", "max_size 0 does not refuse a 1000-byte entry");

    key const replace_key = conformance_key(1, 5);
    r.expect(!s.write(replace_key, std::string(100000, 'L')), "replace", "writing 100000 bytes fails");
    r.expect(!s.write(replace_key, "short"), "replace", "writing over an entry fails");
    rr = s.read(replace_key, out, 1 << 20);
    r.expect(rr.status == read_status::found && out == "short", "replace",
             "a second write does not replace the whole entry");

    key const remove_key = conformance_key(1, 6);
    r.expect(!s.write(remove_key, "bytes"), "remove", "writing fails");
    r.expect(!s.remove(remove_key), "remove", "removing an entry fails");
    rr = s.read(remove_key, out, 100);
    r.expect(rr.status == read_status::absent, "remove", "a removed entry still reads " +
                                                             std::string(status_name(rr.status)));
    r.expect(!s.remove(remove_key), "remove", "removing it again is an error (an absent key is not)");
    r.expect(!s.remove(conformance_key(1, 7)), "remove", "removing a key never written is an error");

    // Keys kept apart: a 16-byte key that is a prefix of a 32-byte one, a 1-byte key.
    key const full = conformance_key(1, 8);
    key const prefix(full.data(), 16);
    key const tiny(full.data(), 1);
    r.expect(!s.write(full, "full") && !s.write(prefix, "prefix") && !s.write(tiny, "tiny"), "keys apart",
             "writing fails");
    bool apart = s.read(full, out, 100).status == read_status::found && out == "full";
    apart = apart && s.read(prefix, out, 100).status == read_status::found && out == "prefix";
    apart = apart && s.read(tiny, out, 100).status == read_status::found && out == "tiny";
    r.expect(apart, "keys apart", "a key and its prefixes do not keep their own entries");
    r.expect(!s.remove(prefix), "keys apart", "removing fails");
    r.expect(s.read(full, out, 100).status == read_status::found && out == "full", "keys apart",
             "removing a key's prefix removed the key's entry");
    for (key const& each : {k, empty_key, large_key, bound_key, replace_key, full, tiny}) s.remove(each);
}

/// The optional listing member (`list`, storage/concept.hpp): what was written is
/// listed once with its size and a plausible last use (or 0, unknown); a removed entry
/// is not listed.
template <class Storage>
void check_listing(Storage& s, conformance_report& r) {
    key const keys[] = {conformance_key(3, 1), conformance_key(3, 2), conformance_key(3, 3)};
    for (std::size_t i = 0; i < 3; ++i)
        r.expect(!s.write(keys[i], std::string(10 * (i + 1), 'v')), "listing", "writing fails");
    r.expect(!s.remove(keys[2]), "listing", "removing fails");
    std::vector<stored_entry> listed;
    r.expect(!static_cast<Storage const&>(s).list(listed), "listing", "list returns an error");
    std::int64_t const now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (std::size_t i = 0; i < 3; ++i) {
        std::size_t times = 0;
        for (stored_entry const& e : listed) {
            if (!(e.k == keys[i])) continue;
            ++times;
            r.expect(e.size == 10 * (i + 1), "listing", "an entry's size is not its bytes' count");
            r.expect(e.last_use_s == 0 || (e.last_use_s > now - 86400 && e.last_use_s <= now + 60), "listing",
                     "an entry just written has a last use that is not today");
        }
        r.expect(times == (i == 2 ? 0u : 1u), "listing",
                 i == 2 ? "a removed entry is listed" : "a written entry is not listed exactly once");
    }
    for (key const& k : keys) s.remove(k);
}

/// The optional `peek` member: it answers as read does (found with the same bytes,
/// absent, too_large with nothing read).
template <class Storage>
void check_peek(Storage& s, conformance_report& r) {
    key const k = conformance_key(5, 1);
    std::string const bytes = all_byte_values(5000);
    std::string out = "stale";
    read_result rr = s.peek(k, out, 1 << 20);
    r.expect(rr.status == read_status::absent && out.empty(), "peek",
             std::string("a key never written peeks ") + status_name(rr.status) + ", not absent");
    r.expect(!s.write(k, bytes), "peek", "writing fails");
    rr = s.peek(k, out, bytes.size());
    r.expect(rr.status == read_status::found && out == bytes, "peek", "a peek does not give the bytes written");
    out = "stale";
    rr = s.peek(k, out, bytes.size() - 1);
    r.expect(rr.status == read_status::too_large && out.empty(), "peek",
             std::string("an entry over max_size peeks ") + status_name(rr.status) + ", not too_large with nothing read");
    s.remove(k);
}

/// The empty key (what an over-long key becomes: key.hpp) names no entry: a write under
/// it fails, and a read of it (of another over-long key) finds nothing.
template <class Storage>
void check_empty_key(Storage& s, conformance_report& r) {
    std::string const a(key::max_size + 1, 'a');
    key const over_long(a.data(), a.size()); // the empty key
    r.expect(s.write(over_long, "the entry of an over-long key") ? true : false, "empty key",
             "a write under the empty key is accepted");
    std::string out = "stale";
    read_result const rr = s.read(key(), out, 1 << 20);
    r.expect(rr.status != read_status::found && out.empty(), "empty key",
             std::string("the empty key reads ") + status_name(rr.status) + " with " + std::to_string(out.size()) +
                 " bytes, not nothing");
    (void)s.remove(over_long); // (whatever it answers: nothing is there)
}

template <class Storage>
void check_keeps_nothing(Storage& s, conformance_report& r) {
    std::string out = "stale";
    key const k = conformance_key(2, 1);
    r.expect(!s.write(k, "bytes"), "keeps nothing", "a write is refused");
    read_result const rr = s.read(k, out, 1 << 20);
    r.expect(rr.status == read_status::absent && out.empty(), "keeps nothing",
             std::string("a read after a write gives ") + status_name(rr.status) + ", not absent");
    r.expect(!s.remove(k), "keeps nothing", "a remove is refused");
}

/// Threads write self-checking values to one shared key and to keys of their own while
/// a reader reads the shared key: every read is absent or one whole value.
template <class Storage>
void check_threads(Storage& s, conformance_report& r, storage_conformance_options const& o) {
    key const shared = conformance_key(3, 0);
    std::atomic<bool> done{false};
    std::atomic<unsigned> torn{0}, reads{0}, write_errors{0};
    std::thread reader([&] {
        std::string out;
        while (!done.load()) {
            read_result const rr = s.read(shared, out, 1 << 20);
            reads.fetch_add(1);
            if (rr.status == read_status::found && !is_conformance_value(out)) torn.fetch_add(1);
        }
    });
    std::vector<std::thread> writers;
    for (unsigned t = 0; t < o.threads; ++t)
        writers.emplace_back([&, t] {
            for (unsigned i = 0; i < o.writes_per_thread; ++i) {
                if (s.write(shared, conformance_value(t, i))) write_errors.fetch_add(1);
                if (s.write(conformance_key(3, 1 + t * o.writes_per_thread + i), conformance_value(t, i)))
                    write_errors.fetch_add(1);
            }
        });
    for (auto& w : writers) w.join();
    done = true;
    reader.join();
    r.expect(write_errors.load() == 0, "concurrent writers",
             std::to_string(write_errors.load()) + " writes from several threads failed");
    r.expect(torn.load() == 0, "concurrent writers",
             std::to_string(torn.load()) + " of " + std::to_string(reads.load()) +
                 " reads saw a value no writer wrote (a torn or mixed write)");
    std::string out;
    r.expect(s.read(shared, out, 1 << 20).status == read_status::found && is_conformance_value(out),
             "concurrent writers", "the shared key does not hold one whole value after the writers");
    unsigned lost = 0;
    for (unsigned t = 0; t < o.threads; ++t)
        for (unsigned i = 0; i < o.writes_per_thread; ++i) {
            key const own = conformance_key(3, 1 + t * o.writes_per_thread + i);
            if (s.read(own, out, 1 << 20).status != read_status::found || out != conformance_value(t, i)) ++lost;
            s.remove(own);
        }
    r.expect(lost == 0, "concurrent writers", std::to_string(lost) + " writes to distinct keys were lost");
    s.remove(shared);
}

/// As check_threads, with writers in processes of their own, each with a new handle.
template <class Factory, class Storage>
void check_processes(Factory& make, Storage& s, conformance_report& r, storage_conformance_options const& o) {
    key const shared = conformance_key(4, 0);
    std::fflush(nullptr);
    std::vector<pid_t> children;
    for (unsigned p = 0; p < o.processes; ++p) {
        pid_t const pid = ::fork();
        if (pid < 0) {
            r.fail("concurrent processes", "fork failed");
            break;
        }
        if (pid == 0) {
            int failed = 0;
            try {
                auto child = make();
                for (unsigned i = 0; i < o.writes_per_process; ++i) {
                    if (child.write(shared, conformance_value(100 + p, i))) failed = 1;
                    if (child.write(conformance_key(4, 1 + p * o.writes_per_process + i),
                                    conformance_value(100 + p, i)))
                        failed = 1;
                }
            } catch (...) {
                failed = 2;
            }
            ::_exit(failed);
        }
        children.push_back(pid);
    }
    unsigned torn = 0, reads = 0;
    std::string out;
    auto const deadline = std::chrono::steady_clock::now() + o.process_timeout;
    std::size_t running = children.size();
    std::vector<int> statuses(children.size(), -1);
    while (running > 0) {
        read_result const rr = s.read(shared, out, 1 << 20);
        ++reads;
        if (rr.status == read_status::found && !is_conformance_value(out)) ++torn;
        for (std::size_t i = 0; i < children.size(); ++i) {
            if (statuses[i] != -1) continue;
            int status = 0;
            if (::waitpid(children[i], &status, WNOHANG) == children[i]) {
                statuses[i] = status;
                --running;
            } else if (std::chrono::steady_clock::now() > deadline) {
                ::kill(children[i], SIGKILL);
                ::waitpid(children[i], &status, 0);
                statuses[i] = status;
                --running;
                r.fail("concurrent processes", "a writer process did not finish in time and was killed");
            }
        }
    }
    for (int status : statuses)
        r.expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "concurrent processes",
                 "a writer process failed (a write error, or an exception)");
    r.expect(torn == 0, "concurrent processes",
             std::to_string(torn) + " of " + std::to_string(reads) + " reads saw a value no writer wrote");
    r.expect(s.read(shared, out, 1 << 20).status == read_status::found && is_conformance_value(out),
             "concurrent processes", "the shared key does not hold one whole value after the writers");
    unsigned lost = 0;
    for (unsigned p = 0; p < children.size(); ++p)
        for (unsigned i = 0; i < o.writes_per_process; ++i) {
            key const own = conformance_key(4, 1 + p * o.writes_per_process + i);
            if (s.read(own, out, 1 << 20).status != read_status::found || out != conformance_value(100 + p, i))
                ++lost;
            s.remove(own);
        }
    r.expect(lost == 0, "concurrent processes", std::to_string(lost) + " writes to distinct keys were lost");
    s.remove(shared);
}

/// Through a basic_cache: a stored entry loads; damaged bytes under its key are misses
/// with a reason (never an exception, never a wrong value), and a store repairs them.
template <class Storage>
void check_through_cache(Storage& s, conformance_report& r) {
    using cache_type = basic_cache<sha256, boost_binary, registry, storage_ref<Storage>>;
    cache_options options;
    options.record_identities = false; // (its record would be an entry left behind)
    cache_type cache{storage_ref<Storage>(s), std::move(options)};
    if (!cache.enabled()) {
        r.fail("through a cache", "a cache over the storage is disabled (usable() answered false)");
        return;
    }
    key_result const k = cache.make_key_builder("storage conformance").add("kernel", "k").finish();
    conformance_artifact const original{"the compiled kernel"};
    auto compile = [&] { return original; };
    try {
        r.expect(cache.store(k, original), "through a cache", "a store fails");
        auto loaded = cache.template load<conformance_artifact>(k);
        r.expect(loaded && loaded->text == original.text, "through a cache", "a stored entry does not load");

        std::string entry;
        r.expect(s.read(k.value(), entry, 1 << 20).status == read_status::found && !entry.empty(),
                 "through a cache", "the stored entry cannot be read back");
        std::vector<std::pair<char const*, std::string>> damages = {
            {"truncated", entry.substr(0, entry.size() / 2)},
            {"empty", std::string()},
            {"garbage", all_byte_values(entry.size())},
        };
        std::string flipped = entry;
        if (!flipped.empty()) flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x10);
        damages.emplace_back("one bit flipped", flipped);
        for (auto const& [name, bytes] : damages) {
            r.expect(!s.write(k.value(), bytes), "through a cache", std::string("writing ") + name + " bytes fails");
            auto const misses_before = cache.stats().total_misses();
            auto const got = cache.template load<conformance_artifact>(k);
            r.expect(!got, "through a cache", std::string(name) + " bytes were loaded as an artifact");
            r.expect(cache.stats().total_misses() == misses_before + 1, "through a cache",
                     std::string(name) + " bytes were not counted as a miss");
            auto const again = cache.template get_or_compile<conformance_artifact>(k, {}, compile);
            r.expect(again.outcome == outcome::compiled && again.value.text == original.text, "through a cache",
                     std::string("after ") + name + " bytes, get_or_compile did not compile");
            auto const repaired = cache.template load<conformance_artifact>(k);
            r.expect(repaired && repaired->text == original.text, "through a cache",
                     std::string("after ") + name + " bytes, the new store does not load");
        }
    } catch (std::exception const& e) {
        r.fail("through a cache", std::string("an exception reached the caller: ") + e.what());
    } catch (...) {
        r.fail("through a cache", "an exception reached the caller");
    }
    s.remove(k.value());
}

/// null_storage and its kind: a cache over it compiles every time, and nothing throws.
template <class Storage>
void check_cache_keeps_nothing(Storage& s, conformance_report& r) {
    using cache_type = basic_cache<sha256, boost_binary, registry, storage_ref<Storage>>;
    cache_type cache{storage_ref<Storage>(s)};
    key_result const k = cache.make_key_builder("storage conformance").add("kernel", "k").finish();
    conformance_artifact const original{"the compiled kernel"};
    for (int i = 0; i < 2; ++i) {
        auto const got = cache.template get_or_compile<conformance_artifact>(k, {}, [&] { return original; });
        r.expect(got.outcome == outcome::compiled, "through a cache", "a storage that keeps nothing gave a hit");
    }
}

/// A storage's `static from_env_result<S> from_env(storage_settings const&)`, the form
/// basic_cache::from_env calls: with none of its variables set (a prefix nobody uses),
/// it is not configured and says nothing, even when the cache could not run
/// (storage_settings::cache_off): its main setting comes first.
template <class Storage>
void check_from_env(conformance_report& r) {
    std::string const prefix = "COMPILE_CACHE_CONFORMANCE_UNSET_" + std::to_string(::getpid());
    std::vector<std::string> lines;
    settings_reader env(prefix, [&](std::string_view line) { lines.emplace_back(line); });
    for (bool const cache_off : {false, true}) {
        storage_settings const settings{env, false, false, {}, cache_off ? "the cache is off" : ""};
        from_env_result<Storage> const answer = Storage::from_env(settings);
        r.expect(!answer.has_value() && answer.why_off().empty(), "from_env",
                 std::string("with none of its settings set, it does not answer not_configured()") +
                     (cache_off ? " (storage_settings::cache_off set)" : ""));
    }
    r.expect(lines.empty(), "from_env", "with none of its settings set, it reported a line");
}

} // namespace detail

/// Runs every check on storages from `make`, a callable returning a Storage (by value)
/// on the same backing store each call: the checks use one, the process check gives
/// each child process its own. Returns what failed, one line each ("check: what");
/// empty when the storage conforms. Leaves no entry of its own behind.
template <class Factory>
std::vector<std::string> check_storage_conformance(Factory make, storage_conformance_options const& options = {}) {
    detail::conformance_report report;
    try {
        auto storage = make();
        using Storage = decltype(storage);
        static_assert(check_storage<Storage>::value, "");
        if (options.print_capabilities) std::printf("%s\n", storage_capabilities_line<Storage>().c_str());
        detail::check_empty_key(storage, report);
        if (!options.keeps_entries) {
            detail::check_keeps_nothing(storage, report);
            detail::check_cache_keeps_nothing(storage, report);
            return report.take();
        }
        detail::check_basics(storage, report, options);
        if constexpr (compile_cache::detail::has_list<Storage>::value) detail::check_listing(storage, report);
        if constexpr (compile_cache::detail::has_peek<Storage>::value) detail::check_peek(storage, report);
        if (options.threads > 0) detail::check_threads(storage, report, options);
        if (options.processes > 0) detail::check_processes(make, storage, report, options);
        detail::check_through_cache(storage, report);
        if constexpr (compile_cache::detail::has_from_env<Storage>::value) detail::check_from_env<Storage>(report);
    } catch (std::exception const& e) {
        report.fail("no exceptions", std::string("a storage member threw: ") + e.what());
    } catch (...) {
        report.fail("no exceptions", "a storage member threw");
    }
    return report.take();
}

} // namespace compile_cache::testing
