#pragma once
// What the GUI suites share: small specs, runs trained and recorded in this process, and
// projects holding an experiment ready to run.

#include <string>

#include "core/spec/execution_plan.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/train/local_trainer.h"
#include "ui/charts/comparison_data.h"
#include "ui/models/project_snapshot.h"

namespace dtlab::ui_test {

// What the window reads of a project, read here on the test's thread (the window reads it
// through ui/models/project_access.h on the project's threads).
inline ui::ProjectSnapshot snapshotAt(const std::string& path) {
  return ui::readProjectSnapshot(*core::ProjectStore::open(path, /*readOnly=*/true));
}
inline ui::RunDetail runDetailAt(const std::string& path, int64_t runId, int64_t maxPoints = 2000) {
  return ui::readRunDetail(*core::ProjectStore::open(path, /*readOnly=*/true), runId, maxPoints);
}
inline ui::ComparisonData comparisonAt(const std::string& path,
                                       const ui::ComparisonRequest& request) {
  return ui::readComparison(*core::ProjectStore::open(path, /*readOnly=*/true), request);
}

// A spec that trains in milliseconds: blobs of 2048 samples, 8 features, 3 classes.
inline core::ExperimentSpec smallSpec(const std::string& name, int64_t steps) {
  core::ExperimentSpec spec;
  spec.name = name;
  spec.seed = 4;
  spec.dataset.trainSize = 2048;
  spec.dataset.testSize = 256;
  spec.dataset.features = 8;
  spec.dataset.classes = 3;
  spec.model.hidden = {16};
  spec.training.batchSize = 32;
  spec.training.epochs = 0;
  spec.training.maxSteps = steps;
  spec.training.evalInterval = 10;
  return spec;
}

// Trains `spec` in this process and records it, as `dtlab-cli train --project` does.
inline int64_t recordRun(core::ProjectStore& store, const core::ExperimentSpec& spec) {
  core::RunRecording recording(store, spec, "single");
  const core::RunSummary summary = core::trainLocal(spec, {}, &recording.sink());
  recording.finish(summary);
  return recording.runId();
}

// One execution of `spec` (every variant, spec.repeats times), each planned run trained in
// this process and recorded in its slot; returns the execution's id.
inline int64_t recordExecution(core::ProjectStore& store, const core::ExperimentSpec& spec) {
  const int64_t execution = core::beginExecution(store, spec);
  for (const core::PlannedRun& run : core::executionPlan(spec)) {
    core::RunRecording recording(store, run.spec, "single", run.name,
                                 core::ExecutionSlot{execution, run.repetition});
    core::RunSummary summary = core::trainLocal(run.spec, {}, &recording.sink());
    summary.name = spec.variants[static_cast<std::size_t>(run.variant)].name;
    recording.finish(summary);
  }
  return execution;
}

// A new project at `path` with one experiment, `spec` on `nodes` local nodes.
inline void createProjectWithExperiment(const std::string& path, core::ExperimentSpec spec,
                                        int64_t nodes = 2) {
  auto store = core::ProjectStore::create(path);
  spec.cluster.localNodes = nodes;
  store->putEntity(core::EntityKind::kExperiment, spec.name, core::toJson(spec));
}

}  // namespace dtlab::ui_test
