#pragma once
// Runs the ranks of one job as threads of the test process: real Gloo collectives through an
// in-memory store, and for the parameter-server strategies a host serving every block that
// each rank reaches through its own LocalParameterClient. What the core tests of the
// distributed strategies share.
#include <gloo/rendezvous/hash_store.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "core/comm/gloo_communicator.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy.h"

namespace dtlab::core::test {

struct RankThreads {
  std::vector<NodeConfig> nodes;  // one per rank: its size is the world
  MetricSink* sink = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  bool group = true;  // a Gloo group for the ranks (when the world has more than one)
  // A host of every block, for async_ps, ssp and hybrid, planning the spec's max_steps.
  bool parameterServer = false;
};

// World `n` ranks with default nodes at the given speeds.
inline std::vector<NodeConfig> nodesAt(const std::vector<double>& speeds) {
  std::vector<NodeConfig> nodes(speeds.size());
  for (std::size_t i = 0; i < speeds.size(); ++i) nodes[i].speed = speeds[i];
  return nodes;
}

// Every rank's result, parameters kept.
inline std::vector<WorkerResult> runRankThreads(const ExperimentSpec& spec,
                                                const RankThreads& how) {
  const int world = static_cast<int>(how.nodes.size());
  gloo::rendezvous::HashStore store;
  std::unique_ptr<ParameterHost> host;
  if (how.parameterServer) host = makeParameterHost(spec, 0, world, -1, spec.training.maxSteps);
  std::vector<WorkerResult> results(how.nodes.size());
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      WorkerJob job;
      job.spec = spec;
      job.rank = rank;
      job.world = world;
      job.node = how.nodes[static_cast<std::size_t>(rank)];
      job.keepParams = true;
      std::unique_ptr<GlooCommunicator> comm;
      if (how.group && world > 1) comm = std::make_unique<GlooCommunicator>(store, rank, world);
      std::unique_ptr<LocalParameterClient> client;
      if (host)
        client = std::make_unique<LocalParameterClient>(*host, psLayoutFor(spec, 0, world), rank);
      results[static_cast<std::size_t>(rank)] =
          runWorker(job, comm.get(), how.sink, how.cancel, client.get());
    });
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace dtlab::core::test
