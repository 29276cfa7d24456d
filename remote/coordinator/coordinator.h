#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/spec/experiment_spec.h"
#include "remote/coordinator/cluster_options.h"

namespace dtlab::remote {

// The client side of a run: connects to the nodes, assigns ranks (the order of the node
// list, and on a node with several worker slots for the run's device, one rank per slot:
// its CPU slots, or its GPUs for cluster.device "cuda"), starts the job everywhere, merges the
// metric streams into one sink, and fails the run naming the node when one is lost.
//
// Protocol of one run:
//  a. GetInfo on every node (deadline): protocol version and capabilities checked.
//  -. Reserve every node of the run at once (remote/coordinator/reservation.h), waiting in
//     their queues while other runs hold them, up to the wait limit; a cancel leaves the queues.
//     The reservation holds the nodes until the run ends, restarts included.
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
