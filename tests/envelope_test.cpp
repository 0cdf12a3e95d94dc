// The envelope every entry travels in, shown through a real cache over a directory:
// a damaged, truncated, misplaced, foreign or oversized entry is a miss with its own
// counted reason, and none of them reaches the deserializer.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/stored_entry.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/storage/memory_storage.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using namespace compile_cache_test;        // temp_dir, files, stored_entry (support/)
using namespace compile_cache_test::model; // compiled_kernel, small_kernel

template <class Serializer>
using cache_with = cc::basic_cache<cc::sha256, Serializer, cc::registry, cc::directory_storage>;

} // namespace

TEST_CASE("an envelope opens to the metadata and payload it was sealed with", "[envelope]") {
    auto const digest = cc::sha256_digest("k", 1);
    cc::key const k(digest);
    cc::entry_metadata meta;
    meta.name = "axpy";
    meta.origin_file = "blas.dsl";
    meta.format_id = "test-format 1";
    meta.origin_line = 7;
    meta.created_ns = 1700000000123456789;
    meta.compile_ns = 4200000;

    std::string entry;
    std::size_t const length_at = cc::begin_envelope(entry, k, meta);
    std::string const payload("payload \0 with \xff binary bytes", 30);
    entry += payload;
    CHECK(cc::envelope_payload_size(entry, length_at) == payload.size());
    cc::seal_envelope(entry, length_at);
    CHECK(entry.compare(0, 8, "CCENTRY\n") == 0);

    cc::opened_envelope const e = cc::open_envelope(entry, k, "test-format 1", 1 << 20);
    REQUIRE(e.status == cc::envelope_status::ok);
    CHECK(e.payload == payload);
    CHECK(e.metadata.name == "axpy");
    CHECK(e.metadata.origin_file == "blas.dsl");
    CHECK(e.metadata.format_id == "test-format 1");
    CHECK(e.metadata.origin_line == 7);
    CHECK(e.metadata.created_ns == 1700000000123456789);
    CHECK(e.metadata.compile_ns == 4200000);

    CHECK(cc::open_envelope(entry, k, "test-format 2", 1 << 20).status == cc::envelope_status::foreign_version);
    CHECK(cc::open_envelope(entry, cc::key(cc::sha256_digest("j", 1)), "test-format 1", 1 << 20).status ==
          cc::envelope_status::key_mismatch);
    CHECK(cc::open_envelope(entry, k, "test-format 1", payload.size() - 1).status ==
          cc::envelope_status::too_large);
    CHECK(cc::open_envelope(entry, k, "test-format 1", payload.size()).status == cc::envelope_status::ok);
}

TEST_CASE("a cache entry records what was stored and when", "[envelope]") {
    stored_entry s;
    auto const now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    cc::opened_envelope const e = cc::open_envelope(s.sound, s.k.value(), cc::boost_binary::format_id(), 1 << 20);
    REQUIRE(e.status == cc::envelope_status::ok);
    CHECK(e.metadata.name == "axpy");
    CHECK(e.metadata.origin_file == "blas.dsl");
    CHECK(e.metadata.origin_line == 7);
    CHECK(e.metadata.format_id == cc::default_cache::entry_format_id<compiled_kernel>());
    CHECK(e.metadata.created_ns <= now);
    CHECK(e.metadata.created_ns > now - std::int64_t{60} * 1000000000);
}

TEST_CASE("an entry records the digest of each named component of its key", "[envelope]") {
    temp_dir dir;
    cc::default_cache cache{cc::directory_storage((dir.path() / "cache").string())};
    cc::key_result const k = cc::key_builder<>().add("ir", "axpy(a,x,y) = a*x+y").add("opt", 2).add("target", "vm").finish();
    REQUIRE(k.components().size() == 3);
    REQUIRE(cache.store(k, small_kernel(), axpy_info));

    cc::opened_envelope const e =
        cc::open_envelope(read_file(cache.storage().entry_path(k.value())), k.value(), cc::boost_binary::format_id(), 1 << 20);
    REQUIRE(e.status == cc::envelope_status::ok);
    CHECK(e.metadata.components == k.components());
    CHECK(e.metadata.components[1].name == "opt");
}

TEST_CASE("inspect_envelope checks an entry without knowing its key or serializer format", "[envelope]") {
    stored_entry s;
    cc::opened_envelope const e = cc::inspect_envelope(s.sound);
    REQUIRE(e.status == cc::envelope_status::ok);
    CHECK(e.stored_key == s.k.value());
    CHECK(e.version == cc::envelope_version_plain);
    CHECK(!e.keyed);
    CHECK(e.metadata.name == "axpy");
    CHECK(e.metadata.format_id == cc::default_cache::entry_format_id<compiled_kernel>());
    CHECK(e.metadata.components == s.k.components());
    CHECK(!e.payload.empty());

    SECTION("a damaged entry is corrupt") {
        std::string damaged = s.sound;
        damaged[damaged.size() / 2] ^= 0x20;
        CHECK(cc::inspect_envelope(damaged).status == cc::envelope_status::corrupt);
    }
    SECTION("an unkeyed entry read with a secret is unauthenticated") {
        CHECK(cc::inspect_envelope(s.sound, cc::envelope_auth("secret")).status ==
              cc::envelope_status::unauthenticated);
    }
    SECTION("a sound entry of envelope version 2 is foreign, with its version said") {
        std::string older = s.sound.substr(0, s.sound.size() - cc::detail::envelope_check_size);
        older[8] = 2;
        cc::detail::append_envelope_check(older);
        cc::opened_envelope const o = cc::inspect_envelope(older);
        CHECK(o.status == cc::envelope_status::foreign_version);
        CHECK(o.version == 2);
    }
}

TEST_CASE("an entry claiming more components than its metadata holds is corrupt, and nothing is reserved for them",
          "[envelope]") {
    stored_entry s;
    // The component count follows the three strings and three 8-byte integers of the
    // metadata; find it from the layout and claim four billion components.
    std::size_t const key_size = static_cast<unsigned char>(s.sound[12]);
    std::size_t at = 13 + key_size + 4;
    for (int field = 0; field < 3; ++field) {
        std::uint32_t n = 0;
        for (int b = 3; b >= 0; --b) n = n << 8 | static_cast<unsigned char>(s.sound[at + static_cast<std::size_t>(b)]);
        at += 4 + n;
    }
    at += 3 * 8;
    REQUIRE(static_cast<unsigned char>(s.sound[at]) == s.k.components().size());
    std::string bogus = s.sound.substr(0, s.sound.size() - cc::detail::envelope_check_size);
    for (std::size_t b = 0; b < 4; ++b) bogus[at + b] = '\xff';
    cc::detail::append_envelope_check(bogus);
    CHECK(cc::inspect_envelope(bogus).status == cc::envelope_status::corrupt);
    write_file(s.path, bogus);
    CHECK(s.misses_with(cc::miss_reason::corrupt));
}

TEST_CASE("every byte of an entry flipped in turn is a miss with reason corrupt", "[envelope]") {
    stored_entry s;
    REQUIRE(s.sound.size() > 100);
    CHECK(s.flips_not_missed({0xffu}, cc::miss_reason::corrupt).empty());
    CHECK(s.cache.stats().miss_count(cc::miss_reason::corrupt) == s.sound.size());

    write_file(s.path, s.sound); // and the sound entry still loads
    CHECK(s.cache.load<compiled_kernel>(s.k, axpy_info));
}

TEST_CASE("an entry truncated at every length is a miss with reason corrupt", "[envelope]") {
    stored_entry s;
    CHECK(s.truncations_not_missed(cc::miss_reason::corrupt).empty());

    SECTION("so is an entry with bytes appended") {
        write_file(s.path, s.sound + '\0');
        CHECK(s.misses_with(cc::miss_reason::corrupt));
    }
}

TEST_CASE("a sound entry under another key's file name is a miss with reason key_mismatch", "[envelope]") {
    stored_entry s;
    cc::key_result const other = plain_key("axpy(a,x,y) = a*x-y");
    fs::path const other_path = s.cache.storage().entry_path(other.value());
    fs::create_directories(other_path.parent_path());
    write_file(other_path, s.sound);

    cc::statistics_snapshot const before = s.cache.stats();
    CHECK(!s.cache.load<compiled_kernel>(other, axpy_info));
    CHECK(s.cache.stats().miss_count(cc::miss_reason::key_mismatch) == before.miss_count(cc::miss_reason::key_mismatch) + 1);
    CHECK(s.cache.stats().total_misses() == before.total_misses() + 1);
}

TEST_CASE("a sound entry in another envelope version is a miss with reason foreign_version", "[envelope]") {
    stored_entry s;
    // Offset 8, right after the magic: the version, little-endian. Sealed again with a
    // valid check value, as a later release of the library would write it.
    REQUIRE(static_cast<unsigned char>(s.sound[8]) == cc::envelope_version_plain);
    REQUIRE(static_cast<unsigned char>(s.sound[9]) == 0);
    std::string later = s.sound.substr(0, s.sound.size() - cc::detail::envelope_check_size);
    later[8] = 6; // (5 is a signer's copy: signed_entries_test.cpp)
    later[9] = 0;
    CHECK(s.misses_when_resealed(later, cc::miss_reason::foreign_version));
}

namespace {
/// A storage over memory that hears of the entries the cache found damaged (its
/// corrupt(), which a shared storage may answer by deleting the entry).
struct storage_told_of_damage {
    cc::memory_storage* inner;
    std::vector<cc::key>* told;
    void corrupt(cc::key const& k) {
        told->push_back(k);
        inner->remove(k);
    }
    cc::read_result read(cc::key const& k, std::string& out, std::size_t max_size) {
        return inner->read(k, out, max_size);
    }
    std::error_code write(cc::key const& k, std::string_view bytes) { return inner->write(k, bytes); }
    std::error_code remove(cc::key const& k) { return inner->remove(k); }
};

/// `entry` with its version changed to `version` and its flags to `flags`, sealed again
/// with a valid CRC-32C: what a writer of that version would write.
std::string resealed_as(std::string const& entry, std::uint16_t version, std::uint16_t flags) {
    std::string out = entry.substr(0, entry.size() - cc::detail::envelope_check_size);
    out[8] = static_cast<char>(version & 0xff);
    out[9] = static_cast<char>(version >> 8);
    out[10] = static_cast<char>(flags & 0xff);
    out[11] = static_cast<char>(flags >> 8);
    cc::detail::append_envelope_check(out);
    return out;
}
} // namespace

TEST_CASE("envelope versions: a plain entry is version 3, a compressed one 4, a version-6 entry is a foreign_version "
          "miss the storage is not told of, a version-3 or 5 entry with flags it cannot have a corrupt one",
          "[envelope]") {
    cc::memory_storage memory;
    std::vector<cc::key> told;
    cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, storage_told_of_damage> cache(
        storage_told_of_damage{&memory, &told});
    cc::key_result const k = cache.make_key_builder("envelope versions").add("ir", "axpy").finish();
    REQUIRE(cache.store(k, small_kernel(), axpy_info));
    std::string plain;
    REQUIRE(memory.read(k.value(), plain, 1 << 20).status == cc::read_status::found);
    CHECK(plain[8] == 3); // version 3, little-endian
    CHECK(plain[9] == 0);
    CHECK(cc::inspect_envelope(plain).version == 3);

    SECTION("compressed: version 4, and back to 3 when the compression is dropped") {
        std::string entry;
        cc::envelope_auth const auth("a secret");
        cc::envelope_writer w(entry, k.value(), cc::entry_metadata{}, auth);
        std::size_t const payload_at = entry.size();
        w.begin_compressed_payload(3);
        CHECK(entry[8] == 4);
        CHECK(entry[11] == 1); // flag 0x0100
        w.drop_compressed_payload(payload_at);
        CHECK(entry[8] == 3);
        CHECK(entry[10] == 1); // still keyed
        CHECK(entry[11] == 0);
        w.begin_compressed_payload(3);
        w.out() += "abc";
        w.seal();
        cc::opened_envelope const o = cc::inspect_envelope(entry, auth);
        CHECK(o.status == cc::envelope_status::ok);
        CHECK(o.version == 4);
        CHECK(o.compressed);
        // A reader without the secret tells it from damage by its header, as for version 3.
        CHECK(cc::inspect_envelope(entry).status == cc::envelope_status::unauthenticated);
    }
    SECTION("a version-6 entry: foreign_version, left where it is") {
        std::string const later = resealed_as(plain, 6, 0);
        REQUIRE(!memory.write(k.value(), later));
        CHECK(!cache.load<compiled_kernel>(k, axpy_info));
        CHECK(cache.stats().miss_count(cc::miss_reason::foreign_version) == 1);
        CHECK(told.empty());
        std::string still;
        CHECK(memory.read(k.value(), still, 1 << 20).status == cc::read_status::found);
        CHECK(still == later);
    }
    SECTION("a version-3 entry with the signature, compression or copy flag, a version-5 one without the copy "
            "flag: corrupt, and the storage is told") {
        struct shape {
            std::uint16_t version, flags;
        };
        for (shape const bad : {shape{3, 2}, shape{3, 0x0100}, shape{3, 0x0200}, shape{5, 0}, shape{5, 0x0100}}) {
            INFO("version " << bad.version << ", flags " << bad.flags);
            told.clear();
            REQUIRE(!memory.write(k.value(), resealed_as(plain, bad.version, bad.flags)));
            CHECK(!cache.load<compiled_kernel>(k, axpy_info));
            CHECK(told.size() == 1);
        }
        CHECK(cache.stats().miss_count(cc::miss_reason::corrupt) == 5);
    }
    SECTION("a version-4 entry of this reader's mode opens, whatever version it would have been written as") {
        REQUIRE(!memory.write(k.value(), resealed_as(plain, 4, 0)));
        CHECK(cache.load<compiled_kernel>(k, axpy_info));
        CHECK(told.empty());
    }
}

TEST_CASE("an entry written with another serializer format is a miss with reason foreign_version",
          "[envelope]") {
    temp_dir dir;
    cache_with<cc::boost_text> text_cache(cc::directory_storage(dir.path().string()));
    cache_with<cc::boost_binary> binary_cache(cc::directory_storage(dir.path().string()));
    cc::key_result const k = plain_key("axpy(a,x,y) = a*x+y");

    REQUIRE(text_cache.store(k, small_kernel(), axpy_info));
    int const deserialized = kernels_deserialized;
    CHECK(!binary_cache.load<compiled_kernel>(k, axpy_info));
    CHECK(binary_cache.stats().miss_count(cc::miss_reason::foreign_version) == 1);
    CHECK(binary_cache.stats().total_misses() == 1);
    CHECK(kernels_deserialized == deserialized);

    // The text cache reads its own entry; and keys made the usual way already differ.
    CHECK(text_cache.load<compiled_kernel>(k, axpy_info));
    CHECK(text_cache.make_key_builder().add("ir", "x").finish().value() !=
          binary_cache.make_key_builder().add("ir", "x").finish().value());
}

namespace {
// Two artifact types of one shape: Boost's binary archive writes the same bytes for both.
struct bytecode {
    std::vector<int> words;
    template <class Archive>
    void serialize(Archive& a, unsigned) {
        a & words;
    }
};
struct native_code {
    std::vector<int> words;
    template <class Archive>
    void serialize(Archive& a, unsigned) {
        a & words;
    }
};
} // namespace

TEST_CASE("an entry stored as one artifact type is a foreign_version miss when loaded as another under its key",
          "[envelope]") {
    temp_dir dir;
    cc::default_cache cache{cc::directory_storage(dir.path().string())};
    cc::key_result const k = plain_key("kernel(x) = x+1");
    cc::entry_info const info{"kernel", "kernels.dsl", 1};

    REQUIRE(cache.get_or_compile<bytecode>(k, info, [] { return bytecode{{1, 2, 3}}; }).outcome ==
            cc::outcome::compiled);
    cc::cached<native_code> const native = cache.get_or_compile<native_code>(k, info, [] { return native_code{{7, 8}}; });
    CHECK(native.outcome == cc::outcome::compiled);
    CHECK(native.reason == "foreign-version");
    CHECK(native.value.words == std::vector<int>{7, 8});
    CHECK(cache.stats().miss_count(cc::miss_reason::foreign_version) == 1);

    // The entry is now the native code's: it loads as that, and not as bytecode.
    std::optional<native_code> const loaded = cache.load<native_code>(k, info);
    REQUIRE(loaded);
    CHECK(loaded->words == std::vector<int>{7, 8});
    CHECK(!cache.load<bytecode>(k, info));
    CHECK(cache.stats().miss_count(cc::miss_reason::foreign_version) == 2);

    // The entry names its type; open_envelope given the serializer's format alone opens it
    // (as a host that reads entries itself calls it), given another type's it does not.
    std::string const bytes = read_file(cache.storage().entry_path(k.value()));
    cc::opened_envelope const opened = cc::open_envelope(bytes, k.value(), cc::default_cache::format_id(), 1 << 20);
    REQUIRE(opened.status == cc::envelope_status::ok);
    CHECK(opened.metadata.format_id == cc::default_cache::entry_format_id<native_code>());
    CHECK(opened.metadata.format_id != cc::default_cache::entry_format_id<bytecode>());
    CHECK(cc::open_envelope(bytes, k.value(), cc::default_cache::entry_format_id<native_code>(), 1 << 20).status ==
          cc::envelope_status::ok);
    CHECK(cc::open_envelope(bytes, k.value(), cc::default_cache::entry_format_id<bytecode>(), 1 << 20).status ==
          cc::envelope_status::foreign_version);
    CHECK(cc::open_envelope(bytes, k.value(), cc::boost_text::format_id(), 1 << 20).status ==
          cc::envelope_status::foreign_version);
}

TEST_CASE("an entry of an earlier release, whose format names no artifact type, misses as foreign_version",
          "[envelope]") {
    // What the release before entry_format_id wrote: the same payload, the serializer's
    // format alone. Read as any type, it could be another's bytes: never loaded.
    stored_entry s;
    cc::opened_envelope const sound = cc::open_envelope(s.sound, s.k.value(), cc::default_cache::format_id(), 1 << 20);
    REQUIRE(sound.status == cc::envelope_status::ok);
    cc::entry_metadata m = sound.metadata;
    m.format_id = cc::default_cache::format_id();
    std::string earlier;
    std::size_t const at = cc::begin_envelope(earlier, s.k.value(), m);
    earlier += sound.payload;
    cc::seal_envelope(earlier, at);
    write_file(s.path, earlier);
    CHECK(s.misses_with(cc::miss_reason::foreign_version));
    // A host that opens entries itself with the serializer's format still opens it.
    cc::opened_envelope const opened = cc::open_envelope(earlier, s.k.value(), cc::default_cache::format_id(), 1 << 20);
    CHECK(opened.status == cc::envelope_status::ok);
    CHECK(opened.payload == sound.payload);
}

TEST_CASE("an entry over max_entry_size is not read: the bound is checked before a byte is deserialized",
          "[envelope]") {
    stored_entry s;
    cc::cache_options options;
    options.max_entry_size = s.sound.size() - 1;
    cc::default_cache bounded(cc::directory_storage(s.root.string()), options);
    int const deserialized = kernels_deserialized;
    CHECK(!bounded.load<compiled_kernel>(s.k, axpy_info));
    CHECK(bounded.stats().miss_count(cc::miss_reason::too_large) == 1);
    CHECK(bounded.stats().total_misses() == 1);
    CHECK(kernels_deserialized == deserialized);

    options.max_entry_size = s.sound.size(); // the bound is inclusive
    cc::default_cache exact(cc::directory_storage(s.root.string()), options);
    CHECK(exact.load<compiled_kernel>(s.k, axpy_info));
}

TEST_CASE("an entry over max_entry_size is not written, and the host keeps its value", "[envelope]") {
    stored_entry s;
    cc::opened_envelope const e = cc::open_envelope(s.sound, s.k.value(), cc::boost_binary::format_id(), 1 << 20);
    REQUIRE(e.status == cc::envelope_status::ok);
    std::size_t const payload = e.payload.size();
    std::size_t const entry_size = s.sound.size();
    REQUIRE(payload < entry_size);

    // No room for the payload, or room for the payload but not for the entry around it.
    std::size_t const bound = GENERATE_COPY(payload / 2, payload, entry_size - 1);
    CAPTURE(bound, payload, entry_size);
    temp_dir other;
    cc::cache_options options;
    options.max_entry_size = bound;
    cc::default_cache bounded(cc::directory_storage((other.path() / "cache").string()), options);
    auto r = bounded.get_or_compile<compiled_kernel>(s.k, axpy_info, [] { return small_kernel(); });
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(r.value.bytecode == small_kernel().bytecode);
    CHECK(bounded.stats().failure_count(cc::store_failure::too_large) == 1);
    CHECK(bounded.stats().stores == 0);
    CHECK(!fs::exists(bounded.storage().entry_path(s.k.value())));
}

TEST_CASE("an entry whose metadata is over the readers' 1 MiB bound is not written: it could never be loaded",
          "[envelope]") {
    temp_dir dir;
    cc::default_cache cache{cc::directory_storage((dir.path() / "cache").string())};
    cc::key_result const k = plain_key("axpy with a long origin");
    cc::entry_info info = axpy_info;
    info.origin_file = std::string((std::size_t{1} << 20) + 1, 'f');
    CHECK(!cache.store(k, small_kernel(), info));
    CHECK(cache.stats().failure_count(cc::store_failure::too_large) == 1);
    CHECK(!fs::exists(cache.storage().entry_path(k.value())));

    info.origin_file = std::string(std::size_t{1} << 19, 'f'); // half of it: written, and it loads
    CHECK(cache.store(k, small_kernel(), info));
    CHECK(cache.load<compiled_kernel>(k, info));
}

TEST_CASE("envelope_writer seals what open_envelope opens, and knows the sealed size before sealing", "[envelope]") {
    cc::key const k(cc::sha256_digest("k", 1));
    cc::entry_metadata meta;
    meta.name = "axpy";
    meta.format_id = "test-format 1";
    meta.origin_line = 7;
    std::string const payload("payload \0 with \xff binary bytes", 30);
    for (cc::envelope_auth const& auth : {cc::envelope_auth(), cc::envelope_auth("secret")}) {
        std::string entry;
        cc::envelope_writer writer(entry, k, meta, auth);
        CHECK(writer.metadata_fits());
        writer.out() += payload;
        CHECK(writer.payload_size() == payload.size());
        std::size_t const sealed_size = writer.sealed_size();
        writer.seal();
        CHECK(entry.size() == sealed_size);

        cc::opened_envelope const e = cc::open_envelope(entry, k, "test-format 1", 1 << 20, auth);
        REQUIRE(e.status == cc::envelope_status::ok);
        CHECK(e.keyed == auth.keyed());
        CHECK(e.payload == payload);
        CHECK(e.metadata.name == "axpy");
        CHECK(e.metadata.origin_line == 7);
    }

    meta.origin_file = std::string((std::size_t{1} << 20) + 1, 'f');
    std::string entry;
    CHECK(!cc::envelope_writer(entry, k, meta, cc::envelope_auth()).metadata_fits());
}

namespace {
/// A writer for `entry` given its auth as a temporary, which is gone when this returns.
[[gnu::noinline]] cc::envelope_writer writer_with_temporary_auth(std::string& entry, cc::key const& k) {
    cc::entry_metadata meta;
    meta.format_id = "test-format 1";
    return cc::envelope_writer(entry, k, meta, cc::envelope_auth("secret"));
}

/// Writes over the stack where the temporary auth was.
[[gnu::noinline]] void scribble_on_stack() {
    volatile unsigned char bytes[4096];
    for (std::size_t i = 0; i < sizeof bytes; ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
}
} // namespace

TEST_CASE("envelope_writer given a temporary envelope_auth keeps it: sealed after the statement, the entry opens",
          "[envelope]") {
    cc::key const k(cc::sha256_digest("k", 1));
    std::string entry;
    cc::envelope_writer writer = writer_with_temporary_auth(entry, k);
    scribble_on_stack();
    writer.out() += "payload";
    cc::envelope_writer const copy = writer; // a copy shares what it keeps
    std::size_t const sealed_size = copy.sealed_size();
    writer.seal();
    CHECK(entry.size() == sealed_size);
    cc::opened_envelope const e = cc::open_envelope(entry, k, "test-format 1", 1 << 20, cc::envelope_auth("secret"));
    CHECK(e.status == cc::envelope_status::ok);
    CHECK(e.keyed);
    CHECK(e.payload == "payload");
    // `{}` for the auth still compiles, as it did before the writer could keep one.
    std::string unkeyed;
    cc::envelope_writer braced(unkeyed, k, cc::entry_metadata{}, {});
    CHECK(braced.sealed_size() == unkeyed.size() + 4);
}
