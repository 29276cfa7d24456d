#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "remote/common/tls.h"

namespace dtlab::remote {

// How one local node daemon is started.
struct LocalNodeOptions {
  double speed = 1.0;
  double bandwidthMbps = 0.0;
  double latencyMs = 0.0;
  int threads = 1;
  std::string devices = "cpu";  // dtlab-node --devices: "cpu", "cpu:N", "cuda:N[,cuda:M...]"
  TlsFiles tls;                 // --tls-cert/--tls-key/--tls-ca; empty: plain text on loopback
};

// The `count` local daemons a spec's cluster describes: each with its node entry's emulation
// and the cluster's threads, and for cluster.device "cuda" a GPU of its own (node i on
// cuda:i). Throws Error naming the numbers when this machine has fewer GPUs than nodes (two
// ranks of one collective group cannot share a GPU).
std::vector<LocalNodeOptions> localNodeOptions(const core::ClusterConfig& cluster, int64_t count);

// The embedded default cluster: N `dtlab-node` processes on free loopback ports.
//
// Each daemon is started with --listen 127.0.0.1:0 and reports the port it got on its
// first stdout line; the launcher waits for that line (the server answers from then on).
// No orphans: every child asks the kernel for SIGTERM when its parent dies
// (PR_SET_PDEATHSIG), so even a SIGKILLed launcher leaves no daemon behind, and the
// destructor stops the daemons with SIGTERM (and SIGCONT, so that a stopped one can act on
// it), then SIGKILL after a grace period.
class LocalCluster {
 public:
  LocalCluster(std::string nodeBinary, const std::vector<LocalNodeOptions>& nodes,
               std::string token = {},
               std::chrono::milliseconds startTimeout = std::chrono::seconds(15));
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  int size() const { return static_cast<int>(nodes_.size()); }
  // "127.0.0.1:PORT" of node i.
  const std::string& address(int i) const { return nodes_.at(i).address; }
  pid_t pid(int i) const { return nodes_.at(i).pid; }
  std::vector<std::string> addresses() const;
  // Sends a signal to node i (tests: SIGKILL one node mid-run).
  void signal(int i, int sig);
  // Stops every daemon that still runs; returns when all have exited.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

 private:
  struct Node {
    pid_t pid = -1;
    std::string address;
    bool reaped = false;
    int stdoutFd = -1;
  };
  std::vector<Node> nodes_;
};

// The dtlab-node binary beside the running executable (both are built into one tree
// or installed into one bin/), or $DTLAB_NODE_BINARY when set.
std::string defaultNodeBinary();

}  // namespace dtlab::remote
