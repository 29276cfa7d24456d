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

namespace dtlab::app {

int resumeCommand(const std::vector<std::string>& argv) {
  catchInterrupts();
  std::set<std::string> flags = clusterFlags();
  flags.insert({"--step", "--threads", "--device"});
  const Args args(argv, flags, clusterSwitches());
  if (args.positionals().size() != 2) throw UsageError("resume: expected P.dtlab and a RUN id");
  const std::string& path = args.positionals()[0];
  const int64_t runId = parseRunId(args.positionals()[1]);
  auto store = core::ProjectStore::open(path);
  const core::RunRecord run = store->requireRun(runId);
  if (run.status == core::RunStatus::kCompleted)
    throw Error("run " + std::to_string(runId) + " ('" + run.name +
                "') completed: nothing to resume");
  if (run.spec.is_null()) throw Error("run " + std::to_string(runId) + " has no stored spec");
  const core::ExperimentSpec spec = core::parseExperimentSpec(run.spec);
  const std::vector<core::CheckpointInfo> kept = store->checkpoints(runId);
  if (kept.empty()) throw Error(core::whyNoCheckpoint(*store, run));
  const int64_t step =
      args.has("--step") ? args.integer("--step", 0, 0, INT64_MAX) : kept.back().step;
  const bool single =
      run.strategy == core::kSingleProcessStrategy;  // a `train` run, in this process
  const int variant = single ? 0 : core::variantOfRun(spec, run.name);

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
  try {
    if (single) {
      core::LocalTrainOptions options;
      options.threads = static_cast<int>(args.integer("--threads", 0, 0, 256));
      options.device = args.value("--device", spec.cluster.device == "cuda" ? "cuda:0" : "cpu");
      options.resumeFrom =
          std::make_shared<const core::Checkpoint>(core::decodeCheckpoint(checkpoint));
      summary = core::trainLocal(spec, options, recording.sink(), &interruptedFlag());
    } else {
      summary = coordinator->run(spec, variant, recording.sink(), &interruptedFlag(), checkpoint);
    }
  } catch (const std::exception& e) {
    summary.name = run.name;
    summary.strategy = run.strategy;
    summary.status = core::RunStatus::kFailed;
    summary.stopReason = core::StopReason::kError;
    summary.error = e.what();
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
