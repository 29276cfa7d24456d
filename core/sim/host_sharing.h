#pragma once
// Nodes that share a host share its cores (issue 24). A local cluster, or network namespaces on
// one machine, run every node's process on the same few cores: compute (whose real part the
// speed emulation then stretches by 1/speed) and the parameter server's calls over loopback
// are CPU work, and once more processes want a core than there are cores, each gets a share.
// The model: each of a host's nodes wants a core for `cpu` seconds of each step of `step`
// seconds (its measured CPU work, cpu_util x cores x step time), at random moments,
// independently of the others, so at a given moment it is busy with probability p = cpu / step;
// a busy node shares the cores with the others busy then (processor sharing). Its CPU-bound work
// is stretched by E[max(1, K / cores)], K = 1 + Binomial(nodes - 1, p), and a stretched step
// makes every node less often busy: the stretch is the fixed point of the two. On hosts with a
// node each (a real cluster), or as many cores as nodes, the stretch is 1.
#include <vector>

#include "core/sim/cluster_model.h"

namespace dtlab::core::sim {

// The stretch of a node's CPU-bound work on a host of `cores` cores shared with nodes - 1
// others, each busy with probability `busy` (in [0, 1]): max(1, K / cores) with
// K = 1 + Binomial(nodes - 1, busy), as its distinct values, increasing, and their
// probabilities.
struct StretchDistribution {
  std::vector<double> stretches;
  std::vector<double> probabilities;
};
StretchDistribution sharedCoreStretches(int nodes, int cores, double busy);
// Its mean, E[max(1, K / cores)].
double sharedCoreStretch(int nodes, int cores, double busy);
// `node`'s compute stretched by draws from `distribution` (NodeModel::stretches).
void stretchCompute(NodeModel& node, const StretchDistribution& distribution);

// The fixed point s = sharedCoreStretch(nodes, cores, min(1, cpuS / (stepS s))): the stretch of a
// step of `stepS` seconds (as if each node had a host of its own) whose CPU work is `cpuS`.
// 1 when nodes <= cores or nothing was measured (cpuS or stepS not > 0). `busy` (when given)
// gets the busy share there, min(1, cpuS / (stepS s)).
double hostStretch(int nodes, int cores, double cpuS, double stepS, double* busy = nullptr);

}  // namespace dtlab::core::sim
