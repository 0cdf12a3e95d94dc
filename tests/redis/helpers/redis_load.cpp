// One process of the Redis load test: OPS random reads, writes and removes of KEYS keys
// through redis_storage, each key's value always the same bytes (a function of the key),
// so any value read that differs from them is a wrong result.
//
// Usage: redis_load URL OPS SEED KEYS
// Prints `wrong=N errors=N found=N absent=N writes=N` and the first error's text; exit 0
// when nothing wrong was read, 1 otherwise.
#include <compile_cache/storage/redis/redis_storage.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace cc = compile_cache;

static cc::key key_of(std::uint64_t n) {
    unsigned char digest[32] = {};
    for (int i = 0; i < 8; ++i) digest[i] = static_cast<unsigned char>(n >> (8 * i));
    digest[31] = 0xa5;
    return cc::key(digest, sizeof digest);
}

static std::string value_of(std::uint64_t n) {
    std::string v(2000 + (n * 97) % 6000, '\0');
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>((n * 131 + i * 7 + (i >> 8)) & 0xff);
    return v;
}

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s URL OPS SEED KEYS\n", argv[0]);
        return 2;
    }
    cc::redis_options o;
    o.url = argv[1];
    o.command_timeout = std::chrono::milliseconds(2000);
    cc::redis_storage storage(o);
    long const ops = std::atol(argv[2]);
    std::mt19937_64 random(std::strtoull(argv[3], nullptr, 10));
    std::uint64_t const keys = std::strtoull(argv[4], nullptr, 10);
    long wrong = 0, errors = 0, found = 0, absent = 0, writes = 0;
    std::string first_error, out;
    for (long i = 0; i < ops; ++i) {
        std::uint64_t const k = random() % keys;
        unsigned const what = static_cast<unsigned>(random() % 10);
        std::error_code e;
        if (what < 6) {
            cc::read_result r = storage.read(key_of(k), out, 1 << 16);
            if (r.status == cc::read_status::found) {
                ++found;
                if (out != value_of(k)) ++wrong;
            } else if (r.status == cc::read_status::absent) {
                ++absent;
            } else {
                e = r.error;
            }
        } else if (what < 9) {
            e = storage.write(key_of(k), value_of(k));
            ++writes;
        } else {
            e = storage.remove(key_of(k));
        }
        if (e && ++errors == 1) first_error = e.message() + ": " + storage.last_failure().text;
    }
    std::printf("wrong=%ld errors=%ld found=%ld absent=%ld writes=%ld %s\n", wrong, errors, found, absent, writes,
                first_error.c_str());
    return wrong == 0 ? 0 : 1;
}
