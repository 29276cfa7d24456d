#include <charconv>

#include "core/backend/backend.h"
#include "core/backend/cpu_backend.h"
#include "core/backend/device_monitor.h"
#include "core/common/check.h"
#include "core/common/config.h"
#if DTLAB_HAVE_CUDA
#include "core/backend/cuda/cuda_backend.h"
#endif

namespace dtlab::core {

std::vector<BackendInfo> availableBackends() {
  std::vector<BackendInfo> list;
#if DTLAB_HAVE_CUDA
  const CudaDevices devices = cudaDevices();
  list.push_back({"cuda", devices.count > 0, devices.why});
#else
  list.push_back({"cuda", false, "built without CUDA (DTLAB_HAVE_CUDA=0)"});
#endif
  list.push_back({"cpu", true, ""});
  return list;
}

namespace {

// The index of "cuda" (0) or "cuda:N"; throws on anything else.
int cudaIndex(const std::string& device) {
  if (device == "cuda") return 0;
  int index = -1;
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5) {
    const char* begin = device.data() + 5;
    const char* end = device.data() + device.size();
    const auto [ptr, ec] = std::from_chars(begin, end, index);
    if (ec == std::errc() && ptr == end && index >= 0) return index;
  }
  throw Error("device '" + device + "': expected cuda or cuda:N with N a device index");
}

bool isCuda(const std::string& device) {
  return device == "cuda" || device.rfind("cuda:", 0) == 0;
}

}  // namespace

std::unique_ptr<Backend> makeBackend(const std::string& device, int threads, Precision precision) {
  if (device == "cpu") {
    if (precision != Precision::kFp32)
      throw Error(std::string("training.precision \"") + toString(precision) +
                  "\" needs a CUDA device: the CPU backend computes in fp32 only");
    return std::make_unique<CpuBackend>(threads);
  }
  if (isCuda(device)) {
    const int index = cudaIndex(device);
#if DTLAB_HAVE_CUDA
    return std::make_unique<CudaBackend>(index, precision);
#else
    static_cast<void>(index);
    throw Error("device '" + device + "' is not available: built without CUDA (DTLAB_HAVE_CUDA=0)");
#endif
  }
  throw Error("unknown device '" + device + "' (expected cpu or cuda[:N])");
}

DeviceDescription describeCudaDevice(const std::string& device) {
  const int index = cudaIndex(device);
#if DTLAB_HAVE_CUDA
  const CudaDeviceProperties p = cudaDeviceProperties(index);
  return {"cuda:" + std::to_string(index), p.model, p.memoryBytes,
          std::to_string(p.major) + "." + std::to_string(p.minor)};
#else
  static_cast<void>(index);
  throw Error("device '" + device + "' is not available: built without CUDA (DTLAB_HAVE_CUDA=0)");
#endif
}

std::unique_ptr<DeviceMonitor> makeDeviceMonitor(const std::string& device) {
  if (device == "cpu") return nullptr;
#if DTLAB_HAVE_CUDA
  return makeCudaMonitor(cudaIndex(device));  // throws when the device cannot be used
#else
  static_cast<void>(describeCudaDevice(device));  // throws: built without CUDA
  return nullptr;
#endif
}

int cudaDeviceIndex(const std::string& device) {
  return cudaIndex(device);
}

int cudaDeviceCount() {
#if DTLAB_HAVE_CUDA
  return cudaDevices().count;
#else
  return 0;
#endif
}

}  // namespace dtlab::core
