#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/train/compute_emulation.h"
#include "core/train/strategy.h"
#include "core/train/strategy_registry.h"
#include "core/train/worker.h"

namespace dtlab::core {

// Local SGD (periodic model averaging): every rank trains its own replica on its slice of each
// global batch (BatchSlice::equal, the samples sync_allreduce would draw), applying its own
// optimizer to the mean-loss gradient of that slice without talking to anyone. Every `period`
// steps the parameters are averaged by one all-reduce, each rank's weighted by its share of
// the samples all ranks trained on since the previous average (FedAvg), so that unequal
// slices (a global batch that does not divide by the ranks) count by their samples. After an
// average the replicas are identical. The stop votes ride behind the parameters in the same
// all-reduce; on the steps in between nothing is communicated and nothing is agreed.
//
// Only the parameters are averaged; each rank keeps its own optimizer state (momentum, Adam
// moments). Averaging them too would double the traffic, and for SGD with momentum it is not
// needed for the property that defines the scheme: with period 1 the average of the ranks'
// updates is linear in their gradients and momenta, so the weighted mean of the momenta
// evolves exactly as sync_allreduce's single momentum and the parameters follow its
// trajectory (up to summation order). With longer periods each rank's momentum reflects its
// own local trajectory, as in the usual Local SGD formulations.
//
// What is evaluated is always an averaged model. The last planned step averages (the run's
// result is the average, and every rank checksums the same replica). An evaluation step that
// is not an averaging step averages into the model for the evaluation only: each rank keeps
// its own parameters aside and resumes from them at its next step, so the training trajectory
// does not depend on training.eval_interval; that average costs one all-reduce and carries
// the votes too. Cancel and time limits therefore take effect at the next average or
// evaluation, the only steps where every rank learns of them.
//
// With on_node_loss "continue" the averages go through an ElasticGroup: when a rank is lost
// the others re-form the group and go on from their own replicas (what the lost rank trained
// since the last average is lost with it); the weights of the survivors' average are divided
// by their sum, so it stays the mean over the samples they trained on.
class LocalSgd final : public Strategy {
 public:
  LocalSgd(StrategyContext& context, int64_t period, CompressionConfig compression = {});
  ~LocalSgd() override;

  std::string setUp() override;
  StepReport step(int64_t step, const Votes& local, Votes& agreed) override;
  Votes agree(const Votes& local) override;
  Worker& replica() override { return *worker_; }
  // Every evaluation sees replicas that were just averaged, so one rank is enough: rank 0, or
  // the first of the group re-formed after a lost rank.
  bool evaluates() const override;
  int64_t globalBatch() const override { return global_; }
  CompressionTotals compression() const override;

 private:
  // Replaces this rank's parameters by the sample-weighted average over all ranks and sums
  // the votes in the same all-reduce. False: skipped after a lost rank (the others had
  // averaged without this rank), the parameters and votes left as they were.
  // `training`: an average the run goes on from (compressed, when the variant says), rather
  // than one made for an evaluation only (always float32: it leaves no state behind).
  bool average(int64_t step, const Votes& local, Votes& agreed, bool training);
  // Runs op on the group, through the elastic group when there is one (recording the
  // regroup event when it re-formed); false: skipped.
  bool collective(int64_t step, const std::function<void(Communicator&)>& op);

  StrategyContext& context_;
  int64_t global_;
  int64_t period_;
  BatchSlice slice_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<ComputeEmulation> emulation_;
  // Samples this rank, and all ranks together, trained on since the last average.
  int64_t samplesSinceAverage_ = 0;
  int64_t allSamplesSinceAverage_ = 0;
  // Host staging for the all-reduce: the weighted parameters, then the votes.
  std::vector<float> buffer_;
  // This rank's own parameters while the model holds an average made for an evaluation.
  std::vector<float> ownParams_;
  bool holdsEvaluationAverage_ = false;
  int64_t step_ = 0;  // the step in progress, or the last one
  // Compressed averages: each rank sends its weighted change since the last average (anchor_,
  // the same on every rank) through the reducer, and every rank adds the sum to the anchor.
  CompressionConfig compressionConfig_;
  std::unique_ptr<CompressedReducer> reducer_;
  std::vector<float> anchor_;
};

// local_sgd's descriptor (strategy_registry.cc lists it).
StrategyDescriptor localSgdDescriptor();

}  // namespace dtlab::core
