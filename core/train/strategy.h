#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/train/metrics.h"

namespace dtlab::core {

class Communicator;

// One rank's part of one run: what a node daemon executes for StartJob.
struct WorkerJob {
  ExperimentSpec spec;
  int variant = 0;  // index into spec.variants
  int rank = 0;
  int world = 1;
  NodeConfig node;  // this node's emulated speed (bandwidth/latency act in the communicator)
  int threads = 1;  // CPU threads of this worker's backend
  std::string device = "cpu";
  bool keepParams = false;  // return the final parameters (tests, equivalence checks)
};

// This rank's outcome; the coordinator merges the ranks' results into a RunSummary.
struct WorkerResult {
  std::string status = "failed";  // completed, cancelled, failed
  std::string stopReason;
  std::string error;
  int64_t steps = 0;
  int64_t samples = 0;  // samples this rank trained on
  double wallS = 0.0;
  double computeMsTotal = 0.0;
  double stepMsTotal = 0.0;
  double waitMsTotal = 0.0;
  std::string paramChecksum;
  std::optional<double> finalTestAccuracy;
  std::optional<double> finalTestLoss;
  std::optional<double> timeToTargetS;
  std::vector<float> params;  // the final parameters when WorkerJob::keepParams
};

// Runs one rank of the job's strategy variant to the end (stopping conditions as in
// trainLocal; every rank stops at the same step because the decision is taken from
// values all ranks share). `comm` connects the `world` ranks and may be null when
// world == 1. Errors (a peer lost, a collective failing) come back as status "failed"
// with the message; `cancel` stops at the next step boundary. Metrics go to sink with
// StepMetrics::worker = rank.
WorkerResult runWorker(const WorkerJob& job, Communicator* comm, MetricSink* sink,
                       const std::atomic<bool>* cancel);

}  // namespace dtlab::core
