// compile_cache: registry, the default Resolver. It knows the live kernels by key,
// shared objects by name and singletons by a name-based uuid; it owns none of them.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>
#include <compile_cache/detail/fork_shared_mutex.hpp>
#include <compile_cache/detail/made_once.hpp>

#include <compile_cache/key/key.hpp>
#include <compile_cache/resolver/concept.hpp>
#include <compile_cache/resolver/reference.hpp>

#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/string_generator.hpp>
#include <boost/uuid/uuid.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace compile_cache {

/// \code
/// registry& reg = cache.resolver();
/// reg.add_shared("mydsl.dialects.core", &dialects);   // by stable name
/// reg.add_singleton("mydsl.type.f64", &f64);          // by uuid; loads as &f64 itself
/// reg.bind(&kernel, key);                             // a live kernel and its key
/// \endcode
/// Every member is thread-safe. A reference is resolved only to an object registered
/// with the same C++ type; anything else fails the load as a miss.
///
/// In a child forked while another thread of the parent was inside one of its members that
/// change it (for longer than the fork's wait, 250 ms), the registry knows nothing, for ever, and
/// never waits: no kernel has a key, no object a name or a reference, so every store or
/// load through a reference fails as a miss; what registers, binds, removes or records
/// does nothing (bind is false), and forget and callers_of give nothing.
///
/// `registry` is `basic_registry<>`: a class template only so that a translation unit
/// that includes it without using it does not compile its members (docs/benchmarks.md,
/// "Header cost"); the parameter means nothing.
template <class = void>
class basic_registry {
public:
    basic_registry() = default;
    basic_registry(basic_registry const&) = delete;
    basic_registry& operator=(basic_registry const&) = delete;
    ~basic_registry() {
        if (mutex_.lost()) tables_.abandon(); // (possibly half changed by a thread this process lacks)
    }

    /// Binds a live kernel to its key (replacing any earlier key of that kernel, and
    /// any kernel bound to that key before); true when bound. An empty key (what
    /// key_result::value() gives for a bypass) is refused: false, and the kernel is
    /// left with no key, so no entry is stored or loaded for it or through a reference
    /// to it until it is bound again.
    template <class T>
    bool bind(T const* kernel, key const& k) {
        if (mutex_.lost()) return false;
        std::unique_lock lock(mutex_);
        unbind_locked(kernel);
        if (k.empty()) return false;
        auto old = tables_->kernels_by_key.find(k);
        if (old != tables_->kernels_by_key.end()) tables_->keys_by_kernel.erase(old->second.object);
        tables_->keys_by_kernel[kernel] = keyed{k, typeid(T)};
        tables_->kernels_by_key[k] = object_entry{kernel, typeid(T)};
        return true;
    }

    /// The key a kernel is bound to, if any.
    template <class T>
    std::optional<key> key_of(T const* kernel) const {
        if (mutex_.lost()) return std::nullopt;
        std::shared_lock lock(mutex_);
        auto it = tables_->keys_by_kernel.find(kernel);
        if (it == tables_->keys_by_kernel.end()) return std::nullopt;
        return it->second.k;
    }

    /// The live kernel bound to a key, if it has type T.
    template <class T>
    T* kernel(key const& k) const {
        if (mutex_.lost()) return nullptr;
        std::shared_lock lock(mutex_);
        auto it = tables_->kernels_by_key.find(k);
        if (it == tables_->kernels_by_key.end() || it->second.type != std::type_index(typeid(T))) return nullptr;
        return static_cast<T*>(const_cast<void*>(it->second.object));
    }

    /// Registers a shared object under a name that is stable across processes.
    template <class T>
    void add_shared(std::string name, T* object) {
        if (mutex_.lost()) return;
        std::unique_lock lock(mutex_);
        add_named(tables_->shared, std::move(name), object, typeid(T));
    }

    /// Registers a singleton, named by the uuid derived from `name`; loading a reference
    /// to it gives back this very object, so identity comparisons hold.
    template <class T>
    void add_singleton(std::string_view name, T* object) {
        if (mutex_.lost()) return;
        boost::uuids::uuid id = singleton_id(name);
        std::unique_lock lock(mutex_);
        add_named(tables_->singletons, std::string(reinterpret_cast<char const*>(id.data), id.size()), object,
                  typeid(T));
    }

    /// The name-based (SHA-1, RFC 4122 version 5) uuid of a singleton's name.
    static boost::uuids::uuid singleton_id(std::string_view name) {
        static std::atomic<boost::uuids::name_generator_sha1 const*> the_generator{nullptr};
        boost::uuids::name_generator_sha1 const& generate = detail::made_once(the_generator, [] {
            return std::make_unique<boost::uuids::name_generator_sha1 const>(
                boost::uuids::string_generator()("6b1d8a4e-0c55-4f0e-9a7e-63c0b7c1a2f1"));
        });
        return generate(name.data(), name.size());
    }

    /// Forgets everything about an object: its key if it is a kernel, its name if it
    /// is shared or a singleton, and the calls recorded to and from it. Call it before
    /// destroying an object you registered: the registry knows objects by address, and
    /// a new object at the same address must not inherit the old one's key.
    void remove(void const* object) {
        if (mutex_.lost()) return;
        std::unique_lock lock(mutex_);
        unbind_locked(object);
        erase_named(tables_->shared, object);
        erase_named(tables_->singletons, object);
        tables_->callers.erase(object);
        for (auto& [callee, callers] : tables_->callers) callers.erase(object);
    }

    /// Drops the key of `kernel` and, transitively, of every kernel recorded as calling
    /// it: their entries can no longer be stored or loaded until bound again. Returns
    /// the kernels whose keys were dropped.
    std::vector<void const*> forget(void const* kernel) {
        if (mutex_.lost()) return {};
        std::unique_lock lock(mutex_);
        std::vector<void const*> dropped;
        std::unordered_set<void const*> seen{kernel};
        std::vector<void const*> work{kernel};
        while (!work.empty()) {
            void const* k = work.back();
            work.pop_back();
            if (unbind_locked(k)) dropped.push_back(k);
            auto callers = tables_->callers.find(k);
            if (callers == tables_->callers.end()) continue;
            for (void const* c : callers->second)
                if (seen.insert(c).second) work.push_back(c);
        }
        return dropped;
    }

    /// Records that `caller` refers to `callee` (done for you whenever an artifact holding
    /// a kernel reference is stored or loaded).
    void record_call(void const* caller, void const* callee) {
        if (mutex_.lost()) return;
        std::unique_lock lock(mutex_);
        tables_->callers[callee].insert(caller);
    }

    /// The kernels recorded as calling `callee`.
    std::vector<void const*> callers_of(void const* callee) const {
        if (mutex_.lost()) return {};
        std::shared_lock lock(mutex_);
        auto it = tables_->callers.find(callee);
        if (it == tables_->callers.end()) return {};
        return {it->second.begin(), it->second.end()};
    }

    // --- the Resolver requirements ---

    std::optional<reference> to_reference(void const* object, std::type_info const& type, void const* self) {
        if (object == self && self != nullptr) return reference{reference_kind::self, {}};
        if (mutex_.lost()) return std::nullopt;
        {
            std::shared_lock lock(mutex_);
            std::type_index t(type);
            if (auto it = tables_->keys_by_kernel.find(object); it != tables_->keys_by_kernel.end()) {
                if (it->second.type != t) return std::nullopt;
                reference r{reference_kind::kernel,
                            std::string(reinterpret_cast<char const*>(it->second.k.data()), it->second.k.size())};
                lock.unlock();
                if (self) record_call(self, object);
                return r;
            }
            if (auto r = find_name(tables_->shared, object, t, reference_kind::shared)) return r;
            if (auto r = find_name(tables_->singletons, object, t, reference_kind::singleton)) return r;
        }
        return std::nullopt;
    }

    void* from_reference(reference const& r, std::type_info const& type, void const* self) {
        std::type_index t(type);
        switch (r.kind) {
        case reference_kind::self:
            return const_cast<void*>(self);
        case reference_kind::kernel: {
            if (r.id.empty() || r.id.size() > key::max_size) return nullptr;
            key k(r.id.data(), r.id.size());
            void const* found = nullptr;
            {
                if (mutex_.lost()) return nullptr;
                std::shared_lock lock(mutex_);
                auto it = tables_->kernels_by_key.find(k);
                if (it == tables_->kernels_by_key.end() || it->second.type != t) return nullptr;
                found = it->second.object;
            }
            if (self) record_call(self, found);
            return const_cast<void*>(found);
        }
        case reference_kind::shared:
            return lookup_name(tables_->shared, r.id, t);
        case reference_kind::singleton:
            return lookup_name(tables_->singletons, r.id, t);
        }
        return nullptr;
    }

private:
    struct keyed {
        key k;
        std::type_index type = typeid(void);
    };
    struct object_entry {
        void const* object = nullptr;
        std::type_index type = typeid(void);
    };
    struct named_table {
        std::unordered_map<std::string, object_entry> by_name;
        std::unordered_map<void const*, std::string> by_object;
    };

    bool unbind_locked(void const* kernel) {
        auto it = tables_->keys_by_kernel.find(kernel);
        if (it == tables_->keys_by_kernel.end()) return false;
        auto by_key = tables_->kernels_by_key.find(it->second.k);
        if (by_key != tables_->kernels_by_key.end() && by_key->second.object == kernel)
            tables_->kernels_by_key.erase(by_key);
        tables_->keys_by_kernel.erase(it);
        return true;
    }

    static void add_named(named_table& table, std::string name, void const* object, std::type_info const& type) {
        if (auto old = table.by_name.find(name); old != table.by_name.end()) table.by_object.erase(old->second.object);
        if (auto old = table.by_object.find(object); old != table.by_object.end()) table.by_name.erase(old->second);
        table.by_object[object] = name;
        table.by_name[std::move(name)] = object_entry{object, type};
    }

    static void erase_named(named_table& table, void const* object) {
        auto it = table.by_object.find(object);
        if (it == table.by_object.end()) return;
        table.by_name.erase(it->second);
        table.by_object.erase(it);
    }

    std::optional<reference> find_name(named_table const& table, void const* object, std::type_index t,
                                       reference_kind kind) const {
        auto it = table.by_object.find(object);
        if (it == table.by_object.end()) return std::nullopt;
        auto entry = table.by_name.find(it->second);
        if (entry == table.by_name.end() || entry->second.type != t) return std::nullopt;
        return reference{kind, it->second};
    }

    void* lookup_name(named_table const& table, std::string const& name, std::type_index t) const {
        if (mutex_.lost()) return nullptr;
        std::shared_lock lock(mutex_);
        auto it = table.by_name.find(name);
        if (it == table.by_name.end() || it->second.type != t) return nullptr;
        return const_cast<void*>(it->second.object);
    }

    struct tables {
        std::unordered_map<void const*, keyed> keys_by_kernel;
        std::unordered_map<key, object_entry> kernels_by_key;
        named_table shared;
        named_table singletons;
        std::unordered_map<void const*, std::unordered_set<void const*>> callers;
    };

    mutable detail::fork_shared_mutex mutex_;
    detail::abandonable<tables> tables_; ///< not to be touched once mutex_ is lost
};

using registry = basic_registry<>;

} // namespace compile_cache
