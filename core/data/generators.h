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
#include "core/spec/experiment_spec.h"
#include "core/spec/settings.h"

namespace dtlab::core::datagen {

// Throws dtlab::Error "dataset <field>: <reason>" when ok is false.
template <typename... Args>
void requireConfig(bool ok, const char* field, const Args&... reason) {
  if (!ok) throw Error(std::string("dataset ") + field + ": " + ::dtlab::detail::concat(reason...));
}

// A kind's "noise" parameter: a non-negative real, 1 by default, that each kind reads as a
// standard deviation in its own units (`help` says which).
inline SettingSchema noiseParameter(std::string help) {
  return SettingSchema{.key = "noise",
                       .type = SettingType::kReal,
                       .label = "Noise",
                       .help = std::move(help),
                       .defaultValue = 1.0,
                       .min = 0.0,
                       .max = INFINITY,
                       .singlePrecision = true};
}

// A real parameter as the generators compute with it: a 32-bit float (what the spec rounds it
// to), checked finite and in [min, max] for configs built in code, which the parser has not
// seen.
inline float realParameter(const SettingsView& view, std::string_view key, float min = 0.0f,
                           float max = INFINITY) {
  const auto v = static_cast<float>(view.real(key));
  requireConfig(std::isfinite(v) && v >= min && v <= max, std::string(key).c_str(),
                "must be finite and in [", min, ", ", max, "] (got ", v, ")");
  return v;
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

  const SampleProgram* program() const override { return &program_; }
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

}  // namespace dtlab::core::datagen
