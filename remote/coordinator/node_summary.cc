#include "remote/coordinator/node_summary.h"

#include <algorithm>

namespace dtlab::remote {

NodeSummary nodeSummaryOf(const proto::NodeInfo& info, const std::string& address) {
  NodeSummary s;
  s.advertiseHost = info.advertise_host();
  s.capabilities.assign(info.capabilities().begin(), info.capabilities().end());
  s.address = address;
  s.programVersion = info.program_version();
  s.hostname = info.hostname();
  s.speed = info.speed();
  s.bandwidthMbps = info.bandwidth_mbps();
  s.latencyMs = info.latency_ms();
  s.cores = info.cores();
  s.busy = info.busy();
  s.jobOwner = info.job_owner();
  s.jobRun = info.job_run();
  for (const proto::QueuedRun& q : info.reservations())
    s.reservations.push_back({q.owner(), q.run_name(), q.holds(), q.seconds()});
  s.workerThreads = info.worker_threads();
  s.cpuSlots = 0;
  for (const proto::DeviceInfo& d : info.devices()) {
    s.devices.push_back(d.kind() == "cuda" ? d.name() + " (" + d.detail() + ")"
                                           : d.name() + " (" + std::to_string(d.slots()) +
                                                 (d.slots() == 1 ? " slot)" : " slots)"));
    if (d.kind() != "cpu") s.accelerators.push_back(s.devices.back());
    if (d.kind() == "cuda") ++s.gpus;
    if (d.kind() == "cpu") {
      s.cpuSlots += std::max(1, d.slots());
      s.machine = d.detail();
    }
  }
  s.cpuSlots = std::max(1, s.cpuSlots);
  return s;
}

}  // namespace dtlab::remote
