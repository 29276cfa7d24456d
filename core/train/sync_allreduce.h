#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "core/metrics/event_facts.h"
#include "core/train/compute_emulation.h"
#include "core/train/speed_shares.h"
#include "core/train/strategy.h"
#include "core/train/strategy_registry.h"
#include "core/train/worker.h"

namespace dtlab::core {

class GradientBuckets;

// Synchronous data parallel (BSP): every rank takes a contiguous slice of each global batch,
// gradients are summed across ranks (each rank scales its loss by 1/global batch, so a
// slice's gradient is weighted by its share and the sum is the global mean whatever the
// shares) bucket by bucket on a communication thread while backward goes on, and every rank
// applies the same update to the same weights. The votes ride in a control block behind the
// gradients, so agreeing costs nothing extra.
//
// Every rank's step times of the step before ride in the control block too (one step late):
// each rank's tail (tail_ms) comes from them.
//
// Partition `equal`: near-equal slices. `speed_proportional`: the first slices follow the
// ranks' speeds as a probe before the first step measures them (kProbeRows; on a group whose
// collectives work on host memory, else they start equal), told in the start event; after a
// warm-up of kWarmupSteps, again as many steps later, then every rebalance_every steps, every
// rank fits the same cost
// model to the steps since the last rebalance (each rank's speed, fixed part, when it hands
// half its gradient over and its communication: StepCostWindow) and moves to the slices with
// the shortest expected step (balancedCounts: a rank may get none), unless no slice would
// move by more than the dead band or the model expects less than kMinExpectedGain. Each move
// is a `rebalance` event with the measured and the expected step; so is the first advice to
// leave a rank out of the cluster when the model expects the others to be faster without it.
struct SyncAllReduceOptions {
  int64_t bucketKb = 0;            // gradient bucket size; 0: from the group's measured all-reduce
  bool speedProportional = false;  // the partition: equal, or by measured speed
  int64_t rebalanceEvery = 20;     // speed_proportional: steps between rebalances
  CompressionConfig compression;   // how the gradient buckets travel

  // The options a variant of sync_allreduce gives.
  static SyncAllReduceOptions of(const VariantConfig& variant);
};

class SyncAllReduce final : public Strategy {
 public:
  SyncAllReduce(StrategyContext& context, SyncAllReduceOptions options);
  ~SyncAllReduce() override;

  std::string setUp() override;
  // The bucket size and the all-reduce calls the group timed (CollectiveFacts).
  std::string startFacts() const override;
  StepReport step(int64_t step, const Votes& local, Votes& agreed) override;
  Votes agree(const Votes& local) override;
  Worker& replica() override { return *worker_; }
  bool evaluates() const override { return context_.job.rank == 0; }
  int64_t globalBatch() const override { return global_; }
  // Every rank holds the same replica: rank 0's state after a step, with the slices of the
  // batch (speed_proportional's shares), continues the run (the costs are measured anew).
  void checkpoint(int64_t step, Checkpoint& out) const override;
  CheckpointCopy checkpointBeside(int64_t step, Checkpoint& out,
                                  std::function<void()> copied) const override;
  int64_t restore(const Checkpoint& checkpoint) override;
  CompressionTotals compression() const override;

 private:
  // checkpoint()'s fields but the arrays, and the arrays.
  void checkpointHeader(int64_t step, Checkpoint& out) const;
  static void copyState(const Worker& worker, Checkpoint& out);

  StrategyContext& context_;
  SyncAllReduceOptions options_;
  int64_t global_;
  BatchSlice slice_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<CompressedReducer> reducer_;  // compressed buckets; null: float32
  std::unique_ptr<GradientBuckets> buckets_;
  std::optional<CollectiveFacts> collective_;  // set up with a group
  std::unique_ptr<ComputeEmulation> emulation_;
  // speed_proportional: every rank's slice size (the same on all ranks), the costs measured
  // since the last rebalance and the rank last advised to leave (-1: none).
  void rebalance(int64_t step);
  std::string probeSpeeds();                    // the first shares; the start event's words on them
  void setCounts(std::vector<int64_t> counts);  // and this rank's slice from them
  std::vector<int64_t> counts_;
  std::unique_ptr<StepCostWindow> window_;
  int advisedLeaveOut_ = -1;
  // The control block: the votes, then each rank's RankStepTimes of the step before.
  int64_t controlSlots() const;
  std::vector<float> control_;
  // This rank's times of its last step (sent with the next), the slices they were measured
  // with, and when that step's all-reduce ended.
  RankStepTimes lastTimes_;
  std::vector<int64_t> lastCounts_;
  int64_t lastStep_ = -1;
  std::chrono::steady_clock::time_point lastEnd_;
  // When backward had handed over half of this step's gradient (handed_: floats so far), and
  // the first bucket of the second half (buckets are reduced in the order they are handed).
  int64_t handed_ = 0;
  std::optional<std::chrono::steady_clock::time_point> halfAt_;
  std::size_t halfBucket_ = 0;
};

// sync_allreduce's descriptor (strategy_registry.cc lists it).
StrategyDescriptor syncAllReduceDescriptor();
// bucket_kb, shared with the strategies that run SyncAllReduce inside (hybrid).
SettingSchema bucketKbSetting();

}  // namespace dtlab::core
