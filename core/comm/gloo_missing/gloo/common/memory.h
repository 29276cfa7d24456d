#pragma once
// Debian 12's libgloo-dev (0.0~git20220518) ships gloo/transport/tcp/pair.h, which includes
// this header, but not the header itself. DTLab includes tcp/pair.h only to call
// tcp::Pair::signalExceptionExternal() (public, exported by libgloo.so) when it aborts a
// group; it never creates a Pair or touches its members. So it is enough to give the
// declarations in pair.h the two pointer templates they name. CMake adds this folder to the
// include path only where the installed Gloo lacks the header.

#include <memory>

namespace gloo {

// A strong reference taken from a WeakNonOwningPtr for the duration of one operation.
template <typename T>
class NonOwningPtr {
 public:
  NonOwningPtr() = default;
  explicit NonOwningPtr(const std::weak_ptr<T>& weak) : ptr_(weak.lock()) {}
  T* operator->() const { return ptr_.get(); }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  std::shared_ptr<T> ptr_;
};

// A reference that does not keep its object alive.
template <typename T>
class WeakNonOwningPtr {
 public:
  WeakNonOwningPtr() = default;
  explicit WeakNonOwningPtr(std::weak_ptr<T> weak) : ptr_(std::move(weak)) {}
  NonOwningPtr<T> lock() const { return NonOwningPtr<T>(ptr_); }

 private:
  std::weak_ptr<T> ptr_;
};

}  // namespace gloo
