// Procedural 28 x 28 grayscale images of ten shapes, a stand-in for MNIST that needs
// no download and no disk.
//
// The "noise" parameter is read as pixel noise of std 0.1 * noise: its default of 1.0
// is sized for blobs, and unit-std noise would drown shapes drawn with
// intensities in [0.4, 1]. The noise is approximately Gaussian (see fastNormal) and
// is not clipped, so pixel values spread a little outside [0, 1].

#include "core/data/builtin_kinds.h"
#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

constexpr float kNoisePerUnit = 0.1f;

// Classes: 0 filled circle, 1 ring, 2 filled square, 3 square outline, 4 filled
// triangle, 5 plus, 6 X, 7 horizontal bar, 8 vertical bar, 9 filled diamond. Sample i
// shows class i % 10 at a random position, size, stroke, small rotation and intensity
// (detail::shapes in sample_program.h draws them).
std::unique_ptr<Dataset> makeShapes(const DatasetConfig& config) {
  const float noise = realParameter(datasetKindOf(config).view(config), "noise");
  SampleProgram program =
      programOf(SampleKind::kShapes, config, detail::kPixels, detail::kShapeClasses);
  program.noise = kNoisePerUnit * noise;
  return std::make_unique<ProgramDataset>(TaskKind::kClassification, config.trainSize,
                                          config.testSize, program);
}

}  // namespace

DatasetKindDescriptor shapesKind() {
  DatasetKindDescriptor d;
  d.name = "shapes";
  d.summary = "28 x 28 grayscale images of ten shapes, a stand-in for MNIST";
  d.classes = {.defaultValue = detail::kShapeClasses,
               .minimum = detail::kShapeClasses,
               .maximum = detail::kShapeClasses};
  d.features = {.defaultValue = detail::kPixels, .fixed = true};
  d.parameters = {noiseParameter("Pixel noise, per unit of 0.1 (pixel intensities are in [0, 1])")};
  d.preview = DatasetPreviewKind::kImages;
  d.layout = [](const DatasetConfig&) {
    return std::vector<int64_t>{1, detail::kSide, detail::kSide};
  };
  d.make = makeShapes;
  return d;
}

}  // namespace dtlab::core::datagen
