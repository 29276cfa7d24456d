#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/train/metrics.h"

namespace dtlab::remote {

struct CoordinatorOptions {
  std::string token;  // sent as "authorization: Bearer <token>" when not empty
  std::chrono::milliseconds callDeadline{5000};
  // A node whose WatchJob stream is silent this long is lost. Nodes send a heartbeat
  // every heartbeatInterval, so this only fires on a dead or wedged node.
  std::chrono::milliseconds heartbeatInterval{500};
  std::chrono::milliseconds lostAfter{3000};
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
};

// The client side of a run: connects to the nodes, assigns ranks (the order of the
// node list), starts the job everywhere, merges the metric streams into one sink, and
// fails the run naming the node when one is lost.
//
// Protocol of one run:
//  a. GetInfo on every node (deadline): protocol version and capabilities checked.
//  b. StartJob on every node with its rank; rank 0's daemon hosts the rendezvous.
//     If any start fails, the started ones are cancelled and the error names the node.
//  c. WatchJob on every node, one reader thread each; updates go to the sink under
//     one lock. A stream that breaks before its final message, or stays silent for
//     lostAfter, marks the node lost: every other node is cancelled, the run fails.
//  d. The final messages' results are merged into a RunSummary.
class Coordinator {
 public:
  Coordinator(std::vector<std::string> addresses, CoordinatorOptions options);
  ~Coordinator();

  // Step a. Throws dtlab::Error naming the node (unreachable, wrong token, protocol).
  std::vector<NodeSummary> connect();
  // Steps b-d for spec.variants[variant]. sink receives StepMetrics (worker = rank),
  // evaluations and events; may be null.
  core::RunSummary run(const core::ExperimentSpec& spec, int variant, core::MetricSink* sink,
                       const std::atomic<bool>* cancel = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtlab::remote
