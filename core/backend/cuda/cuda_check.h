#pragma once
// The CUDA plugin's error checks, for the backend and the NCCL communicator alike.

namespace dtlab::core {

// Every CUDA runtime and cuBLAS call goes through these: a failure throws Error naming the
// call as written and the library's message.
void checkCuda(int status, const char* call, const char* file, int line);
void checkCublas(int status, const char* call, const char* file, int line);
#define DTLAB_CUDA_CHECK(call) \
  ::dtlab::core::checkCuda(static_cast<int>(call), #call, __FILE__, __LINE__)
#define DTLAB_CUBLAS_CHECK(call) \
  ::dtlab::core::checkCublas(static_cast<int>(call), #call, __FILE__, __LINE__)

}  // namespace dtlab::core
