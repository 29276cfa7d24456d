#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/comm/communicator.h"
#include "core/comm/gradient_compression.h"
#include "core/common/gradient_range.h"

namespace dtlab::core {

struct GradientBucketsOptions {
  // A bucket is closed once it holds at least this many bytes (a larger parameter block is
  // never split). Smaller buckets start communication earlier in the backward pass and
  // overlap more of it; larger ones pay the per-collective cost less often. Runs take it from
  // the group's measured all-reduce (AllReduceTuning::bucketBytes); this default is for a
  // communicator that measures nothing: on the CPU machines of 2026-11 an all-reduce between
  // two processes ran at its large-message bandwidth from 256 KiB up, so 1 MiB buckets lose
  // little to per-call cost while a model of a few MB still gets several buckets to overlap
  // with its backward pass (PyTorch DDP's 25 MB is sized for GPUs).
  int64_t bucketBytes = int64_t{1} << 20;
  // Average (sum / size) rather than sum. Strategies that weight each replica's gradient
  // themselves (speed-proportional shares) sum.
  bool average = true;
  // Reduces each bucket compressed (gradient_compression.h) rather than with the
  // communicator's all-reduce; host memory only. Must outlive the buckets. Null: float32.
  CompressedReducer* reducer = nullptr;
};

// The buckets of `blocksInBackwardOrder` (whole blocks, merged while adjacent, each closed once
// it holds at least `bucketBytes`), in the order they are reduced. The simulator lays out a
// model's buckets with it too (core/train/simulated_model.h).
std::vector<GradientRange> planBuckets(const std::vector<GradientRange>& blocksInBackwardOrder,
                                       int64_t bucketBytes);

// Overlaps the all-reduce of gradients with the backward pass, as PyTorch DDP's reducer does.
//
// The flat gradient buffer is cut into buckets of whole parameter blocks, taken in the order
// backward produces them (last layer first) and merged while adjacent. As the training
// thread reports blocks finished (markReady), a dedicated communication thread all-reduces
// each bucket as soon as it is complete, strictly in bucket order: every rank must issue
// the same collectives in the same order, whatever order its marks arrive in. waitAll()
// returns once every bucket of the step is reduced, and re-arms for the next step.
//
// Per step: mark every element exactly once (blocks may be marked in pieces and in any
// order), then call waitAll() once. Nothing is allocated after construction (the
// communicator may still allocate inside its transport). The communicator must not be used
// by anyone else between the first markReady() of a step and the return of waitAll().
class GradientBuckets {
 public:
  // `blocksInBackwardOrder` must tile [0, count) exactly. `grads` (count floats) and `comm`
  // must outlive this object.
  GradientBuckets(Communicator& comm, float* grads, int64_t count,
                  const std::vector<GradientRange>& blocksInBackwardOrder,
                  const GradientBucketsOptions& options = {});
  // Stops the communication thread. If a reduction is in flight, waits for it to finish
  // (or to fail with the communicator's timeout).
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // The gradients in [begin, end) are final for this step. Called by the training thread.
  // Marking elements twice is caught (EnforceError) when it over-fills a bucket.
  void markReady(int64_t begin, int64_t end);
  // Blocks until every bucket of this step is reduced; rethrows a communication failure
  // (then and on every later call). Throws EnforceError if some elements were never
  // marked, rather than waiting forever.
  void waitAll();

  // Buckets in the order they are reduced.
  const std::vector<GradientRange>& buckets() const { return buckets_; }
  // Of the last completed step: seconds the communication thread spent in all-reduces, and
  // seconds waitAll() blocked (the communication the backward pass did not hide).
  double lastCommSeconds() const { return lastCommSeconds_; }
  double lastExposedSeconds() const { return lastExposedSeconds_; }
  // Of the last completed step: each bucket's all-reduce in seconds, in bucket order (on the
  // rank whose backward ends last, the communication alone: its peers were ready before it).
  const std::vector<double>& lastBucketSeconds() const { return lastBucketSeconds_; }

 private:
  void communicationLoop();

  Communicator& comm_;
  float* grads_;
  int64_t count_;
  GradientBucketsOptions options_;
  std::vector<GradientRange> buckets_;
  // Bucket indices sorted by begin, to map a marked range to its buckets.
  std::vector<int> bucketsByPosition_;

  std::mutex mutex_;
  std::condition_variable bucketReady_;
  std::condition_variable stepDone_;
  std::vector<int64_t> readyElements_;  // per bucket, this step
  int64_t markedElements_ = 0;
  int reducedBuckets_ = 0;
  uint64_t step_ = 0;
  double commSeconds_ = 0.0;
  bool stop_ = false;
  std::exception_ptr error_;
  double lastCommSeconds_ = 0.0;
  double lastExposedSeconds_ = 0.0;
  std::vector<double> bucketSeconds_;  // this step's, per bucket
  std::vector<double> lastBucketSeconds_;
  std::thread thread_;
};

}  // namespace dtlab::core
