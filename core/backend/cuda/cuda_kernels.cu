// The CUDA backend's elementwise, reduction and optimizer kernels. Each mirrors its CPU
// counterpart (core/backend/cpu_backend.cc, core/optim/optimizer.cc) operation for
// operation; the transcendental functions are CUDA's (erff, expf, tanhf), so results agree
// with the CPU's to float rounding, not bitwise. Reductions sum in a fixed order, so a run
// is reproducible on one device.
#include "core/backend/cuda/cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

namespace dtlab::core::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16);
}

// Row-major matrices go through column tiles: a block of 32 columns x 8 row lanes covers one
// tile (grid x) over one chunk of rows (grid y), lane r taking rows r, r + 8, ... of its chunk.
// A warp then reads 32 neighbouring floats of one row (128 bytes), a thread its column's bias
// once, and no thread divides an element index (a 64-bit division per element cost as much
// as the memory traffic of the elementwise kernels it sat in).
constexpr int kColumnTile = 32;
constexpr int kRowLanes = 8;

struct ColumnTiles {
  dim3 grid;
  dim3 block{kColumnTile, kRowLanes};
  int64_t chunkRows;  // rows per block (the last chunk may hold fewer)
};

// `chunks` row chunks (at most 65535, the grid's y limit).
ColumnTiles columnTiles(int64_t rows, int64_t cols, int64_t chunks) {
  ColumnTiles t;
  chunks = std::max<int64_t>(1, std::min<int64_t>(chunks, 65535));
  t.chunkRows = (rows + chunks - 1) / chunks;
  t.grid = dim3(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile),
                static_cast<unsigned>((rows + t.chunkRows - 1) / t.chunkRows));
  return t;
}

// Elementwise work: 64 rows per block (8 per lane), enough blocks in flight to fill the GPU.
ColumnTiles elementwiseTiles(int64_t rows, int64_t cols) {
  return columnTiles(rows, cols, (rows + 63) / 64);
}

// Column sums in two passes: at most kMaxSumChunks blocks down each column write partial sums,
// then one thread per column adds its partials in chunk order. The chunking depends on the row
// count alone, so a sum is the same on every run.
constexpr int64_t kMaxSumChunks = 64;
constexpr int64_t kMinSumChunkRows = 256;
int64_t sumChunks(int64_t rows) {
  return std::clamp<int64_t>((rows + kMinSumChunkRows - 1) / kMinSumChunkRows, 1, kMaxSumChunks);
}

// The rows [begin, end) of the calling block's chunk, and its column (may be past the last).
struct TileRows {
  int64_t col;
  int64_t begin;
  int64_t end;
};
__device__ inline TileRows tileRows(int64_t rows, int64_t chunkRows) {
  TileRows t;
  t.col = blockIdx.x * static_cast<int64_t>(kColumnTile) + threadIdx.x;
  t.begin = blockIdx.y * chunkRows + threadIdx.y;
  const int64_t end = (blockIdx.y + 1) * chunkRows;
  t.end = end < rows ? end : rows;
  return t;
}

__device__ inline float activate(int act, float v) {
  switch (act) {
    case kActReLU:
      return v > 0.0f ? v : 0.0f;
    case kActGELU:
      return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case kActTanh:
      return tanhf(v);
    default:
      return v;
  }
}

// act'(x): x is the output for ReLU and tanh, the pre-activation for GELU.
__device__ inline float activationGrad(int act, float x) {
  switch (act) {
    case kActReLU:
      return x > 0.0f ? 1.0f : 0.0f;
    case kActGELU:
      return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) +
             x * 0.39894228040143268f * expf(-0.5f * x * x);
    case kActTanh:
      return 1.0f - x * x;
    default:
      return 1.0f;
  }
}

__global__ void fillKernel(float* dst, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}

__global__ void gatherRowsKernel(const float* src, int64_t rows, int64_t cols, int64_t chunkRows,
                                 const int64_t* index, float* dst) {
  const TileRows t = tileRows(rows, chunkRows);
  if (t.col >= cols) return;
  for (int64_t r = t.begin; r < t.end; r += kRowLanes)
    dst[r * cols + t.col] = src[index[r] * cols + t.col];
}

__global__ void toBf16Kernel(const float* src, int64_t rows, int64_t cols, int64_t ld,
                             int64_t chunkRows, __nv_bfloat16* dst) {
  const TileRows t = tileRows(rows, chunkRows);
  if (t.col >= cols) return;
  for (int64_t r = t.begin; r < t.end; r += kRowLanes)
    dst[r * cols + t.col] = __float2bfloat16_rn(src[r * ld + t.col]);
}

__global__ void biasActivationKernel(const float* z, const float* bias, int64_t rows, int64_t cols,
                                     int64_t chunkRows, int act, float* out, float* zOut) {
  const TileRows t = tileRows(rows, chunkRows);
  if (t.col >= cols) return;
  const float b = bias[t.col];
  for (int64_t r = t.begin; r < t.end; r += kRowLanes) {
    const int64_t i = r * cols + t.col;
    const float v = z[i] + b;
    if (zOut != nullptr) zOut[i] = v;
    out[i] = activate(act, v);
  }
}

// dz = dOut * act'(x) over one tile; with `partials`, also the tile's column sums of dz over the
// chunk (lane sums added in lane order) into partials[chunk * cols + col].
__global__ void activationBackwardKernel(const float* dOut, const float* x, int64_t rows,
                                         int64_t cols, int64_t chunkRows, int act, float* dz,
                                         float* partials) {
  __shared__ float laneSums[kRowLanes][kColumnTile];
  const TileRows t = tileRows(rows, chunkRows);
  float sum = 0.0f;
  if (t.col < cols) {
    for (int64_t r = t.begin; r < t.end; r += kRowLanes) {
      const int64_t i = r * cols + t.col;
      const float v = dOut[i] * (x != nullptr ? activationGrad(act, x[i]) : 1.0f);
      dz[i] = v;
      sum += v;
    }
  }
  if (partials == nullptr) return;  // the same for the whole block
  laneSums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && t.col < cols) {
    float total = 0.0f;
    for (int lane = 0; lane < kRowLanes; ++lane) total += laneSums[lane][threadIdx.x];
    partials[blockIdx.y * cols + t.col] = total;
  }
}

// sums[col] = the chunks' partial sums of the column, in chunk order.
__global__ void addPartialsKernel(const float* partials, int64_t chunks, int64_t cols,
                                  float* sums) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= cols) return;
  float total = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) total += partials[c * cols + col];
  sums[col] = total;
}

// One warp per row: max and argmax (first maximum, as the CPU's strict >), the sum of
// exponentials, the row's loss and the gradient.
__global__ void softmaxCrossEntropyKernel(const float* logits, const float* labels, int64_t rows,
                                          int64_t classes, float gradScale, float* dLogits,
                                          float* rowLoss, int* rowCorrect) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.y) + threadIdx.y;
  if (row >= rows) return;
  const int lane = threadIdx.x;
  const float* z = logits + row * classes;
  float maxValue = -INFINITY;
  int64_t argmax = classes;
  for (int64_t c = lane; c < classes; c += 32) {
    if (z[c] > maxValue) {
      maxValue = z[c];
      argmax = c;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float otherValue = __shfl_down_sync(0xffffffffu, maxValue, offset);
    const int64_t otherIndex = __shfl_down_sync(0xffffffffu, argmax, offset);
    if (otherValue > maxValue || (otherValue == maxValue && otherIndex < argmax)) {
      maxValue = otherValue;
      argmax = otherIndex;
    }
  }
  maxValue = __shfl_sync(0xffffffffu, maxValue, 0);
  argmax = __shfl_sync(0xffffffffu, argmax, 0);
  float sum = 0.0f;
  for (int64_t c = lane; c < classes; c += 32) sum += expf(z[c] - maxValue);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  sum = __shfl_sync(0xffffffffu, sum, 0);
  const auto label = static_cast<int64_t>(labels[row]);
  if (lane == 0) {
    rowLoss[row] = logf(sum) - (z[label] - maxValue);
    rowCorrect[row] = argmax == label ? 1 : 0;
  }
  if (dLogits != nullptr) {
    float* d = dLogits + row * classes;
    const float inv = gradScale / sum;
    for (int64_t c = lane; c < classes; c += 32)
      d[c] = expf(z[c] - maxValue) * inv - (c == label ? gradScale : 0.0f);
  }
}

__global__ void squaredErrorKernel(const float* pred, const float* target, int64_t rows,
                                   int64_t outputs, float gradScale, float* dPred, float* rowLoss) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int64_t o = 0; o < outputs; ++o) {
    const int64_t i = row * outputs + o;
    const float diff = pred[i] - target[i];
    sum += diff * diff;
    if (dPred != nullptr) dPred[i] = gradScale * diff;
  }
  rowLoss[row] = sum;
}

// One block sums the per-row figures in double, each thread a strided subset in order, then
// a tree in fixed order: deterministic.
__global__ void totalsKernel(const float* rowLoss, const int* rowCorrect, int64_t rows,
                             LossTotals* totals) {
  __shared__ double loss[kThreads];
  __shared__ long long correct[kThreads];
  double l = 0.0;
  long long c = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) {
    l += rowLoss[r];
    if (rowCorrect != nullptr) c += rowCorrect[r];
  }
  loss[threadIdx.x] = l;
  correct[threadIdx.x] = c;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      loss[threadIdx.x] += loss[threadIdx.x + half];
      correct[threadIdx.x] += correct[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    totals->lossSum = loss[0];
    totals->correct = correct[0];
  }
}

__global__ void sgdKernel(float* params, const float* grads, float* buf, int64_t begin, int64_t end,
                          float momentum, bool nesterov, float weightDecay, float negLr) {
  for (int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < end;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float d = grads[i];
    const float p = params[i];
    if (weightDecay != 0.0f) d = d + weightDecay * p;
    if (buf != nullptr) {
      const float b = buf[i] * momentum + d;
      buf[i] = b;
      d = nesterov ? d + momentum * b : b;
    }
    params[i] = p + negLr * d;
  }
}

__global__ void adamKernel(float* params, const float* grads, float* expAvg, float* expAvgSq,
                           int64_t begin, int64_t end, AdamScalars s) {
  for (int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < end;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float p = params[i];
    float g = grads[i];
    if (s.decoupled) {
      if (s.weightDecay != 0.0f) p = p * s.decayFactor;
    } else if (s.weightDecay != 0.0f) {
      g = g + s.weightDecay * p;
    }
    float m = expAvg[i];
    m = s.lowLerpWeight ? m + s.w1 * (g - m) : g - (g - m) * s.oneMinusW1;
    const float v = expAvgSq[i] * s.beta2 + s.w2 * g * g;
    const float denom = sqrtf(v) / s.bc2Sqrt + s.eps;
    params[i] = p + s.negStepSize * m / denom;
    expAvg[i] = m;
    expAvgSq[i] = v;
  }
}

__global__ void adadeltaKernel(float* params, const float* grads, float* squareAvg, float* accDelta,
                               int64_t begin, int64_t end, AdadeltaScalars s) {
  for (int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < end;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float p = params[i];
    float g = grads[i];
    if (s.weightDecay != 0.0f) g = g + s.weightDecay * p;
    const float sq = squareAvg[i] * s.rho + s.w * g * g;
    const float delta = sqrtf(accDelta[i] + s.eps) / sqrtf(sq + s.eps) * g;
    squareAvg[i] = sq;
    accDelta[i] = accDelta[i] * s.rho + s.w * delta * delta;
    params[i] = p + s.negLr * delta;
  }
}

}  // namespace

void fill(float* dst, int64_t count, float value, cudaStream_t stream) {
  if (count <= 0) return;
  fillKernel<<<blocksFor(count), kThreads, 0, stream>>>(dst, count, value);
}

void gatherRows(const float* src, int64_t cols, const int64_t* index, int64_t count, float* dst,
                cudaStream_t stream) {
  if (count <= 0 || cols <= 0) return;
  const ColumnTiles t = elementwiseTiles(count, cols);
  gatherRowsKernel<<<t.grid, t.block, 0, stream>>>(src, count, cols, t.chunkRows, index, dst);
}

void toBf16(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst,
            cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const ColumnTiles t = elementwiseTiles(rows, cols);
  toBf16Kernel<<<t.grid, t.block, 0, stream>>>(src, rows, cols, ld, t.chunkRows,
                                               reinterpret_cast<__nv_bfloat16*>(dst));
}

void biasActivation(const float* z, const float* bias, int64_t rows, int64_t cols, int act,
                    float* out, float* zOut, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const ColumnTiles t = elementwiseTiles(rows, cols);
  biasActivationKernel<<<t.grid, t.block, 0, stream>>>(z, bias, rows, cols, t.chunkRows, act, out,
                                                       zOut);
}

int64_t columnSumScratchFloats(int64_t rows, int64_t cols) {
  return sumChunks(rows) * cols;
}

void activationBackward(const float* dOut, const float* x, int64_t rows, int64_t cols, int act,
                        float* dz, float* dBias, float* scratch, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) {
    if (dBias != nullptr && cols > 0) fill(dBias, cols, 0.0f, stream);
    return;
  }
  const ColumnTiles t =
      dBias != nullptr ? columnTiles(rows, cols, sumChunks(rows)) : elementwiseTiles(rows, cols);
  activationBackwardKernel<<<t.grid, t.block, 0, stream>>>(dOut, act == kActNone ? nullptr : x,
                                                           rows, cols, t.chunkRows, act, dz,
                                                           dBias != nullptr ? scratch : nullptr);
  if (dBias != nullptr)
    addPartialsKernel<<<blocksFor(cols), kThreads, 0, stream>>>(scratch, t.grid.y, cols, dBias);
}

void softmaxCrossEntropy(const float* logits, const float* labels, int64_t rows, int64_t classes,
                         float gradScale, float* dLogits, float* rowLoss, int* rowCorrect,
                         LossTotals* totals, cudaStream_t stream) {
  if (rows > 0) {
    constexpr int kRowsPerBlock = 8;
    const dim3 block(32, kRowsPerBlock);
    const auto grid = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    softmaxCrossEntropyKernel<<<grid, block, 0, stream>>>(logits, labels, rows, classes, gradScale,
                                                          dLogits, rowLoss, rowCorrect);
  }
  totalsKernel<<<1, kThreads, 0, stream>>>(rowLoss, rowCorrect, rows, totals);
}

void meanSquaredError(const float* pred, const float* target, int64_t rows, int64_t outputs,
                      float gradScale, float* dPred, float* rowLoss, LossTotals* totals,
                      cudaStream_t stream) {
  if (rows > 0)
    squaredErrorKernel<<<blocksFor(rows), kThreads, 0, stream>>>(pred, target, rows, outputs,
                                                                 gradScale, dPred, rowLoss);
  totalsKernel<<<1, kThreads, 0, stream>>>(rowLoss, nullptr, rows, totals);
}

void sgdUpdate(float* params, const float* grads, float* momentumBuffer, int64_t begin, int64_t end,
               float momentum, bool nesterov, float weightDecay, float negLr, cudaStream_t stream) {
  if (end <= begin) return;
  sgdKernel<<<blocksFor(end - begin), kThreads, 0, stream>>>(
      params, grads, momentumBuffer, begin, end, momentum, nesterov, weightDecay, negLr);
}

void adamUpdate(float* params, const float* grads, float* expAvg, float* expAvgSq, int64_t begin,
                int64_t end, const AdamScalars& s, cudaStream_t stream) {
  if (end <= begin) return;
  adamKernel<<<blocksFor(end - begin), kThreads, 0, stream>>>(params, grads, expAvg, expAvgSq,
                                                              begin, end, s);
}

void adadeltaUpdate(float* params, const float* grads, float* squareAvg, float* accDelta,
                    int64_t begin, int64_t end, const AdadeltaScalars& s, cudaStream_t stream) {
  if (end <= begin) return;
  adadeltaKernel<<<blocksFor(end - begin), kThreads, 0, stream>>>(params, grads, squareAvg,
                                                                  accDelta, begin, end, s);
}

}  // namespace dtlab::core::cuda
