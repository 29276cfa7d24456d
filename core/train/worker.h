#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <vector>

#include "core/backend/backend.h"
#include "core/data/dataset.h"
#include "core/nn/model.h"
#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/spec/experiment_spec.h"
#include "core/tensor/tensor.h"

namespace dtlab::core {

// Test loss and accuracy of a model on a materialised split.
struct Evaluation {
  double loss = 0.0;
  double accuracy = 0.0;                                         // NaN for regression
  double perplexity = std::numeric_limits<double>::quiet_NaN();  // exp(loss), token kinds only
};

// A whole split to evaluate on, made on first use and shared by the replicas of a run on
// `backend` (a hybrid has two): in the backend's memory where it generates samples there (a
// GPU: made once, never copied), else materialised on the host and copied chunk by chunk at
// every evaluation. `dataset` and `backend` must outlive it.
class EvalSet {
 public:
  EvalSet(const Dataset& dataset, Split split, Backend& backend);
  ~EvalSet();
  EvalSet(const EvalSet&) = delete;
  EvalSet& operator=(const EvalSet&) = delete;

  int64_t rows() const { return dataset_.size(split_); }
  // Makes the set unless it is made.
  void prepare();
  // After prepare(): the rows in backend memory (null unless the backend generated them), or
  // on the host.
  const float* residentX() const { return residentX_; }
  const float* residentY() const { return residentY_; }
  const Tensor& hostX() const { return hostX_; }
  const Tensor& hostY() const { return hostY_; }

 private:
  const Dataset& dataset_;
  Split split_;
  Backend& backend_;
  bool prepared_ = false;
  float* residentX_ = nullptr;
  float* residentY_ = nullptr;
  Tensor hostX_;
  Tensor hostY_;
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
  // samples: the training-sample indices batches are drawn from. A replica that takes
  // part of each global batch does not materialise them: on the host it generates each
  // batch's rows of its slice while the step before trains (on a helper thread, as a data
  // loader prefetches), holding two batches; on a backend with memory of its own, at the
  // start of every epoch the rows its slice of that epoch's global batches uses (about
  // samples/world). So a rank's memory for training data shrinks as ranks are added. A
  // single replica (slice = the whole global batch) visits every sample each epoch anyway,
  // so it generates the samples once, here, and regenerates nothing. A contiguous range
  // (the usual 0..n-1) is kept as its bounds, any other list as given.
  // totalSteps feeds the learning-rate schedule (cosine); scheduleBatch the linear
  // scaling rule (0: slice.global; a replica that draws whole batches of its share from its
  // own shard passes the run's global batch, the batch its gradient becomes part of).
  // `dataset` must outlive the worker. controlSlots: the model's control block (Model).
  Worker(const ExperimentSpec& spec, Backend& backend, const Dataset& dataset,
         std::vector<int64_t> samples, BatchSlice slice, int64_t totalSteps,
         int64_t scheduleBatch = 0, int64_t controlSlots = Model::kControlSlots);

  // The spec's model, built by its kind (core/nn/model_kinds.h).
  Model& model() { return *model_; }
  const Model& model() const { return *model_; }
  Backend& backend() { return backend_; }
  int64_t localBatch() const { return localBatch_; }
  int64_t shardSize() const { return shardSize_; }
  // Full passes over the shard so far.
  int64_t epoch() const { return epoch_; }
  int64_t stepsPerEpoch() const { return shardSize() / slice_.global; }
  float learningRate(int64_t step) const { return schedule_.at(step); }

  // Host bytes of training samples (features and labels) this worker holds: on the host a
  // batch of its slice, two once it makes batches ahead (or, for a single replica, the whole
  // shard); on a backend with
  // memory of its own its rows of one epoch, stepsPerEpoch() x localBatch() samples, or none
  // where the backend generates them there (a GPU).
  int64_t trainingDataBytes() const;
  // Host bytes of sample-index bookkeeping: the shard permutation (4 bytes a sample),
  // the sample list when it is not a contiguous range (8 bytes a sample) and a bounded
  // index chunk for the generator.
  int64_t sampleIndexBytes() const;

  // Moves this replica to another slice of every global batch, from the next batch on (a
  // speed_proportional rebalance). On a backend with memory of its own the replica generates
  // each batch's rows as it loads it from then on, since a slice that may move at any step
  // cannot be generated an epoch ahead; the samples drawn are the same either way. slice.global
  // must stay the same; a single replica (the whole batch) has nothing to move.
  void setSlice(BatchSlice slice);
  const BatchSlice& slice() const { return slice_; }

  // Copies the next minibatch of the shard into backend memory. Samples are visited in a
  // fresh seeded order every epoch; the last incomplete batch of an epoch is skipped so
  // every step has the same size. The first call of every epoch reshuffles and, for a slice
  // on a backend with memory of its own, generates the epoch's rows for this slice.
  void loadBatch();
  // The batch loadBatch() last loaded, in backend memory: localBatch() x inputs, and
  // localBatch() labels or targets.
  const float* batchInputs() const { return batchX_; }
  const float* batchTargets() const { return batchY_; }
  // Forward, loss and backward on the loaded batch. The loss gradient is multiplied by
  // gradScale (1/batch gives the mean loss; a strategy weighting shards passes its own).
  // Returns the batch's mean loss (NaN for an empty slice, which has none).
  double computeGradients(float gradScale, GradientListener* listener = nullptr);
  // A scheduler's speed probe before the first step. loadProbe puts up to `rows` rows of the
  // shard (its first; at most the slice's room) in the batch buffers and returns how many;
  // computeProbe runs forward, loss and backward on the first `rows` of them as
  // computeGradients does. The gradients it leaves are overwritten by the next step; the
  // weights and the data position stay. Counts as a first run (warm() after it).
  int64_t loadProbe(int64_t rows);
  void computeProbe(int64_t rows, GradientListener* listener);
  // Batches that take at least this long to make (measured: the last one made) are made ahead,
  // on a helper thread, once rows are made batch by batch on the host. A test sets 0: always.
  static constexpr double kPrefetchMinSeconds = 250e-6;
  void setPrefetchMinSeconds(double seconds) { prefetchMinSeconds_ = seconds; }
  // Whether computeGradients has run on this replica: its first run pays first-touch costs
  // (allocations, kernel selection and generation) that later ones do not.
  bool warm() const { return warm_; }
  // One optimizer step over the whole flat buffer with grads() as they are now.
  void applyUpdate(int64_t step);
  void applyUpdate(int64_t step, int64_t begin, int64_t end);
  // The next applyUpdate first calls `wait` (once): a checkpoint is copying the parameters and
  // the optimizer's state beside the step (Strategy::checkpointBeside).
  void holdNextUpdate(std::function<void()> wait) { holdUpdate_ = std::move(wait); }
  // Whether the parameters and the optimizer's state live in host memory (another thread may
  // copy them while this one computes).
  bool stateInHostMemory() const { return backend_.hostMemory(); }

  // Loss and accuracy of the current model on the whole set (made here if it is not yet).
  Evaluation evaluate(EvalSet& set);

  // Resuming from a checkpoint (core/train/checkpoint.h), on a worker that has loaded no
  // batch yet: the data position after `batches` loadBatch() calls (every epoch's shuffle
  // replayed, the current epoch's rows made as loadBatch makes them), and the optimizer's
  // state in Optimizer::state()'s order (its sizes must match).
  void skipBatches(int64_t batches);
  std::vector<std::vector<float>> optimizerState() const;
  void optimizerState(std::vector<std::vector<float>>& into) const;  // into's memory reused
  void restoreOptimizerState(const std::vector<std::vector<float>>& state);
  const char* optimizerName() const { return optimizer_->name(); }

 private:
  // The next epoch's shuffle of order_ (each epoch shuffles the previous order).
  void shuffleNextEpoch();
  // The start of the next epoch: its shuffle and, for a replica that holds an epoch's rows,
  // their generation.
  void beginEpoch();
  LossResult loss(const float* output, const float* labels, int64_t rows, float gradScale,
                  float* dOutput);

  const ExperimentSpec& spec_;
  Backend& backend_;
  TaskKind task_;
  int64_t targets_;  // labels per sample (Dataset::targets()): y rows are this wide
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  // Sample index at a shard position.
  int64_t sampleAt(int64_t position) const {
    return samples_.empty() ? firstSample_ + position
                            : samples_[static_cast<std::size_t>(position)];
  }
  // Generates rows [0, rows); row r holds the sample at shard position positionOf(r). With a
  // sample source they go straight to x/y (backend memory), else to heldX_/heldY_.
  template <typename PositionOf>
  void generateRows(int64_t rows, PositionOf positionOf, float* x, float* y);
  // Shard positions positionOf(0 .. rows) as sample indices, `chunk` of them at a time,
  // each handed to generate(first row, indices).
  template <typename PositionOf, typename Generate>
  void inChunks(int64_t rows, PositionOf positionOf, std::vector<int64_t>& chunk,
                Generate generate) const;
  // The rows of `slice` of the global batch at `cursor` of this epoch's order, generated on
  // the host straight into x, y (host memory), `chunk` holding the indices. Reads only what
  // no batch changes (order_ changes at an epoch's start, after settlePrefetch()).
  void generateHostBatch(int64_t cursor, const BatchSlice& slice, std::vector<int64_t>& chunk,
                         float* x, float* y) const;
  // Starts generating the batch after the one just loaded, on a helper thread.
  void startPrefetch();
  // Waits for the batch being generated ahead, if any, and forgets it.
  void settlePrefetch();
  void reserveBatch(int64_t rows);  // batch buffers (and the spare pair) for `rows` rows

  const Dataset& dataset_;
  std::vector<int64_t> samples_;  // empty when the shard is [firstSample_, +shardSize_)
  int64_t firstSample_ = 0;
  int64_t shardSize_ = 0;
  BatchSlice slice_;
  int64_t localBatch_;
  bool warm_ = false;  // computeGradients has run
  // Positions into the shard in this epoch's order. Each epoch shuffles the previous
  // epoch's order, so the whole permutation is kept; 32 bits a position.
  std::vector<uint32_t> order_;
  int64_t cursor_ = 0;  // start of the next global batch in order_
  int64_t epoch_ = 0;
  // A single replica holds the whole shard in shard order and gathers each batch
  // through order_ into stageX_/stageY_; any other holds this slice's rows of the
  // current epoch, batch after batch, and uploads a batch straight from them.
  // On a backend whose memory is not the host's (a GPU) the held rows live in its memory,
  // generated there by its sample source (else generated on the host and copied once: the
  // whole shard, or each epoch's rows), and every batch is gathered there: no batch crosses
  // the bus, only its row numbers.
  bool holdsWholeShard_ = false;
  bool perBatch_ = false;  // after setSlice: rows generated batch by batch
  int64_t heldRows_ = 0;
  std::function<void()> holdUpdate_;            // holdNextUpdate's
  std::unique_ptr<SampleSource> sampleSource_;  // null where the host generates
  // The held rows in backend memory (null on the CPU, and once perBatch_).
  float* residentX_ = nullptr;
  float* residentY_ = nullptr;
  std::vector<int64_t> batchRows_;  // the rows of the next batch among the held ones
  void releaseResidentRows();
  Tensor heldX_;
  Tensor heldY_;
  Tensor stageX_;
  Tensor stageY_;
  std::vector<int64_t> chunk_;  // sample indices handed to the generator at a time
  float* batchX_ = nullptr;     // backend memory
  float* batchY_ = nullptr;
  int64_t batchCapacity_ = 0;  // rows batchX_ (and spareX_) have room for
  // The input pipeline once batches are made one by one on a host-memory backend (as a data
  // loader prefetches): while a step trains on batchX_, a helper thread generates the next
  // batch into spareX_/spareY_ for the slice of the moment, and loadBatch takes it by swapping
  // the pairs. A batch the scheduler moved the slice under, and an epoch's first batch (its
  // shuffle comes first), are generated in loadBatch instead; so is every batch that took less
  // than prefetchMinSeconds_ to make the last time (handing a few microseconds of work to
  // another thread costs more than it saves: a 16-row batch of 8 features ran 2.5-5x slower).
  struct Ahead {
    int64_t epoch = -1;
    int64_t cursor = -1;
    BatchSlice slice;
  };
  std::future<double> prefetch_;  // the seconds its batch took to make
  Ahead ahead_;
  double lastBatchSeconds_ = 0.0;  // how long the last batch made took (0: none yet)
  double prefetchMinSeconds_ = kPrefetchMinSeconds;
  float* spareX_ = nullptr;
  float* spareY_ = nullptr;
  std::vector<int64_t> prefetchChunk_;
  // Samples an evaluation runs through the model at once: kEvalLabels labels' worth (a
  // sequence's tokens each keep a model's activations, so 1024 samples of 64 tokens would
  // hold a transformer's for 65536 rows).
  static constexpr int64_t kEvalLabels = 1024;
  int64_t evalChunk_ = kEvalLabels;
  float* evalX_ = nullptr;
  float* evalY_ = nullptr;

 public:
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
};

}  // namespace dtlab::core
