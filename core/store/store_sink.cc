#include "core/store/store_sink.h"

#include <cmath>

namespace dtlab::core {

const std::array<const char*, 9>& StoreSink::stepKeys() {
  static const std::array<const char*, 9> keys = {
      metric::kLoss,        metric::kSamplesPerS, metric::kStepMs,
      metric::kComputeMs,   metric::kCommMs,      metric::kWaitMs,
      metric::kUtilization, metric::kBatchShare,  metric::kStaleness};
  return keys;
}

StoreSink::StoreSink(PointAppender& appender, int64_t runId, int node)
    : appender_(appender),
      runId_(runId),
      node_(node),
      testLoss_(appender.series(runId, kNoNode, kNoWorker, metric::kTestLoss)),
      testAccuracy_(appender.series(runId, kNoNode, kNoWorker, metric::kTestAccuracy)) {}

const std::array<SeriesHandle, 9>& StoreSink::handlesOf(int worker) {
  const auto index = static_cast<std::size_t>(worker);
  if (index >= workerHandles_.size()) {
    workerHandles_.resize(index + 1);
    workerKnown_.resize(index + 1, false);
  }
  if (!workerKnown_[index]) {
    for (std::size_t k = 0; k < stepKeys().size(); ++k)
      workerHandles_[index][k] =
          appender_.series(runId_, node_ == kNodeOfWorker ? worker : node_, worker, stepKeys()[k]);
    workerKnown_[index] = true;
  }
  return workerHandles_[index];
}

void StoreSink::onStep(const StepMetrics& m) {
  if (m.worker < 0) return;  // not a worker's step: nothing to file it under
  std::array<PointRecord, 9> points;
  {
    std::lock_guard lock(mutex_);
    const std::array<SeriesHandle, 9>& h = handlesOf(m.worker);
    const std::array<double, 9> values = {m.loss,        m.samplesPerS, m.stepMs,
                                          m.computeMs,   m.commMs,      m.waitMs,
                                          m.utilization, m.batchShare,  m.staleness};
    for (std::size_t k = 0; k < points.size(); ++k)
      points[k] = {h[k], static_cast<float>(values[k]), m.step, m.wallMs};
  }
  appender_.append(points);
}

void StoreSink::onEval(const EvalMetrics& m) {
  std::array<PointRecord, 2> points;
  std::size_t n = 0;
  points[n++] = {testLoss_, static_cast<float>(m.testLoss), m.step, m.wallMs};
  if (!std::isnan(m.testAccuracy))
    points[n++] = {testAccuracy_, static_cast<float>(m.testAccuracy), m.step, m.wallMs};
  appender_.append(std::span(points.data(), n));
}

void StoreSink::onEvent(const RunEvent& e) {
  appender_.appendEvent(runId_, e);
}

RunRecording::RunRecording(ProjectStore& store, const ExperimentSpec& spec,
                           const std::string& strategy, AppenderOptions options)
    : store_(store) {
  const nlohmann::json specJson = toJson(spec);
  RunStart start;
  start.experimentId = store.putEntity(EntityKind::kExperiment, spec.name, specJson);
  start.name = spec.name;
  start.strategy = strategy;
  start.seed = spec.seed;
  start.spec = specJson;
  runId_ = store.beginRun(start);
  try {
    appender_ = std::make_unique<PointAppender>(store.path(), options);
  } catch (...) {
    store.setRunStatus(runId_, "failed", "could not start recording");
    throw;
  }
  sink_ = std::make_unique<StoreSink>(*appender_, runId_);
}

RunRecording::~RunRecording() {
  if (finished_) return;
  try {
    appender_->close();
  } catch (...) {
    // The failure is what we are about to record.
  }
  try {
    store_.setRunStatus(runId_, "failed", "the recording ended without a run summary");
  } catch (...) {
  }
}

void RunRecording::finish(const RunSummary& summary) {
  finished_ = true;
  std::string error;
  try {
    appender_->close();
  } catch (const StoreError& e) {
    error = e.what();
  }
  store_.finishRun(runId_, summary);
  if (!error.empty()) throw StoreError(error);
}

}  // namespace dtlab::core
