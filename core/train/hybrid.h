#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/train/async_ps.h"
#include "core/train/strategy.h"
#include "core/train/switch_policy.h"
#include "core/train/sync_allreduce.h"

namespace dtlab::core {

// hybrid: synchronous all-reduce and the asynchronous parameter server in one run, switching
// between them.
//   sync_then_async: synchronous until switch_at of the run's steps, then asynchronous for the
//     rest (Sync-Switch style: synchronous training early, when gradients are large and
//     staleness hurts most, asynchronous later for throughput).
//   adaptive: synchronous while the workers keep pace; when the measured straggler ratio
//     (slowest / median compute time, exchanged every synchronous step and smoothed per worker
//     by an exponential moving average, so that occasional pauses count by their mean) stays above
//     straggler_ratio for `window` steps, asynchronous; back to synchronous when the ratio,
//     which the server's board watches during the asynchronous phase, stays below
//     1 + (straggler_ratio - 1) / 2 for as long (hysteresis; see SwitchPolicy).
// Every switch is a "strategy_switch" event with its reason and the measured figures.
//
// The two modes are the SyncAllReduce and AsyncPs strategies themselves, each with its replica.
// Into asynchronous: every rank sends the identical synchronous weights to the server (a reset
// at the run's progress, so the server's learning-rate schedule goes on where the run is; the
// first rank's arrive, the rest are ignored); each side keeps its own optimizer state, so
// momentum restarts at the first switch. Back to synchronous: once the board asks, every rank
// stops pushing and meets the others at a barrier, then all pull the same server weights into
// the synchronous replica. While the board's request is pending a rank does not stop (no stop
// vote, no budget) — it could not join the others' synchronous steps — and the board makes no
// request once the run is ending.
struct HybridOptions {
  bool adaptive = false;          // the policy: adaptive, else sync_then_async
  double switchAt = 0.5;          // sync_then_async: fraction of the run's steps
  double stragglerRatio = 1.5;    // adaptive: slowest / median step time that means async
  int64_t window = 20;            // adaptive: steps the ratio must hold before a switch
  int64_t bucketKb = 0;           // the synchronous phases' gradient buckets (0: measured)
  CompressionConfig compression;  // both phases': the buckets, the pushes and pulls

  // The options a variant of hybrid gives.
  static HybridOptions of(const VariantConfig& variant);
};

class Hybrid final : public Strategy {
 public:
  Hybrid(StrategyContext& context, HybridOptions options);
  ~Hybrid() override;

  std::string setUp() override;
  std::string startFacts() const override { return sync_->startFacts(); }
  StepReport step(int64_t step, const Votes& local, Votes& agreed) override;
  Votes agree(const Votes& local) override;
  Worker& replica() override;
  bool evaluates() const override { return context_.job.rank == 0; }
  int64_t globalBatch() const override { return sync_->globalBatch(); }
  bool budgetSpent(int64_t step, int64_t totalSteps) const override;
  int64_t globalStep(int64_t step) const override;
  void beforeEvaluate() override;
  void finish() override;
  // A checkpoint of the phase the run is in: the synchronous replica, or the server's blocks
  // (ps_checkpoint.h), with the workers' clocks and the hybrid's own progress; a restored run
  // goes on in that phase (the adaptive policy's measurements start afresh).
  void checkpoint(int64_t step, Checkpoint& out) const override;
  CheckpointCopy checkpointBeside(int64_t step, Checkpoint& out,
                                  std::function<void()> copied) const override;
  int64_t restore(const Checkpoint& checkpoint) override;
  // Both phases' compressed exchanges added up.
  CompressionTotals compression() const override;

 private:
  // Whether the board asks this rank's asynchronous phase to end.
  bool endRequested() const;
  void switchToAsync(const std::string& reason);
  void switchToSync();
  // The workers' clocks, the hybrid's progress and the checkpoint's step, after the phase's own.
  // The workers' clocks during a synchronous phase.
  const std::vector<int64_t>& clocksOfSyncPhase() const;
  static void addHybridState(Checkpoint& c, const std::vector<int64_t>& clocks, int64_t syncSteps,
                             int64_t phase, bool asynchronous);
  // Every rank's clock, gathered over the synchronous group (every rank calls it).
  std::vector<int64_t> gatherClocks() const;

  StrategyContext& context_;
  HybridOptions options_;
  std::unique_ptr<SyncAllReduce> sync_;
  std::unique_ptr<AsyncPs> async_;
  SwitchPolicy policy_;
  int64_t switchStep_ = 0;  // sync_then_async: the global step after which to switch
  int64_t syncSteps_ = 0;   // global steps taken synchronously
  int64_t pushesSeen_ = 0;  // all workers' pushes, as of the last switch back (identical)
  int64_t phase_ = -1;      // the current or last asynchronous phase
  bool inAsync_ = false;
  // adaptive, synchronous phase: each rank's smoothed compute time (NaN: none yet)
  std::vector<double> smoothedMs_;
  // Synchronous phase: the workers' clocks, unchanged since the last asynchronous phase (unset
  // after a restore: the server's snapshot has them).
  mutable std::optional<std::vector<int64_t>> syncClocks_;
};

// hybrid's descriptor (strategy_registry.cc lists it).
StrategyDescriptor hybridDescriptor();

}  // namespace dtlab::core
