// Relaxed atomic access to plain fields of glibc's objects.
#pragma once

#include <atomic>

namespace arbrun {

// Relaxed atomic access to a plain field of a glibc object that threads read without a lock: the
// object's kind and flags (written by init before the object is shared, or by the holder only, and
// read as hints that the caller re-checks or that only the writer itself can match). C++20's
// atomic_ref: the field keeps glibc's plain type and layout.
template <typename T>
T loadRelaxed(const T& field) {
    return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_relaxed);
}
template <typename T>
void storeRelaxed(T& field, T value) {
    std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}

}  // namespace arbrun
