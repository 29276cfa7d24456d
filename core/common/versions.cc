#include "core/common/versions.h"

#include <dnnl.h>
#include <gloo/config.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

namespace dtlab::core {
namespace {

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

std::vector<std::string> libraryVersions() {
  const dnnl_version_t* dnnl = dnnl_version();
  return {
      std::string("SQLite ") + sqlite3_libversion(),
      "oneDNN " + dotted(dnnl->major, dnnl->minor, dnnl->patch),
      "Gloo " + dotted(GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH),
      "nlohmann/json " + dotted(NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                NLOHMANN_JSON_VERSION_PATCH),
  };
}

}  // namespace dtlab::core
