#pragma once
// Predictions at scale (issue 24): every variant of a spec, at each node count asked for, run
// through its strategy's simulator model (StrategyDescriptor::simulate) on a cluster made
// from a calibration (core/sim/calibration.h) and the spec's own node emulation.
//   nodes     node i computes as calibrated node i mod (calibrated nodes) (the pooled fit when
//             only one was calibrated), at the emulated speed of the spec's node i mod (spec
//             nodes), with the spec's straggler pauses where it emulates them and the measured
//             ones otherwise
//   links     the calibrated all-reduce link for the collectives, the parameter server's for
//             pulls and pushes (a strategy needs those its traits say it uses)
//   band      the same simulation with compute and links slower, and faster, by their
//             calibrated spread
//   target    steps to the target accuracy from the variant's measured run at the nearest node
//             count, held where the global batch fixes the updates (synchronous strategies) and
//             scaled by (1 + mean staleness) / (1 + its measured mean staleness) where updates
//             go stale (the assumption is printed beside every such number)
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/sim/calibration.h"
#include "core/sim/topology.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// What a measured run of a variant showed, to set beside predictions and to anchor the
// convergence model (core/analysis/run_calibration.h reads them from a project).
struct MeasuredPoint {
  int64_t runId = 0;
  std::string variant;
  int nodes = 0;
  double stepMs = 0.0;  // mean per worker step, warm-up steps aside
  double samplesPerS = 0.0;
  double utilization = 0.0;
  double meanStaleness = 0.0;
  // The nodes' processes' cpu_util summed: the share of their host's cores busy, where they all
  // shared one (0: not recorded).
  double cpuUtil = 0.0;
  std::optional<int64_t> stepsToTarget;  // the first evaluation at the target accuracy
};

struct ScalePoint {
  int nodes = 0;
  double stepMs = 0.0;
  double lowMs = 0.0;  // the band
  double highMs = 0.0;
  double samplesPerS = 0.0;
  double utilization = 0.0;  // mean over nodes
  double meanStaleness = 0.0;
  // How much the nodes' compute and server calls were stretched by sharing their host's cores
  // with other nodes (core/sim/host_sharing.h), mean over nodes; 1: not at all.
  double hostStretch = 1.0;
  std::optional<double> stepsToTarget;
  std::optional<double> timeToTargetS;
};

struct VariantPrediction {
  std::string variant;
  // The spec's other variants of the same configuration (strategy and settings) that differ
  // only in name and node count (baselines on fewer nodes): predicted once, here, and their
  // runs measured this configuration too.
  std::vector<std::string> aliases;
  std::string strategy;
  std::string unmodelled;   // non-empty: why there is no prediction (no model, no link)
  std::string convergence;  // the assumption behind stepsToTarget ("" when none is predicted)
  std::vector<ScalePoint> points;

  // Whether a run of variant `name` measured this configuration.
  bool covers(const std::string& name) const;
};

struct PredictOptions {
  std::vector<int> nodes = {16, 64, 256, 1024, 4096};
  int64_t steps = 300;  // simulated global steps per point
  uint64_t seed = 1;
  bool throughputOnly = false;  // no convergence model
  // The cluster predicted for: a tree of switches and node speeds (core/sim/topology.h), its
  // nodes each a host of its own; none: the spec's cluster with the calibrated links.
  std::optional<sim::Topology> topology;
  // Nodes to a host (sharing its cores, as many as the calibrated hosts had); 0: the spec's
  // cluster size where the calibrated runs' nodes all shared one host and no topology is given,
  // else each node a host of its own.
  int nodesPerHost = 0;
};

// The simulator's time per step (ms) of `variant` of `spec` on `nodes` nodes, with `shares`
// (per node, summing to the global batch; empty: its strategy's own split) as a run measured
// them. nullopt, with why in `why`, when its strategy has no model or the calibration no link
// it needs.
// `ranSteps`: the global steps the run made (0: as the spec plans).
std::optional<double> simulatedStepMs(const ExperimentSpec& spec, const VariantConfig& variant,
                                      const sim::Calibration& calibration, int nodes,
                                      const std::vector<int64_t>& shares, int64_t ranSteps,
                                      std::string* why, int64_t steps = 300);

// Where `options` places the predicted nodes, for a reader: "4 nodes to a host of 2 cores, ..."
// or "each node a host of its own". `perHost`/`cores` (when given) get the numbers (cores 0:
// not known).
std::string hostAssumption(const ExperimentSpec& spec, const sim::Calibration& calibration,
                           const PredictOptions& options, int* perHost = nullptr,
                           int* cores = nullptr);

std::vector<VariantPrediction> predictScale(const ExperimentSpec& spec,
                                            const sim::Calibration& calibration,
                                            const PredictOptions& options,
                                            const std::vector<MeasuredPoint>& measured = {});

}  // namespace dtlab::core
