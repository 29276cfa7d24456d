// The CUDA plugin's entry point (cuda_plugin.h): what libdtlab_cuda.so offers the program that
// loads it, behind the one symbol it exports.
#include <cstring>
#include <memory>
#include <type_traits>

#include "core/backend/cuda/cuda_backend.h"
#include "core/backend/cuda_plugin.h"
#include "core/comm/nccl_communicator.h"
#include "core/common/config.h"

namespace dtlab::core {
namespace {

class Plugin final : public CudaPlugin {
 public:
  CudaDevices devices() const override { return cudaDevices(); }
  CudaDeviceProperties properties(int index) const override { return cudaDeviceProperties(index); }
  std::unique_ptr<Backend> makeBackend(int index, Precision precision) const override {
    return std::make_unique<CudaBackend>(index, precision);
  }
  std::unique_ptr<DeviceMonitor> makeMonitor(int index) const override {
    return makeCudaMonitor(index);
  }
  std::unique_ptr<Communicator> makeNcclCommunicator(gloo::rendezvous::Store& store, int rank,
                                                     int size,
                                                     const NcclOptions& options) const override {
    return std::make_unique<NcclCommunicator>(store, rank, size, options);
  }
};

}  // namespace
}  // namespace dtlab::core

extern "C" __attribute__((visibility("default"))) const dtlab::core::CudaPlugin* dtlab_cuda_plugin(
    const char* hostVersion, const char** why) {
  // The plugin runs on the program's copy of the core: one built from other sources would not
  // agree with it on a single layout, so only the same version is accepted.
  if (hostVersion == nullptr || std::strcmp(hostVersion, DTLAB_VERSION) != 0) {
    if (why != nullptr) *why = "the plugin is from DTLab " DTLAB_VERSION;
    return nullptr;
  }
  static const dtlab::core::Plugin plugin;
  return &plugin;
}

static_assert(std::is_same_v<decltype(&dtlab_cuda_plugin), dtlab::core::CudaPluginEntry>,
              "the entry point must have the type the loader calls it by");
