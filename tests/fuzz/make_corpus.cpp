// Writes the seed corpus of the load fuzzer (tests/fuzz/corpus/): real entries and
// real payloads of fuzz_artifact.hpp's artifact, each behind the mode byte that tells
// load_fuzzer.cpp how to use it. Run by hand when the artifact or the envelope changes:
//   make_fuzz_corpus tests/fuzz/corpus
#include "fuzz_artifact.hpp"

#include <compile_cache/envelope.hpp>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

using namespace fuzzk;

template <class Serializer>
struct writer {
    world w;
    memory_cache<Serializer> unkeyed{cc::memory_storage{}, cc::cache_options{}};
    memory_cache<Serializer> keyed{cc::memory_storage{}, keyed_options()};

    static cc::cache_options keyed_options() {
        cc::cache_options o;
        o.secret = secret;
        return o;
    }

    writer() {
        w.register_with(unkeyed.resolver());
        w.register_with(keyed.resolver());
    }

    /// The entry the cache writes for `a`, and its payload.
    std::string entry(artifact const& a, bool with_secret) {
        auto& c = with_secret ? keyed : unkeyed;
        if (!c.store(w.key, a, info, &w.self)) throw std::runtime_error("store failed");
        std::string bytes;
        c.storage().read(w.key.value(), bytes, std::size_t{1} << 20);
        return bytes;
    }
    std::string payload(artifact const& a) {
        std::string const e = entry(a, false);
        auto const opened = cc::open_envelope(e, w.key.value(), memory_cache<Serializer>::format_id(), 1 << 20);
        if (opened.status != cc::envelope_status::ok) throw std::runtime_error("cannot open own entry");
        return std::string(opened.payload);
    }
};

void write(std::string const& dir, std::string const& name, unsigned mode, std::string const& bytes) {
    std::ofstream f(dir + "/" + name, std::ios::binary | std::ios::trunc);
    f.put(static_cast<char>(mode));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + name);
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
        return 2;
    }
    std::string const dir = argv[1];
    writer<cc::boost_binary> bin;
    writer<cc::boost_text> text;
    artifact const full = bin.w.sample();
    artifact const bare; // no references, empty collections

    write(dir, "entry-binary", 0, bin.entry(full, false));
    write(dir, "entry-binary-keyed", keyed, bin.entry(full, true));
    write(dir, "entry-text", text_archive, text.entry(text.w.sample(), false));
    write(dir, "entry-text-keyed", text_archive | keyed, text.entry(text.w.sample(), true));
    write(dir, "entry-binary-disk", on_disk, bin.entry(full, false));

    write(dir, "payload-binary", wrap_payload, bin.payload(full));
    write(dir, "payload-binary-keyed-moved", wrap_payload | keyed | moved, bin.payload(full));
    write(dir, "payload-binary-bare", wrap_payload, bin.payload(bare));
    write(dir, "payload-binary-disk", wrap_payload | on_disk, bin.payload(full));
    write(dir, "payload-text", wrap_payload | text_archive, text.payload(text.w.sample()));
    write(dir, "payload-text-moved", wrap_payload | text_archive | moved, text.payload(text.w.sample()));
    write(dir, "payload-text-bare", wrap_payload | text_archive, text.payload(bare));
    return 0;
}
