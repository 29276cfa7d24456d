#include <cmath>
#include <vector>

#include "core/data/builtin_kinds.h"
#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

// y = w . x + b + N(0, noise^2) with x ~ N(0, I). w is a random direction of unit
// length, so the signal w . x has variance exactly 1 whatever the width, and noise is
// the noise-to-signal ratio of standard deviations: the best achievable test MSE is
// noise^2 and the best R^2 is 1 / (1 + noise^2). Returns w; b goes to `bias`.
std::vector<float> regressionWeights(const DatasetConfig& config, float& bias) {
  std::vector<float> weights(static_cast<std::size_t>(config.features));
  Rng rng(deriveSeed(config.seed, kParameterStream));
  double norm = 0.0;
  // Redraw in the (vanishingly rare) case of a near-zero vector rather than divide by it.
  while (norm < 1e-12) {
    norm = 0.0;
    for (float& w : weights) {
      w = rng.normal();
      norm += static_cast<double>(w) * w;
    }
  }
  const auto inv = static_cast<float>(1.0 / std::sqrt(norm));
  for (float& w : weights) w *= inv;
  bias = 0.5f * rng.normal();
  return weights;
}

std::unique_ptr<Dataset> makeLinearRegression(const DatasetConfig& config) {
  const float noise = realParameter(datasetKindOf(config).view(config), "noise");
  requireConfig(config.features >= 1, "features", "linear_regression needs at least 1 (got ",
                config.features, ")");
  SampleProgram program = programOf(SampleKind::kRegression, config, config.features, 1);
  program.noise = noise;
  std::vector<float> weights = regressionWeights(config, program.bias);
  return std::make_unique<ProgramDataset>(TaskKind::kRegression, config.trainSize, config.testSize,
                                          program, std::move(weights));
}

}  // namespace

DatasetKindDescriptor linearRegressionKind() {
  DatasetKindDescriptor d;
  d.name = "linear_regression";
  d.summary = "A noisy linear function of Gaussian inputs (regression: train with mse)";
  d.task = TaskKind::kRegression;
  d.classes = {.defaultValue = 1, .minimum = 1, .maximum = 1};
  d.features = {.defaultValue = 32, .fixed = false};
  d.parameters = {
      noiseParameter("Standard deviation of the target's noise, relative to the "
                     "signal's (best R^2 = 1 / (1 + noise^2))")};
  d.make = makeLinearRegression;
  return d;
}

}  // namespace dtlab::core::datagen
