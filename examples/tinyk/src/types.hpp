// tinyk: types and dialects. Both are singletons compared by identity: a value's type
// is `f64_type()` exactly, never an equal copy, and an artifact loaded from the cache
// must point at these same objects.
#pragma once

#include <string>
#include <vector>

namespace tinyk {

class type {
public:
    explicit type(char const* name) : name_(name) {}
    type(type const&) = delete;
    type& operator=(type const&) = delete;
    char const* name() const noexcept { return name_; }

private:
    char const* name_;
};

/// The type of every value: a 64-bit float.
type const* f64_type();
/// The "type" of instructions that produce no value (terminators, assert).
type const* void_type();

/// The stable name each type singleton is registered under with the cache.
char const* stable_name(type const* t);

/// A dialect: a named set of IR operations.
struct dialect {
    std::string name;
    std::vector<std::string> ops;
};

/// The group of dialects a kernel is compiled for. There is one, shared by all kernels.
class dialect_group {
public:
    dialect_group(std::string name, std::vector<dialect> dialects)
        : name_(std::move(name)), dialects_(std::move(dialects)) {}
    dialect_group(dialect_group const&) = delete;
    dialect_group& operator=(dialect_group const&) = delete;

    std::string const& name() const noexcept { return name_; }
    std::vector<dialect> const& dialects() const noexcept { return dialects_; }
    /// `name{d1:op,op;d2:...}` — goes into every key.
    std::string describe() const;

private:
    std::string name_;
    std::vector<dialect> dialects_;
};

dialect_group& core_dialects();

} // namespace tinyk
