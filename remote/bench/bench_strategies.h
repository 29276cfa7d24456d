#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::bench {

// `dtlab-cli bench strategies`: every example comparison of resources/specs run as a user runs
// it, `<self> run SPEC --quiet --project P` in a child process (so the running binary must be
// dtlab-cli), `repetitions` times each; then the README's results table and the claims, each
// the median of its figures over the repetitions.
struct StrategiesBenchOptions {
  std::string specsDir;           // where <name>.json of each comparison lives
  std::vector<std::string> only;  // comparisons to run; empty: strategyComparisons()
  int repetitions = 3;
  std::string project = "strategies.dtlab";  // the runs stay there
};

// One claim of the issue and the figure that meets it or not.
struct StrategyClaim {
  StrategyClaim(std::string t, std::optional<double> m, double at)
      : text(std::move(t)), measured(m), threshold(at) {}
  std::string text;
  std::optional<double> measured;  // with repetitions: their median
  double threshold = 0.0;
  std::vector<double> repetitions;  // each repetition's figure, in run order
  bool met() const { return measured && *measured >= threshold; }
};

struct StrategiesBenchResult {
  int repetitions = 0;
  std::string project;
  std::string machine;  // machineDescription() once the runs are over
  // The results table (markdown, as in the README): of each comparison, the repetition whose
  // first claim is that claim's median (the first repetition when it has none).
  std::string table;
  std::vector<StrategyClaim> claims;
  nlohmann::json runs;  // {comparison: the summaries of the repetition in the table}
};

// The comparisons, in the order they run: hetero_2node, hetero_4node, drift, modes_straggler,
// noniid.
std::vector<std::string> strategyComparisons();

// Runs the comparisons; progress on stderr. A failed variant is in the table, not thrown;
// a comparison that prints no summaries throws.
StrategiesBenchResult runStrategiesBench(const StrategiesBenchOptions& options);

// The --json line: {"bench": "strategies", "machine", "runs", "claims"}.
nlohmann::json toJson(const StrategiesBenchResult& result);

// "Measured <date> by ...", the table and the claims with their figures.
void writeReport(const StrategiesBenchResult& result, std::ostream& out);

}  // namespace dtlab::bench
