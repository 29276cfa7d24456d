#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/train/parameter_server.h"

namespace dtlab::remote {

// The parameter-server blocks this node serves, by job. StartJob installs a job's host
// before the job's thread starts (a worker elsewhere may call as soon as its own job runs;
// until then it gets NOT_FOUND and retries); the host stays until the next job is installed,
// so workers of the same run that finish later than this node's own worker are still served.
class ParameterTable {
 public:
  // Drops every other job's host.
  void install(const std::string& jobId, std::shared_ptr<core::ParameterHost> host);
  std::shared_ptr<core::ParameterHost> find(const std::string& jobId) const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<core::ParameterHost>> hosts_;
};

}  // namespace dtlab::remote
