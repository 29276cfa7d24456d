#include <charconv>

#include "core/backend/backend.h"
#include "core/backend/cpu_backend.h"
#include "core/backend/cuda_plugin.h"
#include "core/backend/device_monitor.h"
#include "core/common/check.h"

namespace dtlab::core {

std::vector<BackendInfo> availableBackends() {
  std::vector<BackendInfo> list;
  const CudaPluginLoad& load = cudaPlugin();
  if (load.plugin == nullptr) {
    list.push_back({"cuda", false, load.why});
  } else {
    const CudaDevices devices = load.plugin->devices();
    list.push_back({"cuda", devices.count > 0, devices.why});
  }
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

// The plugin, or an Error naming `device` and why it cannot be used.
const CudaPlugin& pluginFor(const std::string& device) {
  const CudaPluginLoad& load = cudaPlugin();
  if (load.plugin == nullptr) throw Error("device '" + device + "' is not available: " + load.why);
  return *load.plugin;
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
    return pluginFor(device).makeBackend(index, precision);
  }
  throw Error("unknown device '" + device + "' (expected cpu or cuda[:N])");
}

DeviceDescription describeCudaDevice(const std::string& device) {
  const int index = cudaIndex(device);
  const CudaDeviceProperties p = pluginFor(device).properties(index);
  return {"cuda:" + std::to_string(index), p.model, p.memoryBytes,
          std::to_string(p.major) + "." + std::to_string(p.minor)};
}

std::unique_ptr<DeviceMonitor> makeDeviceMonitor(const std::string& device) {
  if (device == "cpu") return nullptr;
  const int index = cudaIndex(device);
  return pluginFor(device).makeMonitor(index);  // throws when the device cannot be used
}

int cudaDeviceIndex(const std::string& device) {
  return cudaIndex(device);
}

int cudaDeviceCount() {
  const CudaPluginLoad& load = cudaPlugin();
  return load.plugin == nullptr ? 0 : load.plugin->devices().count;
}

}  // namespace dtlab::core
