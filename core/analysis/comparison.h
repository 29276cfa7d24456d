#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
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
  // Compressed runs: bytes compressed over bytes sent instead, and compression ms per step.
  std::optional<double> compressionRatio;
  std::optional<double> compressMsPerStep;
  std::optional<int64_t> peakMemBytes;  // the largest worker's; none when no worker measured it
  std::optional<double> finalTestAccuracy;
  std::optional<double> wallS;
  // Lost nodes survived (on_node_loss), their summed recovery time and the steps taken again.
  std::optional<int64_t> recoveries;
  std::optional<double> recoveryS;
  std::optional<int64_t> stepsLost;

  int64_t repetition = 0;  // within its execution, 0-based
};

// One figure of a row: text, a number, or nothing (missing).
struct ComparisonValue {
  enum Kind { kMissing, kText, kInteger, kNumber } kind = kMissing;
  std::string text;
  int64_t integer = 0;
  double number = 0.0;
};

// A column of the comparison, described once for the text table, CSV, JSON, the statistics
// over repetitions and the GUI: its machine name (CSV header, JSON key), its heading in the
// text table with the unit (nullptr: not in the table, which has the outcome in words
// instead), how the table shows its numbers (decimals; -1: three significant digits; scale
// divides first), what the statistics do with it, and how a row gives its value.
struct ComparisonColumn {
  enum Flags : unsigned {
    kSummarised = 1,  // a measured figure: a median with an interval over repetitions
    kRatio = 2,       // also compared between variants as a ratio, paired by repetition
  };
  const char* key;
  const char* title;
  int decimals;
  double scale;
  unsigned flags;
  ComparisonValue (*get)(const ComparisonRow&);

  // The figure as a number (none when missing or text).
  std::optional<double> numberOf(const ComparisonRow& row) const;
};

// Every column, in the order the table, CSV and JSON show them.
std::span<const ComparisonColumn> comparisonColumns();
// `value` as the table shows it in `column` (its scale and decimals).
std::string formatComparisonFigure(const ComparisonColumn& column, double value);

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
  // The execution the rows come from; none for runs recorded before executions existed (the
  // latest run of each variant then).
  std::optional<int64_t> executionId;
  int64_t repeats = 1;      // the execution's planned repetitions
  bool mostRecent = false;  // no experiment was named: this is the project's most recent
  // One row per run: with repetitions, every repetition of every variant (variants in the
  // order of the experiment's spec, each variant's repetitions in order).
  std::vector<ComparisonRow> rows;
  // The (variant, baseline) pairs whose ratios the statistics show; empty: every variant
  // against the first.
  std::vector<std::pair<std::string, std::string>> pairs;
};

// Whether the comparison holds more than one run of a variant (the table then shows medians
// with intervals, core/analysis/comparison_statistics.h).
bool hasRepetitions(const Comparison& comparison);

// The rows of `experiment`'s runs, in the order of the experiment's variants (variants its
// spec no longer lists follow, oldest first). With `executionId`, every run of that execution
// (each variant's repetitions in order); without, the latest run of each variant among the
// runs recorded outside executions. `runs` and `summaries` are parallel (a run without a
// summary has std::nullopt).
Comparison compareRuns(const Entity& experiment, const std::vector<RunRecord>& runs,
                       const std::vector<std::optional<nlohmann::json>>& summaries,
                       std::optional<int64_t> executionId = std::nullopt);

// The experiment named (Error listing the project's when it has none of that name), or with
// no name the one run last (Error when the project has no runs of an experiment).
Entity experimentNamedOrLatest(ProjectStore& store, const std::optional<std::string>& experiment);

// compareRuns on a project's experiment: the one named, else the one whose latest run is the
// project's latest; its execution `executionId`, else its latest execution (or, for an
// experiment only run before executions existed, its latest run of each variant). Throws
// Error when a name or execution is unknown (listing those there are) or when there is no
// experiment with a run to compare.
Comparison compareExperiment(ProjectStore& store, const std::optional<std::string>& experiment,
                             std::optional<int64_t> executionId = std::nullopt);

// The table's first line: the experiment, where it comes from, its size (variants and
// repetitions) and its target.
std::string comparisonHeading(const Comparison& comparison, std::size_t variants,
                              int64_t repetitions);
// One line per run, aligned with units under the heading; "–" for a missing figure; the outcome
// last, so that a long error does not push the figures apart. (comparison_output.h has the
// table that shows repetitions as medians with intervals.)
std::string comparisonRowsTable(const Comparison& comparison);
// RFC 4180: a header of machine names, one line per run, raw values (empty: missing).
std::string comparisonCsv(const Comparison& comparison);
// {"project", "experiment", "experiment_id", "execution_id", "repeats", "most_recent",
// "rows": [...]}, missing: null.
nlohmann::json comparisonRowsJson(const Comparison& comparison);

}  // namespace dtlab::core
