#include "core/nn/transformer.h"

#include <cmath>
#include <string>

#include "core/common/check.h"
#include "core/common/random.h"
#include "core/nn/model_kinds.h"

namespace dtlab::core {
namespace {

using detail::concat;

constexpr uint64_t kInitStream = 0x7472616E73ull;
constexpr float kNormEps = 1e-5f;
constexpr float kEmbeddingStd = 0.02f;

const std::vector<SettingSchema>& transformerSettings() {
  static const std::vector<SettingSchema> settings = {
      {.key = "layers",
       .type = SettingType::kInteger,
       .label = "Layers",
       .help = "transformer blocks, each self-attention then a feed-forward layer, both with "
               "layer normalisation and a residual connection",
       .defaultValue = int64_t{2},
       .min = 1,
       .max = 48},
      {.key = "width",
       .type = SettingType::kInteger,
       .label = "Width",
       .help = "the width of a token's vector between the blocks (d_model)",
       .defaultValue = int64_t{64},
       .min = 4,
       .max = 8192},
      {.key = "heads",
       .type = SettingType::kInteger,
       .label = "Heads",
       .help = "attention heads, each of width / heads",
       .defaultValue = int64_t{4},
       .min = 1,
       .max = 128},
      {.key = "ffn",
       .type = SettingType::kInteger,
       .label = "FFN width",
       .help = "the hidden width of each block's feed-forward layer",
       .defaultValue = int64_t{0},
       .min = 1,
       .max = 65536,
       .zeroMeans = "4 x width"},
      {.key = "attention",
       .type = SettingType::kChoice,
       .label = "Attention",
       .help = "causal: a token attends to itself and the tokens before it (next-token "
               "prediction); bidirectional: to every token of its sequence",
       .defaultValue = std::string("causal"),
       .choices = {"causal", "bidirectional"}},
  };
  return settings;
}

}  // namespace

int64_t TransformerShape::parameters() const {
  const int64_t d = width;
  const int64_t block = 4 * d + (d + 1) * 3 * d + (d + 1) * d + (d + 1) * ffn + (ffn + 1) * d;
  return vocabulary * d + tokens * d + layers * block + 2 * d + (d + 1) * vocabulary;
}

int64_t TransformerShape::forwardMacs() const {
  const int64_t d = width;
  // Per token: the dense layers; per pair of tokens that attend: q.k and p v.
  const int64_t dense = layers * (4 * d * d + 2 * d * ffn) + d * vocabulary;
  const int64_t pairs = causal ? tokens * (tokens + 1) / 2 : tokens * tokens;
  return tokens * dense + layers * pairs * 2 * d;
}

int64_t TransformerShape::activationFloats() const {
  const int64_t d = width;
  const int64_t gelu = activation == Activation::kGELU ? 2 : 1;
  // Per token and block: input, two norms' outputs and statistics, q k v, context, mid, the
  // feed-forward's hidden values; the attention's probabilities; then the final norm, logits.
  const int64_t perToken = layers * (6 * d + 4 + ffn * gelu + heads * tokens) + d + 2 + vocabulary;
  return tokens * perToken;
}

TransformerShape transformerShape(const ModelConfig& config, const SampleShape& samples,
                                  const std::string& path) {
  if (!samples.tokens() || samples.targets != samples.features)
    throw SpecError(path + ".kind",
                    concat("the transformer needs token sequences with a target per token "
                           "(language, copy), and this dataset's samples are ",
                           samples.image() ? "images" : "vectors", " of ", samples.features,
                           " features; use the mlp or the cnn"));
  const SettingsView view(transformerSettings(), config.parameters);
  TransformerShape s;
  s.tokens = samples.features;
  s.vocabulary = samples.vocabulary;
  s.layers = view.integer("layers");
  s.width = view.integer("width");
  s.heads = view.integer("heads");
  s.ffn = view.integer("ffn") == 0 ? 4 * s.width : view.integer("ffn");
  s.causal = view.choice("attention") == "causal";
  s.activation = config.activation;
  if (s.width % s.heads != 0)
    throw SpecError(path + ".heads", concat("must divide the width ", s.width,
                                            " into heads of "
                                            "equal width (got ",
                                            s.heads, ")"));
  if (samples.causal && !s.causal)
    throw SpecError(path + ".attention",
                    "bidirectional attention sees every token of a sequence, and this dataset's "
                    "targets are the next tokens: it would read them; use causal");
  return s;
}

Transformer::Transformer(Backend& backend, const TransformerShape& shape, int64_t controlSlots)
    : Model(backend, shape.tokens, controlSlots), shape_(shape) {
  requireSequenceLayers(backend, "transformer (embedding, layer normalisation, attention)");
  const int64_t d = shape.width, v = shape.vocabulary, t = shape.tokens, f = shape.ffn;
  std::vector<ParameterTensor> tensors;
  int64_t at = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> dims) {
    const int64_t offset = at;
    int64_t size = 1;
    for (int64_t n : dims) size *= n;
    tensors.push_back({name, offset, std::move(dims)});
    at += size;
    return offset;
  };
  auto dense = [&](const std::string& name, int64_t in, int64_t out) {
    Dense r;
    r.in = in;
    r.out = out;
    r.weight = add(name + ".weight", {in, out});
    r.bias = add(name + ".bias", {out});
    return r;
  };
  auto norm = [&](const std::string& name) {
    Norm n;
    n.gain = add(name + ".gain", {d});
    n.bias = add(name + ".bias", {d});
    return n;
  };
  tokens_ = add("embed.tokens", {v, d});
  positions_ = add("embed.positions", {t, d});
  const int64_t embeddingsEnd = at;
  blocks_.resize(static_cast<std::size_t>(shape.layers));
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    Block& b = blocks_[i];
    const std::string name = "block" + std::to_string(i);
    b.begin = at;
    b.ln1 = norm(name + ".ln1");
    b.qkv = dense(name + ".attn.qkv", d, 3 * d);
    b.attnOut = dense(name + ".attn.out", d, d);
    b.ln2 = norm(name + ".ln2");
    b.ffnIn = dense(name + ".ffn.in", d, f);
    b.ffnOut = dense(name + ".ffn.out", f, d);
    b.end = at;
  }
  const int64_t headBegin = at;
  final_ = norm("final.ln");
  head_ = dense("head", d, v);
  DTLAB_ENFORCE(at == shape.parameters(), "transformer layout of ", at, " parameters, expected ",
                shape.parameters());
  std::vector<GradientRange> handOffs = {{headBegin, at}};
  for (auto b = blocks_.rbegin(); b != blocks_.rend(); ++b) handOffs.push_back({b->begin, b->end});
  handOffs.push_back({0, embeddingsEnd});
  allocate(std::move(tensors), std::move(handOffs), t * v);
}

Transformer::~Transformer() {
  releaseActivations();
}

void Transformer::releaseActivations() {
  for (Block& b : blocks_)
    for (float** p : {&b.x, &b.h1, &b.mean1, &b.rstd1, &b.qkvOut, &b.probabilities, &b.context,
                      &b.mid, &b.h2, &b.mean2, &b.rstd2, &b.z, &b.u}) {
      backend_.release(*p);
      *p = nullptr;
    }
  for (float** p :
       {&out_, &hf_, &meanF_, &rstdF_, &logits_, &dLogits_, &dX_, &dH_, &dWide_, &dContext_}) {
    backend_.release(*p);
    *p = nullptr;
  }
  capacity_ = 0;
}

double Transformer::trainingFlops(int64_t rows) const {
  // Forward, then backward's two products per forward one (the embeddings' are lookups).
  return 2.0 * 3.0 * static_cast<double>(shape_.forwardMacs()) * static_cast<double>(rows);
}

void Transformer::initialize(InitScheme scheme, uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(parameterCount()), 0.0f);
  uint64_t stream = 0;
  auto normal = [&](int64_t offset, int64_t n, float std) {
    Rng rng(deriveSeed(seed, kInitStream, stream++));
    for (int64_t j = 0; j < n; ++j) host[static_cast<std::size_t>(offset + j)] = std * rng.normal();
  };
  auto dense = [&](const Dense& r, float gain) {
    Rng rng(deriveSeed(seed, kInitStream, stream++));
    float* w = host.data() + r.weight;
    if (scheme == InitScheme::kHe) {
      const float std = gain * std::sqrt(2.0f / static_cast<float>(r.in));
      for (int64_t j = 0; j < r.in * r.out; ++j) w[j] = std * rng.normal();
    } else {
      const float bound = gain * std::sqrt(6.0f / static_cast<float>(r.in + r.out));
      for (int64_t j = 0; j < r.in * r.out; ++j) w[j] = rng.uniform(-bound, bound);
    }
  };
  auto ones = [&](const Norm& n) { std::fill_n(host.begin() + n.gain, shape_.width, 1.0f); };
  normal(tokens_, shape_.vocabulary * shape_.width, kEmbeddingStd);
  normal(positions_, shape_.tokens * shape_.width, kEmbeddingStd);
  const float residual = 1.0f / std::sqrt(2.0f * static_cast<float>(shape_.layers));
  for (const Block& b : blocks_) {
    ones(b.ln1);
    ones(b.ln2);
    dense(b.qkv, 1.0f);
    dense(b.attnOut, residual);
    dense(b.ffnIn, 1.0f);
    dense(b.ffnOut, residual);
  }
  ones(final_);
  dense(head_, 1.0f);
  setParams(host);
}

AttentionShape Transformer::attention(int64_t samples) const {
  return {samples, shape_.tokens, shape_.width, shape_.heads, shape_.causal};
}

void Transformer::reserve(int64_t samples) {
  if (samples <= capacity_) return;
  releaseActivations();
  const int64_t n = samples * shape_.tokens, d = shape_.width, f = shape_.ffn;
  const bool gelu = shape_.activation == Activation::kGELU;
  for (Block& b : blocks_) {
    b.x = backend_.allocate(n * d);
    b.h1 = backend_.allocate(n * d);
    b.mean1 = backend_.allocate(n);
    b.rstd1 = backend_.allocate(n);
    b.qkvOut = backend_.allocate(n * 3 * d);
    b.probabilities = backend_.allocate(attention(samples).probabilityFloats());
    b.context = backend_.allocate(n * d);
    b.mid = backend_.allocate(n * d);
    b.h2 = backend_.allocate(n * d);
    b.mean2 = backend_.allocate(n);
    b.rstd2 = backend_.allocate(n);
    if (gelu) b.z = backend_.allocate(n * f);
    b.u = backend_.allocate(n * f);
  }
  out_ = backend_.allocate(n * d);
  hf_ = backend_.allocate(n * d);
  meanF_ = backend_.allocate(n);
  rstdF_ = backend_.allocate(n);
  logits_ = backend_.allocate(n * shape_.vocabulary);
  dLogits_ = backend_.allocate(n * shape_.vocabulary);
  dX_ = backend_.allocate(n * d);
  dH_ = backend_.allocate(n * d);
  dWide_ = backend_.allocate(n * std::max(f, 3 * d));
  dContext_ = backend_.allocate(n * d);
  capacity_ = samples;
}

void Transformer::dense(const Dense& r, const float* in, int64_t rows, float* out,
                        std::optional<Activation> act, float* z) {
  float* pre = z != nullptr ? z : out;
  backend_.gemm(false, false, rows, r.out, r.in, 1.0f, in, r.in, params() + r.weight, r.out, 0.0f,
                pre, r.out);
  backend_.biasActivation(pre, params() + r.bias, rows, r.out, act, out, z);
}

void Transformer::denseBackward(const Dense& r, const float* in, float* dOut, int64_t rows,
                                float* dIn) {
  // The bias gradient's pass writes dOut back as it was (no activation: dz = dOut), so the
  // residual stream's gradient can be handed in itself, uncopied.
  backend_.activationBackward(dOut, nullptr, nullptr, rows, r.out, std::nullopt, dOut,
                              grads() + r.bias);
  backend_.gemm(true, false, r.in, r.out, rows, 1.0f, in, r.in, dOut, r.out, 0.0f,
                grads() + r.weight, r.out);
  if (dIn != nullptr)
    backend_.gemm(false, true, rows, r.in, r.out, 1.0f, dOut, r.out, params() + r.weight, r.out,
                  0.0f, dIn, r.in);
}

const float* Transformer::forward(const float* x, int64_t samples) {
  reserve(samples);
  const int64_t n = samples * shape_.tokens, d = shape_.width;
  float* stream = blocks_.empty() ? out_ : blocks_.front().x;
  backend_.embeddingForward(x, n, shape_.vocabulary, params() + tokens_, params() + positions_,
                            shape_.tokens, d, stream);
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    Block& b = blocks_[i];
    backend_.layerNormForward(b.x, n, d, params() + b.ln1.gain, params() + b.ln1.bias, kNormEps,
                              b.h1, b.mean1, b.rstd1);
    dense(b.qkv, b.h1, n, b.qkvOut);
    backend_.attentionForward(attention(samples), b.qkvOut, b.probabilities, b.context);
    dense(b.attnOut, b.context, n, b.mid);
    backend_.addTo(b.x, n * d, b.mid);
    backend_.layerNormForward(b.mid, n, d, params() + b.ln2.gain, params() + b.ln2.bias, kNormEps,
                              b.h2, b.mean2, b.rstd2);
    dense(b.ffnIn, b.h2, n, b.u, shape_.activation, b.z);
    float* next = i + 1 < blocks_.size() ? blocks_[i + 1].x : out_;
    dense(b.ffnOut, b.u, n, next);
    backend_.addTo(b.mid, n * d, next);
  }
  backend_.layerNormForward(out_, n, d, params() + final_.gain, params() + final_.bias, kNormEps,
                            hf_, meanF_, rstdF_);
  dense(head_, hf_, n, logits_);
  return logits_;
}

void Transformer::backward(const float* x, float* dOutput, int64_t samples,
                           GradientListener* listener) {
  DTLAB_ENFORCE(samples <= capacity_, "backward before forward");
  const int64_t n = samples * shape_.tokens, d = shape_.width;
  auto handOff = [&](std::size_t k) {
    if (listener != nullptr) listener->onGradientsReady(handOffs()[k].begin, handOffs()[k].end);
  };
  denseBackward(head_, hf_, dOutput, n, dH_);
  backend_.layerNormBackward(out_, dH_, n, d, params() + final_.gain, meanF_, rstdF_, dX_,
                             grads() + final_.gain, grads() + final_.bias);
  handOff(0);
  for (std::size_t k = blocks_.size(); k-- > 0;) {
    Block& b = blocks_[k];
    // The feed-forward half: dX reaches its output and, by the residual, mid.
    denseBackward(b.ffnOut, b.u, dX_, n, dWide_);
    backend_.activationBackward(dWide_, b.z, b.u, n, shape_.ffn, shape_.activation, dWide_,
                                nullptr);
    denseBackward(b.ffnIn, b.h2, dWide_, n, dH_);
    backend_.layerNormBackward(b.mid, dH_, n, d, params() + b.ln2.gain, b.mean2, b.rstd2, dContext_,
                               grads() + b.ln2.gain, grads() + b.ln2.bias);
    backend_.addTo(dContext_, n * d, dX_);  // dX is now d(mid)
    // The attention half: d(mid) reaches its output and, by the residual, x.
    denseBackward(b.attnOut, b.context, dX_, n, dContext_);
    backend_.attentionBackward(attention(samples), b.qkvOut, b.probabilities, dContext_, dWide_);
    denseBackward(b.qkv, b.h1, dWide_, n, dH_);
    backend_.layerNormBackward(b.x, dH_, n, d, params() + b.ln1.gain, b.mean1, b.rstd1, dContext_,
                               grads() + b.ln1.gain, grads() + b.ln1.bias);
    backend_.addTo(dContext_, n * d, dX_);
    handOff(blocks_.size() - k);
  }
  backend_.embeddingBackward(x, n, shape_.vocabulary, dX_, shape_.tokens, d, grads() + tokens_,
                             grads() + positions_);
  handOff(blocks_.size() + 1);
}

ModelKindDescriptor transformerKind() {
  ModelKindDescriptor d;
  d.name = "transformer";
  d.summary =
      "A decoder-only transformer over token sequences: token and position embeddings, blocks "
      "of self-attention and a feed-forward layer (pre-normalised, residual), a head per token";
  d.parameters = transformerSettings();
  d.sizeSetting = "width";
  d.readsHidden = false;
  d.parameterCount = [](const ModelConfig& config, const SampleShape& samples) {
    return transformerShape(config, samples).parameters();
  };
  d.forwardMacs = [](const ModelConfig& config, const SampleShape& samples) {
    return transformerShape(config, samples).forwardMacs();
  };
  d.activationFloats = [](const ModelConfig& config, const SampleShape& samples) {
    return transformerShape(config, samples).activationFloats();
  };
  d.shape = [](const ModelConfig& config, const SampleShape& samples) {
    const TransformerShape s = transformerShape(config, samples);
    return concat("transformer ", s.layers, " x (", s.heads, " heads, width ", s.width, ", ffn ",
                  s.ffn, "), ", s.tokens, " tokens of ", s.vocabulary,
                  s.causal ? ", causal" : ", bidirectional");
  };
  d.check = [](const ModelConfig& config, const SampleShape& samples, const std::string& path) {
    transformerShape(config, samples, path);
  };
  d.make = [](Backend& backend, const ModelConfig& config, const SampleShape& samples,
              int64_t controlSlots) -> std::unique_ptr<Model> {
    return std::make_unique<Transformer>(backend, transformerShape(config, samples), controlSlots);
  };
  return d;
}

}  // namespace dtlab::core
