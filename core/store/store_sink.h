#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/spec/experiment_spec.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/train/push_record.h"

namespace dtlab::core {

// Records one run's metrics through a PointAppender, one series per row of the metric table
// (core/metrics/metric_table.h) and owner: each StepMetrics becomes a point of every
// worker-scope series of worker m.worker on its node; each NodeMetrics a point of every
// node-scope series of that node (worker kNoWorker); each EvalMetrics a point of every
// run-scope series (node and worker kNoNode/kNoWorker). A NaN value (accuracy of a
// regression) was not measured and gets no point. Each RunEvent becomes an event row.
// Nothing here does I/O, so it is safe on the training thread.
class StoreSink : public MetricSink {
 public:
  // node kNodeOfWorker: each worker is its own node (one worker per node daemon, and
  // worker 0 alone for a run in this process).
  static constexpr int kNodeOfWorker = -2;
  StoreSink(PointAppender& appender, int64_t runId, int node = kNodeOfWorker);

  void onStep(const StepMetrics& m) override;
  void onEval(const EvalMetrics& m) override;
  void onNode(const NodeMetrics& m) override;
  void onEvent(const RunEvent& e) override;
  // Encoded and handed to the appender, which keeps the newest checkpointsKept() of the run.
  void onCheckpoint(const Checkpoint& c) override;
  void onEncodedCheckpoint(const EncodedCheckpoint& c) override;
  // The parameter server's record, in chunks of kPushesPerChunk pushes (a replica record
  // closes one; flushRecords() the last).
  static constexpr std::size_t kPushesPerChunk = 1024;
  void onPush(const PushRecord& p) override;
  void onReplica(const ReplicaRecord& r) override;
  void onReset(const ResetRecord& r) override;
  void onPsRecords(std::span<const unsigned char> chunk) override;
  void flushRecords();

  int64_t runId() const { return runId_; }
  void setCheckpointsKept(int64_t keep) { keep_ = keep; }

 private:
  using Handles = std::vector<SeriesHandle>;  // one per table row of a scope, in table order
  Handles makeHandles(MetricScope scope, int node, int worker);
  const Handles& handlesOf(std::vector<std::optional<Handles>>& cache, MetricScope scope, int index,
                           int node, int worker);
  template <typename Record>
  void append(const Record& record, const Handles& handles, int64_t step, double wallMs);

  PointAppender& appender_;
  int64_t runId_;
  int node_;
  int64_t keep_ = 2;
  void closeRecordChunk();  // under mutex_

  std::mutex mutex_;  // workers may report from several threads
  PsRecordEncoder openRecords_;
  std::vector<std::optional<Handles>> workerHandles_;
  std::vector<std::optional<Handles>> nodeHandles_;
  Handles runHandles_;
};

// A run's place in an execution (core/spec/execution_plan.h).
struct ExecutionSlot {
  int64_t executionId = 0;
  int64_t repetition = 0;
};

// Stores `spec` as the experiment of its name (creating or updating it) and begins an
// execution of it; returns the execution's id. The runs of the execution are then recorded
// with their slot in it.
int64_t beginExecution(ProjectStore& store, const ExperimentSpec& spec);

// Records a whole local run in a project: stores the spec as the experiment of that name
// (creating or updating it; not for a run in an execution, whose experiment the execution
// stored, and whose spec carries its repetition's seed), begins a run with the exact spec, records
// metrics as they happen through its own appender, and on finish() commits the last points and
// stores the summary. A recording dropped without finish() marks the run failed. runName: the run's
// name ("" for the spec's; a variant's run is "EXPERIMENT/VARIANT" and belongs to the experiment,
// not to an experiment of its own).
class RunRecording {
 public:
  RunRecording(ProjectStore& store, const ExperimentSpec& spec, const std::string& strategy,
               const std::string& runName = "", std::optional<ExecutionSlot> slot = {},
               AppenderOptions options = {});
  // Goes on recording run `runId` (a resume: ProjectStore::prepareResume made it ready),
  // keeping the newest `checkpointsKept` checkpoints.
  RunRecording(ProjectStore& store, int64_t runId, int64_t checkpointsKept,
               AppenderOptions options = {});
  ~RunRecording();
  RunRecording(const RunRecording&) = delete;
  RunRecording& operator=(const RunRecording&) = delete;

  MetricSink& sink() { return *sink_; }
  int64_t runId() const { return runId_; }
  // Flushes the points, then stores the summary and the final status. Throws StoreError.
  void finish(const RunSummary& summary);

 private:
  ProjectStore& store_;
  int64_t runId_ = 0;
  std::unique_ptr<PointAppender> appender_;
  std::unique_ptr<StoreSink> sink_;
  bool finished_ = false;
};

// Forwards every callback to each sink in order (e.g. the progress printer and a store).
class FanOutSink : public MetricSink {
 public:
  explicit FanOutSink(std::vector<MetricSink*> sinks) : sinks_(std::move(sinks)) {}
  void onStep(const StepMetrics& m) override {
    for (MetricSink* s : sinks_) s->onStep(m);
  }
  void onEval(const EvalMetrics& m) override {
    for (MetricSink* s : sinks_) s->onEval(m);
  }
  void onNode(const NodeMetrics& m) override {
    for (MetricSink* s : sinks_) s->onNode(m);
  }
  void onEvent(const RunEvent& e) override {
    for (MetricSink* s : sinks_) s->onEvent(e);
  }
  void onCheckpoint(const Checkpoint& c) override {
    for (MetricSink* s : sinks_) s->onCheckpoint(c);
  }
  void onEncodedCheckpoint(const EncodedCheckpoint& c) override {
    for (MetricSink* s : sinks_) s->onEncodedCheckpoint(c);
  }
  void onPush(const PushRecord& p) override {
    for (MetricSink* s : sinks_) s->onPush(p);
  }
  void onReplica(const ReplicaRecord& r) override {
    for (MetricSink* s : sinks_) s->onReplica(r);
  }
  void onReset(const ResetRecord& r) override {
    for (MetricSink* s : sinks_) s->onReset(r);
  }
  void onPsRecords(std::span<const unsigned char> chunk) override {
    for (MetricSink* s : sinks_) s->onPsRecords(chunk);
  }

 private:
  std::vector<MetricSink*> sinks_;
};

}  // namespace dtlab::core
