#pragma once

#include <memory>

#include "core/train/strategy.h"
#include "core/train/worker.h"

namespace dtlab::core {

class GradientBuckets;

// Synchronous data parallel (BSP) with the equal partition: every rank takes a near-equal
// slice of each global batch, gradients are summed across ranks (each rank scales its loss
// by 1/global batch, so the sum is the global mean) bucket by bucket on a communication
// thread while backward goes on, and every rank applies the same update to the same weights.
// The votes ride in a control block behind the gradients, so agreeing costs nothing extra.
class SyncAllReduce final : public Strategy {
 public:
  explicit SyncAllReduce(StrategyContext& context);
  ~SyncAllReduce() override;

  std::string setUp() override;
  StepReport step(int64_t step, const Votes& local, Votes& agreed) override;
  Votes agree(const Votes& local) override;
  Worker& replica() override { return *worker_; }
  bool evaluates() const override { return context_.job.rank == 0; }
  int64_t globalBatch() const override { return global_; }

 private:
  StrategyContext& context_;
  int64_t global_;
  BatchSlice slice_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<GradientBuckets> buckets_;
  struct SpeedMarker;
  std::unique_ptr<SpeedMarker> marker_;
};

}  // namespace dtlab::core
