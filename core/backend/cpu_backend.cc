#include "core/backend/cpu_backend.h"

#include "core/backend/cpu_layers.h"
#include "core/backend/cpu_math.h"
#include "core/backend/cpu_parallel.h"
#include "core/backend/small_gemm.h"

#include <omp.h>
#include <sched.h>
#include <dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <unordered_map>
#include <vector>

#include "core/common/check.h"
#include "core/optim/optimizer.h"
#include "core/tensor/tensor.h"

namespace dtlab::core {
namespace {

inline float reluGrad(float out) {
  return out > 0.0f ? 1.0f : 0.0f;
}

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// The erf form of GELU, PyTorch's default (not the tanh approximation).
inline float gelu(float x) {
  return 0.5f * x * (1.0f + fastmath::erf(x * kInvSqrt2));
}
// Phi(x) + x phi(x): erf(x / sqrt 2) and phi share their exponential, e^(-x^2 / 2).
inline float geluGrad(float x) {
  const float e = fastmath::exp(-0.5f * x * x);
  return 0.5f * (1.0f + fastmath::erfGivenExp(x * kInvSqrt2, e)) + x * kInvSqrt2Pi * e;
}

template <typename Act>
void biasActRows(const float* z, const float* __restrict bias, int64_t rows, int64_t cols,
                 float* out, float* zOut, int threads, Act act) {
  forRange(rows, rows * cols, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* zr = z + r * cols;
      float* outr = out + r * cols;
      if (zOut != nullptr) {
        float* zo = zOut + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) {
          const float v = zr[c] + bias[c];
          zo[c] = v;
          outr[c] = act(v);
        }
      } else {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) outr[c] = act(zr[c] + bias[c]);
      }
    }
  });
}

// dz = dOut * grad(x) and dBias = column sums of dz. Threads split the columns so
// that each owns its bias entries: no reduction buffers, no allocation.
template <typename Grad>
void actBackwardCols(const float* dOut, const float* x, int64_t rows, int64_t cols, float* dz,
                     float* dBias, int threads, Grad grad) {
  const int blocks = (cols >= 32 * threads) ? threads : 1;
  forRange(blocks, rows * cols, blocks, [&](int64_t b0, int64_t b1) {
    // Blocks are rounded to 16 floats so threads never share a cache line of dz.
    const int64_t per = (cols + blocks - 1) / blocks;
    const int64_t c0 = std::min(cols, (b0 * per + 15) / 16 * 16);
    const int64_t c1 = b1 == blocks ? cols : std::min(cols, (b1 * per + 15) / 16 * 16);
    if (dBias != nullptr) std::fill(dBias + c0, dBias + c1, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* __restrict dor = dOut + r * cols;
      const float* __restrict xr = x != nullptr ? x + r * cols : nullptr;
      float* dzr = dz + r * cols;
      if (dBias != nullptr) {
        float* __restrict db = dBias;
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c) {
          const float g = dor[c] * grad(xr, c);
          dzr[c] = g;
          db[c] += g;
        }
      } else {
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c) dzr[c] = dor[c] * grad(xr, c);
      }
    }
  });
}

}  // namespace

int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

// Matmul primitives for C = A * B^T, one per shape, created on first use with their
// memory objects and argument map, so a call only swaps data handles and allocates nothing.
struct CpuBackend::MatmulCache {
  struct Entry {
    dnnl::matmul primitive;
    dnnl::memory a, b, c;
    std::unordered_map<int, dnnl::memory> args;
  };
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Entry> entries;
};

CpuBackend::CpuBackend(int threads)
    : threads_(threads > 0 ? threads : availableCores()),
      matmuls_(std::make_unique<MatmulCache>()),
      convolutions_(std::make_unique<DnnlConvolutions>()) {
  // oneDNN sizes its parallel regions from the OpenMP default.
  omp_set_num_threads(threads_);
}

CpuBackend::~CpuBackend() = default;

bool CpuBackend::matmulTransposedB(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                                   float* c) {
  using dnnl::memory;
  try {
    std::lock_guard lock(matmuls_->mutex);
    auto [it, inserted] = matmuls_->entries.try_emplace({m, n, k});
    MatmulCache::Entry& e = it->second;
    if (inserted) {
      const memory::desc aDesc({m, k}, memory::data_type::f32, memory::format_tag::ab);
      const memory::desc bDesc({k, n}, memory::data_type::f32, memory::format_tag::ba);
      const memory::desc cDesc({m, n}, memory::data_type::f32, memory::format_tag::ab);
      e.primitive = dnnl::matmul(
          dnnl::matmul::primitive_desc(dnnl::matmul::desc(aDesc, bDesc, cDesc), matmuls_->engine));
      e.a = memory(aDesc, matmuls_->engine, nullptr);
      e.b = memory(bDesc, matmuls_->engine, nullptr);
      e.c = memory(cDesc, matmuls_->engine, nullptr);
      e.args = {{DNNL_ARG_SRC, e.a}, {DNNL_ARG_WEIGHTS, e.b}, {DNNL_ARG_DST, e.c}};
    }
    e.a.set_data_handle(const_cast<float*>(a));
    e.b.set_data_handle(const_cast<float*>(b));
    e.c.set_data_handle(c);
    e.primitive.execute(matmuls_->stream, e.args);
    matmuls_->stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // no primitive for this shape here: dnnl_sgemm takes it
  }
}

void CpuBackend::conv2dForward(const Conv2dShape& shape, const float* x, const float* w,
                               const float* bias, float* y) {
  convolutions_->forward(shape, x, w, bias, y);
}

void CpuBackend::conv2dBackwardData(const Conv2dShape& shape, const float* dy, const float* w,
                                    float* dx) {
  convolutions_->backwardData(shape, dy, w, dx);
}

void CpuBackend::conv2dBackwardWeights(const Conv2dShape& shape, const float* x, const float* dy,
                                       float* dw, float* dBias) {
  convolutions_->backwardWeights(shape, x, dy, dw, dBias);
}

void CpuBackend::pool2dForward(const Pool2dShape& shape, const float* x, float* y) {
  poolForwardCpu(shape, x, y, threads_);
}

void CpuBackend::pool2dBackward(const Pool2dShape& shape, const float* x, const float* y,
                                const float* dy, float* dx) {
  poolBackwardCpu(shape, x, y, dy, dx, threads_);
}

float* CpuBackend::allocate(int64_t count) {
  float* p = alignedAllocFloats(count);
  if (p != nullptr) std::memset(p, 0, static_cast<std::size_t>(count) * sizeof(float));
  return p;
}

void CpuBackend::release(float* p) noexcept {
  alignedFree(p);
}

void CpuBackend::upload(float* dst, const float* host, int64_t count) {
  if (count > 0) std::memcpy(dst, host, static_cast<std::size_t>(count) * sizeof(float));
}

void CpuBackend::download(float* host, const float* src, int64_t count) {
  if (count > 0) std::memcpy(host, src, static_cast<std::size_t>(count) * sizeof(float));
}

void CpuBackend::fill(float* dst, int64_t count, float value) {
  std::fill_n(dst, count, value);
}

void CpuBackend::gatherRows(const float* src, int64_t cols, std::span<const int64_t> rows,
                            float* dst) {
  if (cols >= 16) {
    for (std::size_t r = 0; r < rows.size(); ++r)
      std::copy_n(src + rows[r] * cols, cols, dst + static_cast<int64_t>(r) * cols);
    return;
  }
  // Narrow rows (a label, a few features) element by element: a library copy per row cost
  // more than the copying.
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const float* from = src + rows[r] * cols;
    float* to = dst + static_cast<int64_t>(r) * cols;
    for (int64_t c = 0; c < cols; ++c) to[c] = from[c];
  }
}

void CpuBackend::gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < n; ++col)
        c[r * ldc + col] = beta == 0.0f ? 0.0f : beta * c[r * ldc + col];
    return;
  }
  if (alpha == 1.0f && beta == 0.0f && narrowGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc))
    return;
  constexpr int64_t kSplitMinMacs = int64_t{1} << 20;
  if (threads_ > 1 && m * n * k >= kSplitMinMacs && !omp_in_parallel()) {
    splitGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Large A * B^T products with plain strides: the matmul primitive (see the class comment).
  constexpr int64_t kMatmulMinMacs = int64_t{1} << 22;
  if (!transA && transB && alpha == 1.0f && beta == 0.0f && lda == k && ldb == k && ldc == n &&
      m * n * k >= kMatmulMinMacs && matmulTransposedB(m, n, k, a, b, c)) {
    return;
  }
  // Smaller ones of at least 16 rows and at most 96 columns (a small model's input gradients):
  // B transposed into a per-thread buffer and dnnl_sgemm's A * B. Measured beside each other
  // on one thread: 1.04-2.5x faster for 16-512 rows, 32-96 columns, k 16-1024 (64x64x64:
  // 3.2 us against 4.0); 0.6-0.98x from 128 columns on, which stay A B^T. (The matmul
  // primitive would allocate on every call.)
  constexpr int64_t kTransposeMinRows = 16;
  constexpr int64_t kTransposeMaxCols = 96;
  constexpr int64_t kTransposeMaxElements = int64_t{1} << 16;
  if (kTransposeInRegisters && !transA && transB && m >= kTransposeMinRows &&
      n <= kTransposeMaxCols && n * k <= kTransposeMaxElements) {
    thread_local std::vector<float> transposed;
    transposed.resize(std::max(transposed.size(), static_cast<std::size_t>(n * k)));
    transposeInto(b, n, k, ldb, transposed.data());
    b = transposed.data();
    ldb = n;
    transB = false;
  }
  const dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, alpha, a,
                                          lda, b, ldb, beta, c, ldc);
  DTLAB_ENFORCE(status == dnnl_success, "dnnl_sgemm failed with status ", static_cast<int>(status),
                " for ", m, "x", n, "x", k);
}

void CpuBackend::splitGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                           float* c, int64_t ldc) {
  // C's rows or columns, whichever are more, in slices of whole 16-wide units: every element
  // of C is one thread's, summed over the whole of k, and the slices depend only on the
  // shape and the thread count, so a run is as reproducible as with one call.
  const bool byRows = m >= n;
  const int64_t extent = byRows ? m : n;
  constexpr int64_t kUnit = 16;
  const int64_t units = (extent + kUnit - 1) / kUnit;
  const int parts = static_cast<int>(std::min<int64_t>(threads_, units));
  std::vector<dnnl_status_t> statuses(static_cast<std::size_t>(parts), dnnl_success);
  const char ta = transA ? 'T' : 'N';
  const char tb = transB ? 'T' : 'N';
#pragma omp parallel num_threads(parts)
  {
    const int t = omp_get_thread_num();
    const int64_t begin = std::min(extent, units * t / parts * kUnit);
    const int64_t end = std::min(extent, units * (t + 1) / parts * kUnit);
    dnnl_status_t& status = statuses[static_cast<std::size_t>(t)];
    if (end > begin && byRows) {
      // Inside a parallel region oneDNN runs the call on this thread alone.
      status = dnnl_sgemm(ta, tb, end - begin, n, k, alpha, transA ? a + begin : a + begin * lda,
                          lda, b, ldb, beta, c + begin * ldc, ldc);
    } else if (end > begin) {
      status = dnnl_sgemm(ta, tb, m, end - begin, k, alpha, a, lda,
                          transB ? b + begin * ldb : b + begin, ldb, beta, c + begin, ldc);
    }
  }
  for (dnnl_status_t status : statuses)
    DTLAB_ENFORCE(status == dnnl_success, "dnnl_sgemm failed with status ",
                  static_cast<int>(status), " for a slice of ", m, "x", n, "x", k);
}

void CpuBackend::biasActivation(const float* z, const float* bias, int64_t rows, int64_t cols,
                                std::optional<Activation> act, float* out, float* zOut) {
  if (!act) {
    biasActRows(z, bias, rows, cols, out, zOut, threads_, [](float v) { return v; });
    return;
  }
  switch (*act) {
    case Activation::kReLU:
      biasActRows(z, bias, rows, cols, out, zOut, threads_,
                  [](float v) { return v > 0.0f ? v : 0.0f; });
      break;
    case Activation::kTanh:
      biasActRows(z, bias, rows, cols, out, zOut, threads_,
                  [](float v) { return fastmath::tanh(v); });
      break;
    case Activation::kGELU:
      biasActRows(z, bias, rows, cols, out, zOut, threads_, [](float v) { return gelu(v); });
      break;
  }
}

void CpuBackend::activationBackward(const float* dOut, const float* z, const float* out,
                                    int64_t rows, int64_t cols, std::optional<Activation> act,
                                    float* dz, float* dBias) {
  if (!act && dz == dOut && cols < 16) {  // an output layer in place: only the bias gradient
    if (dBias == nullptr) return;
    std::fill(dBias, dBias + cols, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) dBias[c] += dOut[r * cols + c];
    return;
  }
  if (!act) {
    actBackwardCols(dOut, nullptr, rows, cols, dz, dBias, threads_,
                    [](const float*, int64_t) { return 1.0f; });
    return;
  }
  switch (*act) {
    case Activation::kReLU:
      actBackwardCols(dOut, out, rows, cols, dz, dBias, threads_,
                      [](const float* o, int64_t c) { return reluGrad(o[c]); });
      break;
    case Activation::kTanh:
      actBackwardCols(dOut, out, rows, cols, dz, dBias, threads_,
                      [](const float* o, int64_t c) { return 1.0f - o[c] * o[c]; });
      break;
    case Activation::kGELU:
      DTLAB_ENFORCE(z != nullptr, "GELU backward needs the pre-activation");
      actBackwardCols(dOut, z, rows, cols, dz, dBias, threads_,
                      [](const float* x, int64_t c) { return geluGrad(x[c]); });
      break;
  }
}

LossResult CpuBackend::softmaxCrossEntropy(const float* logits, const float* labels, int64_t rows,
                                           int64_t classes, float gradScale, float* dLogits) {
  auto row = [&](int64_t r, double& lossSum, int64_t& correct) {
    const float* z = logits + r * classes;
    const auto label = static_cast<int64_t>(labels[r]);
    float maxValue = z[0];
    int64_t argmax = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (z[c] > maxValue) {
        maxValue = z[c];
        argmax = c;
      }
    }
    float sum = 0.0f;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(z[c] - maxValue);
    lossSum += std::log(sum) - (z[label] - maxValue);
    correct += argmax == label ? 1 : 0;
    if (dLogits != nullptr) {
      float* d = dLogits + r * classes;
      const float inv = gradScale / sum;
      for (int64_t c = 0; c < classes; ++c) d[c] = std::exp(z[c] - maxValue) * inv;
      d[label] -= gradScale;
    }
  };
  double lossSum = 0.0;
  int64_t correct = 0;
  if (threads_ <= 1 || rows * classes < kParallelThreshold) {  // no OpenMP region: see forRange
    for (int64_t r = 0; r < rows; ++r) row(r, lossSum, correct);
  } else {
#pragma omp parallel for num_threads(threads_) reduction(+ : lossSum, correct) schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(r, lossSum, correct);
  }
  return {lossSum, correct};
}

LossResult CpuBackend::meanSquaredError(const float* pred, const float* target, int64_t rows,
                                        int64_t outputs, float gradScale, float* dPred) {
  auto element = [&](int64_t i, double& lossSum) {
    const float diff = pred[i] - target[i];
    lossSum += static_cast<double>(diff) * diff;
    if (dPred != nullptr) dPred[i] = gradScale * diff;
  };
  double lossSum = 0.0;
  const int64_t n = rows * outputs;
  if (threads_ <= 1 || n < kParallelThreshold) {  // no OpenMP region: see forRange
    for (int64_t i = 0; i < n; ++i) element(i, lossSum);
  } else {
#pragma omp parallel for num_threads(threads_) reduction(+ : lossSum) schedule(static)
    for (int64_t i = 0; i < n; ++i) element(i, lossSum);
  }
  return {lossSum, 0};
}

std::unique_ptr<Optimizer> CpuBackend::makeOptimizer(const OptimizerConfig& config) {
  return dtlab::core::makeOptimizer(config);
}

void CpuBackend::optimizerUpdate(Optimizer& optimizer, float* params, const float* grads,
                                 int64_t begin, int64_t end, int64_t step, float lr) {
  const int64_t n = end - begin;
  const int blocks = n >= kParallelThreshold ? threads_ : 1;
  if (blocks == 1) {  // no OpenMP region: see forRange
    optimizer.update(params, grads, begin, end, step, lr);
    return;
  }
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int b = 0; b < blocks; ++b) {
    const int64_t per = (n + blocks - 1) / blocks;
    const int64_t lo = begin + std::min(n, (b * per + 15) / 16 * 16);
    const int64_t hi = b + 1 == blocks ? end : begin + std::min(n, ((b + 1) * per + 15) / 16 * 16);
    if (lo < hi) optimizer.update(params, grads, lo, hi, step, lr);
  }
}

}  // namespace dtlab::core
