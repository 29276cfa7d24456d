#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/spec/experiment_spec.h"
#include "core/store/store_sink.h"

namespace dtlab::core {
class ProjectStore;
class RunRecording;
class FanOutSink;
}  // namespace dtlab::core

namespace dtlab::app {

// `dtlab-cli project new|list|show|export-csv|delete-run ...`; returns the exit code.
int projectCommand(const std::vector<std::string>& argv);
// `dtlab-cli export-trace P.dtlab RUN [-o trace.json] [--from-step A] [--to-step B]`.
int exportTraceCommand(const std::vector<std::string>& argv);

// `dtlab-cli train SPEC --project P.dtlab`: records the run in P (created when missing)
// while the progress printer keeps printing; sink() forwards to both.
// A RUN argument: a positive run id, else UsageError.
int64_t parseRunId(const std::string& text);

class TrainRecording {
 public:
  // strategy: kSingleProcessStrategy for `train`, the variant's strategy for `run`.
  // `onFailure`: called (on the recording's thread) when it can write no more (disk full, the
  // project made read-only), with the error; the caller stops its run.
  TrainRecording(const std::string& projectPath, const core::ExperimentSpec& spec,
                 core::MetricSink* progress,
                 const std::string& strategy = std::string(core::kSingleProcessStrategy),
                 const std::string& runName = "",
                 std::function<void(const std::string&)> onFailure = {},
                 std::optional<core::ExecutionSlot> slot = {});
  // Goes on recording run `runId` of `store` (`resume`, after ProjectStore::prepareResume).
  TrainRecording(std::unique_ptr<core::ProjectStore> store, int64_t runId,
                 const core::ExperimentSpec& spec, core::MetricSink* progress,
                 std::function<void(const std::string&)> onFailure = {});
  ~TrainRecording();
  core::MetricSink* sink();
  int64_t runId() const;
  // Commits the last points and the summary. A store failure is printed to stderr and
  // returns false; the summary is still the caller's to print.
  bool finish(const core::RunSummary& summary);

 private:
  std::unique_ptr<core::ProjectStore> store_;
  std::unique_ptr<core::RunRecording> recording_;
  std::unique_ptr<core::FanOutSink> sink_;
};

}  // namespace dtlab::app
