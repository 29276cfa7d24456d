#pragma once
// `dtlab-cli bench predict`: the scale simulator's cross-validation (issue 24). Every example
// spec of resources/specs/predict is run as a user runs it (`dtlab-cli run`, local daemons on
// loopback), each variant on 1, 2, 3 and 4 of its cluster's nodes; the simulator is calibrated
// on the 1- and 2-node runs only (core/analysis/run_calibration.h) and predicts the time per step
// of the 3- and 4-node runs (core/train/scale_prediction.h), which are then set beside it.
// With --netns, each spec again across network-namespace hosts (its nodes' emulated links as
// given), calibrated and predicted the same way.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::bench {

struct PredictBenchOptions {
  std::string specsDir;           // where the specs live (resources/specs/predict)
  std::vector<std::string> only;  // spec file stems to run; empty: every *.json there
  std::string project = "predict.dtlab";
  std::vector<int> calibrateOn = {1, 2};
  std::vector<int> predictAt = {3, 4};
  double tolerance = 0.10;  // the bar: within 10%
  // Runs of each sized variant: measured is their median, the calibration takes them all (a
  // shared 2-core machine's steps vary by several percent from run to run).
  int reps = 3;
  // Also across network-namespace hosts on this machine (root): each spec again with its
  // nodes as daemons in namespaces joined by a bridge (remote/bench/netns_hosts.h).
  bool netns = false;
};

struct PredictCheck {
  std::string spec;
  std::string variant;
  std::string strategy;
  int nodes = 0;
  double measuredMs = 0.0;
  double predictedMs = 0.0;  // 0: no prediction (`why`)
  double hostStretch = 1.0;  // the prediction's, for nodes sharing the host's cores
  double cpuUtil = 0.0;      // the measured run's nodes' cpu_util, summed
  std::string why;
  double error() const { return predictedMs / measuredMs - 1.0; }
};

struct PredictBenchResult {
  std::string machine;
  std::string measuredAt;
  std::vector<PredictCheck> checks;
  std::vector<std::string> calibrations;  // per spec, the calibration's description
  double tolerance = 0.10;
};

PredictBenchResult runPredictBench(const PredictBenchOptions& options);
nlohmann::json toJson(const PredictBenchResult& result);
// The cross-validation table (markdown) with the machine and the date.
void writeReport(const PredictBenchResult& result, std::ostream& out);

}  // namespace dtlab::bench
