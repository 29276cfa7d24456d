#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/statistics.h"

namespace dtlab::bench {

// `dtlab-cli bench strategies`: every example comparison of resources/specs run as a user runs
// it, `<self> run SPEC --repeats R --quiet --project P` in a child process (so the running
// binary must be dtlab-cli): one execution of R repetitions each. Then per comparison the
// statistics `dtlab-cli compare` shows of that execution (core/analysis/comparison_statistics.h),
// and the claims, each a median over the repetitions with its bootstrap interval: a ratio
// claim is the ratio of the two variants' medians, paired by repetition, with the paired test.
struct StrategiesBenchOptions {
  std::string specsDir;           // where <name>.json of each comparison lives
  std::vector<std::string> only;  // comparisons to run; empty: strategyComparisons()
  int repetitions = 3;
  std::string project = "strategies.dtlab";  // the runs stay there
};

// One claim of the issue and the figure that meets it or not.
struct StrategyClaim {
  std::string text;
  double threshold = 0.0;
  // Over the repetitions: the median (of a ratio claim, median(variant) / median(baseline))
  // with its interval; none when no repetition measured it.
  std::optional<core::Interval> measured;
  std::vector<double> repetitions;       // each repetition's own figure, in repetition order
  std::optional<core::PairedTest> test;  // a ratio claim's paired t-test on the log ratios
  bool holds = false;                    // the test says the difference holds
  bool met() const { return measured && measured->estimate >= threshold; }
  // The whole interval clears the threshold.
  bool metThroughout() const { return measured && measured->low >= threshold; }
};

struct StrategiesBenchResult {
  int repetitions = 0;
  std::string project;
  std::string machine;  // machineDescription() once the runs are over
  // Per comparison, its heading, the statistics table's caption and the table (markdown).
  std::string table;
  std::vector<StrategyClaim> claims;
  nlohmann::json runs;        // {comparison: every run's summary, in the order they ran}
  nlohmann::json statistics;  // {comparison: statisticsJson of its execution}
};

// The comparisons, in the order they run: hetero_2node, hetero_3node, hetero_4node, drift,
// modes_straggler, noniid, compression.
std::vector<std::string> strategyComparisons();

// Runs the comparisons; progress on stderr. A failed variant is in the table, not thrown;
// a comparison that prints no summaries throws.
StrategiesBenchResult runStrategiesBench(const StrategiesBenchOptions& options);

// The --json line: {"bench": "strategies", "machine", "repetitions", "runs", "statistics",
// "claims"}.
nlohmann::json toJson(const StrategiesBenchResult& result);

// "Measured <date> by ...", the tables and the claims with their figures.
void writeReport(const StrategiesBenchResult& result, std::ostream& out);

}  // namespace dtlab::bench
