#include "core/backend/cuda/cuda_check.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/common/check.h"

namespace dtlab::core {

void checkCuda(int status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  const auto error = static_cast<cudaError_t>(status);
  throw Error(detail::concat(call, " failed: ", cudaGetErrorName(error), " (",
                             cudaGetErrorString(error), ") at ", file, ":", line));
}

void checkCublas(int status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const auto error = static_cast<cublasStatus_t>(status);
  throw Error(detail::concat(call, " failed: ", cublasGetStatusName(error), " (",
                             cublasGetStatusString(error), ") at ", file, ":", line));
}

}  // namespace dtlab::core
