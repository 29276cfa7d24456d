#include "core/nn/layers.h"

#include <cmath>
#include <utility>

#include "core/common/check.h"

namespace dtlab::core {
namespace {

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// He (normal, std sqrt(2 / fanIn)) or Xavier (uniform, bound sqrt(6 / (fanIn + fanOut))).
void initWeights(float* w, int64_t count, int64_t fanIn, int64_t fanOut, InitScheme scheme,
                 Rng& rng) {
  if (scheme == InitScheme::kHe) {
    const float std = std::sqrt(2.0f / static_cast<float>(fanIn));
    for (int64_t j = 0; j < count; ++j) w[j] = std * rng.normal();
  } else {
    const float bound = std::sqrt(6.0f / static_cast<float>(fanIn + fanOut));
    for (int64_t j = 0; j < count; ++j) w[j] = rng.uniform(-bound, bound);
  }
}

void checkImage(const std::string& name, const std::vector<int64_t>& dims) {
  DTLAB_ENFORCE(dims.size() == 3 && dims[0] > 0 && dims[1] > 0 && dims[2] > 0, "layer ", name,
                " needs {channels, height, width} images");
}

}  // namespace

Layer::Layer(std::string name, std::vector<int64_t> inputDims, std::vector<int64_t> outputDims)
    : name_(std::move(name)),
      inputDims_(std::move(inputDims)),
      outputDims_(std::move(outputDims)),
      inputSize_(product(inputDims_)),
      outputSize_(product(outputDims_)) {
  DTLAB_ENFORCE(!inputDims_.empty() && inputSize_ > 0 && !outputDims_.empty() && outputSize_ > 0,
                "layer ", name_, " has an empty input or output");
}

int64_t Layer::addTensor(const std::string& suffix, std::vector<int64_t> shape) {
  ParameterTensor t{name_ + "." + suffix, parameterCount_, std::move(shape)};
  parameterCount_ += t.size();
  tensors_.push_back(std::move(t));
  return tensors_.back().offset;
}

int64_t Layer::backwardMacs(bool inputGradient) const {
  // The parameter gradient and the input gradient each cost what forward does, for the
  // layers here (a product with the same operands transposed).
  return (parameterCount_ > 0 ? forwardMacs() : 0) + (inputGradient ? forwardMacs() : 0);
}

void Layer::initialize(float*, InitScheme, Rng&) const {}
void Layer::checkBackend(const Backend&) const {}
void Layer::reserve(Backend&, int64_t) {}
void Layer::release(Backend&) noexcept {}

DenseLayer::DenseLayer(std::string name, int64_t inputs, int64_t outputs,
                       std::optional<Activation> act)
    : Layer(std::move(name), {inputs}, {outputs}), in_(inputs), out_(outputs), act_(act) {
  addTensor("weight", {in_, out_});
  addTensor("bias", {out_});
}

int64_t DenseLayer::keptFloats() const {
  return act_ == Activation::kGELU ? 2 * outputSize() : outputSize();
}

void DenseLayer::initialize(float* params, InitScheme scheme, Rng& rng) const {
  initWeights(params, in_ * out_, in_, out_, scheme, rng);
}

void DenseLayer::reserve(Backend& backend, int64_t rows) {
  release(backend);
  if (act_ == Activation::kGELU) z_ = backend.allocate(rows * out_);
}

void DenseLayer::release(Backend& backend) noexcept {
  backend.release(z_);
  z_ = nullptr;
}

void DenseLayer::forward(Backend& backend, const float* params, const float* x, float* y,
                         int64_t rows) {
  float* z = z_ != nullptr ? z_ : y;
  backend.gemm(false, false, rows, out_, in_, 1.0f, x, in_, params, out_, 0.0f, z, out_);
  backend.biasActivation(z, params + in_ * out_, rows, out_, act_, y, z_);
}

void DenseLayer::backward(Backend& backend, const float* params, const float* x, const float* y,
                          float* dy, float* dx, float* grads, int64_t rows) {
  // dZ in place over dy, and the bias gradient, in one pass.
  backend.activationBackward(dy, z_, y, rows, out_, act_, dy, grads + in_ * out_);
  backend.gemm(true, false, in_, out_, rows, 1.0f, x, in_, dy, out_, 0.0f, grads, out_);
  if (dx != nullptr)
    backend.gemm(false, true, rows, in_, out_, 1.0f, dy, out_, params, out_, 0.0f, dx, in_);
}

namespace {

// A convolution's output dims, halved by a 2 x 2 pooling when there is one.
std::vector<int64_t> convOutput(const std::vector<int64_t>& in, int64_t channels, int64_t kernel,
                                int64_t stride, int64_t padding, bool pooled) {
  std::vector<int64_t> dims = {channels, (in.at(1) + 2 * padding - kernel) / stride + 1,
                               (in.at(2) + 2 * padding - kernel) / stride + 1};
  if (pooled) dims = {dims[0], dims[1] / 2, dims[2] / 2};
  return dims;
}

}  // namespace

Conv2dLayer::Conv2dLayer(std::string name, const std::vector<int64_t>& inputDims,
                         int64_t outChannels, int64_t kernel, int64_t stride, int64_t padding,
                         std::optional<Activation> act, std::optional<PoolKind> pool)
    : Layer(name, inputDims,
            convOutput(inputDims, outChannels, kernel, stride, padding, pool.has_value())),
      act_(act),
      pool_(pool) {
  checkImage(this->name(), inputDims);
  shape_ = {.batch = 0,
            .inChannels = inputDims[0],
            .height = inputDims[1],
            .width = inputDims[2],
            .outChannels = outChannels,
            .kernel = kernel,
            .stride = stride,
            .padding = padding};
  addTensor("weight", {outChannels, shape_.inChannels, kernel, kernel});
  addTensor("bias", {outChannels});
}

Conv2dShape Conv2dLayer::shape(int64_t rows) const {
  Conv2dShape s = shape_;
  s.batch = rows;
  return s;
}

Pool2dShape Conv2dLayer::poolShape(int64_t rows) const {
  Pool2dShape p{.kind = pool_.value_or(PoolKind::kMax),
                .batch = rows,
                .channels = shape_.outChannels,
                .height = shape_.outHeight(),
                .width = shape_.outWidth(),
                .kernel = 2,
                .stride = 2,
                .padding = 0};
  // ReLU's and tanh's derivatives follow from their outputs, which the pooling reads anyway.
  if (act_ == Activation::kReLU || act_ == Activation::kTanh) p.inputActivation = act_;
  return p;
}

int64_t Conv2dLayer::convSize() const {
  return shape_.outChannels * shape_.outHeight() * shape_.outWidth();
}

int64_t Conv2dLayer::forwardMacs() const {
  return shape_.macsPerImage();
}

int64_t Conv2dLayer::keptFloats() const {
  return (act_ == Activation::kGELU ? convSize() : 0) + (pool_ ? convSize() : 0) + outputSize();
}

void Conv2dLayer::checkBackend(const Backend& backend) const {
  requireImageLayers(backend, "2-D convolution");
}

void Conv2dLayer::initialize(float* params, InitScheme scheme, Rng& rng) const {
  const int64_t window = shape_.kernel * shape_.kernel;
  initWeights(params, shape_.weightCount(), shape_.inChannels * window, shape_.outChannels * window,
              scheme, rng);
}

void Conv2dLayer::reserve(Backend& backend, int64_t rows) {
  release(backend);
  if (act_ == Activation::kGELU) z_ = backend.allocate(rows * convSize());
  if (act_) zeroBias_ = backend.allocate(convSize());
  if (pool_) {
    a_ = backend.allocate(rows * convSize());
    dA_ = backend.allocate(rows * convSize());
  }
}

void Conv2dLayer::release(Backend& backend) noexcept {
  for (float* p : {z_, a_, dA_, zeroBias_}) backend.release(p);
  z_ = a_ = dA_ = zeroBias_ = nullptr;
}

void Conv2dLayer::forward(Backend& backend, const float* params, const float* x, float* y,
                          int64_t rows) {
  float* a = pool_ ? a_ : y;  // the activation's output
  float* z = z_ != nullptr ? z_ : a;
  backend.conv2dForward(shape(rows), x, params, params + shape_.weightCount(), z);
  if (act_) backend.biasActivation(z, zeroBias_, rows, convSize(), act_, a, nullptr);
  if (pool_) backend.pool2dForward(poolShape(rows), a_, y);
}

void Conv2dLayer::backward(Backend& backend, const float* params, const float* x, const float* y,
                           float* dy, float* dx, float* grads, int64_t rows) {
  float* dz = dy;  // the gradient of the pre-activation, once known
  bool activationDone = false;
  if (pool_) {
    const Pool2dShape p = poolShape(rows);
    backend.pool2dBackward(p, a_, y, dy, dA_);
    dz = dA_;
    activationDone = p.inputActivation.has_value();
  }
  if (act_ && !activationDone)
    backend.activationBackward(dz, z_, pool_ ? a_ : y, rows, convSize(), act_, dz, nullptr);
  const Conv2dShape s = shape(rows);
  backend.conv2dBackwardWeights(s, x, dz, grads, grads + shape_.weightCount());
  if (dx != nullptr) backend.conv2dBackwardData(s, dz, params, dx);
}

Pool2dLayer::Pool2dLayer(std::string name, const std::vector<int64_t>& inputDims, PoolKind kind,
                         int64_t kernel, int64_t stride)
    : Layer(name, inputDims,
            {inputDims.at(0), (inputDims.at(1) - kernel) / stride + 1,
             (inputDims.at(2) - kernel) / stride + 1}) {
  checkImage(this->name(), inputDims);
  shape_ = {.kind = kind,
            .batch = 0,
            .channels = inputDims[0],
            .height = inputDims[1],
            .width = inputDims[2],
            .kernel = kernel,
            .stride = stride,
            .padding = 0};
}

void Pool2dLayer::checkBackend(const Backend& backend) const {
  requireImageLayers(backend, "2-D pooling");
}

Pool2dShape Pool2dLayer::shape(int64_t rows) const {
  Pool2dShape s = shape_;
  s.batch = rows;
  return s;
}

void Pool2dLayer::forward(Backend& backend, const float*, const float* x, float* y, int64_t rows) {
  backend.pool2dForward(shape(rows), x, y);
}

void Pool2dLayer::backward(Backend& backend, const float*, const float* x, const float* y,
                           float* dy, float* dx, float*, int64_t rows) {
  if (dx != nullptr) backend.pool2dBackward(shape(rows), x, y, dy, dx);
}

}  // namespace dtlab::core
