// The two-dimensional kinds: interleaved spirals and a checkerboard. Both lie in
// roughly [-1, 1]^2, and both read their "noise" parameter as jitter relative to the
// spacing of their structure, so the default noise (1.0) leaves the classes separable
// enough for a small MLP to pass 95% test accuracy.

#include <algorithm>
#include <cmath>

#include "core/data/builtin_kinds.h"
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

constexpr int64_t kMaxSpiralArms = 8;
constexpr int64_t kMaxGridSize = 1024;

// `classes` Archimedean arms, arm c rotated by 2 pi c / classes. Sample i is on arm
// i % classes at a uniformly drawn position along it, plus isotropic Gaussian jitter.
std::unique_ptr<Dataset> makeTwoSpirals(const DatasetConfig& config) {
  const SettingsView parameters = datasetKindOf(config).view(config);
  const float noise = realParameter(parameters, "noise");
  const float turns = realParameter(parameters, "turns");
  requireConfig(config.classes >= 2, "classes", "two_spirals needs at least 2 arms (got ",
                config.classes, ")");
  requireConfig(turns > 0.0f, "turns", "must be > 0 (got ", turns, ")");
  SampleProgram program = programOf(SampleKind::kSpirals, config, 2, config.classes);
  program.turns = turns;
  // Radial gap between neighbouring arms; below one turn the arms do not wrap, so the gap
  // is taken as if they made one.
  const float gap = (1.0f - detail::kSpiralInnerRadius) /
                    (std::max(turns, 1.0f) * static_cast<float>(config.classes));
  program.jitter = kSpiralJitterPerGap * noise * gap;
  return std::make_unique<ProgramDataset>(TaskKind::kClassification, config.trainSize,
                                          config.testSize, program);
}

// A gridSize x gridSize board on [-1, 1]^2, label = (cell x + cell y) % 2. Sample i
// takes colour i % 2, then a uniformly drawn cell of that colour and a uniform point in
// it, so both colours are exactly balanced and, for even grids, the points are uniform
// over the square.
std::unique_ptr<Dataset> makeCheckerboard(const DatasetConfig& config) {
  const SettingsView parameters = datasetKindOf(config).view(config);
  const float noise = realParameter(parameters, "noise");
  const int64_t grid = parameters.integer("grid_size");
  requireConfig(grid >= 2 && grid <= (int64_t{1} << 20), "grid_size",
                "must be between 2 and 2^20 cells per side (got ", grid, ")");
  SampleProgram program = programOf(SampleKind::kCheckerboard, config, 2, 2);
  program.grid = grid;
  program.cell = 2.0f / static_cast<float>(grid);
  program.jitter = kCheckerJitterPerCell * noise * program.cell;
  return std::make_unique<ProgramDataset>(TaskKind::kClassification, config.trainSize,
                                          config.testSize, program);
}

}  // namespace

DatasetKindDescriptor twoSpiralsKind() {
  DatasetKindDescriptor d;
  d.name = "two_spirals";
  d.summary = "Interleaved spiral arms in the plane, one per class";
  d.classes = {.defaultValue = 2, .minimum = 2, .maximum = kMaxSpiralArms};
  d.features = {.defaultValue = 2, .fixed = true};
  const SettingSchema turns{.key = "turns",
                            .type = SettingType::kReal,
                            .label = "Turns",
                            .help = "Turns of each arm: more turns, closer arms, a harder task",
                            .defaultValue = 1.5,
                            .min = 0.0,
                            .max = 100.0,  // beyond this the arms are just noise
                            .minOpen = true,
                            .singlePrecision = true};
  d.parameters = {turns, noiseParameter("Jitter of each point, per unit of 15% of the gap between "
                                        "neighbouring arms")};
  d.make = makeTwoSpirals;
  return d;
}

DatasetKindDescriptor checkerboardKind() {
  DatasetKindDescriptor d;
  d.name = "checkerboard";
  d.summary = "Two classes in the black and white cells of a board on the plane";
  d.classes = {.defaultValue = 2, .minimum = 2, .maximum = 2};
  d.features = {.defaultValue = 2, .fixed = true};
  const SettingSchema grid{.key = "grid_size",
                           .label = "Grid size",
                           .help = "Cells per side of the board",
                           .defaultValue = int64_t{4},
                           .min = 2,
                           .max = kMaxGridSize};
  d.parameters = {grid, noiseParameter("Jitter of each point, per unit of 1% of a cell's width")};
  d.make = makeCheckerboard;
  return d;
}

}  // namespace dtlab::core::datagen
