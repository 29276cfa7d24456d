#pragma once
// Runs the ranks of one job as threads of the test process: real Gloo collectives through an
// in-memory store, and for the parameter-server strategies a host serving every block that
// each rank reaches through its own LocalParameterClient. What the core tests of the
// distributed strategies share.
#include <gloo/rendezvous/hash_store.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/comm/gloo_communicator.h"
#include "core/train/checkpoint.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy.h"
#include "tests/support/specs.h"

namespace dtlab::core::test {

struct RankThreads {
  std::vector<NodeConfig> nodes;  // one per rank: its size is the world
  MetricSink* sink = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  bool group = true;  // a Gloo group for the ranks (when the world has more than one)
  // The group's all-reduce; kAuto: the tuning pass picks one per message size, by timing.
  AllReduceAlgorithm allReduceAlgorithm = AllReduceAlgorithm::kAuto;
  // A host of every block, for async_ps, ssp and hybrid, planning the spec's max_steps.
  bool parameterServer = false;
  std::shared_ptr<const Checkpoint> resumeFrom;  // every rank continues from it
};

// Keeps the checkpoints rank 0 hands over, and the events.
class Keeper final : public MetricSink {
 public:
  void onCheckpoint(const Checkpoint& c) override {
    std::lock_guard lock(mutex_);
    checkpoints.push_back(c);
  }
  void onEvent(const RunEvent& e) override {
    std::lock_guard lock(mutex_);
    events.push_back(e);
  }
  std::vector<Checkpoint> checkpoints;
  std::vector<RunEvent> events;

 private:
  std::mutex mutex_;
};

// ||a - b|| / ||b||: how far a run's parameters are from another's (infinity when their sizes
// differ).
inline double relativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// Nodes at the given speeds, one per rank.
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
  // As a shard's daemon does when it accepts a resumed job.
  if (host && how.resumeFrom) host->restore(*how.resumeFrom);
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
      job.resumeFrom = how.resumeFrom;
      std::unique_ptr<GlooCommunicator> comm;
      if (how.group && world > 1) {
        GlooOptions options;
        options.allReduceAlgorithm = how.allReduceAlgorithm;
        comm = std::make_unique<GlooCommunicator>(store, rank, world, options);
      }
      std::unique_ptr<LocalParameterClient> client;
      if (host)
        client = std::make_unique<LocalParameterClient>(*host, psLayoutFor(spec, 0, world), rank);
      results[static_cast<std::size_t>(rank)] =
          runWorker(job, comm.get(), how.sink, how.cancel, client.get());
    });
  for (std::thread& t : threads) t.join();
  return results;
}

// `world` ranks of the spec at equal speeds, in one group.
inline std::vector<WorkerResult> runOnRanks(const ExperimentSpec& spec, int world,
                                            MetricSink* sink = nullptr) {
  RankThreads how;
  how.nodes = std::vector<NodeConfig>(static_cast<std::size_t>(world));
  how.sink = sink;
  return runRankThreads(spec, how);
}

// How far synchronous training on four ranks ends from one replica on the whole batch (their
// relative difference), after checking that the four ranks' replicas agree bit for bit.
inline double fourRanksApartFromOne(const ExperimentSpec& spec) {
  const std::vector<float> single = runOnRanks(spec, 1)[0].params;
  const std::vector<WorkerResult> four = runOnRanks(spec, 4);
  if (four[0].paramChecksum != four[3].paramChecksum)
    return std::numeric_limits<double>::infinity();
  return relativeDifference(four[0].params, single);
}

}  // namespace dtlab::core::test
