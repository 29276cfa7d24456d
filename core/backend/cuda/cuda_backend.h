#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "core/backend/device_monitor.h"

// The CUDA backend (builds with DTLAB_HAVE_CUDA only): cuBLAS GEMMs in the run's precision
// (fp32: SGEMM in the default math mode, no TF32 rounding; tf32: SGEMM on tensor cores with
// TF32 inputs; bf16: GemmEx on BF16 copies of both operands, FP32 accumulation and output, so
// weights, gradients and optimizer state stay FP32), our own kernels for everything else
// (cuda_kernels.cu), all on one stream per backend. Kernels are asynchronous on that stream; the
// host waits only where it needs a result: download(), the loss totals, and release() (memory may
// still be in use by queued kernels). Memory is device memory; the optimizer's state lives on the
// device too.

namespace dtlab::core {

// Every CUDA runtime and cuBLAS call goes through these: a failure throws Error naming the
// call as written and the library's message.
void checkCuda(int status, const char* call, const char* file, int line);
void checkCublas(int status, const char* call, const char* file, int line);
#define DTLAB_CUDA_CHECK(call) \
  ::dtlab::core::checkCuda(static_cast<int>(call), #call, __FILE__, __LINE__)
#define DTLAB_CUBLAS_CHECK(call) \
  ::dtlab::core::checkCublas(static_cast<int>(call), #call, __FILE__, __LINE__)

// Devices the CUDA runtime sees: 0 when there is no driver or no GPU (`why` says which).
struct CudaDevices {
  int count = 0;
  std::string why;  // when count == 0
};
CudaDevices cudaDevices();

// What the runtime says of device `index`; throws Error when there is no such device (naming
// the devices there are, or why there are none).
struct CudaDeviceProperties {
  std::string model;  // "NVIDIA H200"
  int64_t memoryBytes = 0;
  int major = 0;  // compute capability
  int minor = 0;
  std::string pciBusId;  // "0000:1B:00.0": how NVML finds the same device
};
CudaDeviceProperties cudaDeviceProperties(int index);

// Milliseconds this process's CUDA backends have kept device `index` busy (see
// DeviceMonitor), summed since the process started; any thread may read it.
double cudaBusyMs(int index);

// The monitor of device `index` (cuda_monitor.cc): NVML when the driver has it, else
// cudaBusyMs() and cudaMemGetInfo.
std::unique_ptr<DeviceMonitor> makeCudaMonitor(int index);

class CudaBackend final : public Backend {
 public:
  // Binds the calling thread to `device` (cudaSetDevice) and creates the stream and the
  // cuBLAS handle; throws Error when the device is not there.
  explicit CudaBackend(int device, Precision precision = Precision::kFp32);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // "cuda:N (device name)".
  std::string name() const override { return name_; }
  int threads() const override { return 1; }
  bool hostMemory() const override { return false; }
  int device() const { return device_; }
  Precision precision() const { return precision_; }
  // The stream every kernel of this backend runs on (cudaStream_t).
  void* stream() const override { return stream_; }
  // Waits for every kernel queued so far, and adds the time the stream was busy since the
  // first of them to cudaBusyMs().
  void synchronize() override;

  float* allocate(int64_t count) override;
  void release(float* p) noexcept override;
  void upload(float* dst, const float* host, int64_t count) override;
  void download(float* host, const float* src, int64_t count) override;
  void fill(float* dst, int64_t count, float value) override;
  // The row numbers go through a pinned buffer and one asynchronous copy; the gather is a
  // kernel.
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
  // An optimizer whose state is device memory on this backend's stream (its state() spans
  // point to device memory).
  std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig& config) override;
  void optimizerUpdate(Optimizer& optimizer, float* params, const float* grads, int64_t begin,
                       int64_t end, int64_t step, float lr) override;

 private:
  struct LossScratch;
  LossScratch& lossScratch(int64_t rows);
  LossResult takeTotals();
  // A device buffer of at least `count` BF16 values, grown (never shrunk) as GEMMs need.
  uint16_t* bf16Scratch(int which, int64_t count);
  // Called before queueing work: opens a busy span (an event on the stream) unless one is open.
  void markBusy();

  int device_;
  Precision precision_;
  std::string name_;
  void* stream_ = nullptr;  // cudaStream_t
  void* cublas_ = nullptr;  // cublasHandle_t
  std::unique_ptr<LossScratch> loss_;
  void* busyStart_ = nullptr;  // cudaEvent_t recorded when a busy span opens
  void* busyEnd_ = nullptr;    // cudaEvent_t recorded when synchronize() closes it
  bool busy_ = false;
  int64_t* rowsHost_ = nullptr;    // pinned: gatherRows' row numbers
  int64_t* rowsDevice_ = nullptr;  // their copy on the device
  int64_t rowsCapacity_ = 0;
  void* rowsCopied_ = nullptr;  // cudaEvent_t: the last copy out of rowsHost_ has finished
  uint16_t* bf16_[2] = {nullptr, nullptr};  // the two operands of a bf16 GEMM
  int64_t bf16Capacity_[2] = {0, 0};
};

}  // namespace dtlab::core
