// tinyk: the pointer wrapper an artifact uses for what it references but does not
// own. Stub until compile_cache::ref lands; then this becomes an alias of it.
#pragma once

namespace tinyk {

template <class T>
class ref {
public:
    ref() = default;
    explicit ref(T* p) : p_(p) {}
    T* get() const noexcept { return p_; }
    T* operator->() const noexcept { return p_; }
    T& operator*() const noexcept { return *p_; }

private:
    T* p_ = nullptr;
};

} // namespace tinyk
