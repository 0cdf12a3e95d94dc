// A process that uses a cache directory the way the storage tests need, one mode
// per scenario. Prints one result line on stdout; exits 0 when it saw nothing wrong.
//
//   storage_worker mix DIR SEED CALLS KEYS MAX_SIZE MIN_PAYLOAD MAX_PAYLOAD
//       CALLS random operations over KEYS shared keys: get_or_compile (mostly),
//       explicit stores, loads, removes. Every artifact is checked against its key.
//   storage_worker prune DIR MAX_SIZE STOP_FILE
//       prune() in a loop until STOP_FILE exists; a prune that found the cleanup
//       lock held all its wait is counted as busy, not as an error.
//   storage_worker store-same DIR ID VARIANT SIZE GO_FILE ROUNDS
//       waits for GO_FILE, then stores (ID, VARIANT) ROUNDS times.
//   storage_worker writer DIR SEED KEYS MAX_SIZE MIN_PAYLOAD MAX_PAYLOAD DURABILITY
//       stores random keys until killed; prints "ready" once started.
//   storage_worker store-range DIR FIRST COUNT MIN_PAYLOAD MAX_PAYLOAD GO_FILE THEN
//       waits for GO_FILE (`-`: no wait), then stores ids FIRST..FIRST+COUNT-1 (bytes
//       payload_of(id, 0, size_of(id, ...))) straight through a directory_storage with
//       no size limit, and prints "stored=N". THEN `exit`: returns (the storage
//       object is destroyed); `hold`: stays, storage object alive, until killed.
//   storage_worker store-limited DIR FIRST COUNT MAX_SIZE PAYLOAD GO_FILE
//       waits for GO_FILE, then stores ids FIRST..FIRST+COUNT-1 (PAYLOAD bytes each)
//       through a directory_storage whose size limit is MAX_SIZE, so that its stores
//       run the cleanups; prints "stored=N" and returns (the object is destroyed).
//   storage_worker host DIR KEYS MAX_SIZE
//       a host: get_or_compile of ids 0..KEYS-1 (checked), then its cache is
//       destroyed (recording its counters); prints "compiled=N loaded=N wrong=N
//       lock_timeouts=N logged=N" and each log line on stderr.
//   storage_worker record-steps DIR STEP...
//       one cache over DIR, one kernel (`main` from record-steps), steps in order: a
//       number N get_or_compiles key_of(N) and prints "N: BRIEF" (its miss
//       explanation's brief(), `hit` for a hit); `wait=PATH` waits for PATH to exist
//       (20 s at most, then exits 3); `touch=PATH` creates PATH; `flush` calls
//       flush_statistics(). The cache is
//       destroyed at the end (writing the identity records it holds).
//   storage_worker record-kernels DIR FIRST COUNT PER_FLUSH GO_FILE
//       one cache over DIR; waits for GO_FILE (`-`: no wait), then get_or_compiles the
//       kernels `k<ID>` from `packs`, ID FIRST..FIRST+COUNT-1, each under key_of(ID),
//       calling flush_statistics() after every PER_FLUSH of them (so that its identity
//       records are written in small packs); prints "stored=N".
//   storage_worker fork-while-installing DIR
//       in this fresh process (no mapped read yet), a thread makes the first mapped read
//       of a 2 MiB entry while the main thread forks in the middle of the SIGBUS guard's
//       install; the child then reads the same entry. Prints "child=C parent=P": `read`
//       (the entry's bytes, whole), `wrong`, or for the child `signal-N` (a child not
//       done within 20 s is ended by SIGALRM: blocked).
#include "support/storage_model.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <system_error>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace storage_test;

cc::directory_options options_with(std::uint64_t max_size, cc::durability sync = cc::durability::none) {
    cc::directory_options o;
    o.max_size = max_size;
    o.sync = sync;
    return o;
}

std::uint64_t number(char const* s) { return std::strtoull(s, nullptr, 10); }

bool exists(char const* path) { return ::access(path, F_OK) == 0; }

int mix(int argc, char** argv) {
    if (argc != 9) return 2;
    std::string const dir = argv[2];
    std::mt19937_64 rng(number(argv[3]));
    auto const calls = number(argv[4]);
    auto const keys = static_cast<std::uint32_t>(number(argv[5]));
    auto const max_size = number(argv[6]);
    auto const min_payload = number(argv[7]), max_payload = number(argv[8]);

    cache c(cc::directory_storage(dir, options_with(max_size)));
    std::uint64_t wrong = 0, logged = 0, loaded = 0, compiled = 0;
    c.set_logger([&](std::string_view line) {
        if (line.find("(absent): new (") == std::string_view::npos) ++logged; // not the first new kernel's line
        std::fprintf(stderr, "storage_worker mix: %.*s\n", static_cast<int>(line.size()), line.data());
    });
    for (std::uint64_t i = 0; i < calls; ++i) {
        auto const id = static_cast<std::uint32_t>(rng() % keys);
        std::size_t const size = size_of(id, min_payload, max_payload);
        auto const k = key_of(id);
        auto const variant = static_cast<std::uint32_t>(rng() % 4);
        unsigned const op = static_cast<unsigned>(rng() % 100);
        if (op < 80) {
            auto r = c.get_or_compile<artifact>(k, {"k" + std::to_string(id), "mix", 1},
                                                [&] { return make_artifact(id, variant, size); });
            if (!is_right(r.value, id, size)) ++wrong;
            (r.outcome == cc::outcome::loaded ? loaded : compiled) += 1;
        } else if (op < 90) {
            c.store(k, make_artifact(id, variant, size), {"k" + std::to_string(id), "mix", 1});
        } else if (op < 97) {
            if (auto a = c.load<artifact>(k, {"k" + std::to_string(id), "mix", 1}))
                if (!is_right(*a, id, size)) ++wrong;
        } else {
            c.storage().remove(k.value());
        }
    }
    auto const s = c.stats();
    auto const counters = c.storage().counters();
    std::uint64_t const other_misses = s.total_misses() - s.miss_count(cc::miss_reason::absent);
    std::printf("wrong=%llu other_misses=%llu store_failures=%llu loaded=%llu compiled=%llu evicted=%llu steps=%llu "
                "logged=%llu | %s\n",
                static_cast<unsigned long long>(wrong), static_cast<unsigned long long>(other_misses),
                static_cast<unsigned long long>(s.total_store_failures()), static_cast<unsigned long long>(loaded),
                static_cast<unsigned long long>(compiled), static_cast<unsigned long long>(counters.evicted),
                static_cast<unsigned long long>(counters.cleanup_steps), static_cast<unsigned long long>(logged), s.summary().c_str());
    return wrong == 0 && other_misses == 0 && s.total_store_failures() == 0 ? 0 : 1;
}

int prune(int argc, char** argv) {
    if (argc != 5) return 2;
    cc::directory_storage storage(argv[2], options_with(number(argv[3])));
    std::uint64_t rounds = 0, removed = 0, errors = 0, busy = 0;
    std::string last_error;
    while (!exists(argv[4])) {
        auto const r = storage.prune();
        ++rounds;
        removed += r.removed;
        // The cleanup lock held all of its bounded wait by the hosts' own cleanup
        // steps (a small limit keeps them cleaning): counted apart, not an error.
        if (r.error == std::errc::resource_unavailable_try_again) {
            ++busy;
        } else if (r.error) {
            ++errors;
            last_error = r.error.message();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    std::printf("prunes=%llu removed=%llu busy=%llu errors=%llu | %s\n", static_cast<unsigned long long>(rounds),
                static_cast<unsigned long long>(removed), static_cast<unsigned long long>(busy),
                static_cast<unsigned long long>(errors), last_error.c_str());
    return errors == 0 ? 0 : 1;
}

int store_same(int argc, char** argv) {
    if (argc != 8) return 2;
    auto const id = static_cast<std::uint32_t>(number(argv[3]));
    auto const variant = static_cast<std::uint32_t>(number(argv[4]));
    auto const size = number(argv[5]);
    auto const rounds = number(argv[7]);
    cache c(cc::directory_storage(argv[2], options_with(0)));
    artifact const a = make_artifact(id, variant, size);
    while (!exists(argv[6])) std::this_thread::yield();
    std::uint64_t ok = 0;
    for (std::uint64_t i = 0; i < rounds; ++i)
        if (c.store(key_of(id), a, {"same", "store-same", 1})) ++ok;
    std::printf("stored=%llu of %llu\n", static_cast<unsigned long long>(ok), static_cast<unsigned long long>(rounds));
    return ok == rounds ? 0 : 1;
}

int writer(int argc, char** argv) {
    if (argc != 9) return 2;
    std::mt19937_64 rng(number(argv[3]));
    auto const keys = static_cast<std::uint32_t>(number(argv[4]));
    auto const min_payload = number(argv[6]), max_payload = number(argv[7]);
    std::string const sync_name = argv[8];
    cc::durability const sync = sync_name == "full"   ? cc::durability::full
                                : sync_name == "file" ? cc::durability::file
                                                      : cc::durability::none;
    cache c(cc::directory_storage(argv[2], options_with(number(argv[5]), sync)));
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) {
        auto const id = static_cast<std::uint32_t>(rng() % keys);
        c.store(key_of(id), make_artifact(id, static_cast<std::uint32_t>(rng() % 4), size_of(id, min_payload, max_payload)),
                {"w", "writer", 1});
    }
}

int store_range(int argc, char** argv) {
    if (argc != 9) return 2;
    auto const first = static_cast<std::uint32_t>(number(argv[3]));
    auto const count = static_cast<std::uint32_t>(number(argv[4]));
    auto const min_payload = number(argv[5]), max_payload = number(argv[6]);
    std::string const go = argv[7], then = argv[8];
    cc::directory_storage storage(argv[2], options_with(0));
    if (go != "-")
        while (!exists(go.c_str())) std::this_thread::yield();
    std::uint32_t stored = 0;
    for (std::uint32_t id = first; id < first + count; ++id)
        if (!storage.write(key_of(id).value(), payload_of(id, 0, size_of(id, min_payload, max_payload)))) ++stored;
    std::printf("stored=%u\n", stored);
    std::fflush(stdout);
    if (then == "hold")
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    return stored == count ? 0 : 1;
}

int store_limited(int argc, char** argv) {
    if (argc != 8) return 2;
    auto const first = static_cast<std::uint32_t>(number(argv[3]));
    auto const count = static_cast<std::uint32_t>(number(argv[4]));
    auto const payload = number(argv[6]);
    std::uint32_t stored = 0;
    {
        cc::directory_storage storage(argv[2], options_with(number(argv[5])));
        while (!exists(argv[7])) std::this_thread::yield();
        for (std::uint32_t id = first; id < first + count; ++id)
            if (!storage.write(key_of(id).value(), payload_of(id, 0, payload))) ++stored;
    }
    std::printf("stored=%u\n", stored);
    return stored == count ? 0 : 1;
}

} // namespace

int host(int argc, char** argv) {
    if (argc != 5) return 2;
    auto const keys = static_cast<std::uint32_t>(number(argv[3]));
    std::uint64_t compiled = 0, loaded = 0, wrong = 0, logged = 0, lock_timeouts = 0;
    {
        cache c(cc::directory_storage(argv[2], options_with(number(argv[4]))));
        c.set_logger([&](std::string_view line) {
            if (line.find("(absent): new (") == std::string_view::npos) ++logged; // not the first new kernel's line
            std::fprintf(stderr, "storage_worker host: %.*s\n", static_cast<int>(line.size()), line.data());
        });
        for (std::uint32_t id = 0; id < keys; ++id) {
            std::size_t const size = size_of(id, 100, 2000);
            auto r = c.get_or_compile<artifact>(key_of(id), {"k" + std::to_string(id), "host", 1},
                                                [&] { return make_artifact(id, 0, size); });
            if (!is_right(r.value, id, size)) ++wrong;
            (r.outcome == cc::outcome::loaded ? loaded : compiled) += 1;
        }
        c.flush_statistics();
        lock_timeouts = c.storage().counters().lock_timeouts;
    }
    std::printf("compiled=%llu loaded=%llu wrong=%llu lock_timeouts=%llu logged=%llu\n",
                static_cast<unsigned long long>(compiled), static_cast<unsigned long long>(loaded),
                static_cast<unsigned long long>(wrong), static_cast<unsigned long long>(lock_timeouts),
                static_cast<unsigned long long>(logged));
    return wrong == 0 ? 0 : 1;
}

int record_kernels(int argc, char** argv) {
    if (argc != 7) return 2;
    cache c{cc::directory_storage(argv[2])};
    auto const first = static_cast<std::uint32_t>(number(argv[3]));
    auto const count = static_cast<std::uint32_t>(number(argv[4]));
    auto const per_flush = static_cast<std::uint32_t>(number(argv[5]));
    std::string const go = argv[6];
    auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (go != "-" && !exists(go.c_str())) {
        if (std::chrono::steady_clock::now() > until) return 3;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::uint32_t stored = 0;
    for (std::uint32_t id = first; id < first + count; ++id) {
        auto const r = c.get_or_compile<artifact>(key_of(id), {"k" + std::to_string(id), "packs", 1},
                                                  [&] { return make_artifact(id, 0, 100); });
        stored += r.outcome == cc::outcome::compiled ? 1 : 0;
        if (per_flush != 0 && (id - first + 1) % per_flush == 0) c.flush_statistics();
    }
    std::printf("stored=%u\n", stored);
    return 0;
}

int record_steps(int argc, char** argv) {
    if (argc < 4) return 2;
    cache c{cc::directory_storage(argv[2])};
    for (int i = 3; i < argc; ++i) {
        std::string const step = argv[i];
        if (step == "flush") {
            c.flush_statistics();
        } else if (step.rfind("touch=", 0) == 0) {
            if (std::FILE* f = std::fopen(step.substr(6).c_str(), "w")) std::fclose(f);
        } else if (step.rfind("wait=", 0) == 0) {
            auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (!exists(step.substr(5).c_str())) {
                if (std::chrono::steady_clock::now() > until) return 3;
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        } else {
            auto const id = static_cast<std::uint32_t>(number(step.c_str()));
            auto const r = c.get_or_compile<artifact>(key_of(id), {"main", "record-steps", 1},
                                                      [&] { return make_artifact(id, 0, 100); });
            std::printf("%u: %s\n", id, r.outcome == cc::outcome::loaded ? "hit" : r.explanation.brief().c_str());
            std::fflush(stdout);
        }
    }
    return 0;
}

std::atomic<int> install_step{0}; ///< fork-while-installing: 1, the install is under way; 2, go on

void hold_install() {
    install_step.store(1);
    while (install_step.load() != 2) std::this_thread::yield();
}

int fork_while_installing(int argc, char** argv) {
    if (argc != 3) return 2;
    cc::directory_storage s(argv[2]);
    cc::key const k = key_of(1).value();
    std::string const value(std::size_t{2} << 20, 'm'); // past map_min_size: a mapped read
    if (s.write(k, value)) return 1;
    auto const read_whole = [&] {
        std::string buffer;
        cc::entry_view view;
        return s.read_view(k, buffer, value.size(), view).status == cc::read_status::found &&
               view.bytes() == value && view.intact();
    };
    cc::detail::directory_storage_impl::during_sigbus_install_for_testing = &hold_install;
    bool parent = false;
    std::thread reader([&] { parent = read_whole(); });
    while (install_step.load() != 1) std::this_thread::yield();
    pid_t const pid = ::fork();
    if (pid == 0) {
        ::alarm(20);
        ::_exit(read_whole() ? 0 : 1);
    }
    install_step.store(2);
    reader.join();
    int status = 0;
    std::string child = "no-fork";
    if (pid > 0 && ::waitpid(pid, &status, 0) == pid)
        child = WIFEXITED(status) ? (WEXITSTATUS(status) == 0 ? "read" : "wrong")
                                  : "signal-" + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    std::printf("child=%s parent=%s\n", child.c_str(), parent ? "read" : "wrong");
    return child == "read" && parent ? 0 : 1;
}

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    std::string const mode = argv[1];
    if (mode == "mix") return mix(argc, argv);
    if (mode == "prune") return prune(argc, argv);
    if (mode == "store-same") return store_same(argc, argv);
    if (mode == "writer") return writer(argc, argv);
    if (mode == "store-range") return store_range(argc, argv);
    if (mode == "host") return host(argc, argv);
    if (mode == "store-limited") return store_limited(argc, argv);
    if (mode == "record-steps") return record_steps(argc, argv);
    if (mode == "record-kernels") return record_kernels(argc, argv);
    if (mode == "fork-while-installing") return fork_while_installing(argc, argv);
    std::fprintf(stderr, "storage_worker: unknown mode %s\n", mode.c_str());
    return 2;
}
