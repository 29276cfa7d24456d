#include "core/nn/mlp.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "core/common/check.h"
#include "core/common/random.h"
#include "core/nn/model_kinds.h"

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
    : Model(backend, inputs, controlSlots) {
  DTLAB_ENFORCE(!layers.empty(), "model needs at least one layer");
  int64_t paramCount = 0;
  int64_t width = inputs;
  maxWidth_ = inputs;
  for (const LayerSpec& layer : layers) {
    if (layer.kind == LayerSpec::Kind::kDense) {
      DTLAB_ENFORCE(layer.units > 0, "dense layer width must be positive, got ", layer.units);
      ParamRange range{paramCount, paramCount + width * layer.units, width, layer.units};
      paramCount = range.end();
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
  // Every layer's gradients as one hand-off, last layer first; the first layer's weights
  // (computed last) in pieces of its rows, halving while a piece keeps at least kMinPieceRows
  // rows, and only for a matrix of at least kMinPiecedBytes, where the tail it saves outweighs
  // three more, smaller GEMMs and hand-offs.
  constexpr int64_t kMinPieceRows = 32;
  constexpr int64_t kMinPiecedBytes = int64_t{1} << 20;
  DTLAB_ENFORCE(!dense_.empty(), "model needs at least one dense layer");
  std::vector<GradientRange> handOffs;
  for (auto it = dense_.rbegin(); it + 1 != dense_.rend(); ++it)
    handOffs.push_back({it->weight, it->end()});
  const ParamRange& first = dense_.front();
  int64_t from = 0;  // rows
  if (first.in * first.out * int64_t{sizeof(float)} >= kMinPiecedBytes)
    for (int piece = 0; piece < 3 && (first.in - from) / 2 >= kMinPieceRows; ++piece) {
      const int64_t to = from + (first.in - from) / 2;
      handOffs.push_back({first.weight + from * first.out, first.weight + to * first.out});
      from = to;
    }
  handOffs.push_back({first.weight + from * first.out, first.end()});  // the bias with the last
  std::vector<ParameterTensor> tensors;
  for (std::size_t i = 0; i < dense_.size(); ++i) {
    const ParamRange& r = dense_[i];
    const std::string name = "dense" + std::to_string(i);
    tensors.push_back({name + ".weight", r.weight, {r.in, r.out}});
    tensors.push_back({name + ".bias", r.bias, {r.out}});
  }
  allocate(std::move(tensors), std::move(handOffs), width);
  zeroBias_ = backend_.allocate(maxWidth_);
}

Mlp::~Mlp() {
  releaseActivations();
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

double Mlp::trainingFlops(int64_t rows) const {
  double flops = 0.0;
  for (std::size_t i = 0; i < dense_.size(); ++i) {
    const double gemm = 2.0 * static_cast<double>(rows) * dense_[i].in * dense_[i].out;
    flops += gemm * (i == 0 ? 2.0 : 3.0);  // forward + weight gradient (+ input gradient)
  }
  return flops;
}

void Mlp::initialize(InitScheme scheme, uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(parameterCount()), 0.0f);
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

void Mlp::reserve(int64_t rows) {
  if (rows <= capacityRows_) return;
  releaseActivations();
  for (Stage& s : stages_) {
    if (s.dense >= 0 && s.act == Activation::kGELU) s.z = backend_.allocate(rows * s.out);
    s.a = backend_.allocate(rows * s.out);
  }
  gradA_ = backend_.allocate(rows * maxWidth_);
  gradB_ = backend_.allocate(rows * maxWidth_);
  dOutput_ = backend_.allocate(rows * outputs());
  capacityRows_ = rows;
}

const float* Mlp::forward(const float* x, int64_t rows) {
  reserve(rows);
  const float* input = x;
  for (Stage& s : stages_) {
    if (s.dense >= 0) {
      const ParamRange& r = dense_[s.dense];
      float* z = s.z != nullptr ? s.z : s.a;
      backend_.gemm(false, false, rows, s.out, s.in, 1.0f, input, s.in, params() + r.weight, s.out,
                    0.0f, z, s.out);
      backend_.biasActivation(z, params() + r.bias, rows, s.out, s.act, s.a, s.z);
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
      backend_.activationBackward(dA, s.z, s.a, rows, s.out, s.act, dA, grads() + r.bias);
      if (s.dense == 0) {  // the last weight gradient, in the pieces of its rows handOffs lists
        for (auto h = handOffs().begin() + static_cast<std::ptrdiff_t>(dense_.size() - 1);
             h != handOffs().end(); ++h) {
          const int64_t from = (h->begin - r.weight) / s.out;
          const int64_t to = std::min(h->end - r.weight, s.in * s.out) / s.out;
          backend_.gemm(true, false, to - from, s.out, rows, 1.0f, input + from, s.in, dA, s.out,
                        0.0f, grads() + h->begin, s.out);
          if (listener != nullptr) listener->onGradientsReady(h->begin, h->end);
        }
        break;  // nothing upstream of the first dense layer has parameters
      }
      backend_.gemm(true, false, s.in, s.out, rows, 1.0f, input, s.in, dA, s.out, 0.0f,
                    grads() + r.weight, s.out);
      if (listener != nullptr) listener->onGradientsReady(r.weight, r.end());
      backend_.gemm(false, true, rows, s.in, s.out, 1.0f, dA, s.out, params() + r.weight, s.out,
                    0.0f, dInput, s.in);
    } else {
      if (i == 0) break;  // nothing upstream needs it
      // A lone activation's pre-activation is its input.
      backend_.activationBackward(dA, input, s.a, rows, s.out, s.act, dInput, nullptr);
    }
    dA = dInput;
  }
}

ModelKindDescriptor mlpKind() {
  ModelKindDescriptor d;
  d.name = "mlp";
  d.summary =
      "A multi-layer perceptron: dense layers of the hidden widths, each followed by "
      "the activation, then a dense output layer";
  const auto widths = [](const ModelConfig& config, const SampleShape& samples) {
    std::vector<int64_t> all = {samples.features};
    all.insert(all.end(), config.hidden.begin(), config.hidden.end());
    all.push_back(samples.outputs);
    return all;
  };
  d.parameterCount = [widths](const ModelConfig& config, const SampleShape& samples) {
    const std::vector<int64_t> w = widths(config, samples);
    int64_t count = 0;
    for (std::size_t i = 1; i < w.size(); ++i) count += (w[i - 1] + 1) * w[i];
    return count;
  };
  d.forwardMacs = [widths](const ModelConfig& config, const SampleShape& samples) {
    const std::vector<int64_t> w = widths(config, samples);
    int64_t macs = 0;
    for (std::size_t i = 1; i < w.size(); ++i) macs += w[i - 1] * w[i];
    return macs;
  };
  d.activationFloats = [widths](const ModelConfig& config, const SampleShape& samples) {
    // Each layer's output (a hidden one's after the activation, in place), and the
    // pre-activations GELU keeps.
    const std::vector<int64_t> w = widths(config, samples);
    int64_t floats = 0;
    for (std::size_t i = 1; i < w.size(); ++i)
      floats += w[i] * (config.activation == Activation::kGELU && i + 1 < w.size() ? 2 : 1);
    return floats;
  };
  d.shape = [widths](const ModelConfig& config, const SampleShape& samples) {
    std::string text = "MLP";
    char separator = ' ';
    for (int64_t width : widths(config, samples)) {
      (text += separator) += std::to_string(width);
      separator = '-';
    }
    return text;
  };
  d.check = [](const ModelConfig&, const SampleShape& samples, const std::string& path) {
    // It sees the whole sample: on next-token targets it would read each answer from its
    // input, except with one token in and the next out.
    if (samples.causal && samples.features > 1)
      throw SpecError(path + ".kind",
                      "mlp sees all " + std::to_string(samples.features) +
                          " tokens of a sample at once, so it would read each next token from "
                          "its input; a next-token dataset needs a causal model: the "
                          "transformer, or the mlp with features 1 (one token in, the next out)");
  };
  d.make = [](Backend& backend, const ModelConfig& config, const SampleShape& samples,
              int64_t controlSlots) -> std::unique_ptr<Model> {
    return std::make_unique<Mlp>(backend, samples.features, mlpLayers(config, samples.outputs),
                                 controlSlots);
  };
  return d;
}

}  // namespace dtlab::core
