#include "core/data/generators.h"

#include <vector>

namespace dtlab::core {

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

}  // namespace dtlab::core
