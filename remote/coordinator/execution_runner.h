#pragma once
// One runner of an execution, shared by `dtlab-cli run`, `dtlab-cli resume` and the
// workbench's Run: what an execution is (every variant, `repeats` times, begun in the project
// in one place; or a resumed run alone, into its own record), what may refuse a resume (with
// the same words in every front end), and the loop that runs each planned run on a connected
// coordinator, a run that cannot start failing alone. The front ends keep only what is theirs:
// where the nodes come from, how progress shows, how a run is recorded.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/spec/execution_plan.h"
#include "core/store/project_store.h"

namespace dtlab::remote {

class Coordinator;

// A run of a project to go on from one of its checkpoints.
struct ResumePoint {
  core::RunRecord run;
  core::ExperimentSpec spec;   // the run's own
  int variant = 0;             // its variant in `spec` (0 for a `train` run)
  bool singleProcess = false;  // a `dtlab-cli train` run: it resumes in this process
  int64_t step = 0;            // the checkpoint's
};
// Run `runId` of `store` at the checkpoint of `step` (0: its newest), or dtlab::Error saying
// why not: no such run, it completed, it has no stored spec, it kept no checkpoint (why:
// core::whyNoCheckpoint). Changes nothing; staging the checkpoint (ProjectStore::prepareResume)
// refuses a step it kept none of, and a damaged one.
ResumePoint resumePoint(core::ProjectStore& store, int64_t runId, int64_t step = 0);

// The runs of one execution, in order; `executionId` is the project's record of it.
struct ExecutionPlan {
  std::vector<core::PlannedRun> runs;
  std::optional<int64_t> executionId;
  bool resume = false;  // the one run of a ResumePoint, into its own record
};
// Every variant of `spec`, `repeats` times (core::executionPlan), begun as an execution in
// `store` when there is one (the one place an execution begins).
ExecutionPlan planExecution(core::ProjectStore* store, const core::ExperimentSpec& spec);
// The resumed run alone.
ExecutionPlan planResume(const ResumePoint& point);

// "sync", or "sync (2/3)" for a repetition of a spec with repeats.
std::string runLabel(const core::ExperimentSpec& spec, const core::PlannedRun& run);

// What a front end does around each run, on the runner's thread.
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // Before the run starts: where its metrics go (its recording and its progress; may be null).
  virtual core::MetricSink* runStarting(const core::PlannedRun& run, const std::string& label) = 0;
  // After it ended (or could not start: failed, the error saying why).
  virtual void runFinished(const core::PlannedRun& run, const std::string& label,
                           const core::RunSummary& summary) = 0;
};

// Runs the plan's runs in order on `coordinator` (connected) until `cancel` is set; a resume
// continues from `checkpoint` (ProjectStore::prepareResume's). Returns each run's summary.
std::vector<core::RunSummary> runExecution(Coordinator& coordinator, const ExecutionPlan& plan,
                                           ExecutionObserver& observer,
                                           const std::atomic<bool>* cancel,
                                           const std::vector<unsigned char>& checkpoint = {});

}  // namespace dtlab::remote
