#pragma once
// A model kind that exists only in the test binaries that include this header: registered with
// core::registerModelKind, it must be accepted by the spec's parser and writer and trained by
// every strategy with no change anywhere else (adding a model kind is its own file plus one
// registry entry).
//
// "test_linear": softmax (or linear) regression, outputs = inputs x W + b, written against the
// Model interface alone rather than through Mlp. Its tensors are "linear.weight" and
// "linear.bias", which backward hands over bias first, then the weights in two halves of their
// rows. Its one setting, "init_gain", scales the Xavier or He weights; it ignores the dense
// layers (hidden must be empty).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/common/random.h"
#include "core/nn/model_kinds.h"
#include "core/spec/settings.h"

namespace dtlab::core::test {

inline constexpr const char* kDummyModel = "test_linear";

class LinearModel final : public Model {
 public:
  LinearModel(Backend& backend, int64_t inputs, int64_t outputs, double gain, int64_t controlSlots)
      : Model(backend, inputs, controlSlots), gain_(gain) {
    const int64_t weights = inputs * outputs;
    const int64_t half = (inputs / 2) * outputs;  // rows [0, inputs/2), then the rest
    std::vector<GradientRange> handOffs = {{weights, weights + outputs}};
    if (half > 0) handOffs.push_back({0, half});
    handOffs.push_back({half, weights});
    allocate({{"linear.weight", 0, {inputs, outputs}}, {"linear.bias", weights, {outputs}}},
             std::move(handOffs), outputs);
  }
  ~LinearModel() override { releaseActivations(); }

  double trainingFlops(int64_t rows) const override {
    return 4.0 * static_cast<double>(rows * inputs() * outputs());
  }

  void initialize(InitScheme scheme, uint64_t seed) override {
    std::vector<float> host(static_cast<std::size_t>(parameterCount()), 0.0f);
    Rng rng(seed);
    const float fanIn = static_cast<float>(inputs());
    const float fanOut = static_cast<float>(outputs());
    for (int64_t i = 0; i < inputs() * outputs(); ++i) {
      const double w = scheme == InitScheme::kHe
                           ? std::sqrt(2.0f / fanIn) * rng.normal()
                           : rng.uniform(-1.0, 1.0) * std::sqrt(6.0f / (fanIn + fanOut));
      host[static_cast<std::size_t>(i)] = static_cast<float>(gain_ * w);
    }
    setParams(host);
  }

  void reserve(int64_t rows) override {
    if (rows <= capacity_) return;
    releaseActivations();
    out_ = backend_.allocate(rows * outputs());
    dOut_ = backend_.allocate(rows * outputs());
    capacity_ = rows;
  }
  const float* forward(const float* x, int64_t rows) override {
    reserve(rows);
    backend_.gemm(false, false, rows, outputs(), inputs(), 1.0f, x, inputs(), params(), outputs(),
                  0.0f, out_, outputs());
    backend_.biasActivation(out_, params() + inputs() * outputs(), rows, outputs(), std::nullopt,
                            out_, nullptr);
    return out_;
  }
  void backward(const float* x, float* dOutput, int64_t rows, GradientListener* listener) override {
    const int64_t weights = inputs() * outputs();
    for (const GradientRange& h : handOffs()) {
      if (h.begin == weights) {  // the bias: the column sums of dOutput
        backend_.activationBackward(dOutput, nullptr, nullptr, rows, outputs(), std::nullopt,
                                    dOutput, grads() + weights);
      } else {  // rows [from, to) of dW = x^T dOutput
        const int64_t from = h.begin / outputs();
        const int64_t to = h.end / outputs();
        backend_.gemm(true, false, to - from, outputs(), rows, 1.0f, x + from, inputs(), dOutput,
                      outputs(), 0.0f, grads() + h.begin, outputs());
      }
      if (listener != nullptr) listener->onGradientsReady(h.begin, h.end);
    }
  }
  float* outputGradBuffer() override { return dOut_; }

 private:
  void releaseActivations() {
    backend_.release(out_);
    backend_.release(dOut_);
    out_ = dOut_ = nullptr;
    capacity_ = 0;
  }

  double gain_;
  int64_t capacity_ = 0;
  float* out_ = nullptr;
  float* dOut_ = nullptr;
};

inline ModelKindDescriptor dummyModelKind() {
  ModelKindDescriptor d;
  d.name = kDummyModel;
  d.summary = "softmax regression (a test's own kind)";
  d.parameters = {SettingSchema{.key = "init_gain",
                                .type = SettingType::kReal,
                                .label = "Init gain",
                                .help = "multiplies the initial weights",
                                .defaultValue = 1.0,
                                .min = 0.0,
                                .max = 10.0,
                                .minOpen = true}};
  d.parameterCount = [](const ModelConfig&, const SampleShape& samples) {
    return (samples.features + 1) * samples.outputs;
  };
  d.forwardMacs = [](const ModelConfig&, const SampleShape& samples) {
    return samples.features * samples.outputs;
  };
  d.shape = [](const ModelConfig&, const SampleShape& samples) {
    return "linear " + std::to_string(samples.features) + "-" + std::to_string(samples.outputs);
  };
  d.check = [](const ModelConfig& config, const SampleShape&, const std::string& path) {
    if (!config.hidden.empty())
      throw SpecError(path + ".hidden", "test_linear has no hidden layers; give []");
  };
  d.make = [](Backend& backend, const ModelConfig& config, const SampleShape& samples,
              int64_t controlSlots) -> std::unique_ptr<Model> {
    const double gain = findModelKind(kDummyModel)->view(config).real("init_gain");
    return std::make_unique<LinearModel>(backend, samples.features, samples.outputs, gain,
                                         controlSlots);
  };
  return d;
}

// Registers it once per process.
inline void registerDummyModelKind() {
  if (findModelKind(kDummyModel) == nullptr) registerModelKind(dummyModelKind());
}

}  // namespace dtlab::core::test
