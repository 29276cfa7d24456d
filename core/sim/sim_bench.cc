#include "core/sim/sim_bench.h"

#include <chrono>
#include <string>

#include "core/sim/step_models.h"

namespace dtlab::core::sim {
namespace {

ClusterModel benchCluster(int nodes) {
  ClusterModel c;
  for (int i = 0; i < nodes; ++i) {
    NodeModel node;
    node.secondsPerSample = 50e-6;
    node.fixedSeconds = 1e-3;
    if (i % 10 == 9) node.secondsPerSample *= 2.0;  // one in ten at half speed
    if (i % 100 == 37) {                            // one in a hundred pausing
      node.stragglerProbability = 0.1;
      node.stragglerPauseS = 0.02;
    }
    c.nodes.push_back(node);
  }
  c.link = {5e-6, 1.25e9};
  c.serverLink = c.link;
  return c;
}

ModelShape benchModel() {
  ModelShape m;
  m.parameterBytes = 40e6;
  for (int j = 1; j <= 10; ++j) {
    m.bucketBytes.push_back(4e6);
    m.bucketReady.push_back(j / 10.0);
  }
  return m;
}

}  // namespace

nlohmann::json runSimBench(const SimBenchOptions& options, std::FILE* out) {
  const ClusterModel cluster = benchCluster(options.nodes);
  const ModelShape model = benchModel();
  SimOptions sim;
  sim.globalBatch = int64_t{32} * options.nodes;
  sim.steps = options.steps;
  nlohmann::json results = nlohmann::json::array();
  std::fprintf(out, "scale simulator: %d nodes x %lld global steps (40 MB model, 10 Gbit/s)\n",
               options.nodes, static_cast<long long>(options.steps));
  constexpr double kTargetS = 60.0;
  bool met = true;
  for (const char* strategy : {"sync_allreduce", "async_ps"}) {
    const auto start = std::chrono::steady_clock::now();
    const SimResult r =
        std::string(strategy) == "sync_allreduce"
            ? simulateSyncAllReduce(cluster, model, sim)
            : simulateParameterServer(cluster, model, sim, {options.nodes, 0.0, -1});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    met = met && seconds < kTargetS;
    std::fprintf(out,
                 "  %-15s %8.2f s to simulate (%lld events, %.3g events/s): predicted %.4f s a "
                 "step, %.0f samples/s, mean staleness %.1f\n",
                 strategy, seconds, static_cast<long long>(r.events),
                 static_cast<double>(r.events) / seconds, r.stepS, r.samplesPerS, r.meanStaleness);
    results.push_back({{"strategy", strategy},
                       {"seconds", seconds},
                       {"events", r.events},
                       {"step_s", r.stepS},
                       {"samples_per_s", r.samplesPerS},
                       {"mean_staleness", r.meanStaleness}});
  }
  std::fprintf(out, "target: each under %.0f s on one core: %s\n", kTargetS,
               met ? "met" : "NOT met");
  return {{"bench", "sim"},  {"nodes", options.nodes}, {"steps", options.steps},
          {"runs", results}, {"target_s", kTargetS},   {"met", met}};
}

}  // namespace dtlab::core::sim
