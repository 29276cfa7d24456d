#pragma once

// The CUDA backend's kernels (cuda_kernels.cu), as launchers on a stream. This header is
// shared by nvcc and the C++20 core, so it stays plain: no core types but the plain headers
// written for both (sample_program.h, update_scalars.h), no templates.
// Every launcher is asynchronous on `stream`; pointers are device memory. Matrices are
// row-major float32, as everywhere in the core.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/data/sample_program.h"
#include "core/optim/update_scalars.h"

namespace dtlab::core::cuda {

// Activation codes (core::Activation plus "none").
enum ActivationCode : int { kActNone = -1, kActReLU = 0, kActGELU = 1, kActTanh = 2 };

void fill(float* dst, int64_t count, float value, cudaStream_t stream);

// Row k of x (program.features floats) and y[k] = sample indices[k] of `split`, by
// datagen::generateSample (cuda_samples.cu). program.table and program.dims, indices and
// scratch (count * scratchFloats(program) floats) are device memory.
void generateSamples(const datagen::SampleProgram& program, Split split, const int64_t* indices,
                     int64_t count, float* x, float* y, float* scratch, cudaStream_t stream);

// Row r of dst = row index[r] of src (rows of `cols` floats), r < count.
void gatherRows(const float* src, int64_t cols, const int64_t* index, int64_t count, float* dst,
                cudaStream_t stream);

// dst (rows x cols, dense, BF16 bit patterns) = src (rows x cols, row stride ld) rounded to
// nearest even: the operands of a BF16 matrix product.
void toBf16(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst,
            cudaStream_t stream);

// out = act(z + bias) per row; zOut (when not null) = z + bias. out and zOut may equal z.
void biasActivation(const float* z, const float* bias, int64_t rows, int64_t cols, int act,
                    float* out, float* zOut, cudaStream_t stream);

// dz = dOut * act'(x), x being the output (ReLU, tanh) or the pre-activation (GELU);
// dBias (when not null) = column sums of dz, summed in an order fixed by rows and cols
// (deterministic), through `scratch`: columnSumScratchFloats(rows, cols) device floats.
void activationBackward(const float* dOut, const float* x, int64_t rows, int64_t cols, int act,
                        float* dz, float* dBias, float* scratch, cudaStream_t stream);
int64_t columnSumScratchFloats(int64_t rows, int64_t cols);

// Loss kernels write their totals to `totals` (device): totals->lossSum, totals->correct.
struct LossTotals {
  double lossSum;
  long long correct;
};

// Softmax cross-entropy over labels stored as floats; rowLoss (rows floats) and rowCorrect
// (rows ints) are scratch. dLogits (when not null) = (softmax - onehot) * gradScale.
void softmaxCrossEntropy(const float* logits, const float* labels, int64_t rows, int64_t classes,
                         float gradScale, float* dLogits, float* rowLoss, int* rowCorrect,
                         LossTotals* totals, cudaStream_t stream);

// Squared error: lossSum = sum of (pred - target)^2; dPred (when not null) = gradScale *
// (pred - target). rowLoss (rows floats) is scratch.
void meanSquaredError(const float* pred, const float* target, int64_t rows, int64_t outputs,
                      float gradScale, float* dPred, float* rowLoss, LossTotals* totals,
                      cudaStream_t stream);

// Optimizer updates of [begin, end) of the flat buffers, with the per-step scalars the CPU
// optimizers use (core/optim/update_scalars.h).
void sgdUpdate(float* params, const float* grads, float* momentumBuffer, int64_t begin, int64_t end,
               float momentum, bool nesterov, float weightDecay, float negLr, cudaStream_t stream);

void adamUpdate(float* params, const float* grads, float* expAvg, float* expAvgSq, int64_t begin,
                int64_t end, const AdamScalars& s, cudaStream_t stream);

void adadeltaUpdate(float* params, const float* grads, float* squareAvg, float* accDelta,
                    int64_t begin, int64_t end, const AdadeltaScalars& s, cudaStream_t stream);

}  // namespace dtlab::core::cuda
