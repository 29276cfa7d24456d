#include "core/sim/step_models.h"

#include <algorithm>
#include <map>
#include <queue>
#include <utility>

#include "core/common/check.h"
#include "core/common/random.h"

namespace dtlab::core::sim {
namespace {

// A node's compute of one step: its share's time, drawn from its shape and its host's
// stretches, and, drawn, a straggler's pause.
double stepCompute(const NodeModel& node, int64_t samples, Rng& rng) {
  double seconds = node.fixedSeconds + static_cast<double>(samples) * node.secondsPerSample;
  if (!node.shape.empty()) {  // the measured distribution about the line
    const auto at =
        static_cast<std::size_t>(rng.uniform() * static_cast<double>(node.shape.size()));
    seconds *= node.shape[std::min(at, node.shape.size() - 1)];
  }
  if (!node.stretches.empty()) {  // how many of its host's nodes want a core this step
    const auto at = std::lower_bound(node.stretchCdf.begin(), node.stretchCdf.end(), rng.uniform());
    seconds *= node.stretches[std::min<std::size_t>(at - node.stretchCdf.begin(),
                                                    node.stretches.size() - 1)];
  }
  if (node.stragglerProbability > 0.0 && rng.uniform() < node.stragglerProbability)
    seconds += node.stragglerPauseS;
  return seconds;
}

void checkCluster(const ClusterModel& cluster, const SimOptions& options) {
  if (cluster.nodes.empty()) throw Error("the simulated cluster has no nodes");
  if (options.steps < 1) throw Error("the simulation needs at least one step");
  if (options.globalBatch < static_cast<int64_t>(cluster.nodes.size()))
    throw Error("a global batch of " + std::to_string(options.globalBatch) + " leaves some of " +
                std::to_string(cluster.nodes.size()) + " nodes without a sample");
  if (!(cluster.link.bytesPerS > 0.0)) throw Error("the simulated link has no bandwidth");
}

void finish(SimResult& r, const ClusterModel& cluster, const SimOptions& options,
            const std::vector<double>& compute, double waitedS, int64_t workerSteps) {
  r.stepS = r.wallS / static_cast<double>(options.steps);
  r.samplesPerS =
      r.wallS > 0.0 ? static_cast<double>(options.globalBatch * options.steps) / r.wallS : 0.0;
  r.utilization.resize(cluster.nodes.size());
  for (std::size_t i = 0; i < compute.size(); ++i)
    r.utilization[i] = r.wallS > 0.0 ? compute[i] / r.wallS : 1.0;
  r.meanWaitS = workerSteps > 0 ? waitedS / static_cast<double>(workerSteps) : 0.0;
}

}  // namespace

std::vector<int64_t> equalShares(int64_t globalBatch, int nodes) {
  std::vector<int64_t> shares(static_cast<std::size_t>(nodes), globalBatch / nodes);
  for (int64_t i = 0; i < globalBatch % nodes; ++i) ++shares[static_cast<std::size_t>(i)];
  return shares;
}

SimResult simulateSyncAllReduce(const ClusterModel& cluster, const ModelShape& model,
                                const SimOptions& options, std::vector<int64_t> shares) {
  checkCluster(cluster, options);
  const int n = static_cast<int>(cluster.nodes.size());
  if (shares.empty()) shares = equalShares(options.globalBatch, n);
  DTLAB_ENFORCE_EQ(static_cast<int>(shares.size()), n, "one share per node");
  std::vector<double> buckets = model.bucketBytes;
  std::vector<double> ready = model.bucketReady;
  if (buckets.empty()) {
    buckets = {model.parameterBytes};
    ready = {1.0};
  }
  DTLAB_ENFORCE_EQ(buckets.size(), ready.size(), "a ready share per bucket");
  std::vector<double> reduce(buckets.size());
  for (std::size_t j = 0; j < buckets.size(); ++j)
    reduce[j] = ringAllReduceSeconds(n, buckets[j], cluster.link);

  SimResult r;
  std::vector<Rng> rngs;
  for (int i = 0; i < n; ++i) rngs.emplace_back(deriveSeed(options.seed, 0x51u, i));
  std::vector<double> compute(static_cast<std::size_t>(n), 0.0);
  std::vector<double> c(static_cast<std::size_t>(n));
  double waited = 0.0;
  const double forward = 1.0 - model.backwardShare;
  for (int64_t step = 0; step < options.steps; ++step) {
    double slowest = 0.0;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      c[k] = stepCompute(cluster.nodes[k], shares[k], rngs[k]);
      compute[k] += c[k];
      slowest = std::max(slowest, c[k]);
    }
    r.events += n;  // every node's compute
    // Each bucket, in order, once every node has finished its part of backward.
    double reduced = 0.0;
    for (std::size_t j = 0; j < buckets.size(); ++j) {
      double everywhere = 0.0;
      for (int i = 0; i < n; ++i) {
        const double ci = c[static_cast<std::size_t>(i)];
        everywhere = std::max(everywhere, ci * (forward + model.backwardShare * ready[j]));
      }
      reduced = std::max(reduced, everywhere) + reduce[j];
      ++r.events;
    }
    const double stepS = std::max(slowest, reduced);
    for (int i = 0; i < n; ++i) waited += stepS - c[static_cast<std::size_t>(i)];
    r.wallS += stepS;
  }
  finish(r, cluster, options, compute, waited, options.steps * n);
  return r;
}

SimResult simulateParameterServer(const ClusterModel& cluster, const ModelShape& model,
                                  const SimOptions& options, const ParameterServerModel& server) {
  checkCluster(cluster, options);
  if (server.shards < 1) throw Error("a parameter server needs at least one shard");
  const int n = static_cast<int>(cluster.nodes.size());
  const std::vector<int64_t> shares = equalShares(options.globalBatch, n);
  // The shards hold equal parts and see the same requests in the same order, so one queue
  // stands for all of them: a request occupies a shard for its part's transfer (and, a push,
  // the optimizer step on it); the worker's own link moves the whole model either way.
  // Shards that share cores serve one after another: the capacity of `parallelism` shards.
  const int serving =
      server.parallelism > 0 ? std::min(server.shards, server.parallelism) : server.shards;
  const double part = model.parameterBytes / serving;
  const LinkModel& link = cluster.serverLink;
  if (!(link.bytesPerS > 0.0)) throw Error("the simulated server link has no bandwidth");
  const double shardPull = part / link.bytesPerS;
  const double shardPush = shardPull + part * server.applySecondsPerByte;
  const double workerLink = model.parameterBytes / link.bytesPerS;
  const double latency = link.latencyS;
  const int64_t budget = options.steps * n;  // pushes

  struct Worker {
    int64_t clock = 0;         // pushes applied
    int64_t knownSlowest = 0;  // ssp: the slowest's clock, as its last push heard it
    int64_t pulledAt = 0;      // the version its gradient is computed from
    double stepStart = 0.0;    // when it asked for its pull
    double computeS = 0.0;     // of the step in flight
  };
  std::vector<Worker> workers(static_cast<std::size_t>(n));
  std::vector<Rng> rngs;
  for (int i = 0; i < n; ++i) rngs.emplace_back(deriveSeed(options.seed, 0x52u, i));
  std::vector<double> compute(static_cast<std::size_t>(n), 0.0);
  // Requests by their arrival at the shards: (time, worker, push?).
  struct Request {
    double at;
    int worker;
    bool push;
    bool operator>(const Request& o) const { return at != o.at ? at > o.at : worker > o.worker; }
  };
  std::priority_queue<Request, std::vector<Request>, std::greater<Request>> queue;
  for (int i = 0; i < n; ++i) queue.push({latency, i, false});
  // ssp: each clock's workers still training, and the workers waiting for the slowest.
  std::map<int64_t, int> atClock;
  if (server.staleness >= 0) atClock[0] = n;
  std::priority_queue<std::pair<int64_t, int>, std::vector<std::pair<int64_t, int>>,
                      std::greater<>>
      parked;  // (the clock the slowest must reach, worker)
  double busyUntil = 0.0;
  int64_t version = 0;
  int64_t pushes = 0;
  double stalenessSum = 0.0;
  double waited = 0.0;
  SimResult r;
  while (!queue.empty()) {
    const Request q = queue.top();
    queue.pop();
    ++r.events;
    Worker& w = workers[static_cast<std::size_t>(q.worker)];
    const double start = std::max(q.at, busyUntil);
    busyUntil = start + (q.push ? shardPush : shardPull);
    // The worker's link carries every shard's part; the last shard's part arrives after both.
    const double done = std::max(busyUntil, q.at + workerLink) + latency;
    if (!q.push) {
      w.pulledAt = version;
      const double c = stepCompute(cluster.nodes[static_cast<std::size_t>(q.worker)],
                                   shares[static_cast<std::size_t>(q.worker)],
                                   rngs[static_cast<std::size_t>(q.worker)]);
      compute[static_cast<std::size_t>(q.worker)] += c;
      w.computeS = c;
      queue.push({done + c + latency, q.worker, true});
      continue;
    }
    // A push: applied at the end of its service, counted against what was pulled.
    const int64_t staleness = version - w.pulledAt;
    ++version;
    ++pushes;
    stalenessSum += static_cast<double>(staleness);
    r.maxStaleness = std::max(r.maxStaleness, staleness);
    r.wallS = std::max(r.wallS, done);
    waited += std::max(0.0, done - w.stepStart - w.computeS);
    ++w.clock;
    if (server.staleness >= 0) {
      if (--atClock[w.clock - 1] == 0) atClock.erase(w.clock - 1);
      ++atClock[w.clock];
    }
    // The run's pushes are in: this worker stops (and holds nobody back any more).
    const bool finished = pushes >= budget;
    if (finished && server.staleness >= 0 && --atClock[w.clock] == 0) atClock.erase(w.clock);
    // Whoever waited for the slowest and may go now.
    const int64_t slowest = atClock.empty() ? INT64_MAX : atClock.begin()->first;
    if (server.staleness >= 0) {
      while (!parked.empty() && parked.top().first <= slowest) {
        const int id = parked.top().second;
        parked.pop();
        workers[static_cast<std::size_t>(id)].stepStart = done;
        queue.push({done + latency, id, false});
      }
    }
    if (finished) continue;
    w.stepStart = done;
    w.knownSlowest = slowest;
    // With a bound, a step the worker cannot tell holds it (from what its push heard) begins by
    // asking for the slowest's clock: a round trip, or a wait until the slowest gets there.
    const int64_t need = w.clock - server.staleness;
    const bool asks = server.staleness >= 0 && need > 0 && w.knownSlowest < need;
    if (asks && slowest < need) {
      parked.push({need, q.worker});
      continue;
    }
    queue.push({done + (asks ? server.clockCheckS : 0.0) + latency, q.worker, false});
  }
  r.meanStaleness = pushes > 0 ? stalenessSum / static_cast<double>(pushes) : 0.0;
  finish(r, cluster, options, compute, waited, pushes);
  return r;
}

SimResult simulateLocalSgd(const ClusterModel& cluster, const ModelShape& model,
                           const SimOptions& options, int64_t period) {
  checkCluster(cluster, options);
  if (period < 1) throw Error("local_sgd's period must be at least 1");
  const int n = static_cast<int>(cluster.nodes.size());
  const std::vector<int64_t> shares = equalShares(options.globalBatch, n);
  // The parameters and the votes behind them, in one all-reduce.
  const double average =
      ringAllReduceSeconds(n, model.parameterBytes + 16.0 * sizeof(float), cluster.link);
  SimResult r;
  std::vector<Rng> rngs;
  for (int i = 0; i < n; ++i) rngs.emplace_back(deriveSeed(options.seed, 0x53u, i));
  std::vector<double> compute(static_cast<std::size_t>(n), 0.0);
  std::vector<double> sinceAverage(static_cast<std::size_t>(n), 0.0);
  double waited = 0.0;
  for (int64_t step = 1; step <= options.steps; ++step) {
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const double c = stepCompute(cluster.nodes[k], shares[k], rngs[k]);
      compute[k] += c;
      sinceAverage[k] += c;
    }
    r.events += n;
    // Every period, and at the end, all meet the slowest and average.
    if (step % period != 0 && step != options.steps) continue;
    const double slowest = *std::max_element(sinceAverage.begin(), sinceAverage.end());
    for (double& s : sinceAverage) {
      waited += slowest - s;
      s = 0.0;
    }
    r.wallS += slowest + average;
    ++r.events;
  }
  finish(r, cluster, options, compute, waited, options.steps * n);
  return r;
}

SimResult runInPhases(const std::vector<std::pair<SimResult, int64_t>>& phases) {
  SimResult r;
  int64_t steps = 0;
  double samples = 0.0;
  double pushesStaleness = 0.0;
  double pushes = 0.0;
  double waitWeight = 0.0;
  for (const auto& [phase, phaseSteps] : phases) {
    if (phaseSteps <= 0) continue;
    steps += phaseSteps;
    samples += phase.samplesPerS * phase.wallS;
    if (r.utilization.empty()) r.utilization.assign(phase.utilization.size(), 0.0);
    for (std::size_t i = 0; i < phase.utilization.size() && i < r.utilization.size(); ++i)
      r.utilization[i] += phase.utilization[i] * phase.wallS;
    // Staleness per push: an asynchronous phase pushes once a worker step.
    const double phasePushes = static_cast<double>(phaseSteps) * phase.utilization.size();
    pushesStaleness += phase.meanStaleness * phasePushes;
    pushes += phasePushes;
    r.maxStaleness = std::max(r.maxStaleness, phase.maxStaleness);
    waitWeight += phase.meanWaitS * phasePushes;
    r.events += phase.events;
    r.wallS += phase.wallS;
  }
  if (steps == 0) throw Error("a run in phases needs a phase of at least one step");
  r.stepS = r.wallS / static_cast<double>(steps);
  r.samplesPerS = r.wallS > 0.0 ? samples / r.wallS : 0.0;
  for (double& u : r.utilization) u = r.wallS > 0.0 ? u / r.wallS : 1.0;
  r.meanStaleness = pushes > 0.0 ? pushesStaleness / pushes : 0.0;
  r.meanWaitS = pushes > 0.0 ? waitWeight / pushes : 0.0;
  return r;
}

}  // namespace dtlab::core::sim
