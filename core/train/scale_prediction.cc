#include "core/train/scale_prediction.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/common/check.h"
#include "core/sim/host_sharing.h"
#include "core/sim/step_models.h"
#include "core/train/local_trainer.h"
#include "core/train/simulated_model.h"
#include "core/train/strategy_registry.h"

namespace dtlab::core {
namespace {

// Where the predicted nodes run: `perHost` nodes to each host of `cores` cores (0: not known).
struct HostPlan {
  int perHost = 1;
  int cores = 0;
};

// The hosts of a prediction: `nodesPerHost` when given; else, where every node of the calibrated
// runs was on one host (a local cluster, network namespaces of one machine) and no topology
// says otherwise, as many as the spec's cluster puts there (more nodes: more such hosts); else
// one each. The cores: the calibrated hosts' (the fewest, where they differ).
HostPlan hostPlanOf(const ExperimentSpec& spec, const sim::Calibration& calibration,
                    const sim::Topology* topology, int nodesPerHost) {
  HostPlan plan;
  for (const auto& [host, cores] : calibration.hostCores)
    plan.cores = plan.cores == 0 ? cores : std::min(plan.cores, cores);
  if (nodesPerHost > 0)
    plan.perHost = nodesPerHost;
  else if (topology == nullptr && calibration.hostCores.size() == 1)
    plan.perHost = static_cast<int>(std::max<int64_t>(1, spec.cluster.localNodes));
  return plan;
}

// Node i's compute at full speed when `nodes` run a variant of `strategy`: the strategy's own
// line where it was calibrated, scaled by the node's speed relative to the pool.
sim::ComputeFit computeFitOf(const ExperimentSpec& spec, const sim::Calibration& calibration,
                             const std::string& strategy, int nodes, int i) {
  sim::ComputeFit fit =
      calibration.nodes.size() > 1
          ? calibration.nodes[static_cast<std::size_t>(i) % calibration.nodes.size()]
          : calibration.pooled;
  for (const sim::ComputeFit& own : calibration.strategies)
    if (own.label == strategy) {
      // The node's speed relative to the pool, at this size's share, times the strategy's line.
      const double samples = static_cast<double>(spec.training.batchSize) / nodes;
      const double relative = fit.ms(samples) / calibration.pooled.ms(samples);
      fit.fixedMs = own.fixedMs * relative;
      fit.msPerSample = own.msPerSample * relative;
      // Its steps' distribution too: the strategy's threads and calls shape it.
      if (!own.shape.empty()) fit.shape = own.shape;
    }
  return fit;
}

// The cluster of `nodes` nodes for a variant of `strategy`; compute slower by `slower` and
// links by `linkSlower` (the band's 1 + spread, or 1 - spread); under `topology` when given.
sim::ClusterModel clusterOf(const ExperimentSpec& spec, const sim::Calibration& calibration,
                            const std::string& strategy, int nodes, double slower,
                            double linkSlower, const sim::Topology* topology,
                            const HostPlan& hosts) {
  sim::ClusterModel cluster;
  const int64_t specNodes = std::max<int64_t>(1, spec.cluster.localNodes);
  for (int i = 0; i < nodes; ++i) {
    const sim::ComputeFit fit = computeFitOf(spec, calibration, strategy, nodes, i);
    const NodeConfig node = spec.cluster.node(i % specNodes);
    const double shared = topology != nullptr ? topology->speedOf(i, nodes) : 0.0;
    const double speed = shared > 0.0 ? shared : node.speedAt(1);
    sim::NodeModel m;
    m.secondsPerSample = fit.msPerSample * 1e-3 * slower / speed;
    m.fixedSeconds = fit.fixedMs * 1e-3 * slower / speed;
    m.shape = fit.shape;
    if (node.straggler.probability > 0.0) {
      // The spec's pauses, drawn as it emulates them: the measured shape held them as its top
      // share, which goes.
      m.stragglerProbability = node.straggler.probability;
      m.stragglerPauseS = node.straggler.pauseMs * 1e-3;
      const auto emulated = static_cast<std::size_t>(
          std::llround(node.straggler.probability * static_cast<double>(m.shape.size())));
      m.shape.resize(m.shape.size() -
                     std::min(emulated, m.shape.size() > 0 ? m.shape.size() - 1 : 0));
    } else if (m.shape.empty()) {
      m.stragglerProbability = fit.pauseProbability;
      m.stragglerPauseS = fit.pauseMs * 1e-3 / speed;
    }  // else the measured pauses are in the shape
    cluster.nodes.push_back(m);
  }
  // Nodes that share a host share its cores: its shards serve only as many at once as it has.
  if (hosts.perHost > 1 && hosts.cores > 0)
    cluster.serverParallelism = hosts.cores * ((nodes + hosts.perHost - 1) / hosts.perHost);
  cluster.clockCheckS = calibration.clockCheckMs * 1e-3 * linkSlower;
  cluster.link = calibration.collective.model();
  cluster.serverLink = calibration.parameterServer.model();
  if (topology != nullptr) {
    cluster.link = sim::effectiveLink(cluster.link, *topology, nodes, sim::TrafficPattern::kRing);
    cluster.serverLink =
        sim::effectiveLink(cluster.serverLink, *topology, nodes, sim::TrafficPattern::kAllToAll);
  }
  for (sim::LinkModel* link : {&cluster.link, &cluster.serverLink}) {
    link->latencyS *= linkSlower;
    link->bytesPerS /= linkSlower;
  }
  return cluster;
}

struct Simulated {
  sim::SimResult result;
  double hostStretch = 1.0;  // mean over the nodes (core/sim/host_sharing.h)
};

// `strategy`'s simulation of `variant` on `nodes` nodes (clusterOf), then, where nodes share a
// host's cores (`hosts`) and the calibration measured their CPU work, again with the server's
// calls stretched by the host's mean stretch (sim::hostStretch at the first simulation's step)
// and each step's compute by a draw from its distribution, so that a step that found more
// nodes than cores busy is slower than its neighbours (what holds back a bounded-staleness
// worker or a synchronous step). The all-reduce's link is left as it is: its time is the
// emulated or real wire's, not the cores'.
Simulated simulateOnHosts(const StrategyDescriptor& strategy, const VariantConfig& variant,
                          const ExperimentSpec& spec, const sim::Calibration& calibration,
                          int nodes, double slower, double linkSlower,
                          const sim::Topology* topology, const HostPlan& hosts,
                          const sim::ModelShape& model, const sim::SimOptions& o) {
  sim::ClusterModel cluster =
      clusterOf(spec, calibration, strategy.name, nodes, slower, linkSlower, topology, hosts);
  Simulated out{strategy.simulate(variant, cluster, model, o)};
  const auto cpu = std::find_if(calibration.cpu.begin(), calibration.cpu.end(),
                                [&](const sim::CpuFit& f) { return f.label == strategy.name; });
  if (cpu == calibration.cpu.end() || hosts.cores < 1 || hosts.perHost <= hosts.cores) return out;
  const std::vector<int64_t> shares =
      o.shares.empty() ? sim::equalShares(o.globalBatch, nodes) : o.shares;
  double total = 0.0;
  for (int first = 0; first < nodes; first += hosts.perHost) {
    const int onHost = std::min(hosts.perHost, nodes - first);
    double cpuS = 0.0;  // a node's CPU work per step (its compute's and its calls'), the mean
    for (int i = first; i < first + onHost; ++i) {
      const double samples = static_cast<double>(shares[static_cast<std::size_t>(i)]);
      const double computeMs =
          computeFitOf(spec, calibration, strategy.name, nodes, i).ms(samples) * slower;
      cpuS += (cpu->computeThreads * computeMs + cpu->callsMs) * 1e-3 / onHost;
    }
    double busy = 0.0;
    const double s = sim::hostStretch(onHost, hosts.cores, cpuS, out.result.stepS, &busy);
    total += s * onHost;
    // Each step's compute by a draw: how many of the host's nodes want a core then.
    const sim::StretchDistribution draws = sim::sharedCoreStretches(onHost, hosts.cores, busy);
    for (int i = first; i < first + onHost; ++i)
      sim::stretchCompute(cluster.nodes[static_cast<std::size_t>(i)], draws);
  }
  out.hostStretch = total / nodes;
  if (out.hostStretch <= 1.0 + 1e-9) return out;
  cluster.serverLink.bytesPerS /= out.hostStretch;
  cluster.serverLink.latencyS *= out.hostStretch;
  cluster.clockCheckS *= out.hostStretch;
  out.result = strategy.simulate(variant, cluster, model, o);
  return out;
}

// The variant's model as the simulator sees it: its buckets (the variant's own size, else the
// calibrated runs') ready when the calibration timed backward handing them over.
sim::ModelShape modelOf(const ExperimentSpec& spec, const VariantConfig& variant,
                        const sim::Calibration& calibration) {
  const StrategyDescriptor& strategy = strategyOf(variant);
  const sim::TransferPattern pattern =
      strategy.transferPattern ? strategy.transferPattern(variant, {}) : sim::TransferPattern{};
  const int64_t bucketBytes =
      pattern.bucketBytes > 0 ? pattern.bucketBytes : calibration.bucketBytes;
  return simulatedModel(spec, bucketBytes, calibration.handOffShares);
}

// The global steps a run of the spec plans (0: unbounded).
int64_t planned(const ExperimentSpec& spec) {
  return plannedSteps(
      spec,
      std::max<int64_t>(1, spec.dataset.trainSize / std::max<int64_t>(1, spec.training.batchSize)));
}

// Why `strategy` cannot be simulated with `calibration` ("" when it can).
std::string unmodelledWhy(const StrategyDescriptor& strategy, const sim::Calibration& calibration) {
  if (!strategy.simulate) return "the simulator has no model of " + strategy.name + " yet";
  // The links the strategy's transfers take: a group's all-reduce, the server's calls.
  std::string missing;
  if (strategy.traits.needsCollectiveGroup && !calibration.collective.measured())
    missing = "all-reduce";
  if (strategy.traits.usesParameterServer && !calibration.parameterServer.measured())
    missing += std::string(missing.empty() ? "" : " and ") + "parameter-server";
  if (missing.empty()) return {};
  return "the calibration measured no " + missing +
         " link (calibrate with runs of at least 2 nodes of such a strategy)";
}

// The measured run of `variant` at the node count nearest `nodes` (log scale) that reached
// the target; nullptr when none did.
const MeasuredPoint* nearestReached(const std::vector<MeasuredPoint>& measured,
                                    const VariantPrediction& variant, int nodes) {
  const MeasuredPoint* best = nullptr;
  double bestDistance = 0.0;
  for (const MeasuredPoint& m : measured) {
    if (!variant.covers(m.variant) || !m.stepsToTarget || m.nodes < 1) continue;
    const double distance = std::abs(std::log(static_cast<double>(m.nodes) / nodes));
    if (best == nullptr || distance < bestDistance) {
      best = &m;
      bestDistance = distance;
    }
  }
  return best;
}

}  // namespace

bool VariantPrediction::covers(const std::string& name) const {
  return name == variant || std::find(aliases.begin(), aliases.end(), name) != aliases.end();
}

std::optional<double> simulatedStepMs(const ExperimentSpec& spec, const VariantConfig& variant,
                                      const sim::Calibration& calibration, int nodes,
                                      const std::vector<int64_t>& shares, int64_t ranSteps,
                                      std::string* why, int64_t steps) {
  const StrategyDescriptor& strategy = strategyOf(variant);
  std::string reason = unmodelledWhy(strategy, calibration);
  if (reason.empty() && (nodes < 1 || spec.training.batchSize < nodes))
    reason = "no sample for some of " + std::to_string(nodes) + " nodes";
  if (!reason.empty()) {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  }
  sim::SimOptions o;
  o.globalBatch = spec.training.batchSize;
  o.steps = steps;
  o.shares = shares;
  o.plannedSteps = planned(spec);
  o.ranSteps = ranSteps;
  return simulateOnHosts(strategy, variant, spec, calibration, nodes, 1.0, 1.0, nullptr,
                         hostPlanOf(spec, calibration, nullptr, 0),
                         modelOf(spec, variant, calibration), o)
             .result.stepS *
         1e3;
}

std::string hostAssumption(const ExperimentSpec& spec, const sim::Calibration& calibration,
                           const PredictOptions& options, int* perHost, int* cores) {
  const HostPlan plan = hostPlanOf(
      spec, calibration, options.topology ? &*options.topology : nullptr, options.nodesPerHost);
  if (perHost != nullptr) *perHost = plan.perHost;
  if (cores != nullptr) *cores = plan.cores;
  if (plan.perHost <= 1) return "each node a host of its own";
  std::string text = std::to_string(plan.perHost) + " nodes to a host";
  if (plan.cores < 1) return text + " (its cores not known: not modelled as shared)";
  text += " of " + std::to_string(plan.cores) + " core" + (plan.cores == 1 ? "" : "s");
  if (plan.perHost <= plan.cores) return text + " (a core each)";
  if (calibration.cpu.empty())
    return text + " (the runs recorded no cpu_util: not modelled as shared)";
  return text +
         ", shared: a node's compute and server calls stretched by the chance that more nodes "
         "than cores want one at once, from each strategy's measured CPU work per step";
}

std::vector<VariantPrediction> predictScale(const ExperimentSpec& spec,
                                            const sim::Calibration& calibration,
                                            const PredictOptions& options,
                                            const std::vector<MeasuredPoint>& measured) {
  const sim::Topology* topology = options.topology ? &*options.topology : nullptr;
  const HostPlan hosts = hostPlanOf(spec, calibration, topology, options.nodesPerHost);
  std::vector<VariantPrediction> out;
  std::vector<const VariantConfig*> predicted;  // the configuration of each of `out`
  for (const VariantConfig& variant : spec.variants) {
    // The same configuration as an earlier variant, on another node count: predicted once.
    bool same = false;
    for (std::size_t i = 0; i < out.size() && !same; ++i)
      if (predicted[i]->strategy == variant.strategy &&
          predicted[i]->settings == variant.settings) {
        // Named after the variant that runs on the whole cluster, where there is one.
        if (variant.nodes == 0 && predicted[i]->nodes != 0) {
          out[i].aliases.push_back(out[i].variant);
          out[i].variant = variant.name;
          predicted[i] = &variant;
        } else {
          out[i].aliases.push_back(variant.name);
        }
        same = true;
      }
    if (same) continue;
    predicted.push_back(&variant);
    const StrategyDescriptor& strategy = strategyOf(variant);
    VariantPrediction p;
    p.variant = variant.name;
    p.strategy = strategy.name;
    p.unmodelled = unmodelledWhy(strategy, calibration);
    if (!p.unmodelled.empty()) {
      out.push_back(std::move(p));
      continue;
    }
    const double linkSpread =
        std::max(strategy.traits.needsCollectiveGroup ? calibration.collective.spread : 0.0,
                 strategy.traits.usesParameterServer ? calibration.parameterServer.spread : 0.0);
    const sim::ModelShape model = modelOf(spec, variant, calibration);
    const bool stale = strategy.traits.usesParameterServer;
    if (!options.throughputOnly && spec.training.targetAccuracy)
      p.convergence =
          stale ? "steps to target: the measured run's at the nearest node count, x (1 + mean "
                  "staleness) / (1 + its measured mean staleness)"
                : "steps to target: the measured run's at the nearest node count (the global "
                  "batch, and so every update, is the spec's at any size)";
    for (int nodes : options.nodes) {
      if (nodes < 1)
        throw Error("a prediction needs at least one node, not " + std::to_string(nodes));
      if (spec.training.batchSize < nodes) {
        ScalePoint none;  // no sample for some node: nothing to predict
        none.nodes = nodes;
        p.points.push_back(none);
        continue;
      }
      sim::SimOptions o;
      o.globalBatch = spec.training.batchSize;
      o.steps = options.steps;
      o.seed = options.seed;
      o.plannedSteps = planned(spec);
      const auto simulate = [&](double slower, double linkSlower) {
        return simulateOnHosts(strategy, variant, spec, calibration, nodes, slower, linkSlower,
                               topology, hosts, model, o);
      };
      const Simulated central = simulate(1.0, 1.0);
      const sim::SimResult& mid = central.result;
      const double computeSpread = calibration.pooled.spread;
      const sim::SimResult low =
          simulate(1.0 - std::min(0.9, computeSpread), 1.0 - std::min(0.9, linkSpread)).result;
      const sim::SimResult high = simulate(1.0 + computeSpread, 1.0 + linkSpread).result;
      ScalePoint s;
      s.nodes = nodes;
      s.hostStretch = central.hostStretch;
      s.stepMs = mid.stepS * 1e3;
      s.lowMs = std::min(low.stepS, mid.stepS) * 1e3;
      s.highMs = std::max(high.stepS, mid.stepS) * 1e3;
      s.samplesPerS = mid.samplesPerS;
      double utilization = 0.0;
      for (double u : mid.utilization) utilization += u;
      s.utilization = mid.utilization.empty() ? 0.0 : utilization / mid.utilization.size();
      s.meanStaleness = mid.meanStaleness;
      if (!p.convergence.empty())
        if (const MeasuredPoint* ref = nearestReached(measured, p, nodes)) {
          double steps = static_cast<double>(*ref->stepsToTarget);
          if (stale) steps *= (1.0 + s.meanStaleness) / (1.0 + ref->meanStaleness);
          s.stepsToTarget = steps;
          s.timeToTargetS = steps * s.stepMs * 1e-3;
        }
      p.points.push_back(s);
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace dtlab::core
