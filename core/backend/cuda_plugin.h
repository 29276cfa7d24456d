#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "core/backend/device_monitor.h"
#include "core/comm/communicator.h"
#include "core/comm/nccl_communicator.h"

namespace gloo::rendezvous {
class Store;
}

// The CUDA parts of DTLab (the CUDA backend, its device monitor and the NCCL collectives) are a
// plugin, libdtlab_cuda.so, that a program loads the first time it is asked about a CUDA device.
// The programs link no CUDA library: on a machine without CUDA they run, and say why "cuda" is
// not available (no plugin installed, or the plugin's CUDA libraries missing, or no driver or
// GPU). The plugin takes the core's own symbols from the program that loads it (the programs
// export them: dtlab_cuda_plugin_host in core/CMakeLists.txt), so there is one copy of the core
// in a process, and it must come from the same DTLab version: the entry point refuses another.

namespace dtlab::core {

// Devices the CUDA runtime sees: 0 when there is no driver or no GPU (`why` says which).
struct CudaDevices {
  int count = 0;
  std::string why;  // when count == 0
};

// What the runtime says of one device.
struct CudaDeviceProperties {
  std::string model;  // "NVIDIA H200"
  int64_t memoryBytes = 0;
  int major = 0;  // compute capability
  int minor = 0;
  std::string pciBusId;  // "0000:1B:00.0": how NVML finds the same device
};

// What the plugin offers; every call may throw Error (naming the CUDA call that failed).
class CudaPlugin {
 public:
  virtual ~CudaPlugin() = default;
  virtual CudaDevices devices() const = 0;
  // Throws Error when there is no such device (naming the devices there are, or why none).
  virtual CudaDeviceProperties properties(int index) const = 0;
  virtual std::unique_ptr<Backend> makeBackend(int index, Precision precision) const = 0;
  virtual std::unique_ptr<DeviceMonitor> makeMonitor(int index) const = 0;
  virtual std::unique_ptr<Communicator> makeNcclCommunicator(gloo::rendezvous::Store& store,
                                                             int rank, int size,
                                                             const NcclOptions& options) const = 0;
};

// The plugin's one exported symbol, extern "C": its CudaPlugin when `hostVersion` is the
// DTLAB_VERSION it was built as, else null with *why saying what it is.
inline constexpr const char* kCudaPluginEntry = "dtlab_cuda_plugin";
using CudaPluginEntry = const CudaPlugin* (*)(const char* hostVersion, const char** why);
inline constexpr const char* kCudaPluginFile = "libdtlab_cuda.so";

struct CudaPluginLoad {
  const CudaPlugin* plugin = nullptr;  // null: not loaded, see why
  std::string path;                    // the file tried (or the last one)
  std::string why;
};

// Loads the plugin at `path` (never unloaded). Failures are in the result, not thrown: a missing
// file, a file that is not a DTLab CUDA plugin, a CUDA library it needs that is not installed,
// a plugin of another DTLab version.
CudaPluginLoad loadCudaPlugin(const std::string& path);

// This process's plugin, loaded on first use (any thread): the file DTLAB_CUDA_PLUGIN names
// when set, else libdtlab_cuda.so in <program's directory>/../lib/dtlab (where the packages
// install it, and where the build tree puts it).
const CudaPluginLoad& cudaPlugin();

// An NCCL communicator through the plugin (NcclCommunicator's constructor, collective); throws
// Error when the plugin is not available, saying why.
std::unique_ptr<Communicator> makeNcclCommunicator(gloo::rendezvous::Store& store, int rank,
                                                   int size, const NcclOptions& options);

}  // namespace dtlab::core
