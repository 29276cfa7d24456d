#include "core/backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>

#include "core/backend/cuda/cuda_kernels.h"
#include "core/common/check.h"
#include "core/optim/decimal_value.h"
#include "core/optim/optimizer.h"

namespace dtlab::core {

CudaDevices cudaDevices() {
  CudaDevices devices;
  const cudaError_t status = cudaGetDeviceCount(&devices.count);
  if (status != cudaSuccess) {
    devices.count = 0;
    const char* meaning = status == cudaErrorInsufficientDriver
                              ? "no NVIDIA driver, or one older than this CUDA runtime"
                          : status == cudaErrorNoDevice ? "the driver sees no GPU"
                                                        : cudaGetErrorString(status);
    devices.why = detail::concat("no CUDA device: ", meaning,
                                 " (cudaGetDeviceCount: ", cudaGetErrorName(status), ")");
    cudaGetLastError();  // clear the sticky error of a missing driver
  } else if (devices.count == 0) {
    devices.why = "no CUDA device: the driver sees no GPU";
  }
  return devices;
}

namespace {

// Busy microseconds per device index, summed over every backend of the process.
constexpr int kMaxDevices = 64;
std::array<std::atomic<int64_t>, kMaxDevices> gBusyUs{};

}  // namespace

double cudaBusyMs(int index) {
  if (index < 0 || index >= kMaxDevices) return 0.0;
  return static_cast<double>(gBusyUs[static_cast<std::size_t>(index)].load()) / 1000.0;
}

CudaDeviceProperties cudaDeviceProperties(int index) {
  const CudaDevices devices = cudaDevices();
  if (devices.count == 0)
    throw Error("device 'cuda:" + std::to_string(index) + "': " + devices.why);
  if (index < 0 || index >= devices.count)
    throw Error(detail::concat("device 'cuda:", index, "' does not exist: this machine has ",
                               devices.count, " CUDA device", devices.count == 1 ? "" : "s",
                               " (cuda:0", devices.count > 1 ? " .. cuda:" : "",
                               devices.count > 1 ? std::to_string(devices.count - 1) : "", ")"));
  cudaDeviceProp props{};
  DTLAB_CUDA_CHECK(cudaGetDeviceProperties(&props, index));
  char bus[32] = {};
  DTLAB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, index));
  CudaDeviceProperties p;
  p.model = props.name;
  p.memoryBytes = static_cast<int64_t>(props.totalGlobalMem);
  p.major = props.major;
  p.minor = props.minor;
  p.pciBusId = bus;
  return p;
}

namespace {

cudaStream_t asStream(void* s) {
  return static_cast<cudaStream_t>(s);
}

int activationCode(std::optional<Activation> act) {
  if (!act) return cuda::kActNone;
  switch (*act) {
    case Activation::kReLU:
      return cuda::kActReLU;
    case Activation::kGELU:
      return cuda::kActGELU;
    case Activation::kTanh:
      return cuda::kActTanh;
  }
  return cuda::kActNone;
}

// Device buffers of an optimizer's state, zeroed on init, freed with the optimizer.
class DeviceState {
 public:
  explicit DeviceState(cudaStream_t stream) : stream_(stream) {}
  ~DeviceState() { free(); }
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  void reset(int count, int64_t n) {
    DTLAB_ENFORCE(n >= 0, "optimizer init: negative parameter count ", n);
    free();
    n_ = n;
    for (int k = 0; k < count; ++k) {
      float* p = nullptr;
      if (n > 0) {
        DTLAB_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(n) * sizeof(float)));
        buffers_.push_back(p);
        DTLAB_CUDA_CHECK(
            cudaMemsetAsync(p, 0, static_cast<std::size_t>(n) * sizeof(float), stream_));
      } else {
        buffers_.push_back(nullptr);
      }
    }
  }
  int64_t size() const { return n_; }
  float* data(int k) { return buffers_[static_cast<std::size_t>(k)]; }
  void checkRange(int64_t begin, int64_t end, int64_t step) const {
    checkUpdateRange(n_, begin, end, step);
  }
  std::vector<std::span<const float>> spans() const {
    std::vector<std::span<const float>> out;
    for (float* p : buffers_) out.emplace_back(p, static_cast<std::size_t>(n_));
    return out;
  }
  std::vector<std::span<float>> mutableSpans() {
    std::vector<std::span<float>> out;
    for (float* p : buffers_) out.emplace_back(p, static_cast<std::size_t>(n_));
    return out;
  }

 private:
  void free() noexcept {
    if (!buffers_.empty()) cudaStreamSynchronize(stream_);
    for (float* p : buffers_) cudaFree(p);
    buffers_.clear();
  }

  cudaStream_t stream_;
  int64_t n_ = -1;
  std::vector<float*> buffers_;
};

// The CPU optimizers' semantics (core/optim/optimizer.h), each per-step scalar derived on the
// host as they derive it, the elementwise update on the device.
class CudaOptimizer final : public Optimizer {
 public:
  CudaOptimizer(const OptimizerConfig& config, cudaStream_t stream)
      : config_(config), stream_(stream), state_(stream) {
    validateOptimizerConfig(config);
  }

  void init(int64_t n) override { state_.reset(stateCount(), n); }

  void update(float* params, const float* grads, int64_t begin, int64_t end, int64_t step,
              float lr) override {
    state_.checkRange(begin, end, step);
    switch (config_.kind) {
      case OptimizerKind::kSgd:
        cuda::sgdUpdate(params, grads, config_.momentum != 0.0f ? state_.data(0) : nullptr, begin,
                        end, config_.momentum, config_.nesterov, config_.weightDecay, -lr, stream_);
        break;
      case OptimizerKind::kAdam:
      case OptimizerKind::kAdamW: {
        const AdamScalars s = adamScalars(decimalValue(config_.beta1), decimalValue(config_.beta2),
                                          config_.eps, decimalValue(config_.weightDecay),
                                          config_.kind == OptimizerKind::kAdamW, step, lr);
        cuda::adamUpdate(params, grads, state_.data(0), state_.data(1), begin, end, s, stream_);
        break;
      }
      case OptimizerKind::kAdadelta:
        cuda::adadeltaUpdate(
            params, grads, state_.data(0), state_.data(1), begin, end,
            adadeltaScalars(decimalValue(config_.rho), config_.eps, config_.weightDecay, lr),
            stream_);
        break;
    }
    DTLAB_CUDA_CHECK(cudaGetLastError());
  }

  const char* name() const override { return toString(config_.kind); }
  int64_t size() const override { return state_.size(); }
  std::vector<std::span<const float>> state() const override { return state_.spans(); }
  std::vector<std::span<float>> mutableState() override { return state_.mutableSpans(); }

 private:
  int stateCount() const {
    switch (config_.kind) {
      case OptimizerKind::kSgd:
        return config_.momentum != 0.0f ? 1 : 0;
      case OptimizerKind::kAdam:
      case OptimizerKind::kAdamW:
      case OptimizerKind::kAdadelta:
        return 2;
    }
    return 0;
  }

  OptimizerConfig config_;
  cudaStream_t stream_;
  DeviceState state_;
};

}  // namespace

// Per-row scratch of the loss kernels and the pinned host copy of their totals.
struct CudaBackend::LossScratch {
  cuda::LossTotals* totals = nullptr;      // device
  cuda::LossTotals* hostTotals = nullptr;  // pinned host
};

CudaBackend::CudaBackend(int device, Precision precision)
    : device_(device), precision_(precision), loss_(std::make_unique<LossScratch>()) {
  const CudaDeviceProperties props = cudaDeviceProperties(device);
  DTLAB_CUDA_CHECK(cudaSetDevice(device));
  name_ = precision == Precision::kFp32
              ? detail::concat("cuda:", device, " (", props.model, ")")
              : detail::concat("cuda:", device, " (", props.model, ", ", toString(precision), ")");
  if (precision == Precision::kBf16 && props.major < 8)
    throw Error(detail::concat("device 'cuda:", device, "' (", props.model, ", compute capability ",
                               props.major, ".", props.minor,
                               "): training.precision \"bf16\" needs compute capability 8.0 or "
                               "newer"));
  cudaStream_t stream = nullptr;
  DTLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = stream;
  cublasHandle_t handle = nullptr;
  DTLAB_CUBLAS_CHECK(cublasCreate(&handle));
  cublas_ = handle;
  DTLAB_CUBLAS_CHECK(cublasSetStream(handle, stream));
  // fp32: the default math mode, no TF32 tensor-core rounding. tf32: cuBLAS may round FP32
  // inputs to TF32 on tensor cores. bf16 GEMMs name their types and compute mode per call.
  DTLAB_CUBLAS_CHECK(cublasSetMathMode(
      handle, precision == Precision::kTf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  DTLAB_CUDA_CHECK(cudaEventCreate(&start));
  busyStart_ = start;
  DTLAB_CUDA_CHECK(cudaEventCreate(&end));
  busyEnd_ = end;
  cudaEvent_t copied = nullptr;
  DTLAB_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  rowsCopied_ = copied;
  DTLAB_CUDA_CHECK(cudaMallocHost(&loss_->hostTotals, sizeof(cuda::LossTotals)));
  DTLAB_CUDA_CHECK(cudaMalloc(&loss_->totals, sizeof(cuda::LossTotals)));
}

CudaBackend::~CudaBackend() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(asStream(stream_));
  cudaFree(loss_->totals);
  cudaFreeHost(loss_->hostTotals);
  for (void* buffer : scratch_) cudaFree(buffer);
  if (busyStart_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(busyStart_));
  if (busyEnd_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(busyEnd_));
  if (rowsCopied_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(rowsCopied_));
  cudaFreeHost(rowsHost_);
  cudaFree(rowsDevice_);
  if (cublas_ != nullptr) cublasDestroy(static_cast<cublasHandle_t>(cublas_));
  if (stream_ != nullptr) cudaStreamDestroy(asStream(stream_));
}

void CudaBackend::markBusy() {
  if (busy_) return;
  DTLAB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(busyStart_), asStream(stream_)));
  busy_ = true;
}

void CudaBackend::synchronize() {
  if (!busy_) {
    DTLAB_CUDA_CHECK(cudaStreamSynchronize(asStream(stream_)));
    return;
  }
  const auto start = static_cast<cudaEvent_t>(busyStart_);
  const auto end = static_cast<cudaEvent_t>(busyEnd_);
  DTLAB_CUDA_CHECK(cudaEventRecord(end, asStream(stream_)));
  busy_ = false;
  DTLAB_CUDA_CHECK(cudaStreamSynchronize(asStream(stream_)));
  float ms = 0.0f;
  DTLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
  if (device_ >= 0 && device_ < kMaxDevices)
    gBusyUs[static_cast<std::size_t>(device_)] += static_cast<int64_t>(ms * 1000.0f);
}

float* CudaBackend::allocate(int64_t count) {
  if (count <= 0) return nullptr;
  float* p = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  DTLAB_CUDA_CHECK(cudaMalloc(&p, bytes));
  markBusy();
  DTLAB_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, asStream(stream_)));
  return p;
}

void CudaBackend::release(float* p) noexcept {
  if (p == nullptr) return;
  cudaStreamSynchronize(asStream(stream_));  // queued kernels may still use it
  cudaFree(p);
}

void CudaBackend::upload(float* dst, const float* host, int64_t count) {
  if (count <= 0) return;
  markBusy();
  DTLAB_CUDA_CHECK(cudaMemcpyAsync(dst, host, static_cast<std::size_t>(count) * sizeof(float),
                                   cudaMemcpyHostToDevice, asStream(stream_)));
  // The caller may reuse `host` as soon as this returns.
  synchronize();
}

void CudaBackend::download(float* host, const float* src, int64_t count) {
  if (count <= 0) return;
  markBusy();
  DTLAB_CUDA_CHECK(cudaMemcpyAsync(host, src, static_cast<std::size_t>(count) * sizeof(float),
                                   cudaMemcpyDeviceToHost, asStream(stream_)));
  synchronize();
}

void CudaBackend::gatherRows(const float* src, int64_t cols, std::span<const int64_t> rows,
                             float* dst) {
  const auto count = static_cast<int64_t>(rows.size());
  if (count == 0 || cols == 0) return;
  cuda::gatherRows(src, cols, stageRows(rows), count, dst, asStream(stream_));
  DTLAB_CUDA_CHECK(cudaGetLastError());
}

const int64_t* CudaBackend::stageRows(std::span<const int64_t> rows) {
  const auto count = static_cast<int64_t>(rows.size());
  const auto copied = static_cast<cudaEvent_t>(rowsCopied_);
  // The pinned buffer may still be read by the previous call's copy.
  DTLAB_CUDA_CHECK(cudaEventSynchronize(copied));
  if (count > rowsCapacity_) {
    synchronize();
    cudaFreeHost(rowsHost_);
    cudaFree(rowsDevice_);
    rowsHost_ = nullptr;
    rowsDevice_ = nullptr;
    rowsCapacity_ = 0;
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(int64_t);
    DTLAB_CUDA_CHECK(cudaMallocHost(&rowsHost_, bytes));
    DTLAB_CUDA_CHECK(cudaMalloc(&rowsDevice_, bytes));
    rowsCapacity_ = count;
  }
  std::copy(rows.begin(), rows.end(), rowsHost_);
  markBusy();
  DTLAB_CUDA_CHECK(cudaMemcpyAsync(rowsDevice_, rowsHost_,
                                   static_cast<std::size_t>(count) * sizeof(int64_t),
                                   cudaMemcpyHostToDevice, asStream(stream_)));
  DTLAB_CUDA_CHECK(cudaEventRecord(copied, asStream(stream_)));
  return rowsDevice_;
}

namespace {

// Scratch the teacher's kernel may use at once (its two activation buffers per sample); a
// larger request runs in several launches.
constexpr int64_t kMaxSampleScratchFloats = int64_t{1} << 24;

// A program whose tables were copied to the device, run by cuda::generateSamples.
class CudaSampleSource final : public SampleSource {
 public:
  CudaSampleSource(CudaBackend& backend, const datagen::SampleProgram& program)
      : backend_(backend), program_(program) {
    program_.table = copyToDevice(program.table, program.table ? program.tableSize : 0, table_);
    program_.dims = copyToDevice(program.dims, program.dims ? program.layers + 1 : 0, dims_);
  }
  ~CudaSampleSource() override {
    // Kernels queued on the backend's stream may still read the tables.
    cudaStreamSynchronize(asStream(backend_.stream()));
    cudaFree(table_);
    cudaFree(dims_);
    cudaFree(scratch_);
  }
  CudaSampleSource(const CudaSampleSource&) = delete;
  CudaSampleSource& operator=(const CudaSampleSource&) = delete;

  void generate(Split split, std::span<const int64_t> indices, float* x, float* y) override {
    const auto count = static_cast<int64_t>(indices.size());
    const int64_t perSample = datagen::scratchFloats(program_);
    const int64_t chunk =
        perSample > 0 ? std::max<int64_t>(1, kMaxSampleScratchFloats / perSample) : count;
    for (int64_t done = 0; done < count; done += chunk) {
      const int64_t n = std::min(chunk, count - done);
      if (n * perSample > scratchCapacity_) {
        backend_.synchronize();  // the old scratch may still be in use
        cudaFree(scratch_);
        scratch_ = nullptr;
        scratchCapacity_ = 0;
        DTLAB_CUDA_CHECK(
            cudaMalloc(&scratch_, static_cast<std::size_t>(n * perSample) * sizeof(float)));
        scratchCapacity_ = n * perSample;
      }
      const int64_t* rows = backend_.stageRows(
          indices.subspan(static_cast<std::size_t>(done), static_cast<std::size_t>(n)));
      cuda::generateSamples(program_, split, rows, n, x + done * program_.features, y + done,
                            scratch_, asStream(backend_.stream()));
      DTLAB_CUDA_CHECK(cudaGetLastError());
    }
  }

 private:
  // A device copy of host[0, count) in `owned`, or null when there is nothing to copy.
  template <typename T>
  T* copyToDevice(const T* host, int64_t count, T*& owned) {
    if (count <= 0) return nullptr;
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
    DTLAB_CUDA_CHECK(cudaMalloc(&owned, bytes));
    DTLAB_CUDA_CHECK(
        cudaMemcpyAsync(owned, host, bytes, cudaMemcpyHostToDevice, asStream(backend_.stream())));
    backend_.synchronize();
    return owned;
  }

  CudaBackend& backend_;
  datagen::SampleProgram program_;  // its table and dims point to the device copies
  float* table_ = nullptr;
  int64_t* dims_ = nullptr;
  float* scratch_ = nullptr;
  int64_t scratchCapacity_ = 0;
};

}  // namespace

std::unique_ptr<SampleSource> CudaBackend::makeSampleSource(const datagen::SampleProgram& program) {
  DTLAB_CUDA_CHECK(cudaSetDevice(device_));
  return std::make_unique<CudaSampleSource>(*this, program);
}

void CudaBackend::fill(float* dst, int64_t count, float value) {
  markBusy();
  cuda::fill(dst, count, value, asStream(stream_));
  DTLAB_CUDA_CHECK(cudaGetLastError());
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a row-major matrix is
// its own transpose in column-major order: swap the operands, keep the flags and strides.
void CudaBackend::gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  constexpr int64_t kMaxDim = std::numeric_limits<int>::max();
  DTLAB_ENFORCE(m <= kMaxDim && n <= kMaxDim && k <= kMaxDim && lda <= kMaxDim && ldb <= kMaxDim &&
                    ldc <= kMaxDim,
                "gemm ", m, "x", n, "x", k, " exceeds cuBLAS's 32-bit dimensions");
  if (k == 0) {
    DTLAB_ENFORCE(beta == 0.0f && ldc == n, "gemm with k = 0 needs beta = 0 and ldc = n");
    fill(c, m * n, 0.0f);
    return;
  }
  markBusy();
  const cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto handle = static_cast<cublasHandle_t>(cublas_);
  if (precision_ != Precision::kBf16) {
    DTLAB_CUBLAS_CHECK(cublasSgemm(handle, opB, opA, static_cast<int>(n), static_cast<int>(m),
                                   static_cast<int>(k), &alpha, b, static_cast<int>(ldb), a,
                                   static_cast<int>(lda), &beta, c, static_cast<int>(ldc)));
    return;
  }
  // BF16 copies of the operands as stored (dense: the row stride becomes the width), then one
  // product with FP32 accumulation into the FP32 output.
  const int64_t aRows = transA ? k : m;
  const int64_t aCols = transA ? m : k;
  const int64_t bRows = transB ? n : k;
  const int64_t bCols = transB ? k : n;
  auto* a16 = static_cast<uint16_t*>(scratch(kBf16A, aRows * aCols * sizeof(uint16_t)));
  auto* b16 = static_cast<uint16_t*>(scratch(kBf16B, bRows * bCols * sizeof(uint16_t)));
  cuda::toBf16(a, aRows, aCols, lda, a16, asStream(stream_));
  cuda::toBf16(b, bRows, bCols, ldb, b16, asStream(stream_));
  DTLAB_CUDA_CHECK(cudaGetLastError());
  DTLAB_CUBLAS_CHECK(cublasGemmEx(
      handle, opB, opA, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b16,
      CUDA_R_16BF, static_cast<int>(bCols), a16, CUDA_R_16BF, static_cast<int>(aCols), &beta, c,
      CUDA_R_32F, static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void* CudaBackend::scratch(Scratch which, std::size_t bytes) {
  if (bytes > scratchBytes_[which]) {
    synchronize();  // queued kernels may still use the old buffer
    cudaFree(scratch_[which]);
    scratch_[which] = nullptr;
    scratchBytes_[which] = 0;
    DTLAB_CUDA_CHECK(cudaMalloc(&scratch_[which], bytes));
    scratchBytes_[which] = bytes;
  }
  return scratch_[which];
}

void CudaBackend::biasActivation(const float* z, const float* bias, int64_t rows, int64_t cols,
                                 std::optional<Activation> act, float* out, float* zOut) {
  markBusy();
  cuda::biasActivation(z, bias, rows, cols, activationCode(act), out, zOut, asStream(stream_));
  DTLAB_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::activationBackward(const float* dOut, const float* z, const float* out,
                                     int64_t rows, int64_t cols, std::optional<Activation> act,
                                     float* dz, float* dBias) {
  const bool gelu = act && *act == Activation::kGELU;
  DTLAB_ENFORCE(!gelu || z != nullptr, "GELU backward needs the pre-activation");
  markBusy();
  float* sums =
      dBias == nullptr
          ? nullptr
          : static_cast<float*>(scratch(
                kColumnSums, static_cast<std::size_t>(cuda::columnSumScratchFloats(rows, cols)) *
                                 sizeof(float)));
  cuda::activationBackward(dOut, gelu ? z : out, rows, cols, activationCode(act), dz, dBias, sums,
                           asStream(stream_));
  DTLAB_CUDA_CHECK(cudaGetLastError());
}

LossResult CudaBackend::takeTotals() {
  DTLAB_CUDA_CHECK(cudaGetLastError());
  DTLAB_CUDA_CHECK(cudaMemcpyAsync(loss_->hostTotals, loss_->totals, sizeof(cuda::LossTotals),
                                   cudaMemcpyDeviceToHost, asStream(stream_)));
  synchronize();
  return {loss_->hostTotals->lossSum, static_cast<int64_t>(loss_->hostTotals->correct)};
}

LossResult CudaBackend::softmaxCrossEntropy(const float* logits, const float* labels, int64_t rows,
                                            int64_t classes, float gradScale, float* dLogits) {
  auto* rowLoss = static_cast<float*>(scratch(kRowLoss, rows * sizeof(float)));
  auto* rowCorrect = static_cast<int*>(scratch(kRowCorrect, rows * sizeof(int)));
  markBusy();
  cuda::softmaxCrossEntropy(logits, labels, rows, classes, gradScale, dLogits, rowLoss, rowCorrect,
                            loss_->totals, asStream(stream_));
  return takeTotals();
}

LossResult CudaBackend::meanSquaredError(const float* pred, const float* target, int64_t rows,
                                         int64_t outputs, float gradScale, float* dPred) {
  auto* rowLoss = static_cast<float*>(scratch(kRowLoss, rows * sizeof(float)));
  markBusy();
  cuda::meanSquaredError(pred, target, rows, outputs, gradScale, dPred, rowLoss, loss_->totals,
                         asStream(stream_));
  return takeTotals();
}

std::unique_ptr<Optimizer> CudaBackend::makeOptimizer(const OptimizerConfig& config) {
  return std::make_unique<CudaOptimizer>(config, asStream(stream_));
}

void CudaBackend::optimizerUpdate(Optimizer& optimizer, float* params, const float* grads,
                                  int64_t begin, int64_t end, int64_t step, float lr) {
  markBusy();
  optimizer.update(params, grads, begin, end, step, lr);
}

}  // namespace dtlab::core
