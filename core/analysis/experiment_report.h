#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/comparison.h"
#include "core/analysis/comparison_statistics.h"
#include "core/metrics/metrics.h"
#include "core/spec/spec_description.h"
#include "core/store/project_store.h"

namespace dtlab::core {

// What an experiment report says (`dtlab-cli report`, File > Export Report): one execution of
// an experiment, read from its project. The content only; ui/report renders it as HTML (charts
// as inline SVG) or PDF (vector charts). Everything here comes from the project file: the
// execution's spec, its runs' summaries, events and series, the nodes' own descriptions.
//
// A chart of the report: a metric of the metric table per run, grouped by variant (the median
// of its repetitions with a band), against seconds or steps; or a figure of the comparison per
// variant as bars (median with its interval).
struct ReportChart {
  enum class Kind { kCurve, kBars };
  Kind kind = Kind::kCurve;
  std::string metric;      // kCurve: a metric table name; kBars: a comparison column's key
  bool wallClock = false;  // kCurve: x is seconds since the run began, else the step
  std::string title;
};

// The runs of one variant in the execution, in repetition order (charts group by these).
struct ReportGroup {
  std::string variant;
  std::vector<int64_t> runIds;
};

// The events of one kind in one variant's runs: how often, in how many of its runs, and the
// first one met (with its repetition).
struct ReportEvents {
  std::string variant;
  std::string kind;
  int64_t count = 0;
  int64_t runs = 0;    // runs of the variant with at least one
  int64_t runsOf = 0;  // runs of the variant
  int64_t firstRepetition = 0;
  RunEvent first;
  int64_t lastRepetition = 0;
  RunEvent last;  // == first when count is 1
};

struct ExperimentReport {
  std::string project;     // the file
  std::string experiment;  // its name
  std::optional<int64_t> executionId;
  int64_t repeats = 1;
  int64_t runCount = 0;
  std::string when;  // "2026-12-02 12:38 to 12:42 UTC": the first run's start to the last's end
  std::vector<SpecFact> description;  // the experiment in words; empty when no spec was kept
  std::string specNote;               // why there is no description ("" when there is)
  Comparison comparison;
  ComparisonStatistics statistics;
  StatisticsTable variants;  // variantStatisticsTable
  StatisticsTable ratios;    // ratioStatisticsTable (no rows without pairs)
  StatisticsTable seed;      // seedTable
  std::vector<ReportGroup> groups;
  std::vector<ReportChart> charts;   // the standard charts this execution has data for
  std::vector<ReportEvents> events;  // what happened while training (describesRun: apart)
  // Where and with what it ran: the versions that recorded the runs, each node the runs used
  // as its daemon described itself (the node events), and the program writing the report.
  std::vector<SpecFact> machine;
};

// The report of `experiment`'s execution `executionId` (defaults as compareExperiment: the
// most recent experiment, its latest execution). Throws Error as compareExperiment does.
ExperimentReport experimentReport(ProjectStore& store, const std::optional<std::string>& experiment,
                                  std::optional<int64_t> executionId = std::nullopt);

}  // namespace dtlab::core
