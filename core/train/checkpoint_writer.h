#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "core/metrics/metrics.h"
#include "core/train/checkpoint.h"

namespace dtlab::core {

// Hands rank 0's checkpoints to the run's sink on a thread of its own, so that the training
// thread pays for the snapshot at most: the copy of the state into a buffer that is kept from
// one checkpoint to the next (no allocation, no page faults once the first was taken). The
// sink's work (encoding, checksums, the store's queue or the node's stream) runs beside the
// training. A strategy whose state is in host memory may leave the copy to this thread too
// (write(copy)): it runs beside the next step's forward and backward passes, and the state it
// reads stays unchanged until awaitCopy() returns (the next optimizer update waits for it).
//
// One checkpoint at a time: taking the next waits for the previous one's write (that wait is
// part of the stall the loop reports). A sink's error is raised on the training thread at the
// next take() or drain().
class CheckpointWriter {
 public:
  explicit CheckpointWriter(MetricSink& sink) : sink_(sink) {}
  ~CheckpointWriter();  // waits for a write in progress (its error is dropped)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // The buffer to fill with the next checkpoint, once the previous one is written; holds that
  // one's contents (fill every field).
  Checkpoint& take();
  // Writes the buffer take() returned, on the writer's thread; `copy`, when given, first fills
  // the buffer's arrays there.
  void write(std::function<void(Checkpoint&)> copy = {});
  // Waits until the newest write's copy has run (at once when there is none); the ms waited.
  double awaitCopy();
  // Waits until every checkpoint written so far reached the sink.
  void drain();
  // How long the newest write that finished since the last call took, once.
  std::optional<double> takeWriteMs();

 private:
  void loop();
  void waitIdle(std::unique_lock<std::mutex>& lock);

  MetricSink& sink_;
  Checkpoint buffer_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool pending_ = false;                   // buffer_ waits for (or is in) its write
  std::function<void(Checkpoint&)> copy_;  // the pending write's copy, until it has run
  bool copied_ = true;                     // the newest write's copy has run
  bool stop_ = false;
  std::optional<double> writeMs_;
  std::exception_ptr error_;
  std::thread thread_;  // started with the first write
};

}  // namespace dtlab::core
