#include "core/data/dataset.h"

#include <algorithm>
#include <vector>

#include "core/common/check.h"

namespace dtlab::core {

Dataset::Dataset(int64_t features, int64_t outputs, TaskKind task, int64_t trainSize,
                 int64_t testSize, uint64_t seed, int64_t targets)
    : features_(features),
      outputs_(outputs),
      targets_(targets),
      task_(task),
      trainSize_(trainSize),
      testSize_(testSize),
      seed_(seed) {
  DTLAB_ENFORCE(features > 0 && outputs > 0 && targets > 0 && trainSize >= 0 && testSize >= 0,
                "dataset shape features=", features, " outputs=", outputs, " targets=", targets,
                " train=", trainSize, " test=", testSize);
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
    generate(split, indices[k], 1, x + static_cast<int64_t>(k) * features_,
             y + static_cast<int64_t>(k) * targets_);
  }
}

void Dataset::gather(Split split, std::span<const int64_t> indices, Tensor& x, Tensor& y) const {
  const auto n = static_cast<int64_t>(indices.size());
  x.resize(n, features_);
  y.resize(n, targets_);
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
  std::vector<float> y(static_cast<std::size_t>(block * targets_));
  for (int64_t done = 0; done < count; done += block) {
    const int64_t n = std::min(block, count - done);
    generate(split, begin + done, n, x.data(), y.data());
    for (int64_t k = 0; k < n; ++k) out[done + k] = static_cast<int64_t>(y[k * targets_]);
  }
}

const char* toString(Split split) {
  return split == Split::kTrain ? "train" : "test";
}

}  // namespace dtlab::core
