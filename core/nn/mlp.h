#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/common/gradient_range.h"
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

// The layer list of ModelConfig: Dense(h) + activation per hidden width, then Dense(outputs).
std::vector<LayerSpec> mlpLayers(const ModelConfig& model, int64_t outputs);

// Where one dense layer's parameters sit in the flat parameter buffer.
struct ParamRange {
  int64_t weight = 0;  // offset of the in x out weight matrix (row-major, Y = X W + b)
  int64_t bias = 0;    // offset of the out-long bias
  int64_t in = 0;
  int64_t out = 0;
  int64_t end() const { return bias + out; }
};

// Told by Mlp::backward each time a dense layer's gradients are final, so that a
// strategy can start reducing them while backward goes on (last layer first).
class GradientListener {
 public:
  virtual ~GradientListener() = default;
  virtual void onGradientsReady(int64_t begin, int64_t end) = 0;
};

// A multi-layer perceptron executed on a Backend.
//
// All parameters live in one flat buffer and all gradients in another, laid out
// layer by layer (weight, then bias). Optimizers run as one fused pass over that
// buffer, collectives reduce contiguous slices of it as buckets, and a checksum of
// the replica is a hash of one buffer.
//
// The layer list is compiled into stages: a dense layer absorbs the activation
// that follows it, so bias, activation and (in backward) the bias gradient cost
// one pass over the activations each way instead of three.
//
// Buffers are allocated for the largest batch seen (reserve() sets it up front);
// forward and backward allocate nothing after that.
class Mlp {
 public:
  // controlSlots: the size of the control block behind the gradients (see control()).
  Mlp(Backend& backend, int64_t inputs, const std::vector<LayerSpec>& layers,
      int64_t controlSlots = kControlSlots);
  ~Mlp();
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  int64_t inputs() const { return inputs_; }
  int64_t outputs() const { return outputs_; }
  int64_t parameterCount() const { return paramCount_; }
  const std::vector<ParamRange>& denseLayers() const { return dense_; }
  // The ranges of the gradient buffer backward hands to its listener, in the order it hands
  // them over (they tile the parameters). Each dense layer's weights and bias go as one range,
  // last layer first, except the layer backward computes last: nothing of backward is left
  // to hide its communication, so its weight gradient is computed and handed over in
  // shrinking pieces (a half, a quarter, an eighth, an eighth of its rows, the bias with the
  // last) when it is large, and what is still to send after backward (the tail) is small.
  const std::vector<GradientRange>& handOffs() const { return handOffs_; }
  // Multiply-adds of one forward pass per sample (backward costs about twice that).
  int64_t forwardFlopsPerSample() const;
  // Flops of one training step on `rows` samples: forward, backward (no input gradient
  // for the first layer) and nothing for the optimizer.
  double trainingFlops(int64_t rows) const;

  // Backend memory.
  float* params() { return params_; }
  const float* params() const { return params_; }
  float* grads() { return grads_; }
  const float* grads() const { return grads_; }
  // A few floats right after the gradients, in the same buffer: a strategy puts the
  // values its ranks must agree on (stop votes) or share (step times) there, so they travel
  // with the gradient all-reduce instead of costing a collective of their own.
  static constexpr int64_t kControlSlots = 16;  // the default size
  float* control() { return grads_ + paramCount_; }
  int64_t controlSlots() const { return controlSlots_; }

  // He (normal, std sqrt(2/fan_in)) or Xavier (uniform, bound sqrt(6/(fan_in+fan_out)))
  // weights, zero biases; deterministic from the seed, layer by layer.
  void initialize(InitScheme scheme, uint64_t seed);
  void setParams(const std::vector<float>& host);
  std::vector<float> paramsToHost() const;
  void paramsToHost(std::vector<float>& into) const;  // into's memory, resized to fit
  std::vector<float> gradsToHost() const;

  void reserve(int64_t rows);
  // x: rows x inputs in backend memory. Returns the rows x outputs result (valid until
  // the next forward).
  const float* forward(const float* x, int64_t rows);
  // Gradients of the parameters (overwritten, not accumulated) given the gradient
  // of the loss with respect to the last forward's output. `dOutput` may be
  // overwritten. x must be the input of the last forward.
  void backward(const float* x, float* dOutput, int64_t rows, GradientListener* listener = nullptr);
  // Scratch of rows x outputs in backend memory for the loss gradient.
  float* outputGradBuffer() { return dOutput_; }

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

  Backend& backend_;
  int64_t inputs_ = 0;
  int64_t outputs_ = 0;
  int64_t paramCount_ = 0;
  int64_t controlSlots_ = kControlSlots;
  std::vector<ParamRange> dense_;
  std::vector<GradientRange> handOffs_;
  std::vector<Stage> stages_;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  int64_t capacityRows_ = 0;
  int64_t maxWidth_ = 0;
  float* gradA_ = nullptr;  // ping-pong buffers for activation gradients
  float* gradB_ = nullptr;
  float* dOutput_ = nullptr;
  float* zeroBias_ = nullptr;  // bias of lone activation stages
};

// FNV-1a over the bytes of a parameter vector, as 16 hex digits: replicas that
// are bitwise identical have equal checksums.
std::string paramChecksum(const std::vector<float>& params);

}  // namespace dtlab::core
