#include "core/train/worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <utility>

#include "core/common/check.h"
#include "core/common/random.h"
#include "core/nn/model_kinds.h"

namespace dtlab::core {
namespace {
constexpr uint64_t kShuffleStream = 0x5f0f;
// Samples generated per Dataset::generateIndices call when a worker fills its rows:
// bounds the index buffer while keeping per-call setup (the teacher's scratch) rare.
constexpr int64_t kGenerateChunk = 4096;

bool isContiguous(const std::vector<int64_t>& samples) {
  for (std::size_t i = 1; i < samples.size(); ++i)
    if (samples[i] != samples[0] + static_cast<int64_t>(i)) return false;
  return true;
}

// A whole split on the host.
void materialize(const Dataset& dataset, Split split, Tensor& x, Tensor& y) {
  const int64_t n = dataset.size(split);
  x.resize(n, dataset.features());
  y.resize(n, dataset.targets());
  dataset.generate(split, 0, n, x.data(), y.data());
}
}  // namespace

BatchSlice BatchSlice::equal(int64_t global, int rank, int world) {
  DTLAB_ENFORCE(world > 0 && rank >= 0 && rank < world, "bad rank ", rank, " of ", world);
  const int64_t base = global / world;
  const int64_t extra = global % world;  // the first `extra` ranks take one more
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {global, begin, base + (rank < extra ? 1 : 0)};
}

Worker::Worker(const ExperimentSpec& spec, Backend& backend, const Dataset& dataset,
               std::vector<int64_t> shard, BatchSlice slice, int64_t totalSteps,
               int64_t scheduleBatch, int64_t controlSlots)
    : spec_(spec),
      backend_(backend),
      task_(dataset.task()),
      targets_(dataset.targets()),
      model_(makeModel(backend, spec.model, sampleShapeOf(spec.dataset), controlSlots)),
      optimizer_(backend.makeOptimizer(spec.optimizer)),
      schedule_(spec.optimizer, scheduleBatch > 0 ? scheduleBatch : slice.global, totalSteps),
      dataset_(dataset),
      shardSize_(static_cast<int64_t>(shard.size())),
      slice_(slice),
      localBatch_(slice.count) {
  DTLAB_ENFORCE(model_->inputs() == dataset.features() &&
                    model_->outputs() == dataset.outputs() * dataset.targets(),
                "the spec's dataset gives samples of ", model_->inputs(), " -> ", model_->outputs(),
                " but the dataset built makes ", dataset.features(), " -> ",
                dataset.outputs() * dataset.targets());
  DTLAB_ENFORCE(localBatch_ > 0, "local batch must be positive, got ", localBatch_,
                " (global batch ", slice.global, " split too finely?)");
  DTLAB_ENFORCE(slice.begin >= 0 && slice.begin + slice.count <= slice.global,
                "batch slice outside the global batch");
  DTLAB_ENFORCE(shardSize() >= slice.global, "training set of ", shardSize(),
                " samples is smaller than the global batch ", slice.global);
  DTLAB_ENFORCE(shardSize() <= int64_t{std::numeric_limits<uint32_t>::max()}, "training set of ",
                shardSize(), " samples is too large to shuffle");
  for (int64_t i : shard) {  // fail here rather than at the first step
    DTLAB_ENFORCE(i >= 0 && i < dataset.size(Split::kTrain), "sample ", i,
                  " is outside the training split of ", dataset.size(Split::kTrain));
  }
  if (isContiguous(shard)) {
    firstSample_ = shard.front();
  } else {
    samples_ = std::move(shard);
  }
  model_->initialize(spec.model.init, deriveSeed(spec.seed, 0x1417));
  optimizer_->init(model_->parameterCount());
  order_.resize(static_cast<std::size_t>(shardSize_));
  std::iota(order_.begin(), order_.end(), uint32_t{0});
  cursor_ = shardSize_;  // shuffle on the first batch
  epoch_ = -1;
  holdsWholeShard_ = slice_.count == slice_.global;
  // On the host a slice's rows are made batch by batch, each while the step before trains.
  perBatch_ = !holdsWholeShard_ && backend_.hostMemory();
  heldRows_ = holdsWholeShard_ ? shardSize_ : perBatch_ ? 0 : stepsPerEpoch() * localBatch_;
  chunk_.resize(
      static_cast<std::size_t>(std::min(perBatch_ ? slice_.global : heldRows_, kGenerateChunk)));
  if (!backend_.hostMemory()) {
    if (const datagen::SampleProgram* program = dataset.program())
      sampleSource_ = backend_.makeSampleSource(*program);
    residentX_ = backend_.allocate(heldRows_ * model_->inputs());
    residentY_ = backend_.allocate(heldRows_ * targets_);
    batchRows_.resize(static_cast<std::size_t>(localBatch_));
  }
  if (sampleSource_ == nullptr) {
    heldX_.resize(heldRows_, model_->inputs());
    heldY_.resize(heldRows_, targets_);
  }
  if (holdsWholeShard_) {
    generateRows(
        heldRows_, [](int64_t r) { return r; }, residentX_, residentY_);
    if (backend_.hostMemory()) {
      stageX_.resize(localBatch_, model_->inputs());
      stageY_.resize(localBatch_, targets_);
    }
  }
  reserveBatch(localBatch_);
  evalChunk_ = std::max<int64_t>(1, kEvalLabels / targets_);
  evalX_ = backend_.allocate(evalChunk_ * model_->inputs());
  evalY_ = backend_.allocate(evalChunk_ * targets_);
  model_->reserve(std::max(localBatch_, evalChunk_));
}

Worker::~Worker() {
  try {
    settlePrefetch();
  } catch (...) {  // NOLINT(bugprone-empty-catch): its error is of a batch nobody will train on
  }
  releaseResidentRows();
  backend_.release(batchX_);
  backend_.release(batchY_);
  backend_.release(spareX_);
  backend_.release(spareY_);
  backend_.release(evalX_);
  backend_.release(evalY_);
}

int64_t Worker::trainingDataBytes() const {
  int64_t floats = heldX_.size() + heldY_.size();
  // Batch by batch on the host: the batch trained on, and the one made meanwhile if any is.
  if (perBatch_ && backend_.hostMemory())
    floats += (spareX_ != nullptr ? 2 : 1) * batchCapacity_ * (model_->inputs() + targets_);
  return floats * static_cast<int64_t>(sizeof(float));
}

int64_t Worker::sampleIndexBytes() const {
  return static_cast<int64_t>(order_.size() * sizeof(uint32_t) + samples_.size() * sizeof(int64_t) +
                              (chunk_.size() + prefetchChunk_.size()) * sizeof(int64_t));
}

void Worker::releaseResidentRows() {
  backend_.release(residentX_);
  backend_.release(residentY_);
  residentX_ = nullptr;
  residentY_ = nullptr;
}

template <typename PositionOf, typename Generate>
void Worker::inChunks(int64_t rows, PositionOf positionOf, std::vector<int64_t>& chunk,
                      Generate generate) const {
  const auto step = static_cast<int64_t>(chunk.size());
  for (int64_t done = 0; done < rows; done += step) {
    const int64_t n = std::min(step, rows - done);
    for (int64_t k = 0; k < n; ++k)
      chunk[static_cast<std::size_t>(k)] = sampleAt(positionOf(done + k));
    generate(done, std::span<const int64_t>(chunk.data(), static_cast<std::size_t>(n)));
  }
}

template <typename PositionOf>
void Worker::generateRows(int64_t rows, PositionOf positionOf, float* x, float* y) {
  const int64_t features = model_->inputs();
  inChunks(rows, positionOf, chunk_, [&](int64_t done, std::span<const int64_t> indices) {
    if (sampleSource_ != nullptr) {
      sampleSource_->generate(Split::kTrain, indices, x + done * features, y + done * targets_);
    } else {
      dataset_.generateIndices(Split::kTrain, indices, heldX_.row(done), heldY_.row(done));
    }
  });
  // Rows made on the host go to backend memory when x is there (a GPU without a source).
  if (sampleSource_ == nullptr && x != nullptr) {
    backend_.upload(x, heldX_.data(), rows * features);
    backend_.upload(y, heldY_.data(), rows * targets_);
  }
}

void Worker::setSlice(BatchSlice slice) {
  DTLAB_ENFORCE(slice.global == slice_.global, "a new slice must keep the global batch of ",
                slice_.global, ", got ", slice.global);
  // A slice may be empty (a rank the scheduler gives no samples still joins the all-reduce).
  DTLAB_ENFORCE(slice.count >= 0 && slice.begin >= 0 && slice.begin + slice.count <= slice.global,
                "batch slice outside the global batch");
  DTLAB_ENFORCE(!holdsWholeShard_ || slice.count == slice.global,
                "a single replica trains on the whole batch");
  if (holdsWholeShard_) return;
  settlePrefetch();  // it made rows of the old slice, maybe into buffers about to go
  if (!perBatch_) {
    perBatch_ = true;
    // Only a backend with memory of its own gets here: on the host a slice is made batch by
    // batch from the start.
    releaseResidentRows();  // batches are generated one by one from here on
    if (sampleSource_ == nullptr) {
      heldX_.resize(slice.global, model_->inputs());  // room for any slice
      heldY_.resize(slice.global, targets_);
    }
    chunk_.resize(static_cast<std::size_t>(std::min(slice.global, kGenerateChunk)));
  }
  reserveBatch(slice.count);
  slice_ = slice;
  localBatch_ = slice.count;
}

void Worker::reserveBatch(int64_t rows) {
  if (rows <= batchCapacity_) return;
  for (float** buffer : {&batchX_, &batchY_, &spareX_, &spareY_}) {
    backend_.release(*buffer);
    *buffer = nullptr;
  }
  batchX_ = backend_.allocate(rows * model_->inputs());
  batchY_ = backend_.allocate(rows * targets_);
  batchCapacity_ = rows;
  model_->reserve(rows);
}

void Worker::generateHostBatch(int64_t cursor, const BatchSlice& slice, std::vector<int64_t>& chunk,
                               float* x, float* y) const {
  const int64_t features = model_->inputs();
  inChunks(
      slice.count,
      [&](int64_t r) { return order_[static_cast<std::size_t>(cursor + slice.begin + r)]; }, chunk,
      [&](int64_t done, std::span<const int64_t> indices) {
        dataset_.generateIndices(Split::kTrain, indices, x + done * features, y + done * targets_);
      });
}

void Worker::startPrefetch() {
  if (!perBatch_ || !backend_.hostMemory() || localBatch_ == 0 ||
      cursor_ + slice_.global > shardSize_ ||  // the next batch begins an epoch: shuffle first
      lastBatchSeconds_ < prefetchMinSeconds_)
    return;
  if (spareX_ == nullptr) {
    spareX_ = backend_.allocate(batchCapacity_ * model_->inputs());
    spareY_ = backend_.allocate(batchCapacity_ * targets_);
    prefetchChunk_.resize(chunk_.size());
  }
  ahead_ = {epoch_, cursor_, slice_};
  prefetch_ = std::async(std::launch::async, [this, ahead = ahead_, x = spareX_, y = spareY_] {
    const auto start = std::chrono::steady_clock::now();
    generateHostBatch(ahead.cursor, ahead.slice, prefetchChunk_, x, y);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

void Worker::settlePrefetch() {
  if (!prefetch_.valid()) return;
  ahead_ = {};
  prefetch_.get();  // an error in it is a generator's: it would fail here just the same
}

void Worker::shuffleNextEpoch() {
  ++epoch_;
  Rng rng(deriveSeed(spec_.seed, kShuffleStream, static_cast<uint64_t>(epoch_)));
  for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
}

void Worker::beginEpoch() {
  settlePrefetch();  // it reads the order about to be shuffled
  shuffleNextEpoch();
  cursor_ = 0;
  if (!holdsWholeShard_ && !perBatch_) {
    // Row r of the epoch is row r % localBatch of global batch r / localBatch.
    generateRows(
        heldRows_,
        [this](int64_t r) -> int64_t {
          return order_[static_cast<std::size_t>((r / localBatch_) * slice_.global + slice_.begin +
                                                 r % localBatch_)];
        },
        residentX_, residentY_);
  }
}

void Worker::skipBatches(int64_t batches) {
  DTLAB_ENFORCE(epoch_ == -1 && batches >= 0, "skipBatches on a worker that has trained");
  if (batches == 0) return;
  const int64_t perEpoch = stepsPerEpoch();
  const int64_t lastEpoch = (batches - 1) / perEpoch;  // the epoch of the last batch skipped
  // Earlier epochs only shuffle (each epoch shuffles the previous order); their rows are
  // never used.
  for (int64_t e = 0; e < lastEpoch; ++e) shuffleNextEpoch();
  beginEpoch();
  cursor_ = ((batches - 1) % perEpoch + 1) * slice_.global;
}

std::vector<std::vector<float>> Worker::optimizerState() const {
  std::vector<std::vector<float>> out;
  optimizerState(out);
  return out;
}

void Worker::optimizerState(std::vector<std::vector<float>>& into) const {
  const std::vector<std::span<const float>> state = optimizer_->state();
  into.resize(state.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    const std::span<const float> s = state[i];
    std::vector<float>& host = into[i];
    host.resize(s.size());
    if (backend_.hostMemory())
      std::copy(s.begin(), s.end(), host.begin());
    else
      backend_.download(host.data(), s.data(), static_cast<int64_t>(s.size()));
  }
}

void Worker::restoreOptimizerState(const std::vector<std::vector<float>>& state) {
  std::vector<std::span<float>> target = optimizer_->mutableState();
  if (target.size() != state.size())
    throw Error(detail::concat("the checkpoint holds ", state.size(), " optimizer buffers, ",
                               optimizer_->name(), " here has ", target.size()));
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i].size() != state[i].size())
      throw Error(detail::concat("the checkpoint's optimizer buffer ", i, " holds ",
                                 state[i].size(), " values, this model needs ", target[i].size()));
    if (backend_.hostMemory())
      std::copy(state[i].begin(), state[i].end(), target[i].begin());
    else
      backend_.upload(target[i].data(), state[i].data(), static_cast<int64_t>(state[i].size()));
  }
}

void Worker::loadBatch() {
  if (cursor_ + slice_.global > shardSize_) beginEpoch();
  if (localBatch_ == 0) {  // an empty slice: the batch goes by
    cursor_ += slice_.global;
    return;
  }
  const int64_t features = model_->inputs();
  if (residentX_ != nullptr) {
    // The batch's rows among the held ones: through this epoch's order for the whole shard,
    // else the next localBatch rows of the epoch's.
    const int64_t first = cursor_ / slice_.global * localBatch_;
    for (int64_t i = 0; i < localBatch_; ++i)
      batchRows_[static_cast<std::size_t>(i)] =
          holdsWholeShard_ ? order_[static_cast<std::size_t>(cursor_ + i)] : first + i;
    backend_.gatherRows(residentX_, features, batchRows_, batchX_);
    backend_.gatherRows(residentY_, targets_, batchRows_, batchY_);
  } else if (holdsWholeShard_) {
    for (int64_t i = 0; i < localBatch_; ++i) {
      const int64_t pos = order_[static_cast<std::size_t>(cursor_ + i)];
      std::copy_n(heldX_.row(pos), features, stageX_.row(i));
      std::copy_n(heldY_.row(pos), targets_, stageY_.row(i));
    }
    backend_.upload(batchX_, stageX_.data(), localBatch_ * features);
    backend_.upload(batchY_, stageY_.data(), localBatch_ * targets_);
  } else if (perBatch_ && backend_.hostMemory()) {
    if (prefetch_.valid() && ahead_.epoch == epoch_ && ahead_.cursor == cursor_ &&
        ahead_.slice.begin == slice_.begin && ahead_.slice.count == slice_.count) {
      lastBatchSeconds_ = prefetch_.get();
      std::swap(batchX_, spareX_);
      std::swap(batchY_, spareY_);
    } else {
      settlePrefetch();
      const auto start = std::chrono::steady_clock::now();
      generateHostBatch(cursor_, slice_, chunk_, batchX_, batchY_);
      lastBatchSeconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  } else if (perBatch_) {
    generateRows(
        localBatch_,
        [this](int64_t r) -> int64_t {
          return order_[static_cast<std::size_t>(cursor_ + slice_.begin + r)];
        },
        batchX_, batchY_);
  } else {
    const int64_t row = cursor_ / slice_.global * localBatch_;
    backend_.upload(batchX_, heldX_.row(row), localBatch_ * features);
    backend_.upload(batchY_, heldY_.row(row), localBatch_ * targets_);
  }
  cursor_ += slice_.global;
  startPrefetch();
}

LossResult Worker::loss(const float* output, const float* labels, int64_t rows, float gradScale,
                        float* dOutput) {
  // A sample's outputs are a class distribution per label, in the label's order: rows x
  // (targets x classes) is (rows x targets) x classes, each label a row of its own, and the
  // loss is their mean (gradScale per sample, shared by its labels).
  if (spec_.model.loss == LossKind::kCrossEntropy)
    return backend_.softmaxCrossEntropy(output, labels, rows * targets_,
                                        model_->outputs() / targets_,
                                        gradScale / static_cast<float>(targets_), dOutput);
  // MSE's mean runs over rows and outputs (PyTorch's MSELoss), so is its gradient: 2/n.
  return backend_.meanSquaredError(output, labels, rows, model_->outputs(),
                                   2.0f * gradScale / static_cast<float>(model_->outputs()),
                                   dOutput);
}

double Worker::computeGradients(float gradScale, GradientListener* listener) {
  if (localBatch_ == 0) {  // an empty slice: zero gradients, handed over as backward would
    backend_.fill(model_->grads(), model_->parameterCount(), 0.0f);
    if (listener != nullptr)
      for (const GradientRange& r : model_->handOffs()) listener->onGradientsReady(r.begin, r.end);
    return std::numeric_limits<double>::quiet_NaN();  // no loss measured
  }
  const float* out = model_->forward(batchX_, localBatch_);
  float* dOut = model_->outputGradBuffer();
  const LossResult result = loss(out, batchY_, localBatch_, gradScale, dOut);
  model_->backward(batchX_, dOut, localBatch_, listener);
  warm_ = true;
  double mean = result.lossSum / static_cast<double>(localBatch_ * targets_);
  if (spec_.model.loss == LossKind::kMse) mean /= static_cast<double>(model_->outputs());
  return mean;
}

int64_t Worker::loadProbe(int64_t rows) {
  DTLAB_ENFORCE(epoch_ == -1 && !prefetch_.valid(), "loadProbe on a worker that has trained");
  rows = std::min(rows, batchCapacity_);
  if (rows <= 0) return 0;
  // Before the first shuffle the order is the shard's own: rows [0, rows).
  if (backend_.hostMemory())
    generateHostBatch(0, {slice_.global, 0, rows}, chunk_, batchX_, batchY_);
  else
    generateRows(
        rows, [](int64_t r) { return r; }, batchX_, batchY_);
  return rows;
}

void Worker::computeProbe(int64_t rows, GradientListener* listener) {
  if (rows <= 0) return;
  const float* out = model_->forward(batchX_, rows);
  float* dOut = model_->outputGradBuffer();
  loss(out, batchY_, rows, 1.0f / static_cast<float>(slice_.global), dOut);
  model_->backward(batchX_, dOut, rows, listener);
  warm_ = true;
}

void Worker::applyUpdate(int64_t step) {
  applyUpdate(step, 0, model_->parameterCount());
}

void Worker::applyUpdate(int64_t step, int64_t begin, int64_t end) {
  if (holdUpdate_) std::exchange(holdUpdate_, nullptr)();
  backend_.optimizerUpdate(*optimizer_, model_->params(), model_->grads(), begin, end, step,
                           schedule_.at(step));
}

EvalSet::EvalSet(const Dataset& dataset, Split split, Backend& backend)
    : dataset_(dataset), split_(split), backend_(backend) {}

EvalSet::~EvalSet() {
  backend_.release(residentX_);
  backend_.release(residentY_);
}

void EvalSet::prepare() {
  if (prepared_) return;
  const int64_t n = rows();
  DTLAB_ENFORCE(n > 0, "the ", toString(split_), " split is empty: nothing to evaluate on");
  if (!backend_.hostMemory()) {
    const datagen::SampleProgram* program = dataset_.program();
    if (auto source = program ? backend_.makeSampleSource(*program) : nullptr) {
      const int64_t features = dataset_.features();
      residentX_ = backend_.allocate(n * features);
      residentY_ = backend_.allocate(n * dataset_.targets());
      std::vector<int64_t> indices(static_cast<std::size_t>(std::min(n, kGenerateChunk)));
      for (int64_t done = 0; done < n; done += kGenerateChunk) {
        const int64_t count = std::min(kGenerateChunk, n - done);
        std::iota(indices.begin(), indices.begin() + count, done);
        source->generate(split_, {indices.data(), static_cast<std::size_t>(count)},
                         residentX_ + done * features, residentY_ + done * dataset_.targets());
      }
      prepared_ = true;
      return;
    }
  }
  materialize(dataset_, split_, hostX_, hostY_);
  prepared_ = true;
}

Evaluation Worker::evaluate(EvalSet& set) {
  set.prepare();
  const int64_t n = set.rows();
  const int64_t features = model_->inputs();
  double lossSum = 0.0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < n; begin += evalChunk_) {
    const int64_t rows = std::min(evalChunk_, n - begin);
    const float* x = evalX_;
    const float* y = evalY_;
    if (set.residentX() != nullptr) {
      x = set.residentX() + begin * features;
      y = set.residentY() + begin * targets_;
    } else {
      backend_.upload(evalX_, set.hostX().row(begin), rows * features);
      backend_.upload(evalY_, set.hostY().row(begin), rows * targets_);
    }
    const float* out = model_->forward(x, rows);
    const LossResult r = loss(out, y, rows, 0.0f, nullptr);
    lossSum += r.lossSum;
    correct += r.correct;
  }
  Evaluation e;
  const auto labels = static_cast<double>(n * targets_);  // the loss and accuracy are per label
  e.loss = lossSum / labels;
  if (spec_.model.loss == LossKind::kMse) e.loss /= static_cast<double>(model_->outputs());
  e.accuracy = task_ == TaskKind::kClassification ? static_cast<double>(correct) / labels
                                                  : std::numeric_limits<double>::quiet_NaN();
  if (sampleShapeOf(spec_.dataset).tokens()) e.perplexity = std::exp(e.loss);
  return e;
}

}  // namespace dtlab::core
