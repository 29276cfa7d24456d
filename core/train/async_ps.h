#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/train/compute_emulation.h"
#include "core/train/parameter_server.h"
#include "core/train/ps_encoding.h"
#include "core/train/push_record.h"
#include "core/train/strategy.h"
#include "core/train/strategy_registry.h"
#include "core/train/worker.h"

namespace dtlab::core {

// async_ps and ssp: every worker loops pull -> compute -> push
// against the parameter server on its own clock, on its own contiguous part of the training
// set, with a local batch of its equal share of the global batch. The server applies the
// run's optimizer to each gradient as it arrives; staleness is how many updates other
// workers got in between a worker's pull and its push.
//
//   async_ps: nobody waits.
//   ssp:      a worker about to compute its step c+1 (c pushes done) first waits until the
//             slowest worker still training has pushed c - staleness times (Ho et al., 2013),
//             and that time is its wait_ms.
//
// The run's budget is shared: it ends when all workers' pushes add up to the run's planned
// global batches (a fast worker does more of them). Stop votes go through the server's board
// (sticky), so the ranks need no collective and never wait for each other to stop; rank 0
// evaluates the server's current weights at every eval_interval global batches.
class AsyncPs final : public Strategy {
 public:
  // `staleness`: ssp's bound; nullopt: async_ps, nobody waits. `compression`: how pushes and
  // pulls travel (ps_encoding.h; topk keeps what it does not send).
  AsyncPs(StrategyContext& context, std::optional<int64_t> staleness,
          CompressionConfig compression = {});
  ~AsyncPs() override;

  std::string setUp() override;
  StepReport step(int64_t step, const Votes& local, Votes& agreed) override;
  Votes agree(const Votes& local) override;
  Worker& replica() override { return *worker_; }
  bool evaluates() const override { return context_.job.rank == 0; }
  int64_t globalBatch() const override { return global_; }
  bool budgetSpent(int64_t step, int64_t totalSteps) const override;
  int64_t globalStep(int64_t step) const override;
  void beforeEvaluate() override;
  void finish() override;
  // The server's blocks and the workers' clocks (ps_checkpoint.h), taken by rank 0; restore
  // seeds this process's own server (a single-process run: the shards' daemons seed theirs
  // from the same checkpoint when they accept the job) and puts this worker at its clock.
  void checkpoint(int64_t step, Checkpoint& out) const override;
  // The shards' copies are set aside at once; the fetch that fills the arrays runs beside the
  // next steps (`copied` is not needed: the copies do not change).
  CheckpointCopy checkpointBeside(int64_t step, Checkpoint& out,
                                  std::function<void()> copied) const override;
  int64_t restore(const Checkpoint& checkpoint) override;
  CompressionTotals compression() const override { return compressionTotals_; }

  // For hybrid, which runs this strategy during its asynchronous phases.
  const BoardState& board() const { return board_; }
  ParameterClient& client() { return *ps_; }
  // The asynchronous phase the pushes report (-1: not a hybrid run).
  // A new phase starts from the server's values: the replica held before says nothing about
  // how stale this worker's gradients are, so the next pull measures no divergence.
  void setPhase(int64_t phase) {
    phase_ = phase;
    measureDivergence_ = false;
  }
  // Pushes this worker completed.
  int64_t clock() const { return clock_; }
  // Reads the board afresh (without voting anything).
  const BoardState& refreshBoard();
  // Hands the sink this worker's replica as last pulled (its versions and checksum) for the
  // record a replay checks (push_record.h): at the end (phase -1) and a hybrid's phase ends.
  void recordReplica(int64_t phase);

 private:
  StrategyContext& context_;
  int64_t global_;
  int64_t localBatch_ = 0;
  int64_t staleness_ = -1;  // ssp's bound; -1: async_ps, no wait
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<ComputeEmulation> emulation_;
  // A single-process run serves its parameters itself.
  std::unique_ptr<ParameterHost> ownHost_;
  std::unique_ptr<ParameterClient> ownClient_;
  std::unique_ptr<ParameterClient> staged_;  // over the client, for a GPU replica
  ParameterClient* ps_ = nullptr;
  std::vector<int64_t> versions_;  // of the blocks last pulled
  int64_t clock_ = 0;              // pushes this worker completed
  BoardState board_;
  int64_t phase_ = -1;
  bool measureDivergence_ = false;  // the replica holds the weights of the last gradient
  bool finished_ = false;
  PushRecord pushRecord_;  // the record of the last push, handed to the sink
  CompressionConfig compression_;
  std::unique_ptr<PushSparsifier> sparsifier_;  // topk
  std::vector<GradientRange> blocks_;           // the server's layout
  PsEncoding lastPull_ = PsEncoding::kFloat32;  // how the replica was last pulled
  CompressionTotals compressionTotals_;
};

// Whether a worker's push `clock` (1, 2, ...) travels compressed: after the first start_step.
inline bool compressesPush(const CompressionConfig& c, int64_t clock) {
  return c.enabled() && clock > c.startStep;
}

// The descriptors of async_ps and ssp (strategy_registry.cc lists them).
StrategyDescriptor asyncPsDescriptor();
StrategyDescriptor sspDescriptor();

}  // namespace dtlab::core
