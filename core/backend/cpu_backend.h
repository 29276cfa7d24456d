#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/backend/backend.h"

namespace dtlab::core {

class DnnlConvolutions;

// Host kernels: GEMM from oneDNN (dnnl_sgemm), everything else fused loops of our
// own, threaded with OpenMP so the GEMM library and our loops share one pool of
// threads instead of oversubscribing the cores.
//
// A C = A * B^T product (the input gradient of a dense layer) is the one shape where
// dnnl_sgemm is slow (135 GFLOP/s against 190-210 for the others on two threads,
// measured here); oneDNN's matmul primitive with B in "ba" layout runs it at about
// 220, so large products of that shape go through a cached primitive instead.
//
// With more than one thread a large product is split by C's rows or columns (whichever
// are more), each thread's slice one single-threaded dnnl_sgemm call (oneDNN runs a call
// made inside a parallel region on that thread alone). oneDNN's own threading of one call
// left much on the table: on 2 threads (AMD EPYC family 26, 2026-12-03, medians) NN
// 256x1024x1024 ran at 408 GFLOP/s split against 321, NT 256x1024x1024 at 373-382 against
// 260-270, NT 256x256x1024 at 322 against 203, TN 1024x1024x256 at 415 against 394. The
// matmul primitive above serves one thread.
//
// Convolutions are oneDNN's primitives and pooling loops of our own (core/backend/cpu_layers.h).
//
// Small products have paths of their own (core/backend/small_gemm.h): C at most 8 columns
// wide (an output layer) in narrowGemm, a small A * B^T as A * B after B is transposed in
// register tiles. Elementwise kernels below kParallelThreshold elements never enter an
// OpenMP region. docs/benchmarks.md ("CPU kernels") has the measurements.
//
// Why oneDNN: measured here on the training step's shapes (256x1024x1024 NN, TN, NT)
// it ran at about 190-210 GFLOP/s on two threads against OpenBLAS's 150 and BLIS's
// 85-180, and within 10% of OpenBLAS on the 64x64x64 shapes of small models. See
// docs/benchmarks.md ("CPU kernels") for the table.
class CpuBackend final : public Backend {
 public:
  // threads <= 0: every core the process may use.
  explicit CpuBackend(int threads);

  std::string name() const override { return "cpu"; }
  int threads() const override { return threads_; }

  float* allocate(int64_t count) override;
  void release(float* p) noexcept override;
  void upload(float* dst, const float* host, int64_t count) override;
  void download(float* host, const float* src, int64_t count) override;
  void fill(float* dst, int64_t count, float value) override;
  void gatherRows(const float* src, int64_t cols, std::span<const int64_t> rows,
                  float* dst) override;

  void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) override;
  void biasActivation(const float* z, const float* bias, int64_t rows, int64_t cols,
                      std::optional<Activation> act, float* out, float* zOut) override;
  void activationBackward(const float* dOut, const float* z, const float* out, int64_t rows,
                          int64_t cols, std::optional<Activation> act, float* dz,
                          float* dBias) override;
  LossResult softmaxCrossEntropy(const float* logits, const float* labels, int64_t rows,
                                 int64_t classes, float gradScale, float* dLogits) override;
  LossResult meanSquaredError(const float* pred, const float* target, int64_t rows, int64_t outputs,
                              float gradScale, float* dPred) override;
  bool hasImageLayers() const override { return true; }
  void conv2dForward(const Conv2dShape& shape, const float* x, const float* w, const float* bias,
                     float* y) override;
  void conv2dBackwardData(const Conv2dShape& shape, const float* dy, const float* w,
                          float* dx) override;
  void conv2dBackwardWeights(const Conv2dShape& shape, const float* x, const float* dy, float* dw,
                             float* dBias) override;
  void pool2dForward(const Pool2dShape& shape, const float* x, float* y) override;
  void pool2dBackward(const Pool2dShape& shape, const float* x, const float* y, const float* dy,
                      float* dx) override;
  // Token models' layers: cpu_sequence.cc.
  bool hasSequenceLayers() const override { return true; }
  void embeddingForward(const float* ids, int64_t rows, int64_t vocabulary, const float* table,
                        const float* positions, int64_t period, int64_t width, float* out) override;
  void addTo(const float* x, int64_t count, float* y) override;
  void embeddingBackward(const float* ids, int64_t rows, int64_t vocabulary, const float* dOut,
                         int64_t period, int64_t width, float* dTable, float* dPositions) override;
  void layerNormForward(const float* x, int64_t rows, int64_t width, const float* gain,
                        const float* bias, float eps, float* y, float* mean, float* rstd) override;
  void layerNormBackward(const float* x, const float* dy, int64_t rows, int64_t width,
                         const float* gain, const float* mean, const float* rstd, float* dx,
                         float* dGain, float* dBias) override;
  void attentionForward(const AttentionShape& shape, const float* qkv, float* probabilities,
                        float* out) override;
  void attentionBackward(const AttentionShape& shape, const float* qkv, const float* probabilities,
                         const float* dOut, float* dQkv) override;
  std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig& config) override;
  void optimizerUpdate(Optimizer& optimizer, float* params, const float* grads, int64_t begin,
                       int64_t end, int64_t step, float lr) override;

 private:
  struct MatmulCache;
  bool matmulTransposedB(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);
  // gemm on every thread, each taking a slice of C (see the class comment).
  void splitGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc);

  int threads_;
  std::unique_ptr<MatmulCache> matmuls_;
  std::unique_ptr<DnnlConvolutions> convolutions_;

 public:
  ~CpuBackend() override;
};

// Cores this process may run on (sched_getaffinity), at least 1.
int availableCores();

}  // namespace dtlab::core
