#include "remote/node/parameter_table.h"

namespace dtlab::remote {

void ParameterTable::install(const std::string& jobId, std::shared_ptr<core::ParameterHost> host) {
  std::lock_guard<std::mutex> lock(mutex_);
  hosts_.clear();
  hosts_[jobId] = std::move(host);
}

std::shared_ptr<core::ParameterHost> ParameterTable::find(const std::string& jobId) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = hosts_.find(jobId);
  return it == hosts_.end() ? nullptr : it->second;
}

void ParameterTable::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  hosts_.clear();
}

}  // namespace dtlab::remote
