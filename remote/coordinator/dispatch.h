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
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/train/strategy_registry.h"
#include "remote/coordinator/cluster_options.h"
#include "remote/coordinator/merge.h"
#include "remote/coordinator/placement.h"

namespace dtlab::remote {

// How a strategy goes on without a lost node (on_node_loss "continue"): its ranks leave the
// parameter-server shards (PsLeave for them; nobody waits for them any more), the survivors
// re-form their collective group (RegroupJob), or, for a strategy with both, the ranks leave
// the shards while the run trains asynchronously and the run fails while the group is in use.
enum class ContinueBy { kLeavingShards, kRegroup, kLeavingShardsWhileAsync };
ContinueBy continueByOf(const core::StrategyTraits& traits);

// Where a watch delivers what the ranks report, all under `mutex`: metrics to `sink` (may be
// null), events other than each rank's "finish" to `events`; `addEvent` records the
// coordinator's own ("node_lost").
struct WatchOutputs {
  core::MetricSink* sink = nullptr;
  std::mutex& mutex;
  std::vector<core::RunEvent>& events;
  std::function<void(int64_t step, std::string kind, std::string detail, std::string data)>
      addEvent;
  // On "continue", a rank whose node is lost is dropped (RankEnd::dropped) and the others go
  // on, unless its node serves a parameter-server shard (whose blocks have no copy elsewhere)
  // or the strategy's group is in use: the run ends (WatchEnd::restartable: to restart);
  // any other policy ends the run (a restart is the caller's: WatchEnd says what it needs).
  core::NodeLossPolicy onNodeLoss = core::NodeLossPolicy::kFail;
  // How "continue" goes on without a lost node's ranks (continueByOf() of the strategy).
  ContinueBy continueBy = ContinueBy::kLeavingShards;
  // For a loss "continue" cannot go on from in place (a parameter-server shard's node, or the
  // hybrid's while its group is in use): whether the strategy keeps checkpoints, and whether
  // the run had one before this watch (it resumed from one). With one (or one released during
  // the watch) WatchEnd::restartable tells the caller to restart the run on the other nodes
  // from it, and the node_lost event says so.
  bool keepsCheckpoints = false;
  bool hadCheckpoint = false;
  // A dropped rank has left the shards' boards, or the survivors' group has re-formed (its
  // leader's "regroup" event): `seconds` from when the lost rank was last heard, `detail` for
  // the "recovery" event. Called under `mutex`.
  std::function<void(int64_t step, double seconds, int64_t stepsLost, std::string detail)>
      recovered;
  // The first step point of any rank (a restarted group trains again). Called under `mutex`.
  std::function<void(int64_t step)> firstStep;
};

// A run's reservation of one node (proto ReserveRequest) and the node's answer, in core terms.
struct ReserveClaim {
  std::string id;
  uint64_t ticket = 0;
  std::string owner;
  std::string run;
  std::chrono::milliseconds lease{6000};
};
// Both enums in the order of the wire's (ReserveRequest.Action, ReserveResponse.State).
enum class ReserveAction { kWait, kCommit, kUncommit, kRelease };
struct ReserveAnswer {
  enum class State { kWaiting, kHeld, kCommitted, kReleased };
  State state = State::kWaiting;
  int position = 0;  // while waiting: 1 + the reservations ahead
  int waiting = 0;
  // While waiting: the job running there (jobId set) and the reservation holding the node
  // (holderRun or holderOwner set), either or both.
  std::string jobId;
  std::string jobOwner;
  std::string jobRun;
  double jobSeconds = 0.0;
  std::string holderOwner;
  std::string holderRun;
  bool holderCommitted = false;
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
  // Whether some node emulates its link, by its own flags or the per-node emulation: every
  // job's ranks are then told so (StartJobRequest.links_emulated). Set once the nodes are known.
  void setLinksEmulated(bool emulated);
  // Starts the job on every rank's node, in rank order. When a start fails, the jobs already
  // started are aborted (none is left waiting at the rendezvous for ranks that will never
  // come) and the Error names the rank. `resume`: an encoded checkpoint every rank continues
  // from (empty: a fresh run); `clockStartMs`: the run's clock at the start (unset: the
  // checkpoint's time, or 0).
  // `reservationId`: the run's reservation, committed on every node of the placement (empty:
  // none, for nodes nobody else uses).
  void startJobs(const Placement& placement, const std::string& jobId, const std::string& specJson,
                 int variant, const std::string& reservationId,
                 std::span<const unsigned char> resume = {},
                 std::optional<double> clockStartMs = std::nullopt) const;
  // Reads every rank's stream until all have ended (or the wind-down after a failure, a lost
  // node or the user's `cancel` has passed); fills `ends` in rank order. A rank dropped under
  // "continue" leaves every shard's board first (PsLeave on its behalf).
  WatchEnd watchJobs(const Placement& placement, const std::string& jobId,
                     const std::atomic<bool>* cancel, const WatchOutputs& out,
                     std::vector<RankEnd>& ends) const;
  // Asks node i to cancel the job (abort: without waiting for its collectives); errors are
  // ignored, as the node may be gone.
  void cancelJob(std::size_t node, const std::string& jobId, bool abort) const;
  // Reserve on node i; throws Error naming the node when it does not answer or refuses.
  ReserveAnswer reserve(std::size_t node, const ReserveClaim& claim, ReserveAction action,
                        std::chrono::milliseconds deadline) const;
  // What node i says of job `jobId` now (GetInfo, a short deadline).
  enum class JobState { kEnded, kRunning, kSilent, kUnreachable };
  JobState jobState(std::size_t node, const std::string& jobId) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtlab::remote
