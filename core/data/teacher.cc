#include <algorithm>
#include <cmath>
#include <vector>

#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

// Inputs the constructor pushes through the teacher to balance its classes: 32768, or
// fewer for thousands of classes so that their logits stay under 64 MiB.
constexpr int64_t kMaxProbeInputs = 32768;
constexpr int64_t kMinProbeInputs = 256;
constexpr int64_t kMaxProbeLogits = int64_t{1} << 24;
// Rounds of output-bias correction; each moves every class's bias by a decaying step
// towards its share of 1 / classes.
constexpr int kBalanceRounds = 60;
// Largest teacher accepted, in parameters (a 1 GiB float32 network).
constexpr double kMaxTeacherParameters = double{1 << 28};

// Labels N(0, I) inputs by the argmax of a fixed random MLP: features -> teacherDepth
// hidden tanh layers of teacherWidth -> classes. Weights are N(0, 1/fan_in), which
// keeps every layer's pre-activations near unit scale so tanh bends the decision
// boundaries without saturating into a piecewise-constant function.
//
// A random network's argmax favours a few classes, so the output biases are tuned on
// probe inputs (their own stream of the seed) until every class wins about 1 / classes
// of them; the classes of generated samples are then balanced to within sampling error
// of the 32768 probes, under 2% relative for 10 classes.
class Teacher final : public PerSampleDataset<Teacher> {
 public:
  struct Scratch {
    std::vector<float> a;
    std::vector<float> b;
  };

  explicit Teacher(const DatasetConfig& config)
      : PerSampleDataset(config.features, config.classes, TaskKind::kClassification,
                         config.trainSize, config.testSize, config.seed),
        labelNoise_(config.labelNoise) {
    Rng rng(deriveSeed(config.seed, kParameterStream));
    int64_t in = config.features;
    for (int64_t l = 0; l <= config.teacherDepth; ++l) {
      const int64_t out = l == config.teacherDepth ? config.classes : config.teacherWidth;
      Layer layer{in, out, std::vector<float>(static_cast<std::size_t>(in * out)),
                  std::vector<float>(static_cast<std::size_t>(out))};
      const float scale = 1.0f / std::sqrt(static_cast<float>(in));
      for (float& w : layer.weights) w = scale * rng.normal();
      // Small hidden biases move the boundaries off the origin; output biases are set
      // by balanceClasses().
      if (l < config.teacherDepth) {
        for (float& b : layer.bias) b = 0.1f * rng.normal();
      }
      maxWidth_ = std::max(maxWidth_, out);
      layers_.push_back(std::move(layer));
      in = out;
    }
    balanceClasses();
  }

  Scratch makeScratch() const {
    return {std::vector<float>(static_cast<std::size_t>(maxWidth_)),
            std::vector<float>(static_cast<std::size_t>(maxWidth_))};
  }

  float sample(int64_t, Rng& rng, Scratch& scratch, float* x) const {
    for (int64_t j = 0; j < features(); ++j) x[j] = rng.normal();
    const float* logits = forward(x, scratch);
    int64_t label = std::max_element(logits, logits + outputs()) - logits;
    // Both draws are always made, so whether a sample is relabelled depends only on its
    // own stream: raising labelNoise relabels a superset of the samples.
    const float u = rng.uniform();
    const auto random = static_cast<int64_t>(rng.below(static_cast<uint64_t>(outputs())));
    if (u < labelNoise_) label = random;
    return static_cast<float>(label);
  }

 private:
  struct Layer {
    int64_t in;
    int64_t out;
    std::vector<float> weights;  // in x out, row-major
    std::vector<float> bias;
  };

  // Returns the logits, held in one of the scratch buffers.
  const float* forward(const float* x, Scratch& scratch) const {
    const float* in = x;
    float* out = scratch.a.data();
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Layer& layer = layers_[l];
      std::copy(layer.bias.begin(), layer.bias.end(), out);
      for (int64_t i = 0; i < layer.in; ++i) {
        const float v = in[i];
        const float* w = layer.weights.data() + i * layer.out;
        for (int64_t o = 0; o < layer.out; ++o) out[o] += v * w[o];
      }
      if (l + 1 < layers_.size()) {
        for (int64_t o = 0; o < layer.out; ++o) out[o] = std::tanh(out[o]);
      }
      in = out;
      out = out == scratch.a.data() ? scratch.b.data() : scratch.a.data();
    }
    return in;
  }

  void balanceClasses() {
    const int64_t classes = outputs();
    const int64_t probes =
        std::max(kMinProbeInputs, std::min(kMaxProbeInputs, kMaxProbeLogits / classes));
    std::vector<float> logits(static_cast<std::size_t>(probes * classes));
    std::vector<float> x(static_cast<std::size_t>(features()));
    Scratch scratch = makeScratch();
    for (int64_t p = 0; p < probes; ++p) {
      Rng rng(deriveSeed(seed(), kProbeStream, static_cast<uint64_t>(p)));
      for (float& v : x) v = rng.normal();
      const float* out = forward(x.data(), scratch);
      std::copy(out, out + classes, logits.begin() + p * classes);
    }
    // Centre each class's logit first: that alone removes most of the imbalance.
    std::vector<double> bias(static_cast<std::size_t>(classes), 0.0);
    double spread = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      double sum = 0.0;
      double sq = 0.0;
      for (int64_t p = 0; p < probes; ++p) {
        const double v = logits[p * classes + c];
        sum += v;
        sq += v * v;
      }
      const double mean = sum / probes;
      bias[c] = -mean;
      spread += sq / static_cast<double>(probes) - mean * mean;
    }
    spread = std::sqrt(std::max(spread / static_cast<double>(classes), 1e-12));
    // Then nudge each bias by the log ratio of its target share to its current share,
    // in units of the logits' spread, with a step that decays so the shares settle.
    const double target = static_cast<double>(probes) / static_cast<double>(classes);
    std::vector<int64_t> wins(static_cast<std::size_t>(classes));
    for (int round = 0; round < kBalanceRounds; ++round) {
      std::fill(wins.begin(), wins.end(), 0);
      for (int64_t p = 0; p < probes; ++p) {
        const float* row = logits.data() + p * classes;
        int64_t best = 0;
        double bestValue = row[0] + bias[0];
        for (int64_t c = 1; c < classes; ++c) {
          const double v = row[c] + bias[c];
          if (v > bestValue) {
            bestValue = v;
            best = c;
          }
        }
        ++wins[best];
      }
      const double step = 0.3 * spread / (1.0 + round / 10.0);
      for (int64_t c = 0; c < classes; ++c) {
        bias[c] += step * std::log(target / (static_cast<double>(wins[c]) + 0.5));
      }
    }
    Layer& last = layers_.back();
    for (int64_t c = 0; c < classes; ++c) last.bias[c] = static_cast<float>(bias[c]);
  }

  float labelNoise_;
  std::vector<Layer> layers_;
  int64_t maxWidth_ = 1;
};

}  // namespace

std::unique_ptr<Dataset> makeTeacher(const DatasetConfig& config) {
  requireConfig(config.classes >= 2, "classes", "teacher needs at least 2 (got ", config.classes,
                ")");
  requireConfig(config.features >= 1, "features", "teacher needs at least 1 (got ", config.features,
                ")");
  requireConfig(config.teacherWidth >= 1, "teacherWidth", "must be at least 1 (got ",
                config.teacherWidth, ")");
  requireConfig(config.teacherDepth >= 0, "teacherDepth", "must not be negative (got ",
                config.teacherDepth, ")");
  requireConfig(
      std::isfinite(config.labelNoise) && config.labelNoise >= 0.0f && config.labelNoise <= 1.0f,
      "labelNoise", "must be a probability in [0, 1] (got ", config.labelNoise, ")");
  const double width = static_cast<double>(config.teacherWidth);
  const double parameters =
      config.teacherDepth == 0
          ? static_cast<double>(config.features) * static_cast<double>(config.classes)
          : static_cast<double>(config.features) * width +
                static_cast<double>(config.teacherDepth - 1) * width * width +
                width * static_cast<double>(config.classes);
  requireConfig(parameters <= kMaxTeacherParameters, "teacherWidth", "the teacher would have ",
                parameters, " parameters; the limit is ", kMaxTeacherParameters);
  return std::make_unique<Teacher>(config);
}

}  // namespace dtlab::core::datagen
