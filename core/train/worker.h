#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend/backend.h"
#include "core/data/dataset.h"
#include "core/nn/mlp.h"
#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/spec/experiment_spec.h"
#include "core/tensor/tensor.h"

namespace dtlab::core {

// Test loss and accuracy of a model on a materialised split.
struct Evaluation {
  double loss = 0.0;
  double accuracy = 0.0;  // NaN for regression
};

// Which part of every global batch a replica trains on. Each epoch the samples are
// visited in a fresh seeded order; global batch k is the window [k*global, (k+1)*global)
// of that order and this replica takes [begin, begin+count) of the window. Ranks with
// adjacent slices together draw exactly the global batch a single replica would draw,
// so synchronous training on N ranks follows the same trajectory as on one (up to
// summation order), whatever the slice sizes.
struct BatchSlice {
  int64_t global = 0;
  int64_t begin = 0;
  int64_t count = 0;
  static BatchSlice whole(int64_t batch) { return {batch, 0, batch}; }
  // Near-equal contiguous slices of `global` over `world` ranks.
  static BatchSlice equal(int64_t global, int rank, int world);
};

// One data-parallel replica: a model, its optimizer and the training data it draws
// from, on one backend.
//
// A training step is split into the pieces a strategy needs to interleave with
// communication: loadBatch() -> computeGradients() -> (the strategy reduces
// grads()) -> applyUpdate(). Single-process training runs them back to back.
class Worker {
 public:
  // samples: the training-sample indices batches are drawn from (materialised once
  // here). totalSteps feeds the learning-rate schedule (cosine); slice.global the
  // linear scaling rule.
  Worker(const ExperimentSpec& spec, Backend& backend, const Dataset& dataset,
         std::vector<int64_t> samples, BatchSlice slice, int64_t totalSteps);

  Mlp& model() { return model_; }
  const Mlp& model() const { return model_; }
  Backend& backend() { return backend_; }
  int64_t localBatch() const { return localBatch_; }
  int64_t shardSize() const { return static_cast<int64_t>(shard_.size()); }
  // Full passes over the shard so far.
  int64_t epoch() const { return epoch_; }
  int64_t stepsPerEpoch() const { return shardSize() / slice_.global; }
  float learningRate(int64_t step) const { return schedule_.at(step); }

  // Copies the next minibatch of the shard into backend memory. Samples are visited in a
  // fresh seeded order every epoch; the last incomplete batch of an epoch is skipped so
  // every step has the same size.
  void loadBatch();
  // Forward, loss and backward on the loaded batch. The loss gradient is multiplied by
  // gradScale (1/batch gives the mean loss; a strategy weighting shards passes its own).
  // Returns the batch's mean loss.
  double computeGradients(float gradScale, GradientListener* listener = nullptr);
  // One optimizer step over the whole flat buffer with grads() as they are now.
  void applyUpdate(int64_t step);
  void applyUpdate(int64_t step, int64_t begin, int64_t end);

  Evaluation evaluate(const Tensor& x, const Tensor& y);

 private:
  LossResult loss(const float* output, const float* labels, int64_t rows, float gradScale,
                  float* dOutput);

  const ExperimentSpec& spec_;
  Backend& backend_;
  TaskKind task_;
  Mlp model_;
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  std::vector<int64_t> shard_;
  Tensor shardX_;  // host copy of the shard, in shard order
  Tensor shardY_;
  BatchSlice slice_;
  int64_t localBatch_;
  std::vector<int64_t> order_;  // positions into the shard for this epoch
  int64_t cursor_ = 0;
  int64_t epoch_ = 0;
  Tensor stageX_;  // host staging of one batch
  Tensor stageY_;
  float* batchX_ = nullptr;  // backend memory
  float* batchY_ = nullptr;
  int64_t evalChunk_ = 1024;
  float* evalX_ = nullptr;
  float* evalY_ = nullptr;

 public:
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
};

// Materialises a whole split on the host (for evaluation sets).
void materialize(const Dataset& dataset, Split split, Tensor& x, Tensor& y);

}  // namespace dtlab::core
