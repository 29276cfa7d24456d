#include "core/data/dataset.h"

#include <algorithm>
#include <vector>

#include "core/common/check.h"
#include "core/data/dataset_kinds.h"
#include "core/data/generators.h"

namespace dtlab::core {

Dataset::Dataset(int64_t features, int64_t outputs, TaskKind task, int64_t trainSize,
                 int64_t testSize, uint64_t seed)
    : features_(features),
      outputs_(outputs),
      task_(task),
      trainSize_(trainSize),
      testSize_(testSize),
      seed_(seed) {
  DTLAB_ENFORCE(features > 0 && outputs > 0 && trainSize >= 0 && testSize >= 0,
                "dataset shape features=", features, " outputs=", outputs, " train=", trainSize,
                " test=", testSize);
}

void Dataset::checkRange(Split split, int64_t begin, int64_t count) const {
  if (begin < 0 || count < 0 || begin > size(split) - count) {
    throw Error(::dtlab::detail::concat("samples [", begin, ", ", begin + count,
                                        ") are outside the ", toString(split), " split of ",
                                        size(split), " samples"));
  }
}

void Dataset::checkIndices(Split split, std::span<const int64_t> indices) const {
  const int64_t n = size(split);
  for (int64_t i : indices) {
    if (i < 0 || i >= n) {
      throw Error(::dtlab::detail::concat("sample ", i, " is outside the ", toString(split),
                                          " split of ", n, " samples"));
    }
  }
}

void Dataset::checkClassification() const {
  if (task_ != TaskKind::kClassification) {
    throw Error("labels were asked of a regression dataset, which has targets, not classes");
  }
}

void Dataset::generateIndices(Split split, std::span<const int64_t> indices, float* x,
                              float* y) const {
  checkIndices(split, indices);
  for (std::size_t k = 0; k < indices.size(); ++k) {
    generate(split, indices[k], 1, x + static_cast<int64_t>(k) * features_, y + k);
  }
}

void Dataset::gather(Split split, std::span<const int64_t> indices, Tensor& x, Tensor& y) const {
  const auto n = static_cast<int64_t>(indices.size());
  x.resize(n, features_);
  y.resize(n, 1);
  generateIndices(split, indices, x.data(), y.data());
}

int64_t Dataset::label(Split split, int64_t index) const {
  int64_t out = 0;
  labels(split, index, 1, &out);
  return out;
}

void Dataset::labels(Split split, int64_t begin, int64_t count, int64_t* out) const {
  checkClassification();
  checkRange(split, begin, count);
  // Blocks bound the scratch to a few hundred rows however large the range.
  constexpr int64_t kBlock = 256;
  const int64_t block = std::min(count, kBlock);
  std::vector<float> x(static_cast<std::size_t>(block * features_));
  std::vector<float> y(static_cast<std::size_t>(block));
  for (int64_t done = 0; done < count; done += block) {
    const int64_t n = std::min(block, count - done);
    generate(split, begin + done, n, x.data(), y.data());
    for (int64_t k = 0; k < n; ++k) out[done + k] = static_cast<int64_t>(y[k]);
  }
}

namespace datagen {

ProgramDataset::ProgramDataset(TaskKind task, int64_t trainSize, int64_t testSize,
                               SampleProgram program, std::vector<float> table,
                               std::vector<int64_t> dims)
    : Dataset(program.features, program.classes, task, trainSize, testSize, program.seed),
      table_(std::move(table)),
      dims_(std::move(dims)),
      program_(program) {
  program_.table = table_.data();
  program_.tableSize = static_cast<int64_t>(table_.size());
  program_.dims = dims_.data();
}

template <typename IndexOf>
void ProgramDataset::run(Split split, int64_t count, IndexOf indexOf, float* x, float* y) const {
  const int64_t width = features();
  std::vector<float> scratch(static_cast<std::size_t>(scratchFloats(program_)));
  withKind(program_, [&](auto kind) {
    for (int64_t k = 0; k < count; ++k) {
      y[k] = generateSampleOf<decltype(kind)::value>(program_, split, indexOf(k), x + k * width,
                                                     scratch.data());
    }
  });
}

void ProgramDataset::generate(Split split, int64_t begin, int64_t count, float* x, float* y) const {
  checkRange(split, begin, count);
  run(
      split, count, [begin](int64_t k) { return begin + k; }, x, y);
}

void ProgramDataset::generateIndices(Split split, std::span<const int64_t> indices, float* x,
                                     float* y) const {
  checkIndices(split, indices);
  run(
      split, static_cast<int64_t>(indices.size()), [indices](int64_t k) { return indices[k]; }, x,
      y);
}

void ProgramDataset::labels(Split split, int64_t begin, int64_t count, int64_t* out) const {
  // Every kind but the teacher (and regression, which has no classes) assigns class
  // i % classes to sample i, so partitioners need not generate features.
  if (program_.kind == SampleKind::kTeacher || program_.kind == SampleKind::kRegression) {
    Dataset::labels(split, begin, count, out);
    return;
  }
  checkRange(split, begin, count);
  for (int64_t k = 0; k < count; ++k) out[k] = (begin + k) % program_.classes;
}

}  // namespace datagen

std::unique_ptr<Dataset> makeDataset(const DatasetConfig& config) {
  using datagen::requireConfig;
  requireConfig(config.trainSize >= 1, "trainSize", "needs at least 1 training sample (got ",
                config.trainSize, ")");
  requireConfig(config.testSize >= 0, "testSize", "must not be negative (got ", config.testSize,
                ")");
  return datasetKindOf(config).make(config);
}

const char* toString(Split split) {
  return split == Split::kTrain ? "train" : "test";
}

}  // namespace dtlab::core
