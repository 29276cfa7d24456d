#include <cmath>
#include <vector>

#include "core/data/builtin_kinds.h"
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
std::vector<float> blobCentres(const DatasetConfig& config, float separation) {
  std::vector<float> centres(static_cast<std::size_t>(config.classes * config.features));
  Rng rng(deriveSeed(config.seed, kParameterStream));
  const double scale = kCentreDistancePerSeparation * separation /
                       std::sqrt(2.0 * static_cast<double>(config.features));
  for (float& v : centres) v = static_cast<float>(scale * rng.normal());
  return centres;
}

std::unique_ptr<Dataset> makeGaussianBlobs(const DatasetConfig& config) {
  const SettingsView parameters = datasetKindOf(config).view(config);
  const float noise = realParameter(parameters, "noise");
  const float separation = realParameter(parameters, "separation");
  requireConfig(config.classes >= 2, "classes", "gaussian_blobs needs at least 2 (got ",
                config.classes, ")");
  requireConfig(config.features >= 1, "features", "gaussian_blobs needs at least 1 (got ",
                config.features, ")");
  SampleProgram program = programOf(SampleKind::kBlobs, config, config.features, config.classes);
  program.noise = noise;
  return std::make_unique<ProgramDataset>(TaskKind::kClassification, config.trainSize,
                                          config.testSize, program,
                                          blobCentres(config, separation));
}

}  // namespace

DatasetKindDescriptor gaussianBlobsKind() {
  DatasetKindDescriptor d;
  d.name = "gaussian_blobs";
  d.summary = "Gaussian clusters, one per class, in any number of dimensions";
  d.classes = {.defaultValue = 10, .minimum = 2, .maximum = kMaxWidth};
  d.features = {.defaultValue = 32, .fixed = false};
  const SettingSchema separation{.key = "separation",
                                 .type = SettingType::kReal,
                                 .label = "Separation",
                                 .help =
                                     "Distance scale of the class centres: 4 is about 99% "
                                     "separable with 10 classes, 0.5 barely above chance",
                                 .defaultValue = 4.0,
                                 .min = 0.0,
                                 .max = INFINITY,
                                 .singlePrecision = true};
  d.parameters = {separation, noiseParameter("Standard deviation of each class around its centre")};
  d.make = makeGaussianBlobs;
  return d;
}

}  // namespace dtlab::core::datagen
