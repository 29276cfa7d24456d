// The GPU monitor of a node daemon: NVML through the driver's libnvidia-ml (loaded at run time,
// so neither the build nor a machine without the driver needs it), else the busy time the
// process's CUDA backends measured and the runtime's free-memory figure.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "core/backend/cuda/cuda_backend.h"
#include "core/common/check.h"

namespace dtlab::core {
namespace {

// The few NVML entry points used, declared as the driver's C ABI defines them (nvml.h is not
// part of the CUDA toolkit): results are int codes, 0 for success.
struct NvmlDevice;
struct NvmlUtilization {
  unsigned int gpu;     // percent of the last sample period in which a kernel ran
  unsigned int memory;  // percent of it in which device memory was read or written
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlByPciBusId = int (*)(const char*, NvmlDevice**);
using NvmlGetUtilization = int (*)(NvmlDevice*, NvmlUtilization*);
using NvmlGetMemory = int (*)(NvmlDevice*, NvmlMemory*);

class NvmlMonitor final : public DeviceMonitor {
 public:
  // Null when the library, a symbol or the device is missing: the caller falls back.
  static std::unique_ptr<NvmlMonitor> open(const std::string& pciBusId) {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return nullptr;
    auto monitor = std::unique_ptr<NvmlMonitor>(new NvmlMonitor(lib));
    if (!monitor->bind() || monitor->init_() != 0) return nullptr;
    monitor->initialised_ = true;
    if (monitor->byPciBusId_(pciBusId.c_str(), &monitor->device_) != 0) return nullptr;
    return monitor;
  }
  ~NvmlMonitor() override {
    if (initialised_) shutdown_();
    dlclose(lib_);
  }
  NvmlMonitor(const NvmlMonitor&) = delete;
  NvmlMonitor& operator=(const NvmlMonitor&) = delete;

  DeviceSample sample() override {
    DeviceSample s;
    NvmlUtilization u{};
    if (utilization_(device_, &u) == 0) s.util = u.gpu / 100.0;
    NvmlMemory m{};
    if (memory_(device_, &m) == 0) s.memBytes = static_cast<double>(m.used);
    return s;
  }
  std::string source() const override { return "nvml"; }

 private:
  explicit NvmlMonitor(void* lib) : lib_(lib) {}
  template <typename F>
  bool load(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib_, name));
    return f != nullptr;
  }
  bool bind() {
    return load(init_, "nvmlInit_v2") && load(shutdown_, "nvmlShutdown") &&
           load(byPciBusId_, "nvmlDeviceGetHandleByPciBusId_v2") &&
           load(utilization_, "nvmlDeviceGetUtilizationRates") &&
           load(memory_, "nvmlDeviceGetMemoryInfo");
  }

  void* lib_;
  bool initialised_ = false;
  NvmlDevice* device_ = nullptr;
  NvmlInit init_ = nullptr;
  NvmlShutdown shutdown_ = nullptr;
  NvmlByPciBusId byPciBusId_ = nullptr;
  NvmlGetUtilization utilization_ = nullptr;
  NvmlGetMemory memory_ = nullptr;
};

// Without NVML: the busy time this process's backends measured on the device, as a share of
// the wall time between samples, and the runtime's device-wide memory figure.
class EventMonitor final : public DeviceMonitor {
 public:
  explicit EventMonitor(int index)
      : index_(index), lastBusyMs_(cudaBusyMs(index)), last_(std::chrono::steady_clock::now()) {}

  DeviceSample sample() override {
    DeviceSample s;
    const auto now = std::chrono::steady_clock::now();
    const double busyMs = cudaBusyMs(index_);
    const double wallMs = std::chrono::duration<double, std::milli>(now - last_).count();
    if (wallMs > 0.0) s.util = std::min(1.0, (busyMs - lastBusyMs_) / wallMs);
    lastBusyMs_ = busyMs;
    last_ = now;
    std::size_t free = 0;
    std::size_t total = 0;
    // The sampling thread's current device is this one (set below), so the figure is its.
    if (cudaSetDevice(index_) == cudaSuccess && cudaMemGetInfo(&free, &total) == cudaSuccess)
      s.memBytes = static_cast<double>(total - free);
    else
      cudaGetLastError();
    return s;
  }
  std::string source() const override { return "cuda events"; }

 private:
  int index_;
  double lastBusyMs_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace

std::unique_ptr<DeviceMonitor> makeCudaMonitor(int index) {
  const CudaDeviceProperties props = cudaDeviceProperties(index);
  if (std::unique_ptr<NvmlMonitor> nvml = NvmlMonitor::open(props.pciBusId)) return nvml;
  return std::make_unique<EventMonitor>(index);
}

}  // namespace dtlab::core
