#include "core/train/local_trainer.h"

#include <chrono>

#include "core/common/process_memory.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/nn/model_kinds.h"
#include "core/train/push_record.h"
#include "core/train/strategy.h"

namespace dtlab::core {
namespace {

// Passes everything on and keeps the events for the summary.
class EventRecorder final : public MetricSink {
 public:
  explicit EventRecorder(MetricSink* next) : next_(next) {}
  void onStep(const StepMetrics& m) override {
    if (next_ != nullptr) next_->onStep(m);
  }
  void onEval(const EvalMetrics& m) override {
    if (next_ != nullptr) next_->onEval(m);
  }
  void onNode(const NodeMetrics& m) override {
    if (next_ != nullptr) next_->onNode(m);
  }
  void onEvent(const RunEvent& e) override {
    events.push_back(e);
    if (next_ != nullptr) next_->onEvent(e);
  }
  void onCheckpoint(const Checkpoint& c) override {
    if (next_ != nullptr) next_->onCheckpoint(c);
  }
  void onPush(const PushRecord& p) override {
    if (next_ != nullptr) next_->onPush(p);
  }
  void onReplica(const ReplicaRecord& r) override {
    if (next_ != nullptr) next_->onReplica(r);
  }
  void onReset(const ResetRecord& r) override {
    if (next_ != nullptr) next_->onReset(r);
  }
  void onPsRecords(std::span<const unsigned char> chunk) override {
    if (next_ != nullptr) next_->onPsRecords(chunk);
  }
  std::vector<RunEvent> events;

 private:
  MetricSink* next_;
};

}  // namespace

int autoThreads(const ExperimentSpec& spec) {
  // Below about 0.2 GFLOP a step, waking a second thread costs more than it saves, and
  // a spinning OpenMP pool slows to a crawl when another process holds the other core
  // (measured: 25x slower on the default spec beside a compiler).
  const int64_t macs = modelKindOf(spec.model).forwardMacs(spec.model, sampleShapeOf(spec.dataset));
  const double stepFlops =
      6.0 * static_cast<double>(macs) * static_cast<double>(spec.training.batchSize);
  return stepFlops < 2e8 ? 1 : 0;
}

int64_t plannedSteps(const ExperimentSpec& spec, int64_t stepsPerEpoch) {
  int64_t steps = spec.training.epochs > 0 ? spec.training.epochs * stepsPerEpoch : 0;
  if (spec.training.maxSteps > 0)
    steps = steps > 0 ? std::min(steps, spec.training.maxSteps) : spec.training.maxSteps;
  return steps;
}

RunSummary trainLocal(const ExperimentSpec& spec, const LocalTrainOptions& options,
                      MetricSink* sink, const std::atomic<bool>* cancel) {
  // One replica of the synchronous strategy: the same loop, metrics and stopping rules
  // as every distributed run, with nobody to talk to.
  WorkerJob job;
  job.spec = spec;
  job.device = options.device;
  job.resumeFrom = options.resumeFrom;
  job.threads = options.threads > 0 ? options.threads : spec.training.threads;
  if (job.threads == 0) {
    try {
      job.threads = autoThreads(spec);
    } catch (const std::exception&) {
      // runWorker reports the dataset's error as the run's failure.
    }
  }
  EventRecorder recorder(sink);
  resetPeakResidentBytes();
  const WorkerResult r = runWorker(job, nullptr, &recorder, cancel);
  const int64_t peak = peakResidentBytes().value_or(0);

  RunSummary summary;
  summary.name = spec.name;
  summary.strategy = kSingleProcessStrategy;
  summary.status = r.status;
  summary.stopReason = r.stopReason;
  summary.error = r.error;
  summary.wallS = r.wallS;
  summary.steps = r.steps;
  summary.samples = r.samples;
  summary.samplesPerS =
      r.stepMsTotal > 0.0 ? static_cast<double>(r.samples) * 1000.0 / r.stepMsTotal : 0.0;
  summary.finalTestAccuracy = r.finalTestAccuracy;
  summary.finalTestLoss = r.finalTestLoss;
  summary.timeToTargetS = r.timeToTargetS;
  summary.meanUtilization = r.stepMsTotal > 0.0 ? r.computeMsTotal / r.stepMsTotal : 0.0;
  summary.utilization = {summary.meanUtilization};
  summary.meanWaitFraction = r.stepMsTotal > 0.0 ? r.waitMsTotal / r.stepMsTotal : 0.0;
  if (!r.paramChecksum.empty()) summary.paramChecksum = {r.paramChecksum};
  summary.peakMemBytes = {peak};
  summarizeExchange(r.exchange, summary);
  summary.events = std::move(recorder.events);
  RunEvent finish{
      summary.steps, summary.wallS * 1000.0, "finish",
      std::string(toString(summary.status)) + " (" + toString(summary.stopReason) + ")"};
  if (sink != nullptr) sink->onEvent(finish);
  summary.events.push_back(std::move(finish));
  return summary;
}

}  // namespace dtlab::core
