// The two-dimensional kinds: interleaved spirals and a checkerboard. Both lie in
// roughly [-1, 1]^2, and both read DatasetConfig::noise as jitter relative to the
// spacing of their structure, so the default noise (1.0) leaves the classes separable
// enough for a small MLP to pass 95% test accuracy.

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

// Spirals: the arms start at this radius rather than at the origin, where all arms
// would meet and no classifier could tell them apart.
constexpr float kSpiralInnerRadius = 0.15f;
// Jitter std per unit of noise, as a fraction of the gap between neighbouring arms.
// 0.15 puts the midpoint between arms at 3.3 std, so default jitter mislabels
// well under 1% of points.
constexpr float kSpiralJitterPerGap = 0.15f;
// Checkerboard jitter std per unit of noise, as a fraction of a cell's width. Jitter
// moves a point across a cell border without changing its label, so a fraction of
// about 1.6 * this of all points (1.6% at the default noise) carry the other colour.
constexpr float kCheckerJitterPerCell = 0.01f;

// `classes` Archimedean arms, arm c rotated by 2 pi c / classes. Sample i is on arm
// i % classes at a uniformly drawn position along it, plus isotropic Gaussian jitter.
class TwoSpirals final : public PerSampleDataset<TwoSpirals> {
 public:
  explicit TwoSpirals(const DatasetConfig& config)
      : PerSampleDataset(2, config.classes, TaskKind::kClassification, config.trainSize,
                         config.testSize, config.seed),
        turns_(config.turns) {
    // Radial gap between neighbouring arms; below one turn the arms do not wrap, so
    // the gap is taken as if they made one.
    const float gap = (1.0f - kSpiralInnerRadius) /
                      (std::max(config.turns, 1.0f) * static_cast<float>(config.classes));
    jitter_ = kSpiralJitterPerGap * config.noise * gap;
  }

  int64_t labelOf(int64_t index) const { return index % outputs(); }

  float sample(int64_t index, Rng& rng, float* x) const {
    const int64_t arm = labelOf(index);
    const float t = rng.uniform();
    const float radius = kSpiralInnerRadius + (1.0f - kSpiralInnerRadius) * t;
    const float angle = 2.0f * std::numbers::pi_v<float> *
                        (turns_ * t + static_cast<float>(arm) / static_cast<float>(outputs()));
    x[0] = radius * std::cos(angle) + jitter_ * rng.normal();
    x[1] = radius * std::sin(angle) + jitter_ * rng.normal();
    return static_cast<float>(arm);
  }

 private:
  float turns_;
  float jitter_ = 0.0f;
};

// A gridSize x gridSize board on [-1, 1]^2, label = (cell x + cell y) % 2. Sample i
// takes colour i % 2, then a uniformly drawn cell of that colour and a uniform point in
// it, so both colours are exactly balanced and, for even grids, the points are uniform
// over the square.
class Checkerboard final : public PerSampleDataset<Checkerboard> {
 public:
  explicit Checkerboard(const DatasetConfig& config)
      : PerSampleDataset(2, 2, TaskKind::kClassification, config.trainSize, config.testSize,
                         config.seed),
        grid_(config.gridSize),
        cell_(2.0f / static_cast<float>(config.gridSize)),
        jitter_(kCheckerJitterPerCell * config.noise * cell_) {}

  int64_t labelOf(int64_t index) const { return index % 2; }

  float sample(int64_t index, Rng& rng, float* x) const {
    const int64_t colour = labelOf(index);
    int64_t cx = 0;
    int64_t cy = 0;
    // Rejection: half the cells have each colour, so two draws are expected.
    do {
      cx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(grid_)));
      cy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(grid_)));
    } while ((cx + cy) % 2 != colour);
    x[0] = -1.0f + (static_cast<float>(cx) + rng.uniform()) * cell_ + jitter_ * rng.normal();
    x[1] = -1.0f + (static_cast<float>(cy) + rng.uniform()) * cell_ + jitter_ * rng.normal();
    return static_cast<float>(colour);
  }

 private:
  int64_t grid_;
  float cell_;
  float jitter_;
};

}  // namespace

std::unique_ptr<Dataset> makeTwoSpirals(const DatasetConfig& config) {
  requireNoise(config);
  requireConfig(config.classes >= 2, "classes", "two_spirals needs at least 2 arms (got ",
                config.classes, ")");
  requireConfig(std::isfinite(config.turns) && config.turns > 0.0f, "turns",
                "must be finite and > 0 (got ", config.turns, ")");
  return std::make_unique<TwoSpirals>(config);
}

std::unique_ptr<Dataset> makeCheckerboard(const DatasetConfig& config) {
  requireNoise(config);
  requireConfig(config.gridSize >= 2 && config.gridSize <= (int64_t{1} << 20), "gridSize",
                "must be between 2 and 2^20 cells per side (got ", config.gridSize, ")");
  return std::make_unique<Checkerboard>(config);
}

}  // namespace dtlab::core::datagen
