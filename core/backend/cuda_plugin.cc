#include "core/backend/cuda_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/common/check.h"
#include "core/common/config.h"
#include "core/common/program_path.h"

namespace dtlab::core {

CudaPluginLoad loadCudaPlugin(const std::string& path) {
  CudaPluginLoad load;
  load.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    load.why = "no CUDA plugin at " + path +
               " (the dtlab-cuda package installs it; a source build makes it where nvcc, "
               "cuBLAS and NCCL are found)";
    return load;
  }
  // RTLD_NOW: a CUDA library the plugin needs and cannot find fails here, by name, not at
  // the first call.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    load.why = "cannot load the CUDA plugin " + path + ": " + (error ? error : "dlopen failed");
    return load;
  }
  auto entry = reinterpret_cast<CudaPluginEntry>(dlsym(handle, kCudaPluginEntry));
  if (entry == nullptr) {
    load.why = path + " is not a DTLab CUDA plugin (no " + kCudaPluginEntry + " symbol)";
    dlclose(handle);
    return load;
  }
  const char* why = nullptr;
  load.plugin = entry(DTLAB_VERSION, &why);
  if (load.plugin == nullptr) {
    load.why = "cannot use the CUDA plugin " + path + ": " + (why ? why : "it refused") +
               ", this program is DTLab " DTLAB_VERSION;
    dlclose(handle);
  }
  // A plugin in use stays loaded: its objects live as long as the process.
  return load;
}

namespace {

std::string defaultPluginPath() {
  if (const char* path = std::getenv("DTLAB_CUDA_PLUGIN"); path != nullptr && *path != '\0')
    return path;
  const std::filesystem::path program = programPath();
  std::error_code ec;
  const std::filesystem::path dir =
      program.empty() ? std::filesystem::current_path(ec) : program.parent_path();
  return (dir.parent_path() / "lib" / "dtlab" / kCudaPluginFile).lexically_normal().string();
}

}  // namespace

const CudaPluginLoad& cudaPlugin() {
  static const CudaPluginLoad load = loadCudaPlugin(defaultPluginPath());
  return load;
}

std::unique_ptr<Communicator> makeNcclCommunicator(gloo::rendezvous::Store& store, int rank,
                                                   int size, const NcclOptions& options) {
  const CudaPluginLoad& load = cudaPlugin();
  if (load.plugin == nullptr) throw Error("NCCL collectives are not available: " + load.why);
  return load.plugin->makeNcclCommunicator(store, rank, size, options);
}

}  // namespace dtlab::core
