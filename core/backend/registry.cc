#include "core/backend/backend.h"
#include "core/backend/cpu_backend.h"
#include "core/common/check.h"
#include "core/common/config.h"

namespace dtlab::core {

std::vector<BackendInfo> availableBackends() {
  std::vector<BackendInfo> list;
#if DTLAB_HAVE_CUDA
  list.push_back({"cuda", false, "CUDA backend not yet implemented"});
#else
  list.push_back({"cuda", false, "built without CUDA (DTLAB_HAVE_CUDA=0)"});
#endif
  list.push_back({"cpu", true, ""});
  return list;
}

std::unique_ptr<Backend> makeBackend(const std::string& device, int threads) {
  if (device == "cpu") return std::make_unique<CpuBackend>(threads);
  for (const auto& info : availableBackends()) {
    if (device.rfind(info.name, 0) == 0 && !info.enabled)
      throw Error("device '" + device + "' is not available: " + info.why);
  }
  throw Error("unknown device '" + device + "' (expected cpu or cuda[:N])");
}

}  // namespace dtlab::core
