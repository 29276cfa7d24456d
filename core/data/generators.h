#pragma once

// Internal to core/data: the per-sample generator skeleton shared by the dataset kinds,
// and their factories. Users include core/data/dataset.h.

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/common/check.h"
#include "core/common/random.h"
#include "core/data/dataset.h"

namespace dtlab::core::datagen {

// First element of every deriveSeed path, so parameter draws, probe inputs and samples
// come from unrelated streams of the same seed.
inline constexpr uint64_t kParameterStream = 0x50415241'4D455445ull;
inline constexpr uint64_t kProbeStream = 0x50524F42'45535452ull;
inline constexpr uint64_t kSampleStream = 0x53414D50'4C455300ull;

inline uint64_t sampleKey(uint64_t seed, Split split, int64_t index) {
  return deriveSeed(seed, kSampleStream, static_cast<uint64_t>(split),
                    static_cast<uint64_t>(index));
}

// Approximately standard normal from a single 64-bit draw: the sum of four 16-bit
// uniforms (Irwin-Hall), rescaled to unit variance. Bounded at +-3.46; used for pixel
// noise, where a Box-Muller pair per pixel would dominate the cost of an image.
inline float fastNormal(Rng& rng) {
  const uint64_t r = rng.next();
  const uint32_t sum = static_cast<uint32_t>(r & 0xFFFF) +
                       static_cast<uint32_t>((r >> 16) & 0xFFFF) +
                       static_cast<uint32_t>((r >> 32) & 0xFFFF) + static_cast<uint32_t>(r >> 48);
  // Each term is uniform on {0..65535}: mean 32767.5, variance (65536^2 - 1) / 12.
  constexpr float kMean = 4.0f * 32767.5f;
  constexpr float kInvStd = 1.7320508f / 65536.0f;  // 1 / sqrt(4 * 65536^2 / 12)
  return (static_cast<float>(sum) - kMean) * kInvStd;
}

// Throws dtlab::Error "dataset <field>: <reason>" when ok is false.
template <typename... Args>
void requireConfig(bool ok, const char* field, const Args&... reason) {
  if (!ok) throw Error(std::string("dataset ") + field + ": " + ::dtlab::detail::concat(reason...));
}

// Every kind but the teacher reads DatasetConfig::noise as a standard deviation (in its
// own units).
inline void requireNoise(const DatasetConfig& config) {
  requireConfig(std::isfinite(config.noise) && config.noise >= 0.0f, "noise",
                "must be finite and >= 0 (got ", config.noise, ")");
}

// A dataset generated one sample at a time. Derived provides
//   float sample(int64_t index, Rng& rng, float* x) const
// (or, when it needs buffers, Scratch makeScratch() const and
//   float sample(int64_t index, Rng& rng, Scratch& scratch, float* x) const),
// writing one row of features and returning the label or target; rng is seeded from
// (seed, split, index) by the caller, which is what makes generation counter-based.
// Derived may provide int64_t labelOf(int64_t index) const when the class is a function
// of the index alone, so partitioners need not generate features.
template <typename Derived>
class PerSampleDataset : public Dataset {
 public:
  void generate(Split split, int64_t begin, int64_t count, float* x, float* y) const final {
    checkRange(split, begin, count);
    const auto indexOf = [begin](int64_t k) { return begin + k; };
    run(split, count, indexOf, x, y);
  }

  void generateIndices(Split split, std::span<const int64_t> indices, float* x,
                       float* y) const final {
    checkIndices(split, indices);
    const auto indexOf = [indices](int64_t k) { return indices[k]; };
    run(split, static_cast<int64_t>(indices.size()), indexOf, x, y);
  }

  int64_t label(Split split, int64_t index) const final {
    int64_t out = 0;
    labels(split, index, 1, &out);
    return out;
  }

  void labels(Split split, int64_t begin, int64_t count, int64_t* out) const final {
    if constexpr (requires(const Derived& d) { d.labelOf(int64_t{0}); }) {
      checkClassification();
      checkRange(split, begin, count);
      for (int64_t k = 0; k < count; ++k) out[k] = derived().labelOf(begin + k);
    } else {
      Dataset::labels(split, begin, count, out);
    }
  }

 protected:
  using Dataset::Dataset;

 private:
  const Derived& derived() const { return static_cast<const Derived&>(*this); }

  template <typename IndexOf>
  void run(Split split, int64_t count, IndexOf indexOf, float* x, float* y) const {
    const int64_t width = features();
    const uint64_t key = seed();
    if constexpr (requires(const Derived& d) { d.makeScratch(); }) {
      auto scratch = derived().makeScratch();
      for (int64_t k = 0; k < count; ++k) {
        const int64_t i = indexOf(k);
        Rng rng(sampleKey(key, split, i));
        y[k] = derived().sample(i, rng, scratch, x + k * width);
      }
    } else {
      for (int64_t k = 0; k < count; ++k) {
        const int64_t i = indexOf(k);
        Rng rng(sampleKey(key, split, i));
        y[k] = derived().sample(i, rng, x + k * width);
      }
    }
  }
};

std::unique_ptr<Dataset> makeGaussianBlobs(const DatasetConfig& config);
std::unique_ptr<Dataset> makeTwoSpirals(const DatasetConfig& config);
std::unique_ptr<Dataset> makeCheckerboard(const DatasetConfig& config);
std::unique_ptr<Dataset> makeTeacher(const DatasetConfig& config);
std::unique_ptr<Dataset> makeLinearRegression(const DatasetConfig& config);
std::unique_ptr<Dataset> makeShapes(const DatasetConfig& config);

}  // namespace dtlab::core::datagen
