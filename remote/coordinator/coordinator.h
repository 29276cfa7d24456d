#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
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
  // every heartbeatInterval, so this only fires on a dead or wedged node.
  std::chrono::milliseconds heartbeatInterval{500};
  std::chrono::milliseconds lostAfter{3000};
  // How long the nodes may take to connect to each other for a run (0: each node's own
  // --connect-timeout).
  std::chrono::milliseconds connectTimeout{0};
  // After a cancel or a lost node, how long the other nodes may take to report their end
  // before the run is closed without them (they abort their communication on their own).
  std::chrono::milliseconds windDown{3000};
};

// What GetInfo said about a node, in core terms.
struct NodeSummary {
  std::string address;
  std::string name;
  std::string programVersion;
  std::string hostname;
  double speed = 1.0;
  int cores = 0;
  bool busy = false;
  std::string advertiseHost;  // "" when the node leaves it to the coordinator
  std::vector<std::string> capabilities;
  // "cpu (1 slot)", "cuda:0 (NVIDIA H200, 139.8 GiB, compute capability 9.0)"
  std::vector<std::string> devices;
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

// The client side of a run: connects to the nodes, assigns ranks (the order of the node
// list, and on a node with several worker slots for the run's device, one rank per slot:
// its CPU slots, or its GPUs for cluster.device "cuda"), starts the job everywhere, merges the
// metric streams into one sink, and fails the run naming the node when one is lost.
//
// Protocol of one run:
//  a. GetInfo on every node (deadline): protocol version and capabilities checked.
//  b. StartJob for every rank, on its node, with its slot there; rank 0's daemon hosts the
//     rendezvous, at rank
//     0's advertised host (or the host it was dialled at) and its port. Each node binds its
//     collectives to its own advertised host, or else to the host it was dialled at.
//     If any start fails, the started ones are cancelled and the error names the node.
//  c. WatchJob for every rank, one reader thread each; updates go to the sink under
//     one lock. A stream that breaks before its final message, or stays silent for
//     lostAfter, marks the node lost; a node whose job failed ends the run too. Either way
//     every other node is told to abort its communication at once (pending collectives
//     fail instead of waiting for the lost peer), and the run fails naming the root cause.
//     A user's cancel is forwarded politely (the ranks stop together at a step boundary);
//     nodes that have not reported their end windDown later are left behind.
//  d. The final messages' results are merged into a RunSummary; its error is the first
//     root cause: a lost node, else a rank's own failure, else a failure it learned from a
//     peer, else a communication error.
class Coordinator {
 public:
  Coordinator(std::vector<std::string> addresses, CoordinatorOptions options);
  ~Coordinator();

  // Step a. Throws dtlab::Error naming the node (unreachable, wrong token, protocol).
  std::vector<NodeSummary> connect();
  // Steps b-d for spec.variants[variant]. sink receives StepMetrics (worker = rank),
  // evaluations, events and rank 0's checkpoints; may be null. `resume`: an encoded
  // checkpoint (core/train/checkpoint.h) the run continues from; empty: from the start.
  core::RunSummary run(const core::ExperimentSpec& spec, int variant, core::MetricSink* sink,
                       const std::atomic<bool>* cancel = nullptr,
                       std::span<const unsigned char> resume = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtlab::remote
