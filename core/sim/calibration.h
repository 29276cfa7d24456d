#pragma once
// What the scale simulator knows of a real cluster (issue 24): fitted from a project's measured
// runs (`dtlab-cli calibrate`, core/analysis/run_calibration.h) and stored in the project, so that
// `dtlab-cli predict` models nodes and links as they were measured rather than as assumed.
//   compute   per node, a step of s samples at full speed takes fixed + s * perSample
//             (milliseconds; a run's emulated speed is divided out), with the measured
//             spread about that line and the pauses well beyond it (stragglers)
//   links     per transfer path (the collectives' all-reduce, the parameter server's pulls and
//             pushes), latency per message and bandwidth, by least squares over observations
//             of differing message counts and sizes; when every step observation has the same
//             ratio of messages to bytes, the all-reduce's latency comes from the calls of
//             several sizes its groups timed when they formed (TransferPattern::calls) and its
//             bandwidth from the steps' time beyond it; with neither, the whole time is taken
//             as bandwidth (a note says so)
// Plain data and the fits; no store, no training.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sim/cluster_model.h"

namespace dtlab::core::sim {

// Which link a strategy's per-step transfers measure, for the calibration, and the gradient
// buckets of its synchronous steps (a StrategyDescriptor says, core/train/strategy_registry.h).
enum class TransferPath {
  kNone,             // nothing the link models can learn from (compressed, or periodic)
  kCollective,       // a ring all-reduce of the gradient buckets every step
  kParameterServer,  // a pull and a push of the whole model every step
};
// An all-reduce's time per call at one message size, timed on a run's group when it formed
// (core/comm/allreduce_tuning.h).
struct CallTiming {
  int64_t bytes = 0;
  double ms = 0.0;
};
struct TransferPattern {
  TransferPath path = TransferPath::kNone;
  int64_t bucketBytes = 0;  // kCollective: the variant's own bucket size; 0: as measured
  // kCollective: the sizes the run's group timed before its first step, each with the time of
  // the algorithm its buckets use (the fastest at their size; another algorithm's latency is
  // not the buckets'; empty: none). Calls of several sizes tell an all-reduce's latency from
  // its bandwidth where the steps (one bucket size, one node count) cannot.
  std::vector<CallTiming> calls;
  // Every step first asks the server whether the slowest worker is within the bound (ssp): a
  // round trip its runs' wait_ms holds even when nobody is late.
  bool clockCheck = false;
};

// One worker's steps of one run at one batch share: its compute at full speed.
struct ComputeObservation {
  std::string node;  // the node's label ("local", or a daemon's host)
  std::string strategy;
  double samples = 0.0;           // per step
  std::vector<double> msAtSpeed;  // per step: compute_ms x the node's emulated speed
  bool contended = false;         // the run had more busy threads than cores on a host
};

// One worker's steps of one run: the mean transfer of a step.
struct TransferObservation {
  double messages = 0.0;  // per step, in sequence (a ring all-reduce: 2(n-1) per bucket)
  double bytes = 0.0;     // per step, on this worker's link
  double ms = 0.0;        // per step (median)
  int64_t steps = 0;      // the weight of the observation
};

struct ComputeFit {
  std::string label;  // the node's, or the strategy's; "" for the pooled fit over everything
  double fixedMs = 0.0;
  double msPerSample = 0.0;
  double spread = 0.0;            // robust relative sd of a step about the line
  double pauseProbability = 0.0;  // steps beyond the spread by far
  double pauseMs = 0.0;           // their median excess over the line
  // The steps about the line, whole: `shape` holds equally likely quantiles of a step's compute
  // relative to the line (ascending, the pauses among them at the top), so that a model can
  // draw a step as the line x one of them and keep the distribution's skew and tail, which
  // its median line and spread alone lose (a synchronous step waits for the slowest node's
  // draw). Empty: a calibration from before it was kept; the line alone.
  std::vector<double> shape;
  int64_t steps = 0;
  std::vector<double> batchSizes;  // the distinct samples per step the fit saw
  bool contended = false;

  double ms(double samples) const { return fixedMs + samples * msPerSample; }
};

// A node's CPU work in a run: its process's CPU time per step (cpu_util x its host's cores x
// its mean step), whatever it spent it on (compute, calls, a shard it serves), beside the part
// its compute took (compute at full speed x its threads: the speed emulation waits the rest).
struct CpuObservation {
  std::string strategy;
  int nodes = 0;               // of the run
  double coreMs = 0.0;         // per step
  double computeCoreMs = 0.0;  // per step
  int threads = 1;             // the compute's
  int64_t weight = 0;          // the cpu_util samples behind it
};

// What a node asks of its host's cores per step (core/sim/host_sharing.h), per strategy: its
// compute's CPU (its compute at full speed x `computeThreads`) and `callsMs` more, the rest of
// its process's work a step (calls, serving, bookkeeping), from runs of 2 or more nodes where
// there are some (one node calls nobody).
struct CpuFit {
  std::string label;  // the strategy
  double callsMs = 0.0;
  int computeThreads = 1;
  int64_t observations = 0;  // nodes of runs
  int fromNodes = 0;         // the fewest nodes of the runs `callsMs` came from
};

struct LinkFit {
  double latencyMs = 0.0;
  double bandwidthMbps = 0.0;  // 10^6 bit/s; 0: nothing measured
  bool latencySeparated = false;
  double spread = 0.0;  // relative rms residual of the observations
  int64_t observations = 0;

  bool measured() const { return bandwidthMbps > 0.0; }
  LinkModel model() const;
};

struct Calibration {
  std::string experiment;         // the runs' (one model on one cluster)
  std::vector<int64_t> runs;      // what it was fitted from
  ComputeFit pooled;              // every node together
  std::vector<ComputeFit> nodes;  // per node label, in first-seen order
  // Per strategy, every node together: what a step computes differs (a parameter server's
  // workers leave the optimizer step to the server). Predictions use their strategy's.
  std::vector<ComputeFit> strategies;
  LinkFit collective;       // sync all-reduce's buckets
  LinkFit parameterServer;  // pulls and pushes
  // The round trip of a bounded-staleness worker's clock check (TransferPattern::clockCheck):
  // the lower quartile of its wait per step, where nobody was late; 0: not measured.
  double clockCheckMs = 0.0;
  int64_t bucketBytes = 0;  // the gradient buckets the synchronous runs used (0: none)
  // The model's forward and backward timed on the calibrating machine at handOffRows samples:
  // per hand-off of its gradient blocks, the share of the step done when it is handed over
  // (core/train/simulated_model.h); empty: not measured.
  std::vector<double> handOffShares;
  int64_t handOffRows = 0;
  // The cores of each host the runs' nodes were on (their daemons say), by host name: nodes
  // of a local cluster share one host's cores.
  std::map<std::string, int> hostCores;
  // Per strategy, a node's CPU work per step; empty: the runs recorded no cpu_util. Without it
  // nodes that share a host are modelled as if each had its cores to itself.
  std::vector<CpuFit> cpu;
  std::vector<std::string> notes;  // what could not be fitted, and what was assumed instead

  nlohmann::json toJson() const;
  // Throws Error naming the field that is missing or wrong (under `where`).
  static Calibration fromJson(const nlohmann::json& json, const std::string& where);
  // Lines for a terminal: what was fitted, from how much.
  std::string describe() const;
};

// Least squares of compute against samples per step over the observations' per-step medians;
// throws Error when there is nothing to fit. `label` names the fit ("" pooled), `what` it in
// notes ("node vm").
ComputeFit fitCompute(const std::vector<const ComputeObservation*>& observations,
                      const std::string& label, const std::string& what,
                      std::vector<std::string>* notes);
// `strategy`'s CPU beyond compute per step: the mean over its observations (of runs of 2 or
// more nodes, where there are some) of coreMs - computeCoreMs, weighted by their samples
// (nullopt: none).
std::optional<CpuFit> fitCpu(const std::vector<CpuObservation>& observations,
                             const std::string& strategy);
// Least squares of ms = messages x latency + bytes / bandwidth, both non-negative; with
// `latencyMs`, the latency is that and the bandwidth what the observations' time beyond it
// gives (all of it latency where they leave none).
LinkFit fitLink(const std::vector<TransferObservation>& observations, const std::string& path,
                std::vector<std::string>* notes, std::optional<double> latencyMs = std::nullopt);

}  // namespace dtlab::core::sim
