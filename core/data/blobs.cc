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
std::vector<float> blobCentres(const DatasetConfig& config) {
  std::vector<float> centres(static_cast<std::size_t>(config.classes * config.features));
  Rng rng(deriveSeed(config.seed, kParameterStream));
  const double scale = kCentreDistancePerSeparation * config.separation /
                       std::sqrt(2.0 * static_cast<double>(config.features));
  for (float& v : centres) v = static_cast<float>(scale * rng.normal());
  return centres;
}

}  // namespace

std::unique_ptr<Dataset> makeGaussianBlobs(const DatasetConfig& config) {
  requireNoise(config);
  requireConfig(config.classes >= 2, "classes", "gaussian_blobs needs at least 2 (got ",
                config.classes, ")");
  requireConfig(config.features >= 1, "features", "gaussian_blobs needs at least 1 (got ",
                config.features, ")");
  requireConfig(std::isfinite(config.separation) && config.separation >= 0.0f, "separation",
                "must be finite and >= 0 (got ", config.separation, ")");
  SampleProgram program = programOf(SampleKind::kBlobs, config, config.features, config.classes);
  program.noise = config.noise;
  return std::make_unique<ProgramDataset>(TaskKind::kClassification, config.trainSize,
                                          config.testSize, program, blobCentres(config));
}

}  // namespace dtlab::core::datagen
