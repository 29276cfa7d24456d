#include "core/analysis/run_calibration.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/analysis/comparison.h"
#include "core/common/check.h"
#include "core/common/statistics.h"
#include "core/metrics/event_facts.h"
#include "core/metrics/metric_table.h"
#include "core/nn/model_kinds.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/train/simulated_model.h"
#include "core/train/strategy_registry.h"

namespace dtlab::core {
namespace {

// A run's warm-up, left out of every figure taken from it: its first tenth, and at least its
// first two steps. The first steps touch memory and set up buckets and connections for the
// first time, and the workers start at different moments: a bounded-staleness worker's first
// wait for the slowest (at clock bound + 1) takes up how far the last one started behind the
// first, once for the run (100 ms measured in 160-step runs of 3 local nodes). The simulator
// models the steady state after it, as do the measured points set beside it.
constexpr int64_t kFirstMeasuredStep = 3;
constexpr int64_t kWarmUpShare = 10;  // 1 / this of the steps

int64_t firstMeasuredStep(int64_t steps) {
  return std::max<int64_t>(kFirstMeasuredStep, 1 + steps / kWarmUpShare);
}

struct WorkerKey {
  int node = 0;
  int worker = 0;
  auto operator<=>(const WorkerKey&) const = default;
};

// A run as the calibration reads it.
struct LoadedRun {
  RunRecord record;
  ExperimentSpec spec;
  int variant = 0;
  int nodes = 0;
  int64_t steps = 0;  // global steps it made
  bool contended = false;
  double meanStaleness = 0.0;
  CollectiveFacts collective;        // what its first "start" event says its group measured
  std::map<int, std::string> hosts;  // node -> the host its daemon named
  std::map<std::string, int> cores;  // host -> its cores
  // key -> worker -> points past the warm-up (firstMeasuredStep)
  std::map<std::string, std::map<WorkerKey, std::vector<SeriesPoint>>> series;
  std::vector<SeriesPoint> testAccuracy;
  std::map<int, std::vector<SeriesPoint>> cpuUtil;  // node -> its process's samples
};

std::string named(const RunRecord& r) {
  return "run " + std::to_string(r.id) + " ('" + r.name + "')";
}

// Reads run `id`; nullopt (with `why`) when it cannot serve.
std::optional<LoadedRun> loadRun(ProjectStore& store, int64_t id, std::string* why) {
  LoadedRun r;
  const std::optional<RunRecord> record = store.run(id);
  if (!record) {
    *why = "no run " + std::to_string(id);
    return std::nullopt;
  }
  r.record = *record;
  if (r.record.status != RunStatus::kCompleted) {
    *why = named(r.record) + " did not complete";
    return std::nullopt;
  }
  if (r.record.spec.is_null()) {
    *why = named(r.record) + " has no stored spec";
    return std::nullopt;
  }
  r.spec = parseExperimentSpecText(r.record.spec.dump());
  r.variant = variantOfRun(r.spec, r.record.name);
  const std::optional<nlohmann::json> summary = store.runSummary(id);
  if (!summary || !summary->contains("nodes")) {
    *why = named(r.record) + " has no summary";
    return std::nullopt;
  }
  r.nodes = summary->at("nodes").get<int>();
  r.steps = summary->value("steps", int64_t{0});
  r.contended = summary->value("contended", false);
  if (summary->contains("mean_staleness") && summary->at("mean_staleness").is_number())
    r.meanStaleness = summary->at("mean_staleness").get<double>();
  bool started = false;
  for (const RunEvent& e : store.events(id)) {
    if (const std::optional<NodeFacts> node = nodeFactsOf(e)) {
      r.hosts[node->node] = node->host;
      if (node->cores > 0) r.cores[node->host] = static_cast<int>(node->cores);
    }
    if (e.kind == kStartEvent && !started) {
      started = true;
      r.collective = collectiveFactsOf(e).value_or(CollectiveFacts{});
    }
  }
  static const std::set<std::string> kKeys = {
      metric::kComputeMs, metric::kCommMs, metric::kStepMs,       metric::kBatchShare,
      metric::kBytesSent, metric::kWaitMs, metric::kBytesReceived};
  const int64_t first = firstMeasuredStep(r.steps);
  for (const SeriesInfo& s : store.series(id)) {
    if (s.key == metric::kTestAccuracy) r.testAccuracy = store.readSeries(s.id);
    if (s.key == metric::kCpuUtil && s.node >= 0) r.cpuUtil[s.node] = store.readSeries(s.id, first);
    if (!kKeys.contains(s.key) || s.node < 0 || s.worker < 0) continue;
    r.series[s.key][{s.node, s.worker}] = store.readSeries(s.id, first);
  }
  if (r.series[metric::kComputeMs].empty()) {
    *why = named(r.record) + " recorded no compute_ms past its warm-up";
    return std::nullopt;
  }
  return r;
}

std::vector<LoadedRun> loadRuns(ProjectStore& store, std::vector<int64_t> runIds,
                                const std::string& experiment) {
  const bool given = !runIds.empty();
  if (!given)
    for (const RunRecord& r : store.runs())
      if (r.status == RunStatus::kCompleted && !r.spec.is_null()) runIds.push_back(r.id);
  std::vector<LoadedRun> runs;
  for (int64_t id : runIds) {
    std::string why;
    std::optional<LoadedRun> run = loadRun(store, id, &why);
    if (!run) {
      if (given) throw Error(why + ": it cannot be used");
      continue;
    }
    if (!experiment.empty() && run->spec.name != experiment) continue;
    runs.push_back(std::move(*run));
  }
  return runs;
}

// The value at each step of a worker's series, by step.
std::map<int64_t, double> byStep(const std::vector<SeriesPoint>& points) {
  std::map<int64_t, double> out;
  for (const SeriesPoint& p : points)
    if (std::isfinite(p.value)) out[p.step] = p.value;
  return out;
}

double medianOr(std::vector<double> values, double fallback) {
  return values.empty() ? fallback : median(std::move(values));
}

// What run `run` measured (MeasuredPoint).
MeasuredPoint measuredPointOf(const LoadedRun& run) {
  MeasuredPoint m;
  m.runId = run.record.id;
  m.variant = run.spec.variants.at(static_cast<std::size_t>(run.variant)).name;
  m.nodes = run.nodes;
  m.meanStaleness = run.meanStaleness;
  // Per worker, its mean; then over the workers, the mean of their rates (a harmonic mean:
  // asynchronous workers make their steps at their own pace, and the run's throughput is the
  // sum of their rates).
  const auto mean = [&](const char* key) {
    const auto it = run.series.find(key);
    if (it == run.series.end() || it->second.empty()) return 0.0;
    double rates = 0.0;
    int workers = 0;
    for (const auto& [worker, points] : it->second) {
      double sum = 0.0;
      for (const SeriesPoint& p : points) sum += p.value;
      if (points.empty() || !(sum > 0.0)) continue;
      rates += static_cast<double>(points.size()) / sum;
      ++workers;
    }
    return rates > 0.0 ? workers / rates : 0.0;
  };
  m.stepMs = mean(metric::kStepMs);
  for (const auto& [node, points] : run.cpuUtil) {
    double sum = 0.0;
    for (const SeriesPoint& p : points) sum += p.value;
    if (!points.empty()) m.cpuUtil += sum / static_cast<double>(points.size());
  }
  const double computeMs = mean(metric::kComputeMs);
  m.utilization = m.stepMs > 0.0 ? std::min(1.0, computeMs / m.stepMs) : 0.0;
  m.samplesPerS =
      m.stepMs > 0.0 ? static_cast<double>(run.spec.training.batchSize) / (m.stepMs * 1e-3) : 0.0;
  if (run.spec.training.targetAccuracy)
    for (const SeriesPoint& p : run.testAccuracy)
      if (p.value >= *run.spec.training.targetAccuracy) {
        m.stepsToTarget = p.step;
        break;
      }
  return m;
}

// Each node's CPU work per step in `run` (its process's cpu_util x its host's cores x its
// workers' mean step) beside its compute's (their median compute at full speed, x the threads
// of a local cluster's nodes); none where the host's cores are unknown.
std::vector<sim::CpuObservation> cpuObservations(const LoadedRun& run,
                                                 const std::string& strategy) {
  std::vector<sim::CpuObservation> out;
  const auto steps = run.series.find(metric::kStepMs);
  const auto computes = run.series.find(metric::kComputeMs);
  if (steps == run.series.end() || computes == run.series.end()) return out;
  const int threads = run.spec.cluster.remote() ? 1 : std::max(1, run.spec.cluster.threadsPerNode);
  for (const auto& [node, points] : run.cpuUtil) {
    const auto host = run.hosts.find(node);
    if (points.empty() || host == run.hosts.end() || !run.cores.contains(host->second)) continue;
    double util = 0.0;
    for (const SeriesPoint& p : points) util += p.value;
    util /= static_cast<double>(points.size());
    const NodeConfig config =
        run.spec.cluster.node(node % std::max<int64_t>(1, run.spec.cluster.localNodes));
    double stepMs = 0.0, computeMs = 0.0;
    int workers = 0;
    for (const auto& [worker, series] : steps->second) {
      if (worker.node != node || series.empty() || !computes->second.contains(worker)) continue;
      double sum = 0.0;
      for (const SeriesPoint& p : series) sum += p.value;
      stepMs += sum / static_cast<double>(series.size());
      std::vector<double> atFullSpeed;
      for (const SeriesPoint& p : computes->second.at(worker))
        if (std::isfinite(p.value)) atFullSpeed.push_back(p.value * config.speedAt(p.step));
      computeMs += medianOr(std::move(atFullSpeed), 0.0);
      ++workers;
    }
    if (workers == 0 || !(stepMs > 0.0)) continue;
    out.push_back({strategy, run.nodes, util * run.cores.at(host->second) * stepMs / workers,
                   computeMs * threads, threads, static_cast<int64_t>(points.size())});
  }
  return out;
}

// The calls of one run's group as ring all-reduces of `nodes`: 2(n-1) messages, 2(n-1)/n of
// the bytes on each rank's link.
std::vector<sim::TransferObservation> callObservations(const sim::TransferPattern& pattern,
                                                       double nodes) {
  std::vector<sim::TransferObservation> out;
  for (const sim::CallTiming& call : pattern.calls)
    if (call.ms > 0.0)
      out.push_back({2.0 * (nodes - 1.0),
                     2.0 * (nodes - 1.0) / nodes * static_cast<double>(call.bytes), call.ms, 1});
  return out;
}

// The all-reduce link: the steps' own fit where they tell latency from bandwidth; otherwise
// the latency of the calls the groups timed (when those were of several sizes) and the
// bandwidth of the steps' time beyond it; otherwise all of it bandwidth.
sim::LinkFit collectiveFit(const std::vector<sim::TransferObservation>& steps,
                           const std::vector<sim::TransferObservation>& calls,
                           int64_t runsWithCalls, std::vector<std::string>* notes) {
  constexpr const char* kPath = "all-reduce link";
  const sim::LinkFit own = sim::fitLink(steps, kPath, nullptr);
  const sim::LinkFit timed = sim::fitLink(calls, "", nullptr);
  if (own.latencySeparated || !own.measured() || !timed.latencySeparated)
    return sim::fitLink(steps, kPath, notes);
  char text[320];
  std::snprintf(text, sizeof text,
                "%s: latency %.4f ms per message from %zu all-reduce calls of several sizes, "
                "timed by the groups of %lld run(s) when they formed (there %.1f Mbit/s, spread "
                "%.0f%%); bandwidth from the steps' communication beyond it",
                kPath, timed.latencyMs, calls.size(), static_cast<long long>(runsWithCalls),
                timed.bandwidthMbps, 100.0 * timed.spread);
  notes->push_back(text);
  return sim::fitLink(steps, kPath, notes, timed.latencyMs);
}

}  // namespace

sim::Calibration calibrateRuns(ProjectStore& store, std::vector<int64_t> runIds,
                               const std::string& experiment) {
  // By default the runs of the project's most recent experiment: a calibration is of one
  // model on one cluster.
  const std::string chosen =
      runIds.empty() ? experimentNamedOrLatest(
                           store, experiment.empty() ? std::nullopt : std::optional(experiment))
                           .name
                     : experiment;
  const std::vector<LoadedRun> runs = loadRuns(store, std::move(runIds), chosen);
  if (runs.empty())
    throw Error("no completed run with a stored spec in " + store.path() + " to calibrate from");
  // Compute per sample is the model's, and an emulated link the cluster's: runs that differ in
  // either cannot share one calibration.
  const auto links = [](const ExperimentSpec& spec) {
    std::vector<std::pair<double, double>> out;
    for (int64_t i = 0; i < std::max<int64_t>(1, spec.cluster.localNodes); ++i)
      out.emplace_back(spec.cluster.node(i).bandwidthMbps, spec.cluster.node(i).latencyMs);
    return out;
  };
  for (const LoadedRun& run : runs) {
    const LoadedRun& first = runs.front();
    const bool sameModel = canonicalModel(run.spec.model) == canonicalModel(first.spec.model) &&
                           run.spec.dataset.features == first.spec.dataset.features &&
                           run.spec.dataset.classes == first.spec.dataset.classes;
    if (!sameModel || links(run.spec) != links(first.spec))
      throw Error(named(run.record) + " and " + named(first.record) + " train " +
                  (sameModel ? "on clusters with different emulated links"
                             : "different models (or datasets of other widths)") +
                  ": a calibration is of one model on one cluster; calibrate the runs of one "
                  "experiment at a time");
  }
  sim::Calibration c;
  c.experiment = runs.front().spec.name;
  std::vector<sim::ComputeObservation> compute;
  std::vector<sim::TransferObservation> collective, server;
  // The all-reduce calls the groups timed when they formed, and how many runs' groups.
  std::vector<sim::TransferObservation> calls;
  int64_t runsWithCalls = 0;
  std::map<int64_t, int64_t> bucketSizes;  // bytes -> runs
  std::vector<double> clockChecks;         // bounded-staleness steps' waits
  std::vector<sim::CpuObservation> cpu;
  for (const LoadedRun& run : runs) {
    c.runs.push_back(run.record.id);
    c.hostCores.insert(run.cores.begin(), run.cores.end());
    const VariantConfig& variant = run.spec.variants.at(static_cast<std::size_t>(run.variant));
    const std::vector<sim::CpuObservation> runCpu = cpuObservations(run, strategyOf(variant).name);
    cpu.insert(cpu.end(), runCpu.begin(), runCpu.end());
    const auto& computeMs = run.series.at(metric::kComputeMs);
    const auto shareIt = run.series.find(metric::kBatchShare);
    for (const auto& [worker, points] : computeMs) {
      const NodeConfig node =
          run.spec.cluster.node(worker.node % std::max<int64_t>(1, run.spec.cluster.localNodes));
      const std::map<int64_t, double> shares =
          shareIt != run.series.end() && shareIt->second.contains(worker)
              ? byStep(shareIt->second.at(worker))
              : std::map<int64_t, double>{};
      // One observation per batch size the worker trained.
      std::map<int64_t, sim::ComputeObservation> bySize;
      for (const SeriesPoint& p : points) {
        const auto share = shares.find(p.step);
        const double s = share != shares.end() ? share->second : 1.0 / run.nodes;
        const auto samples = std::llround(s * static_cast<double>(run.spec.training.batchSize));
        if (samples < 1 || !std::isfinite(p.value)) continue;
        sim::ComputeObservation& o = bySize[samples];
        o.samples = static_cast<double>(samples);
        o.msAtSpeed.push_back(p.value * node.speedAt(p.step));
      }
      const auto host = run.hosts.find(worker.node);
      for (auto& [samples, o] : bySize) {
        o.node = host != run.hosts.end() ? host->second : "local";
        o.strategy = strategyOf(variant).name;
        o.contended = run.contended;
        compute.push_back(std::move(o));
      }
    }
    // Transfers, where the strategy's follow a modelled pattern.
    const StrategyDescriptor& strategy = strategyOf(variant);
    if (!strategy.transferPattern || run.nodes < 2) continue;
    const sim::TransferPattern pattern = strategy.transferPattern(variant, run.collective);
    const auto commIt = run.series.find(metric::kCommMs);
    const auto sentIt = run.series.find(metric::kBytesSent);
    if (commIt == run.series.end() || sentIt == run.series.end()) continue;
    if (pattern.path == sim::TransferPath::kCollective) {
      if (pattern.bucketBytes > 0) ++bucketSizes[pattern.bucketBytes];
      if (const std::vector<sim::TransferObservation> timed =
              callObservations(pattern, static_cast<double>(run.nodes));
          !timed.empty()) {
        calls.insert(calls.end(), timed.begin(), timed.end());
        ++runsWithCalls;
      }
      const double buckets =
          static_cast<double>(simulatedModel(run.spec, pattern.bucketBytes).bucketBytes.size());
      // Per step, the fastest rank's communication: the others also waited for it there.
      std::map<int64_t, double> fastest;
      std::vector<double> sent;
      for (const auto& [worker, points] : commIt->second)
        for (const SeriesPoint& p : points) {
          auto [it, fresh] = fastest.try_emplace(p.step, p.value);
          if (!fresh) it->second = std::min(it->second, p.value);
        }
      for (const auto& [worker, points] : sentIt->second)
        for (const SeriesPoint& p : points) sent.push_back(p.value);
      std::vector<double> ms;
      for (const auto& [step, value] : fastest) ms.push_back(value);
      if (ms.empty() || sent.empty()) continue;
      collective.push_back({2.0 * (run.nodes - 1) * buckets, medianOr(sent, 0.0), median(ms),
                            static_cast<int64_t>(ms.size())});
    } else if (pattern.path == sim::TransferPath::kParameterServer) {
      if (pattern.clockCheck)
        if (const auto waits = run.series.find(metric::kWaitMs); waits != run.series.end())
          for (const auto& [worker, points] : waits->second)
            for (const SeriesPoint& p : points)
              if (p.value > 0.0) clockChecks.push_back(p.value);  // 0: it did not need to ask
      const auto receivedIt = run.series.find(metric::kBytesReceived);
      for (const auto& [worker, points] : commIt->second) {
        std::vector<double> ms, bytes;
        for (const SeriesPoint& p : points) ms.push_back(p.value);
        const std::map<int64_t, double> sent = byStep(
            sentIt->second.count(worker) ? sentIt->second.at(worker) : std::vector<SeriesPoint>{});
        const std::map<int64_t, double> received =
            receivedIt != run.series.end() && receivedIt->second.count(worker)
                ? byStep(receivedIt->second.at(worker))
                : std::map<int64_t, double>{};
        for (const auto& [step, value] : sent) {
          const auto r = received.find(step);
          bytes.push_back(value + (r != received.end() ? r->second : 0.0));
        }
        if (ms.empty() || bytes.empty()) continue;
        server.push_back({2.0, median(bytes), median(ms), static_cast<int64_t>(ms.size())});
      }
    }
  }
  // Pooled, per node label, per strategy.
  std::vector<const sim::ComputeObservation*> all;
  std::vector<std::string> labels, strategies;
  const auto remember = [](std::vector<std::string>& seen, const std::string& name) {
    if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
  };
  for (const sim::ComputeObservation& o : compute) {
    all.push_back(&o);
    remember(labels, o.node);
    remember(strategies, o.strategy);
  }
  c.pooled = sim::fitCompute(all, "", "every node", &c.notes);
  // A part measured at one batch size only takes the pooled line's shape, scaled to what it
  // measured there (when the pool has more than one size).
  const auto fitWhere = [&](auto pick, const std::string& label, const std::string& what) {
    std::vector<const sim::ComputeObservation*> mine;
    for (const sim::ComputeObservation* o : all)
      if (pick(*o)) mine.push_back(o);
    std::vector<std::string> notes;
    sim::ComputeFit f = sim::fitCompute(mine, label, what, &notes);
    if (f.batchSizes.size() == 1 && c.pooled.batchSizes.size() >= 2) {
      const double samples = f.batchSizes.front();
      const double scale = f.ms(samples) / c.pooled.ms(samples);
      f.fixedMs = c.pooled.fixedMs * scale;
      f.msPerSample = c.pooled.msPerSample * scale;
      notes = {what + ": measured at one batch size (" + std::to_string(std::llround(samples)) +
               " samples): the line of every node together, scaled to it"};
    }
    c.notes.insert(c.notes.end(), notes.begin(), notes.end());
    return f;
  };
  for (const std::string& label : labels)
    c.nodes.push_back(
        fitWhere([&](const auto& o) { return o.node == label; }, label, "node " + label));
  for (const std::string& name : strategies)
    c.strategies.push_back(
        fitWhere([&](const auto& o) { return o.strategy == name; }, name, name + "'s compute"));
  for (const std::string& name : strategies)
    if (std::optional<sim::CpuFit> f = sim::fitCpu(cpu, name)) c.cpu.push_back(*f);
  if (c.cpu.empty())
    c.notes.push_back(
        "no run recorded its nodes' cpu_util: nodes that share a host are modelled as if each "
        "had its cores to itself");
  if (c.pooled.contended)
    c.notes.push_back(
        "some runs had more busy worker threads than cores on a host: their compute includes "
        "that contention");
  c.collective = collectiveFit(collective, calls, runsWithCalls, &c.notes);
  c.parameterServer = sim::fitLink(server, "parameter-server link", &c.notes);
  if (!c.collective.measured())
    c.notes.push_back("all-reduce link: no run of 2 or more nodes all-reduced every step");
  if (!c.parameterServer.measured())
    c.notes.push_back(
        "parameter-server link: no run of 2 or more nodes pulled and pushed every step");
  // When backward hands each block over, timed here at the median share the runs trained.
  std::vector<double> samples;
  for (const sim::ComputeObservation& o : compute) samples.push_back(o.samples);
  c.handOffRows = std::max<int64_t>(1, std::llround(median(samples)));
  c.handOffShares = measureHandOffShares(runs.front().spec, c.handOffRows);
  if (!clockChecks.empty()) {  // the lower quartile: steps where nobody was late
    std::sort(clockChecks.begin(), clockChecks.end());
    c.clockCheckMs = clockChecks[clockChecks.size() / 4];
  }
  if (!bucketSizes.empty())
    c.bucketBytes =
        std::max_element(bucketSizes.begin(), bucketSizes.end(), [](const auto& a, const auto& b) {
          return a.second < b.second;
        })->first;
  return c;
}

std::vector<MeasuredPoint> measuredPoints(ProjectStore& store, const std::string& experiment,
                                          std::vector<int64_t> runIds) {
  std::vector<MeasuredPoint> out;
  for (const LoadedRun& run : loadRuns(store, std::move(runIds), experiment))
    out.push_back(measuredPointOf(run));
  return out;
}

std::optional<std::pair<int64_t, sim::Calibration>> calibrationOf(ProjectStore& store,
                                                                  const std::string& experiment) {
  for (const StoredCalibration& stored : store.calibrations()) {
    if (!stored.data.is_object() || stored.data.value("experiment", std::string()) != experiment)
      continue;
    return std::pair(stored.id,
                     sim::Calibration::fromJson(
                         stored.data, store.path() + ": calibration " + std::to_string(stored.id)));
  }
  return std::nullopt;
}

std::vector<Yardstick> yardsticks(ProjectStore& store, const sim::Calibration& calibration,
                                  const std::vector<int64_t>& runIds) {
  std::vector<Yardstick> out;
  for (int64_t id : runIds) {
    Yardstick y;
    y.runId = id;
    std::string why;
    const std::optional<LoadedRun> run = loadRun(store, id, &why);
    if (!run) {
      y.why = why;
      out.push_back(y);
      continue;
    }

    const VariantConfig& variant = run->spec.variants.at(static_cast<std::size_t>(run->variant));
    y.variant = variant.name;
    y.nodes = run->nodes;
    y.measuredMs = measuredPointOf(*run).stepMs;
    // Each node's mean share of the batch over the measured steps, in samples.
    std::vector<int64_t> shares;
    const auto shareIt = run->series.find(metric::kBatchShare);
    if (shareIt != run->series.end()) {
      std::map<int, std::vector<double>> byNode;
      for (const auto& [worker, points] : shareIt->second)
        for (const SeriesPoint& p : points) byNode[worker.node].push_back(p.value);
      if (static_cast<int>(byNode.size()) == run->nodes) {
        const auto batch = static_cast<double>(run->spec.training.batchSize);
        int64_t total = 0;
        for (const auto& [node, values] : byNode) {
          double sum = 0.0;
          for (double v : values) sum += v;
          shares.push_back(std::max<int64_t>(1, std::llround(batch * sum / values.size())));
          total += shares.back();
        }
        shares.back() += run->spec.training.batchSize - total;  // rounding
        if (shares.back() < 1) shares.clear();
      }
    }
    y.asRanMs =
        simulatedStepMs(run->spec, variant, calibration, run->nodes, shares, run->steps, &y.why);
    y.idealMs =
        simulatedStepMs(run->spec, variant, calibration, run->nodes, {}, run->steps, &y.why);
    out.push_back(y);
  }
  return out;
}

std::optional<ComparisonYardstick> comparisonYardstick(ProjectStore& store,
                                                       const Comparison& comparison) {
  const auto found = calibrationOf(store, comparison.experiment);
  if (!found) return std::nullopt;
  std::vector<int64_t> runs;
  for (const ComparisonRow& row : comparison.rows)
    if (row.runId) runs.push_back(*row.runId);
  return ComparisonYardstick{found->first, yardsticks(store, found->second, runs)};
}

StatisticsTable yardstickTable(const ComparisonYardstick& yardstick) {
  StatisticsTable t;
  t.caption = "The simulator's time per step (calibration " +
              std::to_string(yardstick.calibrationId) +
              ") for each run as it ran (its batch shares) and for its strategy's ideal (for "
              "speed_proportional: the balance the measured speeds and links allow). A large "
              "miss is a finding: a model term, or the run, is wrong.";
  t.header = {"variant", "run", "nodes", "measured (ms)", "as it ran (ms)", "miss", "ideal (ms)"};
  t.textColumns = {true, false, false, false, false, false, false};
  const auto ms = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", v);
    return std::string(text);
  };
  for (const Yardstick& y : yardstick.runs) {
    std::vector<std::string> row = {y.variant, std::to_string(y.runId), std::to_string(y.nodes),
                                    y.measuredMs > 0 ? ms(y.measuredMs) : "–"};
    std::vector<std::string> tips(t.header.size());
    if (y.asRanMs && y.idealMs) {
      char miss[32] = "–";
      if (y.measuredMs > 0)
        std::snprintf(miss, sizeof miss, "%+.0f%%", 100.0 * (*y.asRanMs / y.measuredMs - 1.0));
      row.insert(row.end(), {ms(*y.asRanMs), miss, ms(*y.idealMs)});
    } else {
      row.insert(row.end(), {"–", "–", "–"});
      tips[4] = y.why;
    }
    t.rows.push_back(row);
    t.tooltips.push_back(tips);
  }
  return t;
}

}  // namespace dtlab::core
