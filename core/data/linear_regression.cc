#include <cmath>
#include <vector>

#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

// y = w . x + b + N(0, noise^2) with x ~ N(0, I). w is a random direction of unit
// length, so the signal w . x has variance exactly 1 whatever the width, and noise is
// the noise-to-signal ratio of standard deviations: the best achievable test MSE is
// noise^2 and the best R^2 is 1 / (1 + noise^2).
class LinearRegression final : public PerSampleDataset<LinearRegression> {
 public:
  explicit LinearRegression(const DatasetConfig& config)
      : PerSampleDataset(config.features, 1, TaskKind::kRegression, config.trainSize,
                         config.testSize, config.seed),
        noise_(config.noise),
        weights_(static_cast<std::size_t>(config.features)) {
    Rng rng(deriveSeed(config.seed, kParameterStream));
    double norm = 0.0;
    // Redraw in the (vanishingly rare) case of a near-zero vector rather than divide by it.
    while (norm < 1e-12) {
      norm = 0.0;
      for (float& w : weights_) {
        w = rng.normal();
        norm += static_cast<double>(w) * w;
      }
    }
    const auto inv = static_cast<float>(1.0 / std::sqrt(norm));
    for (float& w : weights_) w *= inv;
    bias_ = 0.5f * rng.normal();
  }

  float sample(int64_t, Rng& rng, float* x) const {
    float y = bias_;
    for (int64_t j = 0; j < features(); ++j) {
      x[j] = rng.normal();
      y += weights_[j] * x[j];
    }
    return y + noise_ * rng.normal();
  }

 private:
  float noise_;
  std::vector<float> weights_;
  float bias_ = 0.0f;
};

}  // namespace

std::unique_ptr<Dataset> makeLinearRegression(const DatasetConfig& config) {
  requireNoise(config);
  requireConfig(config.features >= 1, "features", "linear_regression needs at least 1 (got ",
                config.features, ")");
  return std::make_unique<LinearRegression>(config);
}

}  // namespace dtlab::core::datagen
