#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/store/project_store.h"

namespace dtlab::core {

// The measured sync-vs-async comparison of one experiment: a row per variant, built from the
// run summaries (RunSummary's JSON, as `dtlab-cli run` prints it and the store keeps it), for
// `dtlab-cli compare`, the end of `dtlab-cli run` and the GUI.
//
// Every figure is optional. A summary recorded before DTLab measured a figure has no field
// for it, a run that ended without a summary has none at all, and an asynchronous-only figure
// (divergence) is null for a synchronous run: all of these show as "–" (empty in CSV, null in
// JSON), never as 0, which would read as a measurement.
struct ComparisonRow {
  std::string variant;
  std::optional<int64_t> runId;  // none when the run was not recorded in a project
  std::string strategy;
  std::string partition;  // "" when the summary does not say
  std::optional<int64_t> nodes;
  RunStatus status = RunStatus::kUnknown;
  StopReason stopReason = StopReason::kNone;  // kNone: the summary does not say
  std::string error;
  std::optional<double> targetAccuracy;  // the spec's target, when it set one
  bool hasSummary = false;

  std::optional<double> meanStaleness;
  std::optional<double> maxStaleness;
  std::optional<double> meanDivergence;
  std::optional<double> timeToTargetS;
  std::optional<double> samplesPerS;
  std::optional<double> meanUtilization;
  std::optional<double> meanWaitFraction;
  std::optional<double> bytesPerSample;
  std::optional<int64_t> peakMemBytes;  // the largest worker's; none when no worker measured it
  std::optional<double> finalTestAccuracy;
  std::optional<double> wallS;
  // Lost nodes survived (on_node_loss), their summed recovery time and the steps taken again.
  std::optional<int64_t> recoveries;
  std::optional<double> recoveryS;
  std::optional<int64_t> stepsLost;
};

// Why the variant stopped, in words: "target reached", "time limit, target not reached",
// "diverged: ...", "failed: ...", "cancelled", "running".
std::string comparisonOutcome(const ComparisonRow& row);

// A row from a run summary (toJson(RunSummary), or the JSON the store kept, possibly written
// by an older version). `targetAccuracy`: the spec's target, which the summary does not carry.
ComparisonRow comparisonRow(const nlohmann::json& summary,
                            std::optional<double> targetAccuracy = std::nullopt);
// A row from a stored run: its summary when it has one, else its record (a run still running,
// or one that ended without a summary). The variant is the run's name without the
// "EXPERIMENT/" prefix `dtlab-cli run` gives it.
ComparisonRow comparisonRow(const RunRecord& run, const std::optional<nlohmann::json>& summary,
                            const std::string& experimentName);

// The spec's target accuracy (training.target_accuracy), if it set one above 0.
std::optional<double> specTargetAccuracy(const nlohmann::json& spec);

struct Comparison {
  std::string project;     // the project file; "" when the rows come from a run in memory
  std::string experiment;  // its name
  std::optional<int64_t> experimentId;
  bool mostRecent = false;  // no experiment was named: this is the project's most recent
  std::vector<ComparisonRow> rows;
};

// The rows of `experiment`'s runs: the latest run of each variant, in the order of the
// experiment's variants (variants its spec no longer lists follow, oldest first). `runs` and
// `summaries` are parallel (a run without a summary has std::nullopt).
Comparison compareRuns(const Entity& experiment, const std::vector<RunRecord>& runs,
                       const std::vector<std::optional<nlohmann::json>>& summaries);

// compareRuns on a project's experiment: the one named, else the one whose latest run is the
// project's latest. Throws Error when the name is unknown (listing the experiments there are)
// or when there is no experiment with a run to compare.
Comparison compareExperiment(ProjectStore& store, const std::optional<std::string>& experiment);

// An aligned text table with units, under a heading naming the experiment; "–" for a missing
// figure; the outcome last, so that a long error does not push the figures apart.
std::string comparisonTable(const Comparison& comparison);
// RFC 4180: a header of machine names, one line per variant, raw values (empty: missing).
std::string comparisonCsv(const Comparison& comparison);
// {"project", "experiment", "experiment_id", "most_recent", "rows": [...]}, missing: null.
nlohmann::json comparisonJson(const Comparison& comparison);

}  // namespace dtlab::core
