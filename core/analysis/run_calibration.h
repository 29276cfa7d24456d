#pragma once
// The scale simulator's calibration from a project's runs (`dtlab-cli calibrate`, issue 24),
// and what each measured run showed, to set beside predictions.
// From every run given (when none is, every completed run of `experiment`, by default the
// project's most recent); the runs must train one model on one cluster (the same emulated links):
//   compute   each worker's compute_ms per step at each batch share it trained, times its
//             node's emulated speed, warm-up steps aside; a node is the host its daemon named
//             in the run's "node" event
//   links     where the strategy's transfers follow a pattern the simulator models
//             (StrategyDescriptor::transferPattern): an all-reduce's step (the fastest rank's
//             comm_ms: the others also wait there for the slowest) against its messages
//             (2(n-1) per bucket) and bytes_sent; a parameter-server step's comm_ms against its
//             pull and push (2 messages) and bytes moved
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/analysis/comparison.h"
#include "core/analysis/comparison_statistics.h"
#include "core/sim/calibration.h"
#include "core/train/scale_prediction.h"

namespace dtlab::core {

class ProjectStore;

// Throws Error naming a run that cannot be used (unknown, unfinished, no stored spec), two runs
// of different models or emulated links, or when nothing could be fitted.
sim::Calibration calibrateRuns(ProjectStore& store, std::vector<int64_t> runIds = {},
                               const std::string& experiment = {});

// The newest calibration of `experiment`'s runs in the project, with its id; nullopt when there
// is none. Throws Error naming a damaged one.
std::optional<std::pair<int64_t, sim::Calibration>> calibrationOf(ProjectStore& store,
                                                                  const std::string& experiment);

// The measured points of the given runs (every finished run with a spec when none is given);
// `experiment` non-empty: only runs of that experiment name.
std::vector<MeasuredPoint> measuredPoints(ProjectStore& store, const std::string& experiment = {},
                                          std::vector<int64_t> runIds = {});

// The simulator as a yardstick for a measured run (issue 24): its time per step for the run
// as it ran (the batch shares it measured) and for the ideal of its strategy (its own split:
// for speed_proportional, the balance the measured speeds and links allow), beside the
// measured one. A large miss is a finding: a model term, or the run, is wrong.
struct Yardstick {
  int64_t runId = 0;
  std::string variant;
  int nodes = 0;
  double measuredMs = 0.0;
  std::optional<double> asRanMs;
  std::optional<double> idealMs;
  std::string why;  // no figures: why
};
std::vector<Yardstick> yardsticks(ProjectStore& store, const sim::Calibration& calibration,
                                  const std::vector<int64_t>& runIds);

// The yardstick of a comparison's runs with the newest calibration of its experiment, and
// that calibration's id; nullopt when the experiment has none. Throws Error naming a damaged
// calibration.
struct ComparisonYardstick {
  int64_t calibrationId = 0;
  std::vector<Yardstick> runs;
};
std::optional<ComparisonYardstick> comparisonYardstick(ProjectStore& store,
                                                       const Comparison& comparison);
// As a table (the CLI prints it, the window's compare page shows it): a row per run.
StatisticsTable yardstickTable(const ComparisonYardstick& yardstick);

}  // namespace dtlab::core
