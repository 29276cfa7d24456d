#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/nn/model.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// One entry of a model's layer list.
struct LayerSpec {
  enum class Kind { kDense, kActivation };
  Kind kind = Kind::kDense;
  int64_t units = 0;                          // dense: output width
  Activation activation = Activation::kReLU;  // activation: which

  static LayerSpec dense(int64_t units) { return {Kind::kDense, units, Activation::kReLU}; }
  static LayerSpec act(Activation a) { return {Kind::kActivation, 0, a}; }
};

// The layer list of ModelConfig's dense layers: Dense(h) + activation per hidden width, then
// Dense(outputs).
std::vector<LayerSpec> mlpLayers(const ModelConfig& model, int64_t outputs);

// Where one dense layer's parameters sit in the flat parameter buffer.
struct ParamRange {
  int64_t weight = 0;  // offset of the in x out weight matrix (row-major, Y = X W + b)
  int64_t bias = 0;    // offset of the out-long bias
  int64_t in = 0;
  int64_t out = 0;
  int64_t end() const { return bias + out; }
};

// A multi-layer perceptron: the `mlp` model kind.
//
// Tensors: per dense layer i, "dense<i>.weight" (in x out, Y = X W + b) then "dense<i>.bias".
// The layer list is compiled into stages: a dense layer absorbs the activation that follows
// it, so bias, activation and (in backward) the bias gradient cost one pass over the
// activations each way instead of three.
//
// Hand-offs: each dense layer's weights and bias as one range, last layer first, except the
// layer backward computes last: nothing of backward is left to hide its communication, so its
// weight gradient is computed and handed over in shrinking pieces (a half, a quarter, an
// eighth, an eighth of its rows, the bias with the last) when it is large, and what is still
// to send after backward (the tail) is small.
class Mlp final : public Model {
 public:
  // controlSlots: the size of the control block behind the gradients (see control()).
  Mlp(Backend& backend, int64_t inputs, const std::vector<LayerSpec>& layers,
      int64_t controlSlots = kControlSlots);
  ~Mlp() override;

  const std::vector<ParamRange>& denseLayers() const { return dense_; }
  // Forward, backward (no input gradient for the first layer).
  double trainingFlops(int64_t rows) const override;

  // He (normal, std sqrt(2/fan_in)) or Xavier (uniform, bound sqrt(6/(fan_in+fan_out)))
  // weights, zero biases; deterministic from the seed, layer by layer.
  void initialize(InitScheme scheme, uint64_t seed) override;

  void reserve(int64_t rows) override;
  const float* forward(const float* x, int64_t rows) override;
  void backward(const float* x, float* dOutput, int64_t rows,
                GradientListener* listener = nullptr) override;
  float* outputGradBuffer() override { return dOutput_; }

 private:
  struct Stage {
    int dense = -1;  // index into dense_, or -1 for a lone activation
    std::optional<Activation> act;
    int64_t in = 0;
    int64_t out = 0;
    float* z = nullptr;  // pre-activation, kept only where backward needs it (GELU)
    float* a = nullptr;  // stage output
  };

  void releaseActivations();

  std::vector<ParamRange> dense_;
  std::vector<Stage> stages_;
  int64_t capacityRows_ = 0;
  int64_t maxWidth_ = 0;
  float* gradA_ = nullptr;  // ping-pong buffers for activation gradients
  float* gradB_ = nullptr;
  float* dOutput_ = nullptr;
  float* zeroBias_ = nullptr;  // bias of lone activation stages
};

// The `mlp` model kind (registered first: the default).
struct ModelKindDescriptor;
ModelKindDescriptor mlpKind();

}  // namespace dtlab::core
