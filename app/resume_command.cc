#include "app/resume_command.h"

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/progress.h"
#include "app/project_command.h"
#include "app/run_command.h"
#include "core/spec/spec_json.h"
#include "core/store/checkpoint_parts.h"
#include "core/store/project_store.h"
#include "core/train/checkpoint.h"
#include "core/train/local_trainer.h"
#include "core/train/strategy_registry.h"
#include "remote/coordinator/execution_runner.h"

namespace dtlab::app {

int resumeCommand(const std::vector<std::string>& argv) {
  std::set<std::string> flags = clusterFlags();
  flags.insert({"--step", "--threads", "--device"});
  const Args args(argv, flags, clusterSwitches());  // first: a dry run stops here
  catchInterrupts();
  if (args.positionals().size() != 2) throw UsageError("resume: expected P.dtlab and a RUN id");
  const std::string& path = args.positionals()[0];
  const int64_t runId = parseRunId(args.positionals()[1]);
  auto store = core::ProjectStore::open(path);
  const remote::ResumePoint point = remote::resumePoint(
      *store, runId, args.has("--step") ? args.integer("--step", 0, 0, INT64_MAX) : 0);
  const core::RunRecord& run = point.run;
  const core::ExperimentSpec& spec = point.spec;
  const int64_t step = point.step;
  const bool single = point.singleProcess;  // a `train` run, in this process

  // Everything that may refuse (flags, nodes) before the project changes.
  std::unique_ptr<RunPlace> place;
  std::unique_ptr<remote::Coordinator> coordinator;
  if (!single) {
    place = std::make_unique<RunPlace>(chooseRunPlace(args, spec));
    coordinator = std::make_unique<remote::Coordinator>(place->nodes, place->options);
    checkHostfileSlots(*place, coordinator->connect(), spec);
  }
  std::vector<unsigned char> checkpoint;
  try {
    checkpoint = store->prepareResume(runId, step);
  } catch (const core::CheckpointDamaged& e) {
    if (!e.previousWhole()) throw;
    throw Error(std::string(e.what()) + "; to resume from it: dtlab-cli resume " + path + " " +
                std::to_string(runId) + " --step " + std::to_string(*e.previousWhole()));
  }
  std::cerr << "resuming run " << runId << " ('" << run.name << "') from the checkpoint of step "
            << step << "\n";

  const int64_t stepsPerEpoch = spec.dataset.trainSize / spec.training.batchSize;
  ProgressPrinter progress(run.name, core::plannedSteps(spec, stepsPerEpoch), args.has("--quiet"));
  TrainRecording recording(std::move(store), runId, spec, &progress, stopOnRecordingFailure);
  core::RunSummary summary;
  if (single) {
    try {
      core::LocalTrainOptions options;
      options.threads = static_cast<int>(args.integer("--threads", 0, 0, 256));
      options.device = args.value("--device", spec.cluster.device == "cuda" ? "cuda:0" : "cpu");
      options.resumeFrom =
          std::make_shared<const core::Checkpoint>(core::decodeCheckpoint(checkpoint));
      summary = core::trainLocal(spec, options, recording.sink(), &interruptedFlag());
    } catch (const std::exception& e) {
      summary.name = run.name;
      summary.strategy = run.strategy;
      summary.status = core::RunStatus::kFailed;
      summary.stopReason = core::StopReason::kError;
      summary.error = e.what();
    }
  } else {
    // The run's own record goes on: the recording above is its sink.
    struct Observer final : remote::ExecutionObserver {
      core::MetricSink* sink;
      core::RunSummary* out;
      core::MetricSink* runStarting(const core::PlannedRun&, const std::string&) override {
        return sink;
      }
      void runFinished(const core::PlannedRun&, const std::string&,
                       const core::RunSummary& s) override {
        *out = s;
      }
    } observer;
    observer.sink = recording.sink();
    observer.out = &summary;
    remote::runExecution(*coordinator, remote::planResume(point), observer, &interruptedFlag(),
                         checkpoint);
  }
  const bool recorded = recording.finish(summary);
  std::cout << nlohmann::json{{"runs", nlohmann::json::array({core::toJson(summary)})}}.dump()
            << std::endl;
  if (recordingFailed()) return 1;
  if (interruptedFlag().load()) return 130;
  if (summary.status == core::RunStatus::kFailed) {
    std::cerr << "dtlab-cli resume: run " << runId << " failed again: " << summary.error << "\n";
    return 1;
  }
  return recorded ? 0 : 1;
}

}  // namespace dtlab::app
