#include "core/train/checkpoint_writer.h"

namespace dtlab::core {

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::waitIdle(std::unique_lock<std::mutex>& lock) {
  changed_.wait(lock, [&] { return !pending_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

Checkpoint& CheckpointWriter::take() {
  std::unique_lock lock(mutex_);
  waitIdle(lock);
  return buffer_;
}

void CheckpointWriter::write(std::function<void(Checkpoint&)> copy) {
  {
    std::lock_guard lock(mutex_);
    pending_ = true;
    copied_ = !copy;
    copy_ = std::move(copy);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  changed_.notify_all();
}

double CheckpointWriter::awaitCopy() {
  std::unique_lock lock(mutex_);
  if (copied_) return 0.0;
  const auto start = std::chrono::steady_clock::now();
  changed_.wait(lock, [&] { return copied_; });
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

void CheckpointWriter::drain() {
  std::unique_lock lock(mutex_);
  waitIdle(lock);
}

std::optional<double> CheckpointWriter::takeWriteMs() {
  std::lock_guard lock(mutex_);
  return std::exchange(writeMs_, std::nullopt);
}

void CheckpointWriter::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return pending_ || stop_; });
    if (!pending_) return;  // stopped with nothing to write
    std::function<void(Checkpoint&)> copy = std::move(copy_);
    copy_ = nullptr;
    lock.unlock();
    // buffer_ is the writer's alone while pending_: take() waits for it.
    const auto start = std::chrono::steady_clock::now();
    std::exception_ptr error;
    try {
      if (copy) {
        // Whatever happens, the training thread waiting to update the state goes on.
        struct Copied {
          CheckpointWriter& w;
          ~Copied() {
            std::lock_guard lock(w.mutex_);
            w.copied_ = true;
            w.changed_.notify_all();
          }
        } copied{*this};
        copy(buffer_);
      }
      sink_.onCheckpoint(buffer_);
    } catch (...) {
      error = std::current_exception();
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    pending_ = false;
    writeMs_ = ms;
    if (error) error_ = error;
    changed_.notify_all();
  }
}

}  // namespace dtlab::core
