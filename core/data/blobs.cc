#include <cmath>
#include <vector>

#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

// Expected distance between two class centres per unit of DatasetConfig::separation.
// With unit within-class noise, 1.5 * separation puts the defaults (separation 4, 10
// classes, 32 features) at about 99% nearest-centre accuracy, separation 2 near 75%
// and separation 0.5 barely above chance.
constexpr double kCentreDistancePerSeparation = 1.5;

// Gaussian blobs: class c is N(centre_c, noise^2 I). Centres are N(0, s^2 I) with s
// chosen so that the expected pairwise distance is 1.5 * separation in any dimension
// (the spread of those distances shrinks as features grow).
class GaussianBlobs final : public PerSampleDataset<GaussianBlobs> {
 public:
  explicit GaussianBlobs(const DatasetConfig& config)
      : PerSampleDataset(config.features, config.classes, TaskKind::kClassification,
                         config.trainSize, config.testSize, config.seed),
        noise_(config.noise),
        centres_(static_cast<std::size_t>(config.classes * config.features)) {
    Rng rng(deriveSeed(config.seed, kParameterStream));
    const double scale = kCentreDistancePerSeparation * config.separation /
                         std::sqrt(2.0 * static_cast<double>(config.features));
    for (float& v : centres_) v = static_cast<float>(scale * rng.normal());
  }

  int64_t labelOf(int64_t index) const { return index % outputs(); }

  float sample(int64_t index, Rng& rng, float* x) const {
    const int64_t c = labelOf(index);
    const int64_t width = features();
    const float* centre = centres_.data() + c * width;
    for (int64_t j = 0; j < width; ++j) x[j] = centre[j] + noise_ * rng.normal();
    return static_cast<float>(c);
  }

 private:
  float noise_;
  std::vector<float> centres_;  // classes x features
};

}  // namespace

std::unique_ptr<Dataset> makeGaussianBlobs(const DatasetConfig& config) {
  requireNoise(config);
  requireConfig(config.classes >= 2, "classes", "gaussian_blobs needs at least 2 (got ",
                config.classes, ")");
  requireConfig(config.features >= 1, "features", "gaussian_blobs needs at least 1 (got ",
                config.features, ")");
  requireConfig(std::isfinite(config.separation) && config.separation >= 0.0f, "separation",
                "must be finite and >= 0 (got ", config.separation, ")");
  return std::make_unique<GaussianBlobs>(config);
}

}  // namespace dtlab::core::datagen
