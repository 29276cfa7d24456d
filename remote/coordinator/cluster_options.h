#pragma once
// What a coordinator is told (CoordinatorOptions) and what it learns of a node (NodeSummary,
// queryNode): shared by the coordinator and its parts (dispatch, placement, reservation), which
// include this rather than coordinator.h.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "remote/common/tls.h"

namespace dtlab::remote {

struct CoordinatorOptions {
  std::string token;  // sent as "authorization: Bearer <token>" when not empty
  // Tokens of particular nodes, by the address given to the Coordinator, in place of
  // `token` (daemons on different machines may have different tokens).
  std::map<std::string, std::string> nodeTokens;
  // This client's certificate, key and the cluster's CA for daemons that serve mutual TLS
  // (remote/common/tls.h); empty: plain text.
  TlsFiles tls;
  // The compute and link emulation of each node (one entry per node, in the order of the
  // addresses), sent with every job of its ranks: the spec's node entries when the nodes are the
  // spec's own (cluster.nodes[i].address). Empty: each daemon applies its own flags. Every node
  // must then list the capability "job_emulation".
  std::vector<core::NodeConfig> emulation;
  std::chrono::milliseconds callDeadline{5000};
  // A node whose WatchJob stream is silent this long is lost. Nodes send a heartbeat
  // every heartbeatInterval, so this only fires on a dead or wedged node. The time this
  // coordinator spends handling a node's message (checking a checkpoint, storing what came)
  // is not the node's silence.
  std::chrono::milliseconds heartbeatInterval{500};
  std::chrono::milliseconds lostAfter{3000};
  // How long the nodes may take to connect to each other for a run (0: each node's own
  // --connect-timeout).
  std::chrono::milliseconds connectTimeout{0};
  // After a cancel or a lost node, how long the other nodes may take to report their end
  // before the run is closed without them (they abort their communication on their own).
  std::chrono::milliseconds windDown{3000};
  // How long a run waits for its nodes while other runs hold them (remote/coordinator/
  // reservation.h); 0: it fails at once, naming the node and what holds it. Unset: the spec's
  // cluster.wait_seconds, else kDefaultWait.
  std::optional<std::chrono::milliseconds> waitLimit;
  // Told what a run waits for each time that changes ("waiting for node0 (busy with bob@lab's
  // run 'exp/sync', position 1 of 2)"), and "" once it has its nodes; on the run's thread.
  std::function<void(const std::string&)> onWaiting;
};

// How long a run waits for busy nodes when neither the options nor the spec say.
inline constexpr std::chrono::seconds kDefaultWait{core::kDefaultWaitSeconds};

// What GetInfo said about a node, in core terms.
struct NodeSummary {
  std::string address;
  std::string name;
  std::string programVersion;
  std::string hostname;
  double speed = 1.0;
  int cores = 0;
  bool busy = false;
  // While busy: who runs what there ("alice@lab", "exp/sync"; empty from older nodes).
  std::string jobOwner;
  std::string jobRun;
  // The runs that reserved it: the one holding it first, then those waiting, in order.
  struct QueuedRun {
    std::string owner;
    std::string run;
    bool holds = false;
    double seconds = 0.0;  // since it first asked
  };
  std::vector<QueuedRun> reservations;
  std::string advertiseHost;  // "" when the node leaves it to the coordinator
  std::vector<std::string> capabilities;
  // "cpu (1 slot)", "cuda:0 (NVIDIA H200, 139.8 GiB, compute capability 9.0)"
  std::vector<std::string> devices;
  // Those of its devices that are not its CPU (by the daemon's kind), as `devices` says them.
  std::vector<std::string> accelerators;
  // The machine as the daemon describes its CPU ("AMD EPYC 9R14, 2 cores, 1 worker threads").
  std::string machine;
  int cpuSlots = 1;  // CPU workers it runs at once (--devices cpu:N)
  int gpus = 0;      // GPUs it runs a worker on each (--devices cuda:N,...)
  int workerThreads = 0;
  // The daemon's own emulation flags (what a job without per-job emulation gets).
  double bandwidthMbps = 0.0;
  double latencyMs = 0.0;
};

// GetInfo on one node, as connect() asks each node, with its own deadline. Throws
// dtlab::Error naming the address: unreachable, wrong or missing token, protocol mismatch.
// For a check of single nodes (a topology editor's "test connection").
NodeSummary queryNode(const std::string& address, const std::string& token,
                      std::chrono::milliseconds deadline = std::chrono::milliseconds(5000),
                      const TlsFiles& tls = {});

}  // namespace dtlab::remote
