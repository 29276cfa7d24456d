#pragma once
// A dataset kind that exists only in the test binaries that include this header: registered
// with core::registerDatasetKind, it must be accepted by the spec's parser and writer, built by
// makeDataset, trained on by the shared training loop, listed by `bench data` and edited and
// previewed by the GUI's dataset page with no change anywhere else (issue 18: adding a dataset
// kind is its generator plus one registry entry).
//
// "test_rings": `classes` concentric rings in the plane, sample i on ring i % classes at a
// uniform angle, its radius jittered. "layout": "rings" spaces the rings by `gap`; "bands"
// makes them horizontal bands instead, `tilt` (which applies only to bands) slanting them. It
// has no device program: a GPU worker would generate its rows on the host.
#include <cmath>
#include <memory>
#include <string>

#include "core/common/random.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"

namespace dtlab::core::test {

inline constexpr const char* kDummyKind = "test_rings";

class RingsDataset final : public Dataset {
 public:
  RingsDataset(const DatasetConfig& config, double gap, double jitter, bool bands, double tilt)
      : Dataset(2, config.classes, TaskKind::kClassification, config.trainSize, config.testSize,
                config.seed),
        gap_(gap),
        jitter_(jitter),
        bands_(bands),
        tilt_(tilt) {}

  void generate(Split split, int64_t begin, int64_t count, float* x, float* y) const override {
    checkRange(split, begin, count);
    for (int64_t k = 0; k < count; ++k) {
      const int64_t index = begin + k;
      const int64_t ring = index % outputs();
      Rng rng(deriveSeed(seed(), static_cast<uint64_t>(split), static_cast<uint64_t>(index)));
      const double t = 2.0 * 3.141592653589793 * rng.uniform();
      const double level = gap_ * static_cast<double>(ring + 1) + jitter_ * rng.normal();
      if (bands_) {
        x[2 * k] = static_cast<float>(t - 3.141592653589793);
        x[2 * k + 1] = static_cast<float>(level + tilt_ * (t - 3.141592653589793));
      } else {
        x[2 * k] = static_cast<float>(level * std::cos(t));
        x[2 * k + 1] = static_cast<float>(level * std::sin(t));
      }
      y[k] = static_cast<float>(ring);
    }
  }

 private:
  double gap_;
  double jitter_;
  bool bands_;
  double tilt_;
};

inline DatasetKindDescriptor dummyDatasetKind() {
  DatasetKindDescriptor d;
  d.name = kDummyKind;
  d.summary = "Concentric rings (or bands), one per class: a kind defined by a test";
  d.classes = {.defaultValue = 3, .minimum = 2, .maximum = 6};
  d.features = {.defaultValue = 2, .fixed = true};
  const SettingSchema gap{.key = "gap",
                          .type = SettingType::kReal,
                          .label = "Ring gap",
                          .help = "Distance between neighbouring rings",
                          .defaultValue = 1.0,
                          .min = 0.0,
                          .max = 10.0,
                          .minOpen = true};
  const SettingSchema jitter{.key = "jitter",
                             .type = SettingType::kReal,
                             .label = "Jitter",
                             .help = "Standard deviation of a point's radius",
                             .defaultValue = 0.05,
                             .min = 0.0,
                             .max = 1.0};
  const SettingSchema layout{.key = "layout",
                             .type = SettingType::kChoice,
                             .label = "Layout",
                             .help = "Rings around the origin, or horizontal bands",
                             .defaultValue = std::string("rings"),
                             .choices = {"rings", "bands"}};
  const SettingSchema tilt{.key = "tilt",
                           .type = SettingType::kReal,
                           .label = "Tilt",
                           .help = "Slope of the bands",
                           .defaultValue = 0.0,
                           .min = -1.0,
                           .max = 1.0,
                           .when = SettingCondition{"layout", {"bands"}}};
  d.parameters = {gap, jitter, layout, tilt};
  // A rule the schema cannot say: the rings must stay apart at this jitter.
  d.check = [](const DatasetConfig& c, const std::string& path) {
    const SettingsView v = datasetKindOf(c).view(c);
    if (v.real("jitter") * 4.0 > v.real("gap"))
      throw SpecError(path + ".jitter", "must be at most a quarter of gap, or the rings overlap");
  };
  d.make = [](const DatasetConfig& c) -> std::unique_ptr<Dataset> {
    const SettingsView v = datasetKindOf(c).view(c);
    const bool bands = v.choice("layout") == "bands";
    return std::make_unique<RingsDataset>(c, v.real("gap"), v.real("jitter"), bands,
                                          bands ? v.real("tilt") : 0.0);
  };
  return d;
}

// Registers the kind once per process.
inline void registerDummyDatasetKind() {
  if (findDatasetKind(kDummyKind) == nullptr) registerDatasetKind(dummyDatasetKind());
}

}  // namespace dtlab::core::test
