// compile_cache: the running program's GNU build-id, read from its own ELF notes,
// so that rebuilding the host compiler re-keys everything it cached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__has_include) && !defined(COMPILE_CACHE_NO_LINUX_EXTENSIONS)
#if __has_include(<link.h>) && __has_include(<elf.h>)
#include <elf.h>
#include <link.h>
#define COMPILE_CACHE_HAS_DL_ITERATE_PHDR 1
#endif
#endif

namespace compile_cache::detail {

#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
inline int find_main_build_id(dl_phdr_info* info, std::size_t, void* data) {
    // The first object dl_iterate_phdr reports is the main program.
    auto* out = static_cast<std::string*>(data);
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
        auto const& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_NOTE) continue;
        auto const* p = reinterpret_cast<unsigned char const*>(info->dlpi_addr + ph.p_vaddr);
        std::size_t left = ph.p_memsz;
        // Note fields are padded to the segment's alignment: 4, or 8 for segments
        // such as .note.gnu.property.
        std::size_t align = ph.p_align == 8 ? 8 : 4;
        while (left >= 12) {
            std::uint32_t namesz, descsz, type;
            std::memcpy(&namesz, p, 4);
            std::memcpy(&descsz, p + 4, 4);
            std::memcpy(&type, p + 8, 4);
            // The name follows the 12-byte header; the descriptor and the next note
            // start at the next multiple of the alignment.
            auto align_up = [align](std::size_t n) { return (n + align - 1) & ~(align - 1); };
            std::size_t desc_at = align_up(12 + std::size_t{namesz});
            std::size_t next = align_up(desc_at + std::size_t{descsz});
            if (desc_at + descsz > left) break;
            if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(p + 12, "GNU", 4) == 0) {
                static constexpr char digits[] = "0123456789abcdef";
                unsigned char const* d = p + desc_at;
                for (std::uint32_t j = 0; j < descsz; ++j) {
                    out->push_back(digits[d[j] >> 4]);
                    out->push_back(digits[d[j] & 15]);
                }
                return 1;
            }
            if (next >= left) break;
            p += next;
            left -= next;
        }
    }
    return 1; // only the main program matters
}
#endif

/// Lower-case hex of the main program's NT_GNU_BUILD_ID note; empty when it has none
/// or the platform cannot tell.
inline std::string const& main_program_build_id() {
    static std::string const id = [] {
        std::string s;
#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
        dl_iterate_phdr(&find_main_build_id, &s);
#endif
        return s;
    }();
    return id;
}

} // namespace compile_cache::detail
