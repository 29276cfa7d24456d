#pragma once
// The `transformer` model kind: a decoder-only transformer over a sequence dataset's tokens
// (core/data/sequences.cc), scored per token.
//
// A sample's T token ids become T rows of width d: a token embedding plus a learnt position
// embedding. Then `layers` pre-normalised blocks, each
//   x = x + Wo attention(LayerNorm(x) Wqkv)          (heads of d / heads, causal by default)
//   x = x + W2 act(LayerNorm(x) W1)                   (act: the model's activation; ffn wide)
// then a final LayerNorm and a dense head to the vocabulary at every position: T x V outputs a
// sample, a class distribution per target. Rows inside are tokens: a batch of B samples is
// B x T rows, so every dense layer is one GEMM over all of them.
//
// Tensors, in buffer order: "embed.tokens" (V x d), "embed.positions" (T x d); per block i
// "block<i>.ln1.gain", ".ln1.bias", ".attn.qkv.weight" (d x 3d), ".attn.qkv.bias",
// ".attn.out.weight" (d x d), ".attn.out.bias", ".ln2.gain", ".ln2.bias", ".ffn.in.weight"
// (d x ffn), ".ffn.in.bias", ".ffn.out.weight" (ffn x d), ".ffn.out.bias"; "final.ln.gain",
// "final.ln.bias", "head.weight" (d x V), "head.bias". Hand-offs, in the order backward
// finishes them: the head with the final norm, each block from the last, the embeddings.
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/data/dataset_kinds.h"
#include "core/nn/model.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

struct ModelKindDescriptor;

// The shape a config and a dataset's samples give.
struct TransformerShape {
  int64_t tokens = 0;      // T, the dataset's features
  int64_t vocabulary = 0;  // V, its classes
  int64_t layers = 0;
  int64_t width = 0;  // d
  int64_t heads = 0;
  int64_t ffn = 0;  // the feed-forward layers' hidden width
  bool causal = true;
  Activation activation = Activation::kGELU;
  int64_t parameters() const;
  int64_t forwardMacs() const;       // per sample
  int64_t activationFloats() const;  // kept per sample for backward
};

// Throws SpecError under `path` ("model") for samples a transformer cannot take (vectors, or
// next-token targets with bidirectional attention) or settings that do not fit (a width that
// the heads do not divide).
TransformerShape transformerShape(const ModelConfig& config, const SampleShape& samples,
                                  const std::string& path = "model");

class Transformer final : public Model {
 public:
  Transformer(Backend& backend, const TransformerShape& shape, int64_t controlSlots);
  ~Transformer() override;

  double trainingFlops(int64_t rows) const override;
  // Dense weights by `scheme` on their fan-in (the two that feed the residual stream scaled by
  // 1 / sqrt(2 x layers)), embeddings normal with std 0.02, norms' gains 1, biases 0.
  void initialize(InitScheme scheme, uint64_t seed) override;
  void reserve(int64_t rows) override;
  const float* forward(const float* x, int64_t rows) override;
  void backward(const float* x, float* dOutput, int64_t rows,
                GradientListener* listener = nullptr) override;
  float* outputGradBuffer() override { return dLogits_; }

 private:
  struct Dense {
    int64_t weight = 0, bias = 0, in = 0, out = 0;
  };
  struct Norm {
    int64_t gain = 0, bias = 0;
  };
  struct Block {
    Norm ln1, ln2;
    Dense qkv, attnOut, ffnIn, ffnOut;
    int64_t begin = 0, end = 0;  // its parameters
    // Activations (rows = samples x tokens).
    float* x = nullptr;  // the block's input
    float* h1 = nullptr;
    float* mean1 = nullptr;
    float* rstd1 = nullptr;
    float* qkvOut = nullptr;
    float* probabilities = nullptr;
    float* context = nullptr;
    float* mid = nullptr;  // x after the attention's residual
    float* h2 = nullptr;
    float* mean2 = nullptr;
    float* rstd2 = nullptr;
    float* z = nullptr;  // the feed-forward pre-activation (GELU's backward needs it)
    float* u = nullptr;
  };
  void releaseActivations();
  void dense(const Dense& d, const float* in, int64_t rows, float* out,
             std::optional<Activation> act = std::nullopt, float* z = nullptr);
  // dW, db of `d` from its input and dOut (left as it was); dIn = dOut W^T when not null.
  void denseBackward(const Dense& d, const float* in, float* dOut, int64_t rows, float* dIn);
  AttentionShape attention(int64_t samples) const;

  TransformerShape shape_;
  int64_t tokens_ = 0, positions_ = 0;  // embedding offsets
  Norm final_;
  Dense head_;
  std::vector<Block> blocks_;
  int64_t capacity_ = 0;  // samples
  float* out_ = nullptr;  // the last block's output
  float* hf_ = nullptr;
  float* meanF_ = nullptr;
  float* rstdF_ = nullptr;
  float* logits_ = nullptr;
  float* dLogits_ = nullptr;
  float* dX_ = nullptr;  // the residual stream's gradient
  float* dH_ = nullptr;
  float* dWide_ = nullptr;  // of ffn or 3d columns
  float* dContext_ = nullptr;
};

ModelKindDescriptor transformerKind();

}  // namespace dtlab::core
