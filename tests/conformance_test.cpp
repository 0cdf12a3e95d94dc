// The conformance kit (compile_cache/testing/): every Storage and Hasher the library
// ships, and the test hashers of other result shapes, pass it, instantiated per model
// as a user would for their own; and it catches models that break the contract.
#include "catch2_compat.hpp"
#include "support/conformance.hpp"
#include "support/posix.hpp"
#include "support/hashers.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/tiered_storage.hpp>
#include <compile_cache/testing/hasher_conformance.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace {

namespace cc = compile_cache;
namespace cct = compile_cache::testing;
using compile_cache_test::fnv1a_64;
using compile_cache_test::fnv1a_two_lanes;
using compile_cache_test::temp_dir;

using compile_cache_test::failure_lines;

// How each shipped storage is run through the kit: a factory of handles on one store,
// and the options that fit it.
template <class S>
struct storage_model;

template <>
struct storage_model<cc::memory_storage> {
    std::vector<std::string> run() {
        return cct::check_storage_conformance([] { return cc::memory_storage(); });
    }
};

template <>
struct storage_model<cc::directory_storage> {
    temp_dir dir;
    std::vector<std::string> run() {
        cct::storage_conformance_options options;
        options.processes = 4; // a directory is shared between processes
        options.writes_per_process = 50;
        std::string const path = (dir.path() / "cache").string();
        return cct::check_storage_conformance([path] { return cc::directory_storage(path); }, options);
    }
};

using memory_tier = cc::tiered_storage<cc::memory_storage, cc::memory_storage>;

template <>
struct storage_model<memory_tier> {
    std::vector<std::string> run() {
        return cct::check_storage_conformance([] { return memory_tier(cc::memory_storage(), cc::memory_storage()); });
    }
};

template <>
struct storage_model<cc::null_storage> {
    std::vector<std::string> run() {
        cct::storage_conformance_options options;
        options.keeps_entries = false;
        return cct::check_storage_conformance([] { return cc::null_storage(); }, options);
    }
};

/// Breaks three rules: a write appends to what is there, max_size is ignored, and its
/// listing still gives removed entries.
class appending_storage {
public:
    cc::read_result read(cc::key const& k, std::string& out, std::size_t) {
        std::lock_guard<std::mutex> lock(mutex_);
        out.clear();
        auto it = entries_.find(k);
        if (it == entries_.end()) return {cc::read_status::absent, {}};
        out = it->second;
        return {cc::read_status::found, {}};
    }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        entries_[k].append(bytes);
        ever_written_[k] = entries_[k].size();
        return {};
    }
    std::error_code remove(cc::key const& k) {
        std::lock_guard<std::mutex> lock(mutex_);
        entries_.erase(k);
        return {};
    }
    std::error_code list(std::vector<cc::stored_entry>& out) const {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto const& [k, size] : ever_written_) out.push_back({k, size, 0});
        return {};
    }

private:
    mutable std::mutex mutex_;
    std::map<cc::key, std::string> entries_;
    std::map<cc::key, std::uint64_t> ever_written_;
};

/// Breaks the from_env contract: it configures itself whatever the environment says,
/// and says so.
struct eager_storage : cc::memory_storage {
    static cc::from_env_result<eager_storage> from_env(cc::storage_settings const& settings) {
        settings.env.report("eager_storage: configured, although nothing asked for it");
        return cc::from_env_result<eager_storage>(eager_storage());
    }
};

/// Breaks the split-update rule: each update call is a unit of its own.
struct call_counting_hasher {
    using result_type = std::uint64_t;
    std::uint64_t state = 1469598103934665603ull;
    void update(void const* p, std::size_t n) {
        auto const* bytes = static_cast<unsigned char const*>(p);
        for (std::size_t i = 0; i < n; ++i) state = (state ^ bytes[i]) * 1099511628211ull;
        state = (state ^ 0xff) * 1099511628211ull; // end of a call
    }
    result_type result() { return state; }
};

} // namespace

TEMPLATE_TEST_CASE("every shipped Storage passes the conformance kit", "[conformance][storage]", cc::memory_storage,
                   cc::directory_storage, cc::null_storage, memory_tier) {
    storage_model<TestType> model;
    auto const failures = model.run();
    INFO(failure_lines(failures));
    CHECK(failures.empty());
}

namespace {
/// The kit's empty-key check, on its own: the empty key names no entry (key.hpp).
template <class Storage>
std::vector<std::string> empty_key_failures(Storage& s) {
    std::vector<std::string> failures;
    std::string const a(cc::key::max_size + 1, 'a'), b(cc::key::max_size + 1, 'b');
    cc::key const ka(a.data(), a.size()), kb(b.data(), b.size());
    if (!ka.empty()) failures.push_back("an over-long key is not the empty key");
    if (!s.write(ka, "the entry of key a")) failures.push_back("a write under the empty key is accepted");
    std::string out;
    if (s.read(kb, out, 1 << 20).status == cc::read_status::found)
        failures.push_back("another over-long key reads \"" + out + "\"");
    (void)s.remove(ka);
    return failures;
}
} // namespace

TEMPLATE_TEST_CASE("every shipped Storage refuses the empty key, what an over-long key becomes",
                   "[conformance][storage]", cc::memory_storage, cc::directory_storage, cc::null_storage,
                   memory_tier) {
    temp_dir dir;
    auto s = [&] {
        if constexpr (std::is_same_v<TestType, cc::directory_storage>)
            return cc::directory_storage(dir.str());
        else if constexpr (std::is_same_v<TestType, memory_tier>)
            return memory_tier(cc::memory_storage(), cc::memory_storage());
        else
            return TestType();
    }();
    auto const failures = empty_key_failures(s);
    INFO(failure_lines(failures));
    CHECK(failures.empty());
}

TEST_CASE("the storage kit names what a broken Storage breaks", "[conformance][storage]") {
    auto const failures = cct::check_storage_conformance([] { return appending_storage(); });
    INFO(failure_lines(failures));
    auto names = [&](std::string const& check) {
        for (auto const& f : failures)
            if (f.rfind(check + ":", 0) == 0) return true;
        return false;
    };
    CHECK(names("replace"));
    CHECK(names("size bound"));
    CHECK(names("listing"));
    CHECK(names("empty key"));
    CHECK(!names("absent"));
    CHECK(!names("remove"));
}

TEST_CASE("the storage kit checks a from_env: with none of its settings set, not configured and silent",
          "[conformance][storage][settings]") {
    cct::storage_conformance_options options;
    options.print_capabilities = false;
    auto const failures = cct::check_storage_conformance([] { return eager_storage(); }, options);
    INFO(failure_lines(failures));
    std::vector<std::string> from_env_failures;
    for (auto const& f : failures)
        if (f.rfind("from_env:", 0) == 0) from_env_failures.push_back(f);
    CHECK(from_env_failures ==
          std::vector<std::string>{"from_env: with none of its settings set, it does not answer not_configured()",
                                   "from_env: with none of its settings set, it does not answer not_configured() "
                                   "(storage_settings::cache_off set)",
                                   "from_env: with none of its settings set, it reported a line"});
}

TEMPLATE_TEST_CASE("every shipped and test Hasher passes the conformance kit", "[conformance][hasher]", cc::sha256,
                   fnv1a_64, fnv1a_two_lanes) {
    std::vector<cct::hasher_vector> vectors;
    if constexpr (std::is_same_v<TestType, cc::sha256>) {
        vectors = {{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
                   {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}};
    } else if constexpr (std::is_same_v<TestType, fnv1a_64>) {
        // The published FNV-1a 64 values, as the key holds them: little-endian.
        vectors = {{"", "25232284e49cf2cb"}, {"a", "8cec01864cdc63af"}};
    }
    auto const failures = cct::check_hasher_conformance<TestType>(vectors);
    INFO(failure_lines(failures));
    CHECK(failures.empty());
}

TEST_CASE("the hasher kit names what a broken Hasher breaks, and a wrong known vector", "[conformance][hasher]") {
    auto const broken = cct::check_hasher_conformance<call_counting_hasher>();
    INFO(failure_lines(broken));
    REQUIRE(!broken.empty());
    CHECK(broken.front().rfind("split updates:", 0) == 0);

    auto const wrong = cct::check_hasher_conformance<cc::sha256>({{"abc", "00"}});
    REQUIRE(wrong.size() == 1);
    CHECK(wrong.front() == "known vectors: message of 3 bytes gives "
                           "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad, expected 00");
}
