#include "remote/coordinator/execution_runner.h"

#include "core/common/check.h"
#include "core/spec/spec_json.h"
#include "core/store/store_sink.h"
#include "core/train/strategy_registry.h"
#include "remote/coordinator/coordinator.h"

namespace dtlab::remote {

ResumePoint resumePoint(core::ProjectStore& store, int64_t runId, int64_t step) {
  ResumePoint point;
  point.run = store.requireRun(runId);
  const std::string named = "run " + std::to_string(runId) + " ('" + point.run.name + "')";
  if (point.run.status == core::RunStatus::kCompleted)
    throw Error(named + " completed: nothing to resume");
  if (point.run.spec.is_null()) throw Error(named + " has no stored spec");
  const std::vector<core::CheckpointInfo> kept = store.checkpoints(runId);
  if (kept.empty()) throw Error(core::whyNoCheckpoint(store, point.run));
  point.step = step > 0 ? step : kept.back().step;
  point.spec = core::parseExperimentSpec(point.run.spec);
  point.singleProcess = point.run.strategy == core::kSingleProcessStrategy;
  point.variant = point.singleProcess ? 0 : core::variantOfRun(point.spec, point.run.name);
  return point;
}

ExecutionPlan planExecution(core::ProjectStore* store, const core::ExperimentSpec& spec) {
  ExecutionPlan plan;
  plan.runs = core::executionPlan(spec);
  if (store != nullptr) plan.executionId = core::beginExecution(*store, spec);
  return plan;
}

ExecutionPlan planResume(const ResumePoint& point) {
  ExecutionPlan plan;
  core::PlannedRun run;
  run.variant = point.variant;
  run.repetition = static_cast<int>(point.run.repetition);
  run.spec = point.spec;
  run.name = point.run.name;
  plan.runs.push_back(std::move(run));
  plan.resume = true;
  return plan;
}

std::string runLabel(const core::ExperimentSpec& spec, const core::PlannedRun& run) {
  std::string label = spec.variants.at(static_cast<std::size_t>(run.variant)).name;
  if (spec.repeats > 1)
    label += " (" + std::to_string(run.repetition + 1) + "/" + std::to_string(spec.repeats) + ")";
  return label;
}

std::vector<core::RunSummary> runExecution(Coordinator& coordinator, const ExecutionPlan& plan,
                                           ExecutionObserver& observer,
                                           const std::atomic<bool>* cancel,
                                           const std::vector<unsigned char>& checkpoint) {
  std::vector<core::RunSummary> summaries;
  for (const core::PlannedRun& run : plan.runs) {
    if (cancel != nullptr && cancel->load()) break;
    const core::VariantConfig& variant =
        run.spec.variants.at(static_cast<std::size_t>(run.variant));
    const std::string label = runLabel(run.spec, run);
    core::MetricSink* sink = observer.runStarting(run, label);
    core::RunSummary summary;
    try {
      summary = coordinator.run(run.spec, run.variant, sink, cancel,
                                plan.resume ? std::span<const unsigned char>(checkpoint)
                                            : std::span<const unsigned char>());
    } catch (const std::exception& e) {
      // A run that could not start fails alone: the runs before and after it stand.
      summary = {};
      summary.name = plan.resume ? run.name : variant.name;
      summary.strategy = core::strategyOf(variant).name;
      summary.status = core::RunStatus::kFailed;
      summary.stopReason = core::StopReason::kError;
      summary.error = e.what();
    }
    observer.runFinished(run, label, summary);
    summaries.push_back(std::move(summary));
  }
  return summaries;
}

}  // namespace dtlab::remote
