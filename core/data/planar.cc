// The two-dimensional kinds: interleaved spirals and a checkerboard. Both lie in
// roughly [-1, 1]^2, and both read DatasetConfig::noise as jitter relative to the
// spacing of their structure, so the default noise (1.0) leaves the classes separable
// enough for a small MLP to pass 95% test accuracy.

#include <algorithm>
#include <cmath>

#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

// Spirals: jitter std per unit of noise, as a fraction of the gap between neighbouring
// arms. 0.15 puts the midpoint between arms at 3.3 std, so default jitter mislabels well
// under 1% of points.
constexpr float kSpiralJitterPerGap = 0.15f;
// Checkerboard jitter std per unit of noise, as a fraction of a cell's width. Jitter
// moves a point across a cell border without changing its label, so a fraction of
// about 1.6 * this of all points (1.6% at the default noise) carry the other colour.
constexpr float kCheckerJitterPerCell = 0.01f;

}  // namespace

// `classes` Archimedean arms, arm c rotated by 2 pi c / classes. Sample i is on arm
// i % classes at a uniformly drawn position along it, plus isotropic Gaussian jitter.
std::unique_ptr<Dataset> makeTwoSpirals(const DatasetConfig& config) {
  requireNoise(config);
  requireConfig(config.classes >= 2, "classes", "two_spirals needs at least 2 arms (got ",
                config.classes, ")");
  requireConfig(std::isfinite(config.turns) && config.turns > 0.0f, "turns",
                "must be finite and > 0 (got ", config.turns, ")");
  SampleProgram program = programOf(SampleKind::kSpirals, config, 2, config.classes);
  program.turns = config.turns;
  // Radial gap between neighbouring arms; below one turn the arms do not wrap, so the gap
  // is taken as if they made one.
  const float gap = (1.0f - detail::kSpiralInnerRadius) /
                    (std::max(config.turns, 1.0f) * static_cast<float>(config.classes));
  program.jitter = kSpiralJitterPerGap * config.noise * gap;
  return std::make_unique<ProgramDataset>(TaskKind::kClassification, config.trainSize,
                                          config.testSize, program);
}

// A gridSize x gridSize board on [-1, 1]^2, label = (cell x + cell y) % 2. Sample i
// takes colour i % 2, then a uniformly drawn cell of that colour and a uniform point in
// it, so both colours are exactly balanced and, for even grids, the points are uniform
// over the square.
std::unique_ptr<Dataset> makeCheckerboard(const DatasetConfig& config) {
  requireNoise(config);
  requireConfig(config.gridSize >= 2 && config.gridSize <= (int64_t{1} << 20), "gridSize",
                "must be between 2 and 2^20 cells per side (got ", config.gridSize, ")");
  SampleProgram program = programOf(SampleKind::kCheckerboard, config, 2, 2);
  program.grid = config.gridSize;
  program.cell = 2.0f / static_cast<float>(config.gridSize);
  program.jitter = kCheckerJitterPerCell * config.noise * program.cell;
  return std::make_unique<ProgramDataset>(TaskKind::kClassification, config.trainSize,
                                          config.testSize, program);
}

}  // namespace dtlab::core::datagen
