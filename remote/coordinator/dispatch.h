#pragma once
// The coordinator's calls to its nodes (Coordinator::run's second and third phases): a job
// started on every rank's node or on none (dispatch with rollback), and every rank's WatchJob
// stream read to its end with failure detection (a silent or broken node is lost, a failed
// rank ends the run, a user's cancel is forwarded, stragglers are left behind after the
// wind-down).
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "remote/coordinator/coordinator.h"
#include "remote/coordinator/merge.h"
#include "remote/coordinator/placement.h"

namespace dtlab::remote {

// Where a watch delivers what the ranks report, all under `mutex`: metrics to `sink` (may be
// null), events other than each rank's "finish" to `events`; `addEvent` records the
// coordinator's own ("node_lost").
struct WatchOutputs {
  core::MetricSink* sink = nullptr;
  std::mutex& mutex;
  std::vector<core::RunEvent>& events;
  std::function<void(int64_t step, std::string kind, std::string detail)> addEvent;
};

class NodeLinks {
 public:
  // One channel per address; node i is named "node<i>". `options` supplies the tokens,
  // deadlines, heartbeat, emulation and the lost-node and wind-down times.
  NodeLinks(std::vector<std::string> addresses, CoordinatorOptions options);
  ~NodeLinks();
  NodeLinks(const NodeLinks&) = delete;
  NodeLinks& operator=(const NodeLinks&) = delete;

  std::size_t size() const;
  const std::string& address(std::size_t node) const;
  const std::string& name(std::size_t node) const;
  std::string label(std::size_t node) const;  // "node1 (127.0.0.1:7001)"
  const CoordinatorOptions& options() const;

  // GetInfo of node i, its protocol version checked; throws Error naming the node.
  NodeSummary info(std::size_t node) const;
  // Starts the job on every rank's node, in rank order. When a start fails, the jobs already
  // started are aborted (none is left waiting at the rendezvous for ranks that will never
  // come) and the Error names the rank. `resume`: an encoded checkpoint every rank continues
  // from (empty: a fresh run).
  void startJobs(const Placement& placement, const std::string& jobId, const std::string& specJson,
                 int variant, std::span<const unsigned char> resume = {}) const;
  // Reads every rank's stream until all have ended (or the wind-down after a failure, a lost
  // node or the user's `cancel` has passed); fills `ends` in rank order.
  WatchEnd watchJobs(const Placement& placement, const std::string& jobId,
                     const std::atomic<bool>* cancel, const WatchOutputs& out,
                     std::vector<RankEnd>& ends) const;
  // Asks node i to cancel the job (abort: without waiting for its collectives); errors are
  // ignored, as the node may be gone.
  void cancelJob(std::size_t node, const std::string& jobId, bool abort) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtlab::remote
