// Compressed entries (compile_cache/compression/zstd.hpp, envelope flag 0x0100): a cache
// with zstd_compression compresses payloads over its threshold and reads them back; a
// cache without it (in this process, and a host program built without libzstd in a
// fresh one) reads a compressed entry as a clean miss `unsupported`; a frame that gives
// more or fewer bytes than the entry declares (a real decompression bomb made by zstd)
// is a counted corrupt miss, and a declared size over the bound is too-large, before
// anything is allocated; any other unknown flag bit is corrupt, as before.
// PREFIX_COMPRESS sets the level, or turns compression off; so does a cache directory's
// kept `compress` (compile-cache set DIR compress N) where PREFIX_COMPRESS is unset.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"
#include "support/storage_model.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/compression/zstd.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/storage/directory/directory_settings_file.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <boost/serialization/string.hpp>

#include <zstd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using compile_cache_test::temp_dir;
using storage_test::artifact;
using storage_test::key_of;

using zstd_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage,
                                   cc::zstd_compression>;
using plain_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage>;

/// A payload that compresses (text-like: words repeated with variations).
std::string compressible(std::size_t size, std::uint32_t seed = 1) {
    static char const* const words[] = {"load ", "store ", "add r1, r2 ", "mul ", "call @kernel_", "ret\n", "br "};
    std::string s;
    std::uint32_t x = seed * 2654435761u + 1;
    while (s.size() < size) {
        x = x * 1103515245u + 12345u;
        s += words[(x >> 16) % 7];
        s += std::to_string((x >> 8) % 64);
    }
    s.resize(size);
    return s;
}

artifact compressible_artifact(std::uint32_t id, std::size_t size) { return artifact{id, 0, compressible(size, id)}; }

std::string stored_bytes(fs::path const& dir, cc::key const& k) {
    cc::directory_storage s(dir.string());
    std::string bytes;
    REQUIRE(s.read(k, bytes, std::size_t{1} << 30).status == cc::read_status::found);
    return bytes;
}

void write_bytes(fs::path const& dir, cc::key const& k, std::string const& bytes) {
    cc::directory_storage s(dir.string());
    REQUIRE(!s.write(k, bytes));
}

/// An entry for `k` whose payload field is `frame`, flagged compressed, declaring
/// `declared` bytes once decompressed; sealed with a sound CRC-32C, as a writer that
/// means harm (or has a bug) would seal it.
std::string compressed_entry(cc::key const& k, std::uint64_t declared, std::string const& frame) {
    cc::entry_metadata m;
    m.name = "bomb";
    m.format_id = plain_cache::entry_format_id<artifact>();
    std::string entry;
    cc::envelope_auth const auth;
    cc::envelope_writer w(entry, k, m, auth);
    w.begin_compressed_payload(declared);
    w.out() += frame;
    w.seal();
    return entry;
}

/// A real zstd frame of `size` zero bytes, made by zstd's streaming API in 1 MiB
/// pieces (nothing that size is ever allocated), its content size in its header.
std::string zero_frame(std::size_t size) {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    REQUIRE(c != nullptr);
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 19);
    ZSTD_CCtx_setPledgedSrcSize(c, size);
    std::string const zeros(std::size_t{1} << 20, '\0');
    std::string out;
    std::vector<char> buffer(ZSTD_CStreamOutSize());
    for (std::size_t done = 0; done < size; done += zeros.size()) {
        bool const last = done + zeros.size() >= size;
        ZSTD_inBuffer in{zeros.data(), zeros.size(), 0};
        std::size_t remaining = 0;
        do {
            ZSTD_outBuffer o{buffer.data(), buffer.size(), 0};
            remaining = ZSTD_compressStream2(c, &o, &in, last ? ZSTD_e_end : ZSTD_e_continue);
            REQUIRE(!ZSTD_isError(remaining));
            out.append(buffer.data(), o.pos);
        } while (last ? remaining != 0 : in.pos != in.size);
    }
    ZSTD_freeCCtx(c);
    return out;
}

/// `frame` with the content size in its header replaced by `claimed` (same field width).
std::string with_claimed_size(std::string frame, std::uint64_t claimed) {
    auto const fhd = static_cast<unsigned char>(frame[4]);
    bool const single_segment = (fhd >> 5) & 1u;
    static constexpr std::size_t dict_id_sizes[] = {0, 1, 2, 4};
    static constexpr std::size_t content_size_sizes[] = {0, 2, 4, 8};
    std::size_t const at = 5 + (single_segment ? 0 : 1) + dict_id_sizes[fhd & 3u];
    std::size_t const width = (fhd >> 6) == 0 ? (single_segment ? 1 : 0) : content_size_sizes[fhd >> 6];
    REQUIRE(width >= 4);
    for (std::size_t i = 0; i < width; ++i) frame[at + i] = static_cast<char>((claimed >> (8 * i)) & 0xffu);
    return frame;
}

std::uint64_t misses(cc::statistics_snapshot const& s, cc::miss_reason r) { return s.miss_count(r); }

} // namespace

TEST_CASE("a payload over the threshold is stored compressed, and loads back the same", "[zstd]") {
    temp_dir dir;
    artifact const a = compressible_artifact(7, 64 * 1024);
    std::string const plain_payload = [&] {
        std::string p;
        cc::boost_binary::save(p, a, cc::resolver_context{});
        return p;
    }();
    {
        zstd_cache c(cc::directory_storage(dir.str()));
        REQUIRE(c.store(key_of(7), a));
    }
    std::string const bytes = stored_bytes(dir.path(), key_of(7).value());
    cc::opened_envelope const e = cc::inspect_envelope(bytes);
    REQUIRE(e.status == cc::envelope_status::ok);
    CHECK(e.compressed);
    CHECK(e.uncompressed_size == plain_payload.size());
    CHECK(e.payload.size() * 4 < plain_payload.size()); // this text compresses well over 4x
    // The flags say so: CRC-32C (low byte 0) and the zstd bit.
    CHECK(static_cast<unsigned char>(bytes[10]) == 0x00);
    CHECK(static_cast<unsigned char>(bytes[11]) == 0x01);

    zstd_cache c(cc::directory_storage(dir.str()));
    std::optional<artifact> const back = c.load<artifact>(key_of(7));
    REQUIRE(back);
    CHECK(back->payload == a.payload);
    CHECK(c.stats().hits == 1);
    CHECK(c.stats().bytes_read == bytes.size());
}

TEST_CASE("a payload under the threshold, or one that does not come out smaller, is stored plain", "[zstd]") {
    temp_dir dir;
    zstd_cache c(cc::directory_storage(dir.str()));
    artifact const small = compressible_artifact(1, 100);
    artifact const random = storage_test::make_artifact(2, 0, 8192); // xorshift bytes: incompressible
    REQUIRE(c.store(key_of(1), small));
    REQUIRE(c.store(key_of(2), random));
    for (std::uint32_t id : {1u, 2u}) {
        cc::opened_envelope const e = cc::inspect_envelope(stored_bytes(dir.path(), key_of(id).value()));
        REQUIRE(e.status == cc::envelope_status::ok);
        CHECK_FALSE(e.compressed);
    }
    CHECK(c.load<artifact>(key_of(1))->payload == small.payload);
    CHECK(c.load<artifact>(key_of(2))->payload == random.payload);
}

TEST_CASE("with compression off (level 0), entries are written plain and compressed ones still read", "[zstd]") {
    temp_dir dir;
    artifact const a = compressible_artifact(3, 16 * 1024);
    {
        zstd_cache c(cc::directory_storage(dir.str()));
        REQUIRE(c.store(key_of(3), a));
    }
    cc::cache_options off;
    off.compression_level = 0;
    zstd_cache c(cc::directory_storage(dir.str()), off);
    REQUIRE(c.load<artifact>(key_of(3))->payload == a.payload);
    REQUIRE(c.store(key_of(4), compressible_artifact(4, 16 * 1024)));
    CHECK_FALSE(cc::inspect_envelope(stored_bytes(dir.path(), key_of(4).value())).compressed);
}

TEST_CASE("a keyed cache compresses too, and an unkeyed reader sees a keyed compressed entry as unauthenticated",
          "[zstd]") {
    temp_dir dir;
    cc::cache_options keyed;
    keyed.secret = "0123456789abcdef0123456789abcdef";
    artifact const a = compressible_artifact(5, 8 * 1024);
    {
        zstd_cache c(cc::directory_storage(dir.str()), keyed);
        REQUIRE(c.store(key_of(5), a));
        REQUIRE(c.load<artifact>(key_of(5))->payload == a.payload);
    }
    std::string const bytes = stored_bytes(dir.path(), key_of(5).value());
    CHECK(static_cast<unsigned char>(bytes[10]) == 0x01); // HMAC-SHA256
    CHECK(static_cast<unsigned char>(bytes[11]) == 0x01); // and compressed
    zstd_cache unkeyed(cc::directory_storage(dir.str()));
    CHECK_FALSE(unkeyed.load<artifact>(key_of(5)));
    CHECK(misses(unkeyed.stats(), cc::miss_reason::unauthenticated) == 1);
}

TEST_CASE("a cache without compression reads a compressed entry as a clean miss, unsupported, and leaves it",
          "[zstd]") {
    temp_dir dir;
    artifact const a = compressible_artifact(6, 32 * 1024);
    {
        zstd_cache c(cc::directory_storage(dir.str()));
        REQUIRE(c.store(key_of(6), a));
    }
    std::string const before = stored_bytes(dir.path(), key_of(6).value());
    std::vector<std::string> lines;
    plain_cache p(cc::directory_storage(dir.str()));
    p.set_logger([&](std::string_view line) { lines.emplace_back(line); });
    CHECK_FALSE(p.load<artifact>(key_of(6)));
    CHECK(misses(p.stats(), cc::miss_reason::unsupported) == 1);
    CHECK(p.stats().total_misses() == 1);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("unsupported: compressed with zstd") != std::string::npos);
    CHECK(stored_bytes(dir.path(), key_of(6).value()) == before); // left for the hosts that can read it
    // open_envelope, which does not decompress, says the same rather than give the frame.
    cc::opened_envelope const opened =
        cc::open_envelope(before, key_of(6).value(), plain_cache::format_id(), std::size_t{64} << 20);
    CHECK(opened.status == cc::envelope_status::unsupported);
    CHECK(opened.payload.empty());
}

TEST_CASE("a host program built without libzstd, in a fresh process, misses compressed entries as unsupported "
          "and compiles",
          "[zstd][process]") {
    temp_dir dir;
    fs::path const cache_dir = dir.path() / "cache";
    unsigned const keys = 4;
    {
        zstd_cache c(cc::directory_storage(cache_dir.string()));
        // The helper's own artifacts for these ids would be incompressible; these are
        // others of the same type, so that a host that read them as plain would see
        // what it did not compile (counted `wrong`).
        for (std::uint32_t id = 0; id < keys; ++id) REQUIRE(c.store(key_of(id), compressible_artifact(id, 1500)));
        for (std::uint32_t id = 0; id < keys; ++id)
            REQUIRE(cc::inspect_envelope(stored_bytes(cache_dir, key_of(id).value())).compressed);
    }
    std::string output;
    std::string log;
    int status = -1;
    {
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        compile_cache_test::child_process p({COMPILE_CACHE_HELPER_storage_worker, "host", cache_dir.string(),
                                             std::to_string(keys), "0"});
        if (!p.wait_for_line(20000)) p.kill();
        status = p.wait();
        output = p.output();
        log = err.text();
    }
    INFO(output << "\n" << log);
    CHECK(status == 0);
    CHECK(output.find("compiled=4 loaded=0 wrong=0") != std::string::npos);
    std::size_t unsupported_lines = 0;
    for (std::size_t at = log.find("unsupported"); at != std::string::npos; at = log.find("unsupported", at + 1))
        ++unsupported_lines;
    CHECK(unsupported_lines == keys);
    CHECK(cc::directory_storage(cache_dir.string()).recorded_counters()["misses.unsupported"] == keys);
}

TEST_CASE("a decompression bomb made by zstd is a counted corrupt miss, and its declared size is bounded",
          "[zstd]") {
    temp_dir dir;
    // 128 MiB of zeros, compressed by zstd itself: a few KiB that expand to twice the
    // cache's bound (64 MiB).
    std::size_t const huge = std::size_t{128} << 20;
    std::string const frame = zero_frame(huge);
    REQUIRE(frame.size() < 64 * 1024);
    REQUIRE(ZSTD_getFrameContentSize(frame.data(), frame.size()) == huge);
    cc::key const k = key_of(9).value();
    std::vector<std::string> lines;
    auto fresh_cache = [&] {
        zstd_cache c(cc::directory_storage(dir.str()));
        c.set_logger([&](std::string_view line) { lines.emplace_back(line); });
        return c;
    };
    // A load on a thread of its own, whose decompression buffer starts empty: what it
    // gave, and the room that buffer holds after it.
    struct load_on_a_thread {
        bool loaded = true;
        std::uint64_t corrupt = 0;
        std::size_t room = 0;
    };
    auto load_on_a_new_thread = [&] {
        load_on_a_thread r;
        std::thread([&] {
            zstd_cache c = fresh_cache();
            r.loaded = c.load<artifact>(key_of(9)).has_value();
            r.corrupt = misses(c.stats(), cc::miss_reason::corrupt);
            r.room = cc::detail::decompress_buffer().bytes().capacity();
        }).join();
        return r;
    };

    SECTION("the entry declares 1 MiB; the frame's header says 128 MiB") {
        write_bytes(dir.path(), k, compressed_entry(k, 1u << 20, frame));
        zstd_cache c = fresh_cache();
        CHECK_FALSE(c.load<artifact>(key_of(9)));
        CHECK(misses(c.stats(), cc::miss_reason::corrupt) == 1);
    }
    SECTION("the entry and the frame's header both declare 2 MiB; its blocks give 128 MiB") {
        std::string const lying = with_claimed_size(frame, 2u << 20);
        REQUIRE(ZSTD_getFrameContentSize(lying.data(), lying.size()) == (2u << 20));
        write_bytes(dir.path(), k, compressed_entry(k, 2u << 20, lying));
        load_on_a_thread const load = load_on_a_new_thread();
        CHECK_FALSE(load.loaded);
        CHECK(load.corrupt == 1);
        CHECK(load.room < (std::size_t{1} << 20)); // the 2 MiB it grew to for the frame, given back
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].find("does not decompress to the 2097152 bytes it declares") != std::string::npos);
    }
    SECTION("the entry declares 48 MiB and the frame's header 4 KiB: corrupt, with no room made for 48 MiB") {
        std::string small;
        REQUIRE(cc::zstd_compression::compress(compressible(4096), 3, small));
        write_bytes(dir.path(), k, compressed_entry(k, std::size_t{48} << 20, small));
        load_on_a_thread const load = load_on_a_new_thread();
        CHECK_FALSE(load.loaded);
        CHECK(load.corrupt == 1);
        CHECK(load.room < (std::size_t{1} << 20));
    }
    SECTION("the entry declares the frame's true 128 MiB: over the bound, too-large, never decompressed") {
        write_bytes(dir.path(), k, compressed_entry(k, huge, frame));
        zstd_cache c = fresh_cache();
        CHECK_FALSE(c.load<artifact>(key_of(9)));
        CHECK(misses(c.stats(), cc::miss_reason::too_large) == 1);
    }
    SECTION("a frame cut short, or with another frame after it, is corrupt") {
        std::string const sound = [] {
            std::string out;
            REQUIRE(cc::zstd_compression::compress(compressible(4096), 3, out));
            return out;
        }();
        for (std::string const& bad : {sound.substr(0, sound.size() - 1), sound + sound}) {
            write_bytes(dir.path(), k, compressed_entry(k, 4096, bad));
            zstd_cache c = fresh_cache();
            CHECK_FALSE(c.load<artifact>(key_of(9)));
            CHECK(misses(c.stats(), cc::miss_reason::corrupt) == 1);
        }
    }
    SECTION("a compressed payload too short to hold its declared size is corrupt") {
        cc::entry_metadata m;
        m.format_id = plain_cache::entry_format_id<artifact>();
        std::string entry;
        cc::envelope_auth const auth;
        cc::envelope_writer w(entry, k, m, auth);
        entry[11] = static_cast<char>(entry[11] | 0x01); // compressed, with 3 payload bytes
        entry[8] = 4;                                     // (which envelope version 4 says)
        w.out() += "abc";
        w.seal();
        write_bytes(dir.path(), k, entry);
        zstd_cache c = fresh_cache();
        CHECK_FALSE(c.load<artifact>(key_of(9)));
        CHECK(misses(c.stats(), cc::miss_reason::corrupt) == 1);
    }
}

TEST_CASE("an entry with the compression flag is never read as plain, and any other unknown flag bit is corrupt",
          "[zstd]") {
    // Readers refuse any flags value they do not know. Before this version an unkeyed
    // reader refused every flags value but 0 as corrupt, so an older host never reads a
    // compressed entry as plain either (checked by hand against 36d2b77: `corrupt`).
    temp_dir dir;
    cc::key const k = key_of(11).value();
    cc::entry_metadata m;
    m.format_id = plain_cache::entry_format_id<artifact>();
    std::string entry;
    cc::envelope_auth const auth;
    cc::envelope_writer w(entry, k, m, auth);
    cc::boost_binary::save(w.out(), compressible_artifact(11, 100), cc::resolver_context{});
    entry[11] = static_cast<char>(entry[11] | 0x02); // flag 0x0200: no meaning in this version
    w.seal();
    write_bytes(dir.path(), k, entry);
    plain_cache p(cc::directory_storage(dir.str()));
    zstd_cache z(cc::directory_storage(dir.str()));
    CHECK_FALSE(p.load<artifact>(key_of(11)));
    CHECK_FALSE(z.load<artifact>(key_of(11)));
    CHECK(misses(p.stats(), cc::miss_reason::corrupt) == 1);
    CHECK(misses(z.stats(), cc::miss_reason::corrupt) == 1);
    CHECK(cc::inspect_envelope(entry).status == cc::envelope_status::corrupt);
}

TEST_CASE("PREFIX_COMPRESS: 0 turns compression off, 1 the default level, 2 to 19 a level, anything else is "
          "one line",
          "[zstd][settings]") {
    std::vector<std::string> lines;
    cc::settings_reader env("CCZSTD_TEST", [&](std::string_view line) { lines.emplace_back(line); });
    auto level_for = [&](char const* value) {
        compile_cache_test::env_var v("CCZSTD_TEST_COMPRESS", value);
        std::optional<int> level = 5;
        cc::detail::compression_level_from_env(env, cc::zstd_compression::max_level, level);
        return level;
    };
    CHECK(level_for(nullptr) == std::optional<int>(5));
    CHECK(level_for("0") == std::optional<int>(0));
    CHECK(level_for("off") == std::optional<int>(0));
    CHECK(level_for("1") == std::nullopt);
    CHECK(level_for("on") == std::nullopt);
    CHECK(level_for("7") == std::optional<int>(7));
    CHECK(level_for("19") == std::optional<int>(19));
    CHECK(lines.empty());
    CHECK(level_for("20") == std::optional<int>(5));
    CHECK(level_for("-1") == std::optional<int>(5));
    CHECK(level_for("fast") == std::optional<int>(5));
    REQUIRE(lines.size() == 3);
    CHECK(lines[2].find("CCZSTD_TEST_COMPRESS=\"fast\" is not understood") == 0);
    // The line docs/configuration.md quotes (with its prefix), word for word.
    std::string const page = [] {
        std::ifstream in(fs::path(COMPILE_CACHE_SOURCE_DIR) / "docs" / "configuration.md");
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }();
    auto quoted = [&](std::string line) {
        line.replace(0, std::string("CCZSTD_TEST").size(), "TINYK_CACHE");
        return page.find("\n    compile_cache: " + line + "\n") != std::string::npos;
    };
    lines.clear();
    {
        compile_cache_test::env_var v("CCZSTD_TEST_COMPRESS", "fast");
        std::optional<int> level;
        cc::detail::compression_level_from_env(env, cc::zstd_compression::max_level, level);
    }
    REQUIRE(lines.size() == 1);
    CHECK(quoted(lines[0]));

    SECTION("through from_env, and a cache without compression says it cannot") {
        temp_dir dir;
        compile_cache_test::env_var d("CCZSTD_TEST_DIR", dir.str());
        compile_cache_test::env_var c("CCZSTD_TEST_COMPRESS", "9");
        CHECK(zstd_cache::from_env("CCZSTD_TEST").options().compression_level == std::optional<int>(9));
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        plain_cache const plain = plain_cache::from_env("CCZSTD_TEST");
        CHECK(plain.enabled());
        std::string const said = err.text();
        CHECK(said.find("CCZSTD_TEST_COMPRESS=\"9\" asks for compressed entries, but this host's cache has "
                        "no Compression policy") != std::string::npos);
        CHECK(page.find("TINYK_CACHE_COMPRESS=\"1\" asks for compressed entries, but this host's cache has no "
                        "Compression policy (compile_cache/compression/zstd.hpp); entries are stored uncompressed\n") !=
              std::string::npos);
    }
}

namespace {

/// The cache directory `dir` (made private, as compile-cache set makes it) keeping
/// `values` in its settings file, as `compile-cache set` writes it.
void keep_in_settings_file(fs::path const& dir, std::map<std::string, std::string> const& values) {
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all);
    REQUIRE(cc::write_directory_settings(dir.string(), values) == 0);
}

/// A directory as a tier's remote (PREFIX_REMOTE = its path), so that a kept setting
/// reaches the cache through a tier.
struct kept_tier_remote : cc::directory_storage {
    using cc::directory_storage::directory_storage;
};
using zstd_tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry,
                                        cc::tiered_storage<cc::directory_storage, kept_tier_remote>,
                                        cc::zstd_compression>;

/// The page docs/configuration.md, for the lines it quotes.
std::string configuration_page() {
    std::ifstream in(fs::path(COMPILE_CACHE_SOURCE_DIR) / "docs" / "configuration.md");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

} // namespace

TEST_CASE("a cache directory's kept compress: a cache that compresses uses it where PREFIX_COMPRESS is unset, the "
          "environment wins, a bad value is one line and the default, a cache without compression says it once",
          "[zstd][settings]") {
    temp_dir dir;
    fs::path const cache_dir = dir.path() / "cache";
    std::string const file = (cache_dir / ".cc-settings").string();
    compile_cache_test::env_var const dir_var("CCZKEPT_DIR", cache_dir.string());
    compile_cache_test::env_var const no_compress("CCZKEPT_COMPRESS", nullptr);
    std::string said;
    // The level a zstd cache made by from_env takes from a directory keeping compress = `value`.
    auto level_kept = [&](std::string const& value) {
        keep_in_settings_file(cache_dir, {{"compress", value}});
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        zstd_cache const c = zstd_cache::from_env("CCZKEPT");
        REQUIRE(c.enabled());
        std::optional<int> const level = c.options().compression_level;
        said = err.text();
        return level;
    };
    CHECK(level_kept("0") == std::optional<int>(0));
    CHECK(said.empty());
    CHECK(level_kept("off") == std::optional<int>(0));
    CHECK(level_kept("19") == std::optional<int>(19));
    CHECK(level_kept("2") == std::optional<int>(2));
    CHECK(level_kept("on") == std::nullopt);
    CHECK(said.empty());
    {
        compile_cache_test::env_var const env("CCZKEPT_COMPRESS", "7"); // the environment wins
        CHECK(level_kept("0") == std::optional<int>(7));
        CHECK(said.empty());
    }
    {
        compile_cache_test::env_var const env("CCZKEPT_COMPRESS", "1");
        CHECK(level_kept("0") == std::nullopt);
    }
    // A value the file holds that does not parse (written by hand: set refuses it).
    CHECK(level_kept("25") == std::nullopt);
    std::string const bad_line = file + ": compress = \"25\" is not understood (0 to store entries uncompressed, 1 to "
                                        "compress them at the default level, or a level from 2 to 19); using the default";
    CHECK(said == "compile_cache: " + bad_line + "\n");
    std::string const page = configuration_page();
    auto quoted = [&](std::string line) {
        line.replace(0, file.size(), "/var/cache/tinyk/.cc-settings");
        return page.find("\n    compile_cache: " + line + "\n") != std::string::npos;
    };
    CHECK(quoted(bad_line));
    CHECK(level_kept("") == std::nullopt); // `compress =`: not a level either
    CHECK(said.find(": compress = \"\" is not understood") != std::string::npos);

    SECTION("a cache without compression says a kept compress that asks for it, in PREFIX_COMPRESS's words") {
        auto said_by_plain = [&](std::string const& value) {
            keep_in_settings_file(cache_dir, {{"compress", value}});
            compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
            CHECK(plain_cache::from_env("CCZKEPT").enabled());
            return err.text();
        };
        std::string const line = file + ": compress = \"19\" asks for compressed entries, but this host's cache has "
                                        "no Compression policy (compile_cache/compression/zstd.hpp); entries are "
                                        "stored uncompressed";
        CHECK(said_by_plain("19") == "compile_cache: " + line + "\n");
        CHECK(quoted(line));
        CHECK(said_by_plain("0").empty());
        compile_cache_test::env_var const env("CCZKEPT_COMPRESS", "0"); // the environment wins, and asks for none
        CHECK(said_by_plain("19").empty());
    }
    SECTION("through a tier, with its remote or without one") {
        keep_in_settings_file(cache_dir, {{"compress", "0"}});
        CHECK(zstd_tier_cache::from_env("CCZKEPT").options().compression_level == std::optional<int>(0));
        compile_cache_test::env_var const remote("CCZKEPT_REMOTE", (dir.path() / "remote").string());
        compile_cache_test::env_var const insecure("CCZKEPT_REMOTE_INSECURE", "1");
        zstd_tier_cache c = zstd_tier_cache::from_env("CCZKEPT");
        REQUIRE(c.enabled());
        CHECK(c.storage().has_remote());
        CHECK(c.options().compression_level == std::optional<int>(0));
    }
}

TEST_CASE("a fresh host process with a zstd cache on a directory that keeps compress 0 stores plain entries, with "
          "PREFIX_COMPRESS=1 compressed ones, and with compress 19 entries compressed at level 19",
          "[zstd][settings][process]") {
    temp_dir dir;
    fs::path const cache_dir = dir.path() / "cache";
    compile_cache_test::env_var const dir_var("CCZHOST_DIR", cache_dir.string());
    compile_cache_test::env_var const no_compress("CCZHOST_COMPRESS", nullptr);
    unsigned const count = 3;
    // A fresh host storing ids 0..count-1 into a new cache directory keeping `kept`.
    auto host = [&](std::map<std::string, std::string> const& kept) {
        fs::remove_all(cache_dir);
        keep_in_settings_file(cache_dir, kept);
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        compile_cache_test::child_process p({COMPILE_CACHE_HELPER_zstd_host, "CCZHOST", std::to_string(count)});
        if (!p.wait_for_line(20000)) p.kill();
        int const status = p.wait();
        std::string const log = err.text();
        INFO(p.output() << log);
        CHECK(status == 0);
        CHECK(log.empty());
        return p.output();
    };
    // Each entry's flags (bytes 10 and 11: CRC-32C, and the zstd bit or not) and envelope.
    auto all_entries = [&](bool compressed) {
        for (std::uint32_t id = 0; id < count; ++id) {
            std::string const bytes = stored_bytes(cache_dir, key_of(id).value());
            cc::opened_envelope const e = cc::inspect_envelope(bytes);
            REQUIRE(e.status == cc::envelope_status::ok);
            CHECK(e.compressed == compressed);
            CHECK(static_cast<unsigned char>(bytes[11]) == (compressed ? 0x01 : 0x00));
        }
    };

    CHECK(host({{"compress", "0"}}) == "stored=3 level=0\n");
    all_entries(false);
    {
        compile_cache_test::env_var const env("CCZHOST_COMPRESS", "1"); // the environment wins
        CHECK(host({{"compress", "0"}}) == "stored=3 level=default\n");
        all_entries(true);
    }
    CHECK(host({}) == "stored=3 level=default\n"); // nothing kept: the default, compressed
    all_entries(true);

    // compress 19: each frame is the one zstd makes of the payload at level 19, not at the default.
    CHECK(host({{"compress", "19"}}) == "stored=3 level=19\n");
    all_entries(true);
    for (std::uint32_t id = 0; id < count; ++id) {
        std::string const bytes = stored_bytes(cache_dir, key_of(id).value());
        cc::opened_envelope const e = cc::inspect_envelope(bytes);
        std::string plain(static_cast<std::size_t>(e.uncompressed_size), '\0');
        REQUIRE(cc::zstd_compression::decompress(e.payload, plain.data(), plain.size()));
        std::string at_19, at_default;
        REQUIRE(cc::zstd_compression::compress(plain, 19, at_19));
        REQUIRE(cc::zstd_compression::compress(plain, cc::zstd_compression::default_level, at_default));
        REQUIRE(at_19 != at_default); // (so that the check below can tell them apart)
        CHECK(e.payload == at_19);
    }
}
