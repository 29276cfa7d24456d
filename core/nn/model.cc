#include "core/nn/model.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/common/check.h"

namespace dtlab::core {

int64_t ParameterTensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Model::Model(Backend& backend, int64_t inputs, int64_t controlSlots)
    : backend_(backend), inputs_(inputs), controlSlots_(controlSlots) {
  DTLAB_ENFORCE(inputs > 0, "model input width must be positive, got ", inputs);
  DTLAB_ENFORCE(controlSlots >= 0, "negative control block: ", controlSlots);
}

Model::~Model() {
  backend_.release(params_);
  backend_.release(grads_);
}

void Model::allocate(std::vector<ParameterTensor> tensors, std::vector<GradientRange> handOffs,
                     int64_t outputs) {
  DTLAB_ENFORCE(params_ == nullptr, "a model's parameters are allocated once");
  DTLAB_ENFORCE(outputs > 0, "model output width must be positive, got ", outputs);
  int64_t next = 0;
  for (const ParameterTensor& t : tensors) {
    DTLAB_ENFORCE(!t.shape.empty(), "tensor ", t.name, " has no shape");
    for (int64_t d : t.shape) DTLAB_ENFORCE(d > 0, "tensor ", t.name, " has a dimension ", d);
    DTLAB_ENFORCE_EQ(t.offset, next, "offset of tensor " + t.name);
    next = t.offset + t.size();
  }
  DTLAB_ENFORCE(next > 0, "a model needs parameters");
  // The hand-offs tile the buffer, each range once, in any order.
  std::vector<GradientRange> sorted = handOffs;
  std::sort(sorted.begin(), sorted.end(),
            [](const GradientRange& a, const GradientRange& b) { return a.begin < b.begin; });
  int64_t covered = 0;
  for (const GradientRange& r : sorted) {
    DTLAB_ENFORCE(r.begin == covered && r.end > r.begin, "hand-offs must tile the parameters");
    covered = r.end;
  }
  DTLAB_ENFORCE_EQ(covered, next, "parameters the hand-offs cover");
  tensors_ = std::move(tensors);
  handOffs_ = std::move(handOffs);
  outputs_ = outputs;
  paramCount_ = next;
  params_ = backend_.allocate(paramCount_);
  grads_ = backend_.allocate(paramCount_ + controlSlots_);
}

void Model::setParams(const std::vector<float>& host) {
  DTLAB_ENFORCE_EQ(static_cast<int64_t>(host.size()), paramCount_, "parameter count");
  backend_.upload(params_, host.data(), paramCount_);
}

std::vector<float> Model::paramsToHost() const {
  std::vector<float> host;
  paramsToHost(host);
  return host;
}

void Model::paramsToHost(std::vector<float>& into) const {
  into.resize(static_cast<std::size_t>(paramCount_));
  backend_.download(into.data(), params_, paramCount_);
}

std::vector<float> Model::gradsToHost() const {
  std::vector<float> host(static_cast<std::size_t>(paramCount_));
  backend_.download(host.data(), grads_, paramCount_);
  return host;
}

std::string paramChecksum(const std::vector<float>& params) {
  uint64_t h = 0xCBF29CE484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(params.data());
  for (std::size_t i = 0; i < params.size() * sizeof(float); ++i) {
    h ^= bytes[i];
    h *= 0x100000001B3ull;
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace dtlab::core
