#pragma once
// The scale simulator's strategy models (issue 24, first slice): a run of a strategy on a
// modelled cluster, event by event (a step's compute on every node, each gradient bucket's
// all-reduce, each push and pull served by the parameter server), at any node count. Each
// model follows what DTLab's own strategy does (core/train), so a measured run can check it:
//   sync_allreduce  every node computes its share; backward hands gradient buckets over as
//                   it goes and a communication thread all-reduces them (ring) strictly in
//                   order, each once every node has it; the step ends when the last bucket is
//                   reduced and every node has computed.
//   local_sgd       every node computes its share on its own clock for `period` steps, then all
//                   meet the slowest and average their parameters (one ring all-reduce of
//                   the parameters and the votes behind them)
//   hybrid          its phases one after the other (runInPhases): synchronous, then
//                   asynchronous from the step its switch rule gives
//   async_ps        every worker loops pull, compute, push on its own clock; the shards (the
//                   parameters cut evenly, served first come first served) carry every pull
//                   and push of their part, and an update's staleness is the pushes applied
//                   between the worker's pull and its push; with a staleness bound (ssp) a
//                   worker starts step c+1 only once the slowest has pushed c - bound times,
//                   asking the server (a round trip) only when its last push did not say so.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/sim/cluster_model.h"

namespace dtlab::core::sim {

struct SimOptions {
  int64_t globalBatch = 256;
  int64_t steps = 100;  // global steps (an asynchronous run: steps x workers pushes)
  uint64_t seed = 1;    // the stragglers' draws
  // Per node, the samples of a step in place of the strategy's own split (a measured run's,
  // to model it as it ran); empty: the strategy's. Strategies that split the batch use it.
  std::vector<int64_t> shares;
  // The run's planned global steps (0: `steps`), and how many it ran before a target or a limit
  // ended it (0: as planned): a strategy that changes course at a share of the run (the
  // hybrid's switch) places that point on the run, not on the simulated steps.
  int64_t plannedSteps = 0;
  int64_t ranSteps = 0;
};

struct SimResult {
  double wallS = 0.0;               // the run's simulated duration
  double stepS = 0.0;               // per global step
  double samplesPerS = 0.0;         // every worker's samples per simulated second
  std::vector<double> utilization;  // per node: compute / wall
  double meanStaleness = 0.0;       // asynchronous: per push
  int64_t maxStaleness = 0;
  double meanWaitS = 0.0;  // per worker step: blocked on peers, the server or the bound
  int64_t events = 0;      // what the simulation processed
};

// The equal split of the global batch over the nodes (as BatchSlice::equal).
std::vector<int64_t> equalShares(int64_t globalBatch, int nodes);

// sync_allreduce; `shares` (per node, summing to the global batch; empty: equal) as a
// speed_proportional run would set them.
SimResult simulateSyncAllReduce(const ClusterModel& cluster, const ModelShape& model,
                                const SimOptions& options, std::vector<int64_t> shares = {});

struct ParameterServerModel {
  int shards = 1;                  // the parameters cut evenly over this many shard nodes
  double applySecondsPerByte = 0;  // a shard's optimizer step, per byte of gradient
  int64_t staleness = -1;          // ssp's bound; -1: async_ps
  // How many shards can serve at once: shards that share a host share its cores (a local
  // cluster's all do); 0: each on its own node's CPU.
  int parallelism = 0;
  // With a bound: each step first asks the server for the slowest worker's clock.
  double clockCheckS = 0.0;
};

// async_ps (and ssp with a bound): every worker pushes its equal share of the global batch.
SimResult simulateParameterServer(const ClusterModel& cluster, const ModelShape& model,
                                  const SimOptions& options, const ParameterServerModel& server);

// local_sgd with `period` local steps between averages.
SimResult simulateLocalSgd(const ClusterModel& cluster, const ModelShape& model,
                           const SimOptions& options, int64_t period);

// One run made of phases run one after another, each a result and the global steps it took:
// their durations add; throughput, utilisation, staleness (per push) and wait are the phases'
// weighted by time or by pushes.
SimResult runInPhases(const std::vector<std::pair<SimResult, int64_t>>& phases);

}  // namespace dtlab::core::sim
