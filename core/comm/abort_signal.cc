#include "core/comm/abort_signal.h"

#include <utility>

namespace dtlab::core {

void AbortSignal::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (aborted_) return;
  aborted_ = true;
  reason_ = reason;
  for (auto& [id, handler] : handlers_) handler(reason_);
  changed_.notify_all();
}

bool AbortSignal::aborted() const {
  std::lock_guard lock(mutex_);
  return aborted_;
}

std::string AbortSignal::reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

bool AbortSignal::sleepFor(std::chrono::nanoseconds duration) const {
  std::unique_lock lock(mutex_);
  return !changed_.wait_for(lock, duration, [this] { return aborted_; });
}

AbortSignal::Registration AbortSignal::onAbort(
    std::function<void(const std::string&)> handler) const {
  std::lock_guard lock(mutex_);
  if (aborted_) {
    handler(reason_);
    return {};
  }
  const uint64_t id = nextId_++;
  handlers_.emplace(id, std::move(handler));
  return {this, id};
}

AbortSignal::Registration::Registration(Registration&& other) noexcept
    : signal_(std::exchange(other.signal_, nullptr)), id_(std::exchange(other.id_, 0)) {}

AbortSignal::Registration& AbortSignal::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    reset();
    signal_ = std::exchange(other.signal_, nullptr);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

AbortSignal::Registration::~Registration() {
  reset();
}

void AbortSignal::Registration::reset() {
  if (signal_ == nullptr) return;
  // Taking the lock waits out a handler that abort() is running right now.
  std::lock_guard lock(signal_->mutex_);
  signal_->handlers_.erase(id_);
  signal_ = nullptr;
}

}  // namespace dtlab::core
