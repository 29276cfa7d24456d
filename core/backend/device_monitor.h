#pragma once

#include <limits>
#include <memory>
#include <string>

namespace dtlab::core {

// What a node daemon samples of the GPU its worker trains on (the gpu_util and gpu_mem_bytes
// node metrics). NaN: not measured.
struct DeviceSample {
  double util = std::numeric_limits<double>::quiet_NaN();      // busy share since the last sample
  double memBytes = std::numeric_limits<double>::quiet_NaN();  // device memory in use
};

// Samples one device. util comes from NVML (the driver's own count: the share of the interval
// in which a kernel ran, any process's) when the driver's libnvidia-ml is there; else from the
// busy time this process's CUDA backends measured on the device with CUDA events (from the
// first queued operation to the synchronisation that waits for it, so host gaps between
// launches count as busy: an upper bound). Memory in use is device-wide either way.
class DeviceMonitor {
 public:
  virtual ~DeviceMonitor() = default;
  virtual DeviceSample sample() = 0;
  // "nvml" or "cuda events": where util comes from.
  virtual std::string source() const = 0;
};

// A monitor of `device` ("cuda[:N]"); null for "cpu". Throws Error when the device cannot be
// used (see describeCudaDevice).
std::unique_ptr<DeviceMonitor> makeDeviceMonitor(const std::string& device);

}  // namespace dtlab::core
