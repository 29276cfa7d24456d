#pragma once

// Internal to core/data: the dataset all kinds share, and the kinds' factories. Users
// include core/data/dataset.h.

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/common/check.h"
#include "core/common/random.h"
#include "core/data/dataset.h"
#include "core/data/sample_program.h"

namespace dtlab::core::datagen {

// Throws dtlab::Error "dataset <field>: <reason>" when ok is false.
template <typename... Args>
void requireConfig(bool ok, const char* field, const Args&... reason) {
  if (!ok) throw Error(std::string("dataset ") + field + ": " + ::dtlab::detail::concat(reason...));
}

// Every kind but the teacher reads DatasetConfig::noise as a standard deviation (in its
// own units).
inline void requireNoise(const DatasetConfig& config) {
  requireConfig(std::isfinite(config.noise) && config.noise >= 0.0f, "noise",
                "must be finite and >= 0 (got ", config.noise, ")");
}

// The program of a kind, with the seed of `config` and the given shape; the factory fills in
// the rest.
inline SampleProgram programOf(SampleKind kind, const DatasetConfig& config, int64_t features,
                               int64_t classes) {
  SampleProgram program;
  program.kind = kind;
  program.seed = config.seed;
  program.features = features;
  program.classes = classes;
  return program;
}

// A dataset whose samples a SampleProgram defines (core/data/sample_program.h). Each kind's
// factory validates its config, derives its parameter tables from the seed and hands them
// over with the program, which this class points at them.
class ProgramDataset final : public Dataset {
 public:
  ProgramDataset(TaskKind task, int64_t trainSize, int64_t testSize, SampleProgram program,
                 std::vector<float> table = {}, std::vector<int64_t> dims = {});

  const SampleProgram& program() const override { return program_; }
  void generate(Split split, int64_t begin, int64_t count, float* x, float* y) const override;
  void generateIndices(Split split, std::span<const int64_t> indices, float* x,
                       float* y) const override;
  void labels(Split split, int64_t begin, int64_t count, int64_t* out) const override;

 private:
  template <typename IndexOf>
  void run(Split split, int64_t count, IndexOf indexOf, float* x, float* y) const;

  std::vector<float> table_;
  std::vector<int64_t> dims_;
  SampleProgram program_;
};

std::unique_ptr<Dataset> makeGaussianBlobs(const DatasetConfig& config);
std::unique_ptr<Dataset> makeTwoSpirals(const DatasetConfig& config);
std::unique_ptr<Dataset> makeCheckerboard(const DatasetConfig& config);
std::unique_ptr<Dataset> makeTeacher(const DatasetConfig& config);
std::unique_ptr<Dataset> makeLinearRegression(const DatasetConfig& config);
std::unique_ptr<Dataset> makeShapes(const DatasetConfig& config);

}  // namespace dtlab::core::datagen
