#include <charconv>

#include "core/backend/backend.h"
#include "core/backend/cpu_backend.h"
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

std::unique_ptr<Backend> makeBackend(const std::string& device, int threads) {
  if (device == "cpu") return std::make_unique<CpuBackend>(threads);
  if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    int index = 0;
    if (device.size() > 5) {
      const char* begin = device.data() + 5;
      const char* end = device.data() + device.size();
      const auto [ptr, ec] = std::from_chars(begin, end, index);
      if (ec != std::errc() || ptr != end || index < 0)
        throw Error("device '" + device + "': expected cuda or cuda:N with N a device index");
    }
#if DTLAB_HAVE_CUDA
    return std::make_unique<CudaBackend>(index);
#else
    throw Error("device '" + device + "' is not available: built without CUDA (DTLAB_HAVE_CUDA=0)");
#endif
  }
  throw Error("unknown device '" + device + "' (expected cpu or cuda[:N])");
}

}  // namespace dtlab::core
