#pragma once
// The model a replica trains, as everything outside its own files sees it: strategies,
// checkpoints, compression, replay, the simulator and the benches. A model kind
// (core/nn/model_kinds.h) lays out its parameters as named tensors in one flat buffer and
// computes forward and backward on a batch; this class owns the buffers and what every kind
// does the same way with them.
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/common/gradient_range.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// One parameter tensor of a model: its name, where it sits in the flat parameter (and
// gradient) buffer, and its shape, row-major. Compression treats a tensor as a matrix with a
// row per entry of its first dimension (a convolution's out x in x k x k kernels: a row per
// output channel, as PowerSGD reshapes them); a vector is one row.
struct ParameterTensor {
  std::string name;            // "dense0.weight"
  int64_t offset = 0;          // first float in the buffer
  std::vector<int64_t> shape;  // at least one dimension, each positive
  int64_t size() const;
  int64_t rows() const { return shape.size() > 1 ? shape.front() : 1; }
  int64_t columns() const { return size() / rows(); }
  GradientRange range() const { return {offset, offset + size()}; }
};

// Told by backward each time a range of gradients is final, so that a strategy can start
// reducing them while backward goes on.
class GradientListener {
 public:
  virtual ~GradientListener() = default;
  virtual void onGradientsReady(int64_t begin, int64_t end) = 0;
};

// A model on a Backend. All parameters live in one flat buffer and all gradients in another
// of the same layout: optimizers run as one fused pass over it, collectives reduce contiguous
// slices of it as buckets, and a checksum of the replica is a hash of one buffer. A kind's
// constructor lays its tensors out and calls allocate(); buffers for activations are the
// kind's (reserve() sizes them up front; forward and backward allocate nothing after that).
class Model {
 public:
  // The default size of the control block behind the gradients (see control()).
  static constexpr int64_t kControlSlots = 16;

  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  int64_t inputs() const { return inputs_; }    // features of a sample
  int64_t outputs() const { return outputs_; }  // classes, or regression targets
  int64_t parameterCount() const { return paramCount_; }
  // The parameter tensors, in buffer order; they tile [0, parameterCount()).
  const std::vector<ParameterTensor>& tensors() const { return tensors_; }
  // The ranges of the gradient buffer backward hands to its listener, in the order it hands
  // them over; they tile the parameters.
  const std::vector<GradientRange>& handOffs() const { return handOffs_; }
  // Flops of one training step on `rows` samples: forward and backward, no optimizer.
  virtual double trainingFlops(int64_t rows) const = 0;

  // Backend memory.
  float* params() { return params_; }
  const float* params() const { return params_; }
  float* grads() { return grads_; }
  const float* grads() const { return grads_; }
  // A few floats right after the gradients, in the same buffer: a strategy puts the values
  // its ranks must agree on (stop votes) or share (step times) there, so they travel with the
  // gradient all-reduce instead of costing a collective of their own.
  float* control() { return grads_ + paramCount_; }
  int64_t controlSlots() const { return controlSlots_; }

  // Initial weights, deterministic from the seed; `scheme` as the kind reads it (He or
  // Xavier for its dense layers).
  virtual void initialize(InitScheme scheme, uint64_t seed) = 0;
  void setParams(const std::vector<float>& host);
  std::vector<float> paramsToHost() const;
  void paramsToHost(std::vector<float>& into) const;  // into's memory, resized to fit
  std::vector<float> gradsToHost() const;

  // Activation buffers for batches of up to `rows` samples.
  virtual void reserve(int64_t rows) = 0;
  // x: rows x inputs in backend memory. Returns the rows x outputs result (valid until the
  // next forward).
  virtual const float* forward(const float* x, int64_t rows) = 0;
  // Gradients of the parameters (overwritten, not accumulated) given the gradient of the loss
  // with respect to the last forward's output, each range of handOffs() handed to `listener`
  // once final. `dOutput` may be overwritten; x must be the input of the last forward.
  virtual void backward(const float* x, float* dOutput, int64_t rows,
                        GradientListener* listener = nullptr) = 0;
  // Scratch of rows x outputs in backend memory for the loss gradient.
  virtual float* outputGradBuffer() = 0;

 protected:
  // controlSlots: the size of the control block behind the gradients.
  Model(Backend& backend, int64_t inputs, int64_t controlSlots);
  // Once, from the kind's constructor: the tensors (which must tile the buffer from 0, in
  // order), the hand-offs (which must tile it too) and the output width; allocates the
  // parameter and gradient buffers.
  void allocate(std::vector<ParameterTensor> tensors, std::vector<GradientRange> handOffs,
                int64_t outputs);

  Backend& backend_;

 private:
  int64_t inputs_ = 0;
  int64_t outputs_ = 0;
  int64_t paramCount_ = 0;
  int64_t controlSlots_ = kControlSlots;
  std::vector<ParameterTensor> tensors_;
  std::vector<GradientRange> handOffs_;
  float* params_ = nullptr;
  float* grads_ = nullptr;
};

// FNV-1a over the bytes of a parameter vector, as 16 hex digits: replicas that are bitwise
// identical have equal checksums.
std::string paramChecksum(const std::vector<float>& params);

}  // namespace dtlab::core
