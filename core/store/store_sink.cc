#include "core/store/store_sink.h"

#include "core/common/log.h"
#include "core/spec/spec_json.h"
#include "core/train/checkpoint.h"

#include <cmath>

namespace dtlab::core {

StoreSink::StoreSink(PointAppender& appender, int64_t runId, int node)
    : appender_(appender),
      runId_(runId),
      node_(node),
      runHandles_(makeHandles(MetricScope::kRun, kNoNode, kNoWorker)) {}

StoreSink::Handles StoreSink::makeHandles(MetricScope scope, int node, int worker) {
  Handles handles;
  for (const MetricInfo* m : metricsOf(scope))
    handles.push_back(appender_.series(runId_, node, worker, std::string(m->name)));
  return handles;
}

const StoreSink::Handles& StoreSink::handlesOf(std::vector<std::optional<Handles>>& cache,
                                               MetricScope scope, int index, int node, int worker) {
  const auto i = static_cast<std::size_t>(index);
  if (i >= cache.size()) cache.resize(i + 1);
  if (!cache[i]) cache[i] = makeHandles(scope, node, worker);
  return *cache[i];
}

template <typename Record>
void StoreSink::append(const Record& record, const Handles& handles, int64_t step, double wallMs) {
  std::array<PointRecord, kMetricTable.size()> points;
  std::size_t n = 0;
  const auto rows = metricsOf(scopeOf<Record>());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const double value = record.*fieldOf<Record>(*rows[k]);
    if (std::isnan(value)) continue;
    points[n++] = {handles[k], static_cast<float>(value), step, wallMs};
  }
  appender_.append(std::span(points.data(), n));
}

void StoreSink::onStep(const StepMetrics& m) {
  if (m.worker < 0) return;  // not a worker's step: nothing to file it under
  std::lock_guard lock(mutex_);
  const int node = node_ == kNodeOfWorker ? m.worker : node_;
  append(m, handlesOf(workerHandles_, MetricScope::kWorker, m.worker, node, m.worker), m.step,
         m.wallMs);
}

void StoreSink::onNode(const NodeMetrics& m) {
  if (m.node < 0) return;
  std::lock_guard lock(mutex_);
  const int node = node_ == kNodeOfWorker ? m.node : node_;
  append(m, handlesOf(nodeHandles_, MetricScope::kNode, node, node, kNoWorker), m.step, m.wallMs);
}

void StoreSink::onCheckpoint(const Checkpoint& c) {
  onEncodedCheckpoint(
      {c.step, c.wallMs, std::make_shared<const std::vector<unsigned char>>(encodeCheckpoint(c))});
}

void StoreSink::onEncodedCheckpoint(const EncodedCheckpoint& c) {
  appender_.appendCheckpoint({runId_, c.step, c.wallMs, c.bytes, keep_});
}

void StoreSink::onPush(const PushRecord& p) {
  std::lock_guard lock(mutex_);
  openRecords_.add(p);
  if (openRecords_.pushes() >= kPushesPerChunk) closeRecordChunk();
}

void StoreSink::onReplica(const ReplicaRecord& r) {
  std::lock_guard lock(mutex_);
  openRecords_.add(r);
  closeRecordChunk();
}

void StoreSink::onReset(const ResetRecord& r) {
  std::lock_guard lock(mutex_);
  openRecords_.add(r);
  closeRecordChunk();
}

void StoreSink::onPsRecords(std::span<const unsigned char> chunk) {
  std::lock_guard lock(mutex_);
  closeRecordChunk();  // what came record by record first, in order
  appender_.appendPsRecords(runId_, {chunk.begin(), chunk.end()});
}

void StoreSink::flushRecords() {
  std::lock_guard lock(mutex_);
  closeRecordChunk();
}

void StoreSink::closeRecordChunk() {
  if (openRecords_.empty()) return;
  appender_.appendPsRecords(runId_, openRecords_.take());
}

void StoreSink::onEval(const EvalMetrics& m) {
  std::lock_guard lock(mutex_);
  append(m, runHandles_, m.step, m.wallMs);
}

void StoreSink::onEvent(const RunEvent& e) {
  appender_.appendEvent(runId_, e);
}

namespace {

// Begins the run (RunRecording's first constructor): in its execution, or as a run of its own
// whose spec becomes the experiment.
int64_t beginRecordedRun(ProjectStore& store, const ExperimentSpec& spec,
                         const std::string& strategy, const std::string& runName,
                         const std::optional<ExecutionSlot>& slot) {
  const nlohmann::json specJson = toJson(spec);
  RunStart start;
  if (slot) {
    const std::optional<ExecutionRecord> execution = store.execution(slot->executionId);
    if (!execution)
      throw StoreError("no execution " + std::to_string(slot->executionId) + " in " + store.path());
    start.experimentId = execution->experimentId;
    start.executionId = slot->executionId;
    start.repetition = slot->repetition;
  } else {
    start.experimentId = store.putEntity(EntityKind::kExperiment, spec.name, specJson);
  }
  start.name = runName.empty() ? spec.name : runName;
  start.strategy = strategy;
  start.seed = spec.seed;
  start.spec = specJson;
  return store.beginRun(start);
}

}  // namespace

int64_t beginExecution(ProjectStore& store, const ExperimentSpec& spec) {
  const nlohmann::json specJson = toJson(spec);
  ExecutionStart start;
  start.experimentId = store.putEntity(EntityKind::kExperiment, spec.name, specJson);
  start.repeats = spec.repeats;
  start.seed = spec.seed;
  start.spec = specJson;
  return store.beginExecution(start);
}

RunRecording::RunRecording(ProjectStore& store, const ExperimentSpec& spec,
                           const std::string& strategy, const std::string& runName,
                           std::optional<ExecutionSlot> slot, AppenderOptions options)
    : RunRecording(store, beginRecordedRun(store, spec, strategy, runName, slot),
                   spec.training.checkpointsKept, options) {}

RunRecording::RunRecording(ProjectStore& store, int64_t runId, int64_t checkpointsKept,
                           AppenderOptions options)
    : store_(store), runId_(runId) {
  try {
    appender_ = std::make_unique<PointAppender>(store.path(), options);
  } catch (...) {
    store.setRunStatus(runId_, RunStatus::kFailed, "could not start recording");
    throw;
  }
  sink_ = std::make_unique<StoreSink>(*appender_, runId_);
  sink_->setCheckpointsKept(checkpointsKept);
}

RunRecording::~RunRecording() {
  if (finished_) return;
  try {
    appender_->close();
  } catch (...) {
    // Recorded below as the run's failure; the cause goes to the log.
    logCurrentException(LogLevel::kWarn, "closing the recording of run " + std::to_string(runId_));
  }
  try {
    store_.setRunStatus(runId_, RunStatus::kFailed, "the recording ended without a run summary");
  } catch (...) {
    logCurrentException(LogLevel::kWarn, "marking run " + std::to_string(runId_) + " failed");
  }
}

void RunRecording::finish(const RunSummary& summary) {
  finished_ = true;
  std::optional<StoreError> error;
  try {
    sink_->flushRecords();
    appender_->close();
  } catch (const StoreError& e) {
    error = e;
  }
  store_.finishRun(runId_, summary);
  if (error) throw *error;
}

}  // namespace dtlab::core
