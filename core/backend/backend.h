#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/data/sample_program.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

class Optimizer;

// A dataset's samples generated in a backend's memory (Backend::makeSampleSource), so a GPU
// worker's training rows are made where it trains on them and never cross the bus.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  // Row k of x (features floats) and y[k] become sample indices[k] of `split`, the sample
  // Dataset::generateIndices writes; x and y are the backend's memory, indices the host's.
  virtual void generate(Split split, std::span<const int64_t> indices, float* x, float* y) = 0;
};

// Result of a fused loss kernel over one batch.
struct LossResult {
  double lossSum = 0.0;  // sum over rows of the per-sample loss (divide by rows for the mean)
  int64_t correct = 0;   // classification: rows whose argmax equals the label
};

// A 2-D convolution of a batch of images: activations NCHW (batch, channels, height, width)
// and weights OIHW (out channels, in channels, kernel rows, kernel columns), row-major, a
// square kernel with the same stride and zero padding along both axes.
struct Conv2dShape {
  int64_t batch = 0;
  int64_t inChannels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t outChannels = 0;
  int64_t kernel = 3;
  int64_t stride = 1;
  int64_t padding = 1;
  int64_t outHeight() const { return (height + 2 * padding - kernel) / stride + 1; }
  int64_t outWidth() const { return (width + 2 * padding - kernel) / stride + 1; }
  int64_t weightCount() const { return outChannels * inChannels * kernel * kernel; }
  // Multiply-adds per image of the forward pass.
  int64_t macsPerImage() const { return outHeight() * outWidth() * weightCount(); }
  auto operator<=>(const Conv2dShape&) const = default;
};

enum class PoolKind { kMax, kAverage };

// 2-D pooling of NCHW activations with a square window, per channel. Windows over the zero
// padding average only the pixels inside the image.
struct Pool2dShape {
  PoolKind kind = PoolKind::kMax;
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t kernel = 2;
  int64_t stride = 2;
  int64_t padding = 0;
  // Backward only: x is the output of this activation (ReLU or tanh, whose derivative its
  // output gives), and dx is the gradient of the activation's input, the two backward passes
  // in one over the full-size image. None: dx is the gradient of x.
  std::optional<Activation> inputActivation{};
  int64_t outHeight() const { return (height + 2 * padding - kernel) / stride + 1; }
  int64_t outWidth() const { return (width + 2 * padding - kernel) / stride + 1; }
};

// Self-attention over a batch of token sequences (Backend::attentionForward).
struct AttentionShape {
  int64_t batch = 0;   // sequences
  int64_t tokens = 0;  // per sequence
  int64_t width = 0;   // of a token's query, key and value each: heads x head width
  int64_t heads = 1;
  bool causal = true;  // a token attends to itself and the tokens before it only
  int64_t headWidth() const { return width / heads; }
  int64_t probabilityFloats() const { return batch * heads * tokens * tokens; }
};

// The kernels a training step needs, on memory the backend owns.
//
// The model, the training loop, the strategies and the collectives only ever call
// this interface, so adding a backend (CUDA) changes none of them. Pointers passed
// to a backend's kernels point into memory allocated by that same backend
// (host memory for the CPU backend, device memory for CUDA); data crosses the
// boundary only through upload()/download().
//
// Matrices are row-major float32. Every kernel is synchronous from the caller's
// point of view (a GPU backend synchronises its stream where a host needs results).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Whether the backend's memory is host memory that the collectives (Gloo) and the parameter
  // client may read and write in place: the CPU's is, a GPU's is not.
  virtual bool hostMemory() const { return true; }
  // Waits for every kernel queued so far (a GPU backend's stream; nothing on the CPU, whose
  // kernels return when done). Timers call it before reading the clock.
  virtual void synchronize() {}
  // The stream the backend's kernels run on (a GPU backend's cudaStream_t; null on the CPU), for
  // a device-memory communicator to order its collectives after them.
  virtual void* stream() const { return nullptr; }
  // Worker threads the backend uses for one kernel (1 for a GPU backend).
  virtual int threads() const = 0;

  virtual float* allocate(int64_t count) = 0;
  virtual void release(float* p) noexcept = 0;
  virtual void upload(float* dst, const float* host, int64_t count) = 0;
  virtual void download(float* host, const float* src, int64_t count) = 0;
  virtual void fill(float* dst, int64_t count, float value) = 0;
  // Row r of dst = row rows[r] of src, rows of `cols` floats; src and dst are this backend's
  // memory, the row numbers host memory. A training set kept in a GPU's memory becomes a batch
  // this way without crossing the bus again (only the row numbers do).
  virtual void gatherRows(const float* src, int64_t cols, std::span<const int64_t> rows,
                          float* dst) = 0;
  // A source that runs `program` (a Dataset's) on this backend; the program's tables are
  // copied, so the dataset may go first. Null where the host generates the samples itself:
  // the CPU, whose memory they are written to anyway.
  virtual std::unique_ptr<SampleSource> makeSampleSource(const datagen::SampleProgram& program) {
    (void)program;
    return nullptr;
  }

  // c[m x n] = alpha * op(a) * op(b) + beta * c. op(a) is m x k, op(b) is k x n;
  // lda/ldb/ldc are the row strides of the matrices as stored.
  virtual void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                    int64_t ldc) = 0;

  // out[r][c] = act(z[r][c] + bias[c]), and zOut[r][c] = z[r][c] + bias[c] when zOut is
  // not null (GELU's backward needs the pre-activation). out and zOut may equal z.
  virtual void biasActivation(const float* z, const float* bias, int64_t rows, int64_t cols,
                              std::optional<Activation> act, float* out, float* zOut) = 0;
  // dz = dOut * act'(.), from the activation output `out` (ReLU, tanh) or the
  // pre-activation `z` (GELU); dz may equal dOut. Accumulates nothing: writes
  // dBias[c] = sum over rows of dz[r][c] when dBias is not null.
  virtual void activationBackward(const float* dOut, const float* z, const float* out, int64_t rows,
                                  int64_t cols, std::optional<Activation> act, float* dz,
                                  float* dBias) = 0;

  // Softmax cross-entropy with integer labels stored as floats. Writes
  // dLogits = (softmax - onehot) * gradScale when dLogits is not null.
  virtual LossResult softmaxCrossEntropy(const float* logits, const float* labels, int64_t rows,
                                         int64_t classes, float gradScale, float* dLogits) = 0;
  // Squared error 0.5*(pred - target)^2 summed over outputs (so d/dpred = pred - target,
  // times gradScale); lossSum is the sum over rows of sum over outputs of (pred-target)^2,
  // the quantity whose mean PyTorch's MSELoss reports when outputs == 1.
  virtual LossResult meanSquaredError(const float* pred, const float* target, int64_t rows,
                                      int64_t outputs, float gradScale, float* dPred) = 0;

  // Layers beyond dense ones. A backend without them keeps these defaults, which throw Error
  // naming the backend and the layer, and says so here, so that a model that needs them is
  // refused where it is built rather than at its first step.
  virtual bool hasImageLayers() const { return false; }  // conv2d* and pool2d*
  //
  // y = conv(x, w) + bias (bias per out channel; none when null).
  virtual void conv2dForward(const Conv2dShape& shape, const float* x, const float* w,
                             const float* bias, float* y);
  // dx = the input gradient given dy (overwritten, not accumulated).
  virtual void conv2dBackwardData(const Conv2dShape& shape, const float* dy, const float* w,
                                  float* dx);
  // dw and, when not null, dBias (per out channel) given x and dy; overwritten.
  virtual void conv2dBackwardWeights(const Conv2dShape& shape, const float* x, const float* dy,
                                     float* dw, float* dBias);
  virtual void pool2dForward(const Pool2dShape& shape, const float* x, float* y);
  // dx given dy; x and y are the forward's input and output (a maximum's gradient goes to the
  // first pixel of its window that equals it). dx is overwritten.
  virtual void pool2dBackward(const Pool2dShape& shape, const float* x, const float* y,
                              const float* dy, float* dx);

  // Token models' layers (a transformer): rows are tokens, a batch of B sequences of T tokens
  // being B x T rows. Defaults as the image layers'.
  virtual bool hasSequenceLayers() const { return false; }
  //
  // out[r] = table[ids[r]] + positions[r % period], rows of `width`: ids are token ids stored as
  // floats (a dataset's features), each in [0, vocabulary) (Error otherwise).
  virtual void embeddingForward(const float* ids, int64_t rows, int64_t vocabulary,
                                const float* table, const float* positions, int64_t period,
                                int64_t width, float* out);
  // y += x (a residual connection).
  virtual void addTo(const float* x, int64_t count, float* y);
  // dTable (vocabulary x width: the rows of the ids seen, the others zero) and dPositions
  // (period x width) given dOut; overwritten.
  virtual void embeddingBackward(const float* ids, int64_t rows, int64_t vocabulary,
                                 const float* dOut, int64_t period, int64_t width, float* dTable,
                                 float* dPositions);
  // Each row normalised to zero mean and unit variance (eps added to the variance), then
  // y = xhat * gain + bias; mean and rstd (1 / sqrt(var + eps)) per row kept for backward.
  virtual void layerNormForward(const float* x, int64_t rows, int64_t width, const float* gain,
                                const float* bias, float eps, float* y, float* mean, float* rstd);
  // dx, dGain and dBias (overwritten) given dy and the forward's x, mean and rstd.
  virtual void layerNormBackward(const float* x, const float* dy, int64_t rows, int64_t width,
                                 const float* gain, const float* mean, const float* rstd, float* dx,
                                 float* dGain, float* dBias);
  // Multi-head self-attention's core: qkv has a row per token of its query, key and value
  // (3 x width columns, each of `heads` heads of width / heads), and out gets each head's
  // softmax(q k^T / sqrt(width / heads)) v (rows x width; a causal head sees no later token);
  // probabilities (batch x heads x tokens x tokens) are kept for backward.
  virtual void attentionForward(const AttentionShape& shape, const float* qkv, float* probabilities,
                                float* out);
  // dQkv (overwritten) given dOut and the forward's qkv and probabilities.
  virtual void attentionBackward(const AttentionShape& shape, const float* qkv,
                                 const float* probabilities, const float* dOut, float* dQkv);

  // The backend's optimizer kernels for this configuration.
  virtual std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig& config) = 0;
  // Applies optimizer to params[begin, end), splitting the range across the backend's threads.
  virtual void optimizerUpdate(Optimizer& optimizer, float* params, const float* grads,
                               int64_t begin, int64_t end, int64_t step, float lr) = 0;
};

// Throws the Error a backend without conv2d* and pool2d* gives, naming `layer` ("2-D
// convolution"), unless the backend has them.
void requireImageLayers(const Backend& backend, const std::string& layer);
// The same for the token models' layers (embedding, layer normalisation, attention).
void requireSequenceLayers(const Backend& backend, const std::string& layer);

// Backends in order of preference, each with its own availability test (as Horovod's
// OperationManager keeps its operations). The CPU backend is always last and always enabled.
struct BackendInfo {
  std::string name;      // "cpu", "cuda"
  bool enabled = false;  // compiled in and a device present
  std::string why;       // when not enabled: what is missing
};
std::vector<BackendInfo> availableBackends();
// "cpu" or "cuda[:N]"; threads applies to the CPU backend (0: all cores). precision other than
// kFp32 needs a CUDA device (the CPU backend computes in FP32 only).
std::unique_ptr<Backend> makeBackend(const std::string& device, int threads,
                                     Precision precision = Precision::kFp32);

// A GPU a node can place workers on, as dtlab-node reports it (GetInfo).
struct DeviceDescription {
  std::string name;               // "cuda:0"
  std::string model;              // "NVIDIA H200"
  int64_t memoryBytes = 0;        // device memory in all
  std::string computeCapability;  // "9.0"
};
// The CUDA device `device` names ("cuda" is cuda:0, or "cuda:N"). Throws Error saying why it
// cannot be used: a malformed name, a build without CUDA, no driver or GPU, no such index.
DeviceDescription describeCudaDevice(const std::string& device);
// CUDA devices this process sees: 0 without CUDA support, a driver or a GPU.
int cudaDeviceCount();
// N of "cuda:N" (0 for "cuda"); throws Error on any other text.
int cudaDeviceIndex(const std::string& device);

}  // namespace dtlab::core
