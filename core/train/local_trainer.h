#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/metrics/metrics.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

struct LocalTrainOptions {
  std::string device = "cpu";
  int threads = 0;                               // overrides spec.training.threads when > 0
  std::shared_ptr<const Checkpoint> resumeFrom;  // continue from it (WorkerJob::resumeFrom)
};

// Trains the spec's model in this process on the whole training set: the
// single-replica baseline every distributed strategy is compared with. Stops on the
// first of: target accuracy reached at an evaluation, epochs, max_steps,
// max_seconds, or *cancel becoming true. Metrics go to sink (may be null).
// Errors inside training come back as status "failed" with the message; an invalid
// spec throws SpecError before anything runs.
RunSummary trainLocal(const ExperimentSpec& spec, const LocalTrainOptions& options,
                      MetricSink* sink, const std::atomic<bool>* cancel = nullptr);

// The thread count `threads: 0` means for this spec: 1 for models too small to gain
// from a second thread, else 0 (every core).
int autoThreads(const ExperimentSpec& spec);

// Steps the spec runs when no time limit or target ends it first (0: unbounded).
int64_t plannedSteps(const ExperimentSpec& spec, int64_t stepsPerEpoch);

}  // namespace dtlab::core
