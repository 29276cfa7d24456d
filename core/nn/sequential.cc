#include "core/nn/sequential.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/common/check.h"

namespace dtlab::core {
namespace {
constexpr uint64_t kInitStream = 0x5E9;

int64_t firstWithParameters(const std::vector<std::unique_ptr<Layer>>& layers) {
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (layers[i]->parameterCount() > 0) return static_cast<int64_t>(i);
  return static_cast<int64_t>(layers.size());
}

}  // namespace

int64_t parameterCount(const std::vector<std::unique_ptr<Layer>>& layers) {
  int64_t n = 0;
  for (const auto& layer : layers) n += layer->parameterCount();
  return n;
}

int64_t forwardMacs(const std::vector<std::unique_ptr<Layer>>& layers) {
  int64_t n = 0;
  for (const auto& layer : layers) n += layer->forwardMacs();
  return n;
}

int64_t keptFloats(const std::vector<std::unique_ptr<Layer>>& layers) {
  int64_t n = 0;
  for (const auto& layer : layers) n += layer->keptFloats();
  return n;
}

int64_t trainingMacs(const std::vector<std::unique_ptr<Layer>>& layers) {
  const int64_t first = firstWithParameters(layers);
  int64_t n = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(layers.size()); ++i) {
    const Layer& layer = *layers[static_cast<std::size_t>(i)];
    n += layer.forwardMacs();
    if (i >= first) n += layer.backwardMacs(i > first);
  }
  return n;
}

SequentialModel::SequentialModel(Backend& backend, std::vector<std::unique_ptr<Layer>> layers,
                                 int64_t controlSlots)
    : Model(backend, layers.empty() ? 0 : layers.front()->inputSize(), controlSlots),
      layers_(std::move(layers)) {
  DTLAB_ENFORCE(!layers_.empty(), "a sequential model needs layers");
  std::vector<ParameterTensor> tensors;
  std::vector<GradientRange> handOffs;
  int64_t offset = 0;
  maxSize_ = layers_.front()->inputSize();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = *layers_[i];
    layer.checkBackend(backend);
    if (i > 0)
      DTLAB_ENFORCE(layer.inputSize() == layers_[i - 1]->outputSize(), "layer ", layer.name(),
                    " takes ", layer.inputSize(), " floats but ", layers_[i - 1]->name(), " gives ",
                    layers_[i - 1]->outputSize());
    offsets_.push_back(offset);
    for (ParameterTensor t : layer.tensors()) {
      t.offset += offset;
      tensors.push_back(std::move(t));
    }
    if (layer.parameterCount() > 0) handOffs.push_back({offset, offset + layer.parameterCount()});
    offset += layer.parameterCount();
    maxSize_ = std::max(maxSize_, layer.outputSize());
  }
  std::reverse(handOffs.begin(), handOffs.end());
  firstWithParameters_ = firstWithParameters(layers_);
  outputs_.assign(layers_.size(), nullptr);
  allocate(std::move(tensors), std::move(handOffs), layers_.back()->outputSize());
}

SequentialModel::~SequentialModel() {
  releaseActivations();
}

void SequentialModel::releaseActivations() noexcept {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->release(backend_);
    backend_.release(outputs_[i]);
    outputs_[i] = nullptr;
  }
  backend_.release(gradA_);
  backend_.release(gradB_);
  backend_.release(dOutput_);
  gradA_ = gradB_ = dOutput_ = nullptr;
  capacityRows_ = 0;
}

double SequentialModel::trainingFlops(int64_t rows) const {
  return 2.0 * static_cast<double>(rows) * static_cast<double>(trainingMacs(layers_));
}

void SequentialModel::initialize(InitScheme scheme, uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(parameterCount()), 0.0f);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Rng rng(deriveSeed(seed, kInitStream, i));
    layers_[i]->initialize(host.data() + offsets_[i], scheme, rng);
  }
  setParams(host);
}

void SequentialModel::reserve(int64_t rows) {
  if (rows <= capacityRows_) return;
  releaseActivations();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    outputs_[i] = backend_.allocate(rows * layers_[i]->outputSize());
    layers_[i]->reserve(backend_, rows);
  }
  gradA_ = backend_.allocate(rows * maxSize_);
  gradB_ = backend_.allocate(rows * maxSize_);
  dOutput_ = backend_.allocate(rows * outputs());
  capacityRows_ = rows;
}

const float* SequentialModel::forward(const float* x, int64_t rows) {
  reserve(rows);
  const float* input = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(backend_, params() + offsets_[i], input, outputs_[i], rows);
    input = outputs_[i];
  }
  return input;
}

void SequentialModel::backward(const float* x, float* dOutput, int64_t rows,
                               GradientListener* listener) {
  DTLAB_ENFORCE(rows <= capacityRows_, "backward before forward");
  float* dy = dOutput;
  for (int64_t i = static_cast<int64_t>(layers_.size()) - 1; i >= firstWithParameters_; --i) {
    const std::size_t k = static_cast<std::size_t>(i);
    Layer& layer = *layers_[k];
    const float* input = i > 0 ? outputs_[k - 1] : x;
    float* dx = i > firstWithParameters_ ? (dy == gradA_ ? gradB_ : gradA_) : nullptr;
    layer.backward(backend_, params() + offsets_[k], input, outputs_[k], dy, dx,
                   grads() + offsets_[k], rows);
    if (listener != nullptr && layer.parameterCount() > 0)
      listener->onGradientsReady(offsets_[k], offsets_[k] + layer.parameterCount());
    dy = dx;
  }
}

}  // namespace dtlab::core
