#include "core/nn/mlp.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "core/common/check.h"
#include "core/common/random.h"

namespace dtlab::core {
namespace {
constexpr uint64_t kInitStream = 0x1217;
}

std::vector<LayerSpec> mlpLayers(const ModelConfig& model, int64_t outputs) {
  std::vector<LayerSpec> layers;
  for (int64_t width : model.hidden) {
    layers.push_back(LayerSpec::dense(width));
    layers.push_back(LayerSpec::act(model.activation));
  }
  layers.push_back(LayerSpec::dense(outputs));
  return layers;
}

Mlp::Mlp(Backend& backend, int64_t inputs, const std::vector<LayerSpec>& layers,
         int64_t controlSlots)
    : backend_(backend), inputs_(inputs), controlSlots_(controlSlots) {
  DTLAB_ENFORCE(inputs > 0, "model input width must be positive, got ", inputs);
  DTLAB_ENFORCE(controlSlots >= 0, "negative control block: ", controlSlots);
  DTLAB_ENFORCE(!layers.empty(), "model needs at least one layer");
  int64_t width = inputs;
  maxWidth_ = inputs;
  for (const LayerSpec& layer : layers) {
    if (layer.kind == LayerSpec::Kind::kDense) {
      DTLAB_ENFORCE(layer.units > 0, "dense layer width must be positive, got ", layer.units);
      ParamRange range{paramCount_, paramCount_ + width * layer.units, width, layer.units};
      paramCount_ = range.end();
      dense_.push_back(range);
      stages_.push_back({static_cast<int>(dense_.size()) - 1, std::nullopt, width, layer.units});
      width = layer.units;
    } else if (!stages_.empty() && !stages_.back().act) {
      stages_.back().act = layer.activation;
    } else {
      stages_.push_back({-1, layer.activation, width, width});
    }
    maxWidth_ = std::max(maxWidth_, width);
  }
  outputs_ = width;
  // Every layer's gradients as one hand-off, last layer first; the first layer's weights
  // (computed last) in pieces of its rows, halving while a piece keeps at least kMinPieceRows
  // rows, and only for a matrix of at least kMinPiecedBytes, where the tail it saves outweighs
  // three more, smaller GEMMs and hand-offs.
  constexpr int64_t kMinPieceRows = 32;
  constexpr int64_t kMinPiecedBytes = int64_t{1} << 20;
  DTLAB_ENFORCE(!dense_.empty(), "model needs at least one dense layer");
  for (auto it = dense_.rbegin(); it + 1 != dense_.rend(); ++it)
    handOffs_.push_back({it->weight, it->end()});
  const ParamRange& first = dense_.front();
  int64_t from = 0;  // rows
  if (first.in * first.out * int64_t{sizeof(float)} >= kMinPiecedBytes)
    for (int piece = 0; piece < 3 && (first.in - from) / 2 >= kMinPieceRows; ++piece) {
      const int64_t to = from + (first.in - from) / 2;
      handOffs_.push_back({first.weight + from * first.out, first.weight + to * first.out});
      from = to;
    }
  handOffs_.push_back({first.weight + from * first.out, first.end()});  // the bias with the last
  params_ = backend_.allocate(paramCount_);
  grads_ = backend_.allocate(paramCount_ + controlSlots_);
  zeroBias_ = backend_.allocate(maxWidth_);
}

Mlp::~Mlp() {
  releaseActivations();
  backend_.release(params_);
  backend_.release(grads_);
  backend_.release(zeroBias_);
}

void Mlp::releaseActivations() {
  for (Stage& s : stages_) {
    backend_.release(s.z);
    backend_.release(s.a);
    s.z = s.a = nullptr;
  }
  backend_.release(gradA_);
  backend_.release(gradB_);
  backend_.release(dOutput_);
  gradA_ = gradB_ = dOutput_ = nullptr;
  capacityRows_ = 0;
}

int64_t Mlp::forwardFlopsPerSample() const {
  int64_t macs = 0;
  for (const ParamRange& r : dense_) macs += r.in * r.out;
  return macs;
}

double Mlp::trainingFlops(int64_t rows) const {
  double flops = 0.0;
  for (std::size_t i = 0; i < dense_.size(); ++i) {
    const double gemm = 2.0 * static_cast<double>(rows) * dense_[i].in * dense_[i].out;
    flops += gemm * (i == 0 ? 2.0 : 3.0);  // forward + weight gradient (+ input gradient)
  }
  return flops;
}

void Mlp::initialize(InitScheme scheme, uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(paramCount_), 0.0f);
  for (std::size_t i = 0; i < dense_.size(); ++i) {
    const ParamRange& r = dense_[i];
    Rng rng(deriveSeed(seed, kInitStream, i));
    float* w = host.data() + r.weight;
    const int64_t n = r.in * r.out;
    if (scheme == InitScheme::kHe) {
      const float std = std::sqrt(2.0f / static_cast<float>(r.in));
      for (int64_t j = 0; j < n; ++j) w[j] = std * rng.normal();
    } else {
      const float bound = std::sqrt(6.0f / static_cast<float>(r.in + r.out));
      for (int64_t j = 0; j < n; ++j) w[j] = rng.uniform(-bound, bound);
    }
  }
  setParams(host);
}

void Mlp::setParams(const std::vector<float>& host) {
  DTLAB_ENFORCE_EQ(static_cast<int64_t>(host.size()), paramCount_, "parameter count");
  backend_.upload(params_, host.data(), paramCount_);
}

std::vector<float> Mlp::paramsToHost() const {
  std::vector<float> host;
  paramsToHost(host);
  return host;
}

void Mlp::paramsToHost(std::vector<float>& into) const {
  into.resize(static_cast<std::size_t>(paramCount_));
  backend_.download(into.data(), params_, paramCount_);
}

std::vector<float> Mlp::gradsToHost() const {
  std::vector<float> host(static_cast<std::size_t>(paramCount_));
  backend_.download(host.data(), grads_, paramCount_);
  return host;
}

void Mlp::reserve(int64_t rows) {
  if (rows <= capacityRows_) return;
  releaseActivations();
  for (Stage& s : stages_) {
    if (s.dense >= 0 && s.act == Activation::kGELU) s.z = backend_.allocate(rows * s.out);
    s.a = backend_.allocate(rows * s.out);
  }
  gradA_ = backend_.allocate(rows * maxWidth_);
  gradB_ = backend_.allocate(rows * maxWidth_);
  dOutput_ = backend_.allocate(rows * outputs_);
  capacityRows_ = rows;
}

const float* Mlp::forward(const float* x, int64_t rows) {
  reserve(rows);
  const float* input = x;
  for (Stage& s : stages_) {
    if (s.dense >= 0) {
      const ParamRange& r = dense_[s.dense];
      float* z = s.z != nullptr ? s.z : s.a;
      backend_.gemm(false, false, rows, s.out, s.in, 1.0f, input, s.in, params_ + r.weight, s.out,
                    0.0f, z, s.out);
      backend_.biasActivation(z, params_ + r.bias, rows, s.out, s.act, s.a, s.z);
    } else {
      backend_.biasActivation(input, zeroBias_, rows, s.out, s.act, s.a, nullptr);
    }
    input = s.a;
  }
  return stages_.back().a;
}

void Mlp::backward(const float* x, float* dOutput, int64_t rows, GradientListener* listener) {
  DTLAB_ENFORCE(rows <= capacityRows_, "backward before forward");
  float* dA = dOutput;  // gradient w.r.t. the current stage's output
  for (int i = static_cast<int>(stages_.size()) - 1; i >= 0; --i) {
    Stage& s = stages_[i];
    const float* input = i > 0 ? stages_[i - 1].a : x;
    float* dInput = (dA == gradA_) ? gradB_ : gradA_;
    if (s.dense >= 0) {
      const ParamRange& r = dense_[s.dense];
      // dZ (in place over dA) and the bias gradient in one pass.
      backend_.activationBackward(dA, s.z, s.a, rows, s.out, s.act, dA, grads_ + r.bias);
      if (s.dense == 0) {  // the last weight gradient, in the pieces of its rows handOffs lists
        for (auto h = handOffs_.begin() + static_cast<std::ptrdiff_t>(dense_.size() - 1);
             h != handOffs_.end(); ++h) {
          const int64_t from = (h->begin - r.weight) / s.out;
          const int64_t to = std::min(h->end - r.weight, s.in * s.out) / s.out;
          backend_.gemm(true, false, to - from, s.out, rows, 1.0f, input + from, s.in, dA, s.out,
                        0.0f, grads_ + h->begin, s.out);
          if (listener != nullptr) listener->onGradientsReady(h->begin, h->end);
        }
        break;  // nothing upstream of the first dense layer has parameters
      }
      backend_.gemm(true, false, s.in, s.out, rows, 1.0f, input, s.in, dA, s.out, 0.0f,
                    grads_ + r.weight, s.out);
      if (listener != nullptr) listener->onGradientsReady(r.weight, r.end());
      backend_.gemm(false, true, rows, s.in, s.out, 1.0f, dA, s.out, params_ + r.weight, s.out,
                    0.0f, dInput, s.in);
    } else {
      if (i == 0) break;  // nothing upstream needs it
      // A lone activation's pre-activation is its input.
      backend_.activationBackward(dA, input, s.a, rows, s.out, s.act, dInput, nullptr);
    }
    dA = dInput;
  }
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
