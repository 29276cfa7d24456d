#pragma once
// Layers a SequentialModel (core/nn/sequential.h) chains: each maps a batch of samples of its
// input dims to samples of its output dims on a Backend, with its parameters (if any) as named
// tensors in a slice of the model's flat buffer. Model kinds build their layer lists from
// these; a layer knows its cost and its parameters without a backend, so a kind's descriptor
// counts them from the same list it trains.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/common/random.h"
#include "core/nn/model.h"

namespace dtlab::core {

class Layer {
 public:
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }  // "conv0"
  // A sample's shape on the way in and out, outermost first ({channels, height, width}).
  const std::vector<int64_t>& inputDims() const { return inputDims_; }
  const std::vector<int64_t>& outputDims() const { return outputDims_; }
  int64_t inputSize() const { return inputSize_; }    // floats per sample
  int64_t outputSize() const { return outputSize_; }  // floats per sample
  // The layer's tensors ("conv0.weight", "conv0.bias"), offsets from its first parameter.
  const std::vector<ParameterTensor>& tensors() const { return tensors_; }
  int64_t parameterCount() const { return parameterCount_; }

  // Floats per sample the layer keeps from forward for backward: its output, and what else
  // it holds (GELU's pre-activation).
  virtual int64_t keptFloats() const { return outputSize(); }
  // Multiply-adds per sample of the forward pass, and of the backward pass with or without
  // the input gradient.
  virtual int64_t forwardMacs() const = 0;
  virtual int64_t backwardMacs(bool inputGradient) const;

  // Initial values of the layer's parameters (host memory, parameterCount() floats, zeroed).
  virtual void initialize(float* params, InitScheme scheme, Rng& rng) const;
  // Throws Error naming the backend when it lacks this layer's kernels (before any run).
  virtual void checkBackend(const Backend& backend) const;
  // Buffers of the layer's own for batches of up to `rows` samples, beyond its output (which
  // the model keeps); released by release().
  virtual void reserve(Backend& backend, int64_t rows);
  virtual void release(Backend& backend) noexcept;

  // y = layer(x), rows samples; params is the layer's slice of the model's buffer.
  virtual void forward(Backend& backend, const float* params, const float* x, float* y,
                       int64_t rows) = 0;
  // The layer's parameter gradients into `grads` (its slice; overwritten) and, when dx is not
  // null, the input gradient into dx, given x and y of the last forward and the output
  // gradient dy (which the layer may overwrite).
  virtual void backward(Backend& backend, const float* params, const float* x, const float* y,
                        float* dy, float* dx, float* grads, int64_t rows) = 0;

 protected:
  Layer(std::string name, std::vector<int64_t> inputDims, std::vector<int64_t> outputDims);
  // Appends the tensor "<name>.<suffix>" after the ones added before; returns its offset.
  int64_t addTensor(const std::string& suffix, std::vector<int64_t> shape);

 private:
  std::string name_;
  std::vector<int64_t> inputDims_;
  std::vector<int64_t> outputDims_;
  int64_t inputSize_ = 0;
  int64_t outputSize_ = 0;
  std::vector<ParameterTensor> tensors_;
  int64_t parameterCount_ = 0;
};

// y = act(x W + b) over the flattened sample: W is in x out ("weight"), b out ("bias").
class DenseLayer final : public Layer {
 public:
  DenseLayer(std::string name, int64_t inputs, int64_t outputs, std::optional<Activation> act);
  int64_t forwardMacs() const override { return in_ * out_; }
  int64_t keptFloats() const override;
  // He or Xavier over fan-in in, fan-out out; zero bias.
  void initialize(float* params, InitScheme scheme, Rng& rng) const override;
  void reserve(Backend& backend, int64_t rows) override;
  void release(Backend& backend) noexcept override;
  void forward(Backend& backend, const float* params, const float* x, float* y,
               int64_t rows) override;
  void backward(Backend& backend, const float* params, const float* x, const float* y, float* dy,
                float* dx, float* grads, int64_t rows) override;

 private:
  int64_t in_;
  int64_t out_;
  std::optional<Activation> act_;
  float* z_ = nullptr;  // the pre-activation, kept for GELU's backward
};

// y = act(conv(x, W) + b) over {channels, height, width} images: W is out x in x k x k
// ("weight"), b out ("bias"); stride and zero padding as given. With `pool`, then a 2 x 2
// pooling (stride 2) of that, as one layer: the full-size activation stays inside it, and
// backward routes the gradient through the pooling and a ReLU or tanh in one pass.
class Conv2dLayer final : public Layer {
 public:
  Conv2dLayer(std::string name, const std::vector<int64_t>& inputDims, int64_t outChannels,
              int64_t kernel, int64_t stride, int64_t padding, std::optional<Activation> act,
              std::optional<PoolKind> pool = std::nullopt);
  int64_t forwardMacs() const override;
  int64_t keptFloats() const override;
  void checkBackend(const Backend& backend) const override;
  // He or Xavier over fan-in in x k x k, fan-out out x k x k; zero bias.
  void initialize(float* params, InitScheme scheme, Rng& rng) const override;
  void reserve(Backend& backend, int64_t rows) override;
  void release(Backend& backend) noexcept override;
  void forward(Backend& backend, const float* params, const float* x, float* y,
               int64_t rows) override;
  void backward(Backend& backend, const float* params, const float* x, const float* y, float* dy,
                float* dx, float* grads, int64_t rows) override;

 private:
  Conv2dShape shape(int64_t rows) const;
  Pool2dShape poolShape(int64_t rows) const;
  int64_t convSize() const;  // floats per sample of the convolution's output
  Conv2dShape shape_;        // batch 0
  std::optional<Activation> act_;
  std::optional<PoolKind> pool_;
  float* z_ = nullptr;         // the pre-activation, kept for GELU's backward
  float* a_ = nullptr;         // with pooling: the activation, the pooling's input
  float* dA_ = nullptr;        // with pooling: the gradient of a_ (then of the pre-activation)
  float* zeroBias_ = nullptr;  // the activation pass's bias: none
};

// Max or average pooling of {channels, height, width} images, per channel.
class Pool2dLayer final : public Layer {
 public:
  Pool2dLayer(std::string name, const std::vector<int64_t>& inputDims, PoolKind kind,
              int64_t kernel, int64_t stride);
  int64_t forwardMacs() const override { return 0; }
  void checkBackend(const Backend& backend) const override;
  void forward(Backend& backend, const float* params, const float* x, float* y,
               int64_t rows) override;
  void backward(Backend& backend, const float* params, const float* x, const float* y, float* dy,
                float* dx, float* grads, int64_t rows) override;

 private:
  Pool2dShape shape(int64_t rows) const;
  Pool2dShape shape_;  // batch 0
};

}  // namespace dtlab::core
