#pragma once
// A model that is a chain of layers (core/nn/layers.h), each feeding the next: what the kinds
// beyond the MLP are built from.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/nn/layers.h"
#include "core/nn/model.h"

namespace dtlab::core {

// Tensors: each layer's, in layer order. Hand-offs: each layer's parameters as one range, last
// layer first (the order backward finishes them). Activations: every layer's output is kept
// for backward; the input gradients ping-pong between two buffers of the widest layer's size.
class SequentialModel final : public Model {
 public:
  SequentialModel(Backend& backend, std::vector<std::unique_ptr<Layer>> layers,
                  int64_t controlSlots = kControlSlots);
  ~SequentialModel() override;

  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  double trainingFlops(int64_t rows) const override;
  // Each layer's own scheme (He or Xavier weights, zero biases), deterministic from the seed,
  // layer by layer.
  void initialize(InitScheme scheme, uint64_t seed) override;
  void reserve(int64_t rows) override;
  const float* forward(const float* x, int64_t rows) override;
  void backward(const float* x, float* dOutput, int64_t rows,
                GradientListener* listener = nullptr) override;
  float* outputGradBuffer() override { return dOutput_; }

 private:
  void releaseActivations() noexcept;

  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<int64_t> offsets_;  // each layer's first parameter
  std::vector<float*> outputs_;   // each layer's output, kept for backward
  int64_t firstWithParameters_ = 0;
  int64_t maxSize_ = 0;
  int64_t capacityRows_ = 0;
  float* gradA_ = nullptr;
  float* gradB_ = nullptr;
  float* dOutput_ = nullptr;
};

// Multiply-adds per sample of one training step's forward and backward over `layers` (no
// input gradient below the first layer with parameters).
int64_t trainingMacs(const std::vector<std::unique_ptr<Layer>>& layers);
// The parameters of `layers` in all.
int64_t parameterCount(const std::vector<std::unique_ptr<Layer>>& layers);
// Forward multiply-adds per sample.
int64_t forwardMacs(const std::vector<std::unique_ptr<Layer>>& layers);
// Floats per sample the layers keep from forward for backward.
int64_t keptFloats(const std::vector<std::unique_ptr<Layer>>& layers);

}  // namespace dtlab::core
