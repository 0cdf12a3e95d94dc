// compile_cache: object_store, the seam between an LLVM JIT's ObjectCache
// (compile_cache/llvm/object_cache.hpp) and a basic_cache composition
// (compile_cache/llvm/cache_object_store.hpp).
//
// It needs neither LLVM nor Boost nor RTTI: a plain value with function pointers.
// That is what lets a host whose LLVM was built without RTTI (a class derived from
// llvm::ObjectCache must then be compiled with -fno-rtti) keep the cache, which
// needs RTTI (Boost.Serialization, the registry's typeid), in another translation
// unit:
//
//   // store.cpp, compiled with RTTI
//   #include <compile_cache/llvm/cache_object_store.hpp>
//   compile_cache::object_store make_store(compile_cache::default_cache& c) {
//       return compile_cache::make_object_store(c, "myjit 1.2");
//   }
//   // jit.cpp, compiled with -fno-rtti
//   #include <compile_cache/llvm/object_cache.hpp>
//   compile_cache::basic_object_cache objects(make_store(cache));
//
// Where LLVM has RTTI (llvm-config --has-rtti says YES, as Debian's does), one
// translation unit can use compile_cache::object_cache<Cache> directly.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>

namespace compile_cache {

/// What the key of an object file is made of: everything its machine code depends on.
/// basic_object_cache fills it in; make_object_store's key covers every field but
/// the three names.
struct object_key_inputs {
    std::string module_name;    ///< the module's identifier: the entry's origin, and diagnostics
    std::string source_file;    ///< the module's source file name: diagnostics only
    std::string bitcode_digest; ///< SHA-256 of the module's bitcode as it reached the code generator
    std::string target;         ///< describe_target(): triple, CPU, features, options, opt level, models
    std::string llvm_version;   ///< LLVM_VERSION_STRING of the LLVM that generates the code
    std::string entry_name{};   ///< what the module defines (its first defined function): the entry's name
    /// The build-ids of the loaded modules that hold the code generator (libLLVM.so, or
    /// the program LLVM is linked into): the toolchain's identity instead of the main
    /// program's. Empty: the main program's (toolchain::current).
    std::string code_generator{};
    /// LLVM's command-line options that were set (cl::getRegisteredOptions), with their
    /// values: describe_llvm_options().
    std::string llvm_options{};
};

/// Loads and stores object files by object_key_inputs. Move-only; owns what the
/// function that made it allocated (make_object_store), never the cache itself.
/// Every operation is noexcept: failures are misses, counted by the cache behind it.
class object_store {
public:
    struct operations {
        /// True and `object` filled on a hit.
        bool (*load)(void* impl, object_key_inputs const& in, std::string& object) noexcept;
        /// Stores `object` (a failure is counted and logged by the cache, not reported).
        void (*store)(void* impl, object_key_inputs const& in, std::string_view object,
                      std::chrono::nanoseconds compile_time) noexcept;
        /// One diagnostic line through the cache's logger.
        void (*log)(void* impl, std::string_view line) noexcept;
        bool (*enabled)(void const* impl) noexcept;
        void (*destroy)(void* impl) noexcept;
        /// Counts a compile that could not be keyed, with its reason (optional).
        void (*bypass)(void* impl, std::string const& reason) noexcept = nullptr;
        /// The cache's statistics as one line (statistics_snapshot::summary; optional).
        std::string (*summary)(void const* impl) noexcept = nullptr;
        /// Why `in` has no entry, as the cache explains an absent miss from the record
        /// of the entry's identity (miss_explanation::text: `changed bitcode; unchanged
        /// toolchain, ...`, `new`); empty when it cannot tell (optional).
        std::string (*explain_miss)(void* impl, object_key_inputs const& in) noexcept = nullptr;
    };

    /// A store that loads nothing and stores nothing.
    object_store() noexcept = default;
    object_store(void* impl, operations const* ops) noexcept : impl_(impl), ops_(ops) {}
    object_store(object_store&& o) noexcept : impl_(std::exchange(o.impl_, nullptr)), ops_(std::exchange(o.ops_, nullptr)) {}
    object_store& operator=(object_store&& o) noexcept {
        if (this != &o) {
            reset();
            impl_ = std::exchange(o.impl_, nullptr);
            ops_ = std::exchange(o.ops_, nullptr);
        }
        return *this;
    }
    object_store(object_store const&) = delete;
    object_store& operator=(object_store const&) = delete;
    ~object_store() { reset(); }

    bool enabled() const noexcept { return ops_ && ops_->enabled(impl_); }
    bool load(object_key_inputs const& in, std::string& object) noexcept {
        return ops_ && ops_->load(impl_, in, object);
    }
    void store(object_key_inputs const& in, std::string_view object, std::chrono::nanoseconds compile_time) noexcept {
        if (ops_) ops_->store(impl_, in, object, compile_time);
    }
    void log(std::string_view line) noexcept {
        if (ops_) ops_->log(impl_, line);
    }
    void bypass(std::string const& reason) noexcept {
        if (ops_ && ops_->bypass) ops_->bypass(impl_, reason);
    }
    /// Why `in` missed (operations::explain_miss); empty when the store cannot tell.
    std::string explain_miss(object_key_inputs const& in) noexcept {
        return ops_ && ops_->explain_miss ? ops_->explain_miss(impl_, in) : std::string();
    }
    /// The statistics of the cache behind the store, this process's: one line.
    std::string summary() const noexcept { return ops_ && ops_->summary ? ops_->summary(impl_) : std::string(); }

private:
    void reset() noexcept {
        if (ops_ && ops_->destroy) ops_->destroy(impl_);
        impl_ = nullptr;
        ops_ = nullptr;
    }

    void* impl_ = nullptr;
    operations const* ops_ = nullptr;
};

} // namespace compile_cache
