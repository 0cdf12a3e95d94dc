// One machine of a fleet in a test: a cache over tiered_storage<directory_storage, Remote>
// (its own local directory before a shared remote), with its log lines, its kernels and
// its remote counters. The Redis tiered and signed tests and the HTTP signed test use it.
#pragma once

#include "catch2_compat.hpp"
#include "support/model.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <boost/serialization/vector.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compile_cache_test {

template <class Remote>
struct tier_machine {
    using tier = compile_cache::tiered_storage<compile_cache::directory_storage, Remote>;
    using cache_type = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary,
                                                  compile_cache::registry, tier>;

    cache_type cache;
    /// The cache's log lines, but the first miss line of each new kernel (explain.hpp).
    std::vector<std::string> log;
    std::string key_domain; ///< the key builder's name: machines with the same one share keys
    bool chained;           ///< kernel n's key holds kernel n - 1's, as chain40's do

    tier_machine(std::string const& local, Remote remote, compile_cache::cache_options options,
                 compile_cache::tier_options t, std::string domain, bool chain = false)
        : cache(tier(compile_cache::directory_storage(local), std::move(remote), std::move(t)), std::move(options)),
          key_domain(std::move(domain)), chained(chain) {
        cache.set_logger([this](std::string_view line) {
            if (line.find("(absent): new (") == std::string_view::npos) log.emplace_back(line);
        });
    }
    tier_machine(tier_machine const&) = delete; // the logger holds `this`
    tier_machine& operator=(tier_machine const&) = delete;

    /// Uploads sent before the host goes on: the remote calls a test counts happen on its
    /// thread, in order.
    static compile_cache::tier_options sync_uploads(compile_cache::remote_mode mode = compile_cache::remote_mode::read_write) {
        compile_cache::tier_options t;
        t.upload = compile_cache::remote_upload::sync;
        t.mode = mode;
        return t;
    }
    /// Entries sealed with `secret` (an HMAC), or a CRC-32C when it is empty.
    static compile_cache::cache_options with_secret(std::string secret) {
        compile_cache::cache_options o;
        o.secret = std::move(secret);
        return o;
    }
    /// Remote entries signed or checked by `signatures` (a writer's or a reader's), local
    /// ones sealed with `secret` (or a CRC-32C).
    static compile_cache::cache_options with_signatures(std::shared_ptr<compile_cache::entry_signatures const> signatures,
                                                        std::string secret = {}) {
        compile_cache::cache_options o = with_secret(std::move(secret));
        o.signatures = std::move(signatures);
        return o;
    }

    compile_cache::key_result key(int n) const {
        auto b = cache.make_key_builder(key_domain).add("ir", "kernel " + std::to_string(n));
        if (chained && n > 0) b.add("callee", key(n - 1).value().hex());
        return b.finish();
    }
    /// Gets kernel n (compiling {n, n + 1} on a miss) and checks the value.
    compile_cache::outcome get(int n) {
        auto r = cache.template get_or_compile<model::code_kernel>(key(n), {"k" + std::to_string(n), "f.tk", 1},
                                                                   [n] { return model::code_kernel{{n, n + 1}}; });
        CHECK(r.value.code == std::vector<int>{n, n + 1});
        return r.outcome;
    }
    /// The tier's counter `remote.NAME` (0 when absent).
    std::uint64_t remote(std::string const& name) const {
        for (auto const& [n, v] : cache.stats().storage_counters)
            if (n == "remote." + name) return v;
        return 0;
    }
};

} // namespace compile_cache_test
