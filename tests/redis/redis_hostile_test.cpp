// redis_storage against a hostile server (hostile_redis.py, started by each test on
// 127.0.0.1) for the replies a real redis-server never sends: each must cost a bounded
// amount of memory and end as an error, never be taken as an answer.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;

namespace {

/// hostile_redis.py (beside the fixture's script) in `mode`; killed when it goes.
class hostile_redis {
public:
    explicit hostile_redis(std::string const& mode) : process_({python3(), script(), mode}) {
        REQUIRE(process_.wait_for_line());
        std::string const& said = process_.output();
        REQUIRE(said.rfind("port ", 0) == 0);
        port_ = std::stoi(said.substr(5));
    }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

private:
    static std::string python3() {
        for (char const* p : {"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"})
            if (::access(p, X_OK) == 0) return p;
        FAIL("python3 is needed for the hostile Redis server");
        return {};
    }
    static std::string script() {
        std::string const fixture = COMPILE_CACHE_REDIS_FIXTURE_SCRIPT;
        return fixture.substr(0, fixture.rfind('/') + 1) + "hostile_redis.py";
    }

    compile_cache_test::child_process process_;
    int port_ = 0;
};

/// The peak resident memory of this process so far, in KiB (VmHWM).
/// The process's peak resident memory since the last reset_peak_resident() (VmHWM).
long peak_resident_kib() {
    std::string const status = compile_cache_test::read_file("/proc/self/status");
    std::size_t const at = status.find("VmHWM:");
    return at == std::string::npos ? 0 : std::stol(status.substr(at + 6));
}

/// Resets the peak to the present (`5` to /proc/self/clear_refs), so that an earlier test's
/// peak in this process cannot hide this one's growth; false where the kernel cannot.
bool reset_peak_resident() {
    std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool const written = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && written;
}

} // namespace

TEST_CASE("A listing whose sizes come back as 1 MB strings is a protocol error, not 400 MB in memory",
          "[redis][faults]") {
    // SCAN names 200 entries; each OBJECT IDLETIME and STRLEN (integers) gets a string
    // of 1,000,000 bytes: 400 MB if every reply of the page were taken.
    hostile_redis server("bulky-listing");
    cc::redis_options o;
    o.url = server.url();
    o.name_space = "hostile";
    o.command_timeout = std::chrono::seconds(20);
    cc::redis_storage s(o);
    REQUIRE(reset_peak_resident());
    long const before = peak_resident_kib();
    std::vector<cc::stored_entry> entries;
    std::error_code const e = s.list(entries);
    long const grown = peak_resident_kib() - before;
    INFO("peak resident memory grew by " << grown << " KiB; " << s.last_failure().text);
    CHECK(e == cc::remote_error::protocol);
    CHECK(entries.empty());
    CHECK(grown < 64 * 1024);
}
