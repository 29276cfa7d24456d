#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/train/push_record.h"
#include "core/train/strategy.h"
#include "remote/common/blob_parts.h"
#include "remote/proto/dtlab.pb.h"

namespace dtlab::remote {

// What one job produced so far, kept for WatchJob. The training thread appends (as the
// job's MetricSink) and the node's sampler adds NodeSamples; watchers read from their own
// cursor, so several watchers (or a reconnecting coordinator) each get the whole stream
// that is still retained.
//
// Bounded: step points, evals and node samples beyond kMaxRetained each drop their oldest
// (a watcher that fell that far behind skips them); events and the result are never
// dropped, they are few and they are what a run's story is told from. Thread-safe.
class JobBuffer final : public core::MetricSink {
 public:
  static constexpr std::size_t kMaxRetained = 100000;

  // Where one watcher is in each series (absolute indices since the job started), and in
  // the blobs it is sending in parts: the checkpoint it began (kept alive here even when a
  // newer one replaces it) and the offset reached in each.
  struct Cursor {
    uint64_t steps = 0;
    uint64_t evals = 0;
    uint64_t events = 0;
    uint64_t samples = 0;
    uint64_t checkpoints = 0;  // checkpoints sent whole (by sequence number)
    uint64_t psRecords = 0;    // record chunks sent whole
    std::shared_ptr<const std::vector<unsigned char>> sendingCheckpoint;
    uint64_t sendingCheckpointSeq = 0;
    uint64_t checkpointOffset = 0;
    uint64_t psRecordOffset = 0;  // into record chunk psRecords
  };

  void onStep(const core::StepMetrics& metrics) override;
  void onEval(const core::EvalMetrics& metrics) override;
  void onEvent(const core::RunEvent& event) override;
  // A node sample; its step is set to the latest step seen when the sampler left it 0.
  void onNode(const core::NodeMetrics& sample) override;
  // Keeps it (encoded) for the watchers, whatever its size: it travels in parts. Older ones not
  // yet sent stay queued up to kQueuedCheckpointBytes (remote/common/blob_parts.h), so a fast run
  // of a small model sends every checkpoint it took, not only the one found on the next poll.
  void onCheckpoint(const core::Checkpoint& checkpoint) override;
  // Kept whole (a replay needs every push), in chunks of kPushesPerChunk, the last one closed
  // by the replica record or finish().
  static constexpr std::size_t kPushesPerChunk = 256;
  void onPush(const core::PushRecord& push) override;
  void onReplica(const core::ReplicaRecord& replica) override;
  void onReset(const core::ResetRecord& reset) override;

  // Records the end of the job; the first call wins and returns true.
  bool finish(const core::WorkerResult& result);
  bool finished() const;
  // When the worker last reported a step, and this process's CPU time then; none before its
  // first step. The node's cpu_util samples run from the first step to the last.
  struct StepClock {
    std::chrono::steady_clock::time_point at;
    double cpuS = 0.0;
  };
  std::optional<StepClock> lastStepClock() const;
  std::optional<core::WorkerResult> result() const;

  // Moves up to maxPoints points and maxBlobBytes bytes of blob parts after `cursor` into
  // `update` and advances it. When the job has finished and nothing is left after the cursor,
  // marks the update final (finished and result). Returns whether the update carries
  // anything (points, parts or the final mark).
  bool fill(Cursor& cursor, int maxPoints, std::size_t maxBlobBytes,
            proto::JobUpdate& update) const;

  uint64_t stepsDropped() const;

 private:
  // A series that keeps its newest kMaxRetained entries, indexed from the job's start.
  template <typename T>
  struct Retained {
    std::deque<T> items;
    uint64_t base = 0;  // absolute index of items.front()
    void push(const T& item) {
      items.push_back(item);
      if (items.size() > kMaxRetained) {
        items.pop_front();
        ++base;
      }
    }
    uint64_t end() const { return base + items.size(); }
  };

  mutable std::mutex mutex_;
  Retained<core::StepMetrics> steps_;
  Retained<core::EvalMetrics> evals_;
  Retained<core::NodeMetrics> samples_;
  std::vector<core::RunEvent> events_;
  void closeRecordChunk();                  // under mutex_
  std::optional<StepClock> lastStepClock_;  // under mutex_
  core::PsRecordEncoder openRecords_;       // not yet a whole chunk
  std::vector<std::string> recordChunks_;   // encoded
  struct QueuedCheckpoint {
    uint64_t seq = 0;                                         // 1 for the job's first checkpoint
    std::shared_ptr<const std::vector<unsigned char>> bytes;  // encoded
  };
  std::deque<QueuedCheckpoint> checkpoints_;  // oldest first; the newest is always there
  std::size_t queuedCheckpointBytes_ = 0;
  uint64_t checkpointSeq_ = 0;  // how many were taken
  std::optional<core::WorkerResult> result_;
};

// WorkerResult as the wire's JobResult.
void toProto(const core::WorkerResult& result, proto::JobResult& out);

}  // namespace dtlab::remote
