// Synthetic samples generated on the GPU: one thread per sample runs generateSample(), the
// very function the CPU datasets call (core/data/sample_program.h). This file is compiled
// with -fmad=false (core/CMakeLists.txt) because the host build does not contract a * b + c
// into fused multiply-adds either, so the arithmetic rounds as on the CPU and only the math
// library's last places can differ.
#include <cuda_runtime.h>

#include "core/backend/cuda/cuda_kernels.h"

namespace dtlab::core::cuda {
namespace {

constexpr int kSampleThreads = 128;

__global__ void generateSamplesKernel(datagen::SampleProgram program, Split split,
                                      const int64_t* indices, int64_t count, float* x, float* y,
                                      float* scratch) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= count) return;
  y[k] = datagen::generateSample(program, split, indices[k], x + k * program.features,
                                 scratch + k * datagen::scratchFloats(program));
}

}  // namespace

void generateSamples(const datagen::SampleProgram& program, Split split, const int64_t* indices,
                     int64_t count, float* x, float* y, float* scratch, cudaStream_t stream) {
  if (count <= 0) return;
  const auto blocks = static_cast<unsigned>((count + kSampleThreads - 1) / kSampleThreads);
  generateSamplesKernel<<<blocks, kSampleThreads, 0, stream>>>(program, split, indices, count, x, y,
                                                               scratch);
}

}  // namespace dtlab::core::cuda
