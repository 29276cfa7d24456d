#include "app/predict_command.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/project_command.h"
#include "core/analysis/comparison.h"
#include "core/analysis/run_calibration.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/train/scale_prediction.h"

namespace dtlab::app {
namespace {

nlohmann::json optionalJson(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string figure(double value, const char* format) {
  char text[48];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

const char* predictUsage() {
  return R"(  calibrate P.dtlab [RUN ...] [--experiment NAME] [--json]
      Fit the scale simulator to the project's runs (the RUNs given, else every
      completed run of experiment NAME, by default the most recent; runs of different
      models or emulated links are refused) and store the calibration in the project
      (predict and compare use the newest of each experiment): per node, compute time
      per step against batch size at full speed (a run's emulated speed divided out),
      its spread and its pauses; per link (all-reduce, parameter server), latency and
      bandwidth by least squares over the runs' steps; the gradient bucket size. Notes
      say what could not be separated and what was assumed. Runs of 1 and 2 nodes, and
      of more than one batch size, make a calibration that can tell the terms apart.
  predict P.dtlab [EXPERIMENT] [--nodes N,...] [--steps S] [--topology FILE]
      [--nodes-per-host N] [--throughput-only] [--json]
      Every variant of EXPERIMENT (default: the project's most recent) at each node
      count (default 16,64,256,1024,4096), simulated with the project's newest
      calibration and the spec's node emulation: time per step with the band the
      calibration's spread gives, samples/s, utilisation, mean staleness and, where the
      spec has a target accuracy and a run reached it, the time to target with the
      convergence model it assumes printed beside it (--throughput-only: none). The
      variant's measured runs are listed with the simulator's figure for their node
      count, so its error shows where it can be checked. A strategy with no simulator
      model says so. --steps: simulated global steps per point (default 300).
      --topology FILE: predict for another cluster, a tree of switches above the nodes and
      the spread of their speeds (JSON: {"levels": [{"fanout": 16, "bandwidth_mbps":
      25000, "latency_ms": 0.002}, {"fanout": 8, "oversubscription": 4}], "speeds":
      [{"share": 0.1, "speed": 0.5}]}; level 0 the switch above the nodes), each node a
      host of its own: a ring all-reduce crosses each uplink with one flow, a parameter
      server's traffic shares the uplinks of the nodes under them.
      --nodes-per-host N: nodes to a host, sharing its cores (as many as the calibrated
      runs' hosts had). Default: where the calibrated runs' nodes were all on one host
      and no --topology is given, the spec's cluster size (a bigger cluster is more such
      hosts); else 1. A node's compute and server calls stretch by the chance that more
      nodes than cores want one at once, from its strategy's CPU work per step as
      calibrated (cpu_util); the "shared" column shows the stretch.
)";
}

int calibrateCommand(const std::vector<std::string>& argv) {
  const Args args(argv, {"--experiment"}, {"--json"});
  if (args.positionals().empty()) throw UsageError("calibrate: expected P.dtlab [RUN ...]");
  const std::string& path = args.positionals()[0];
  std::vector<int64_t> runs;
  for (std::size_t i = 1; i < args.positionals().size(); ++i)
    runs.push_back(parseRunId(args.positionals()[i]));
  auto store = core::ProjectStore::open(path);
  const core::sim::Calibration calibration =
      core::calibrateRuns(*store, runs, args.value("--experiment", ""));
  const int64_t id = store->saveCalibration(calibration.toJson());
  std::cout << "calibration " << id << " of " << path << ", experiment \"" << calibration.experiment
            << "\", from " << calibration.runs.size() << " run"
            << (calibration.runs.size() == 1 ? "" : "s") << ":\n"
            << calibration.describe();
  if (args.has("--json"))
    std::cout << nlohmann::json{{"calibration", calibration.toJson()}, {"id", id}}.dump() << "\n";
  return 0;
}

int predictCommand(const std::vector<std::string>& argv) {
  const Args args(argv, {"--nodes", "--steps", "--topology", "--nodes-per-host"},
                  {"--json", "--throughput-only"});
  if (args.positionals().empty() || args.positionals().size() > 2)
    throw UsageError("predict: expected P.dtlab [EXPERIMENT]");
  const std::string& path = args.positionals()[0];
  core::PredictOptions options;
  std::vector<int64_t> nodes = args.integers("--nodes", {16, 64, 256, 1024, 4096}, 1, 1 << 20);
  options.nodes.assign(nodes.begin(), nodes.end());
  options.steps = args.integer("--steps", options.steps, 10, 1000000);
  options.throughputOnly = args.has("--throughput-only");
  options.nodesPerHost = static_cast<int>(args.integer("--nodes-per-host", 0, 1, 1 << 20));
  if (args.has("--topology"))
    options.topology = core::sim::Topology::fromFile(args.value("--topology", ""));

  auto store = core::ProjectStore::open(path, /*readOnly=*/true);
  const std::optional<std::string> named =
      args.positionals().size() == 2 ? std::optional(args.positionals()[1]) : std::nullopt;
  const core::Entity experiment = core::experimentNamedOrLatest(*store, named);
  const core::ExperimentSpec spec = core::parseExperimentSpecText(experiment.config.dump());
  const auto found = core::calibrationOf(*store, spec.name);
  if (!found)
    throw Error(path + " has no calibration of experiment \"" + spec.name +
                "\" yet: run `dtlab-cli calibrate " + path + " --experiment " + spec.name +
                "` first (it fits one from the experiment's runs)");
  const auto& [calibrationId, calibration] = *found;
  const std::vector<core::MeasuredPoint> measured = core::measuredPoints(*store, spec.name);
  // The measured node counts are predicted too, to set beside the runs.
  core::PredictOptions all = options;
  for (const core::MeasuredPoint& m : measured)
    if (std::find(all.nodes.begin(), all.nodes.end(), m.nodes) == all.nodes.end())
      all.nodes.push_back(m.nodes);
  const std::vector<core::VariantPrediction> predictions =
      core::predictScale(spec, calibration, all, measured);

  nlohmann::json variants = nlohmann::json::array();
  std::cout << "experiment \"" << spec.name << "\" predicted with calibration " << calibrationId
            << " (runs";
  for (int64_t run : calibration.runs) std::cout << " " << run;
  std::cout << ")";
  if (options.topology) std::cout << " on a tree of switches: " << options.topology->describe();
  int perHost = 1, cores = 0;
  std::cout << "\nhosts: " << core::hostAssumption(spec, calibration, options, &perHost, &cores)
            << "\n";
  for (const core::VariantPrediction& p : predictions) {
    nlohmann::json v = {{"variant", p.variant}, {"strategy", p.strategy}, {"aliases", p.aliases}};
    std::cout << "\n" << p.variant << " (" << p.strategy;
    for (const std::string& alias : p.aliases) std::cout << "; also " << alias;
    std::cout << ")";
    if (!p.unmodelled.empty()) {
      std::cout << ": no prediction: " << p.unmodelled << "\n";
      v["unmodelled"] = p.unmodelled;
      variants.push_back(v);
      continue;
    }
    std::cout << "\n";
    std::map<int, const core::ScalePoint*> byNodes;
    for (const core::ScalePoint& s : p.points) byNodes[s.nodes] = &s;
    std::printf("  %7s  %10s  %21s  %12s  %5s  %9s  %7s  %14s\n", "nodes", "step (ms)", "band (ms)",
                "samples/s", "util", "staleness", "shared", "to target (s)");
    nlohmann::json points = nlohmann::json::array();
    for (int n : options.nodes) {
      const core::ScalePoint& s = *byNodes.at(n);
      if (s.stepMs <= 0.0) {
        std::printf("  %7d  (a global batch of %lld leaves some node without a sample)\n", n,
                    static_cast<long long>(spec.training.batchSize));
        continue;
      }
      std::printf("  %7d  %10.3f  %21s  %12.0f  %5.2f  %9.2f  %7s  %14s\n", n, s.stepMs,
                  (figure(s.lowMs, "%.3f") + " - " + figure(s.highMs, "%.3f")).c_str(),
                  s.samplesPerS, s.utilization, s.meanStaleness,
                  figure(s.hostStretch, "x%.2f").c_str(),
                  s.timeToTargetS ? figure(*s.timeToTargetS, "%.1f").c_str() : "–");
      points.push_back({{"nodes", n},
                        {"step_ms", s.stepMs},
                        {"step_ms_low", s.lowMs},
                        {"step_ms_high", s.highMs},
                        {"samples_per_s", s.samplesPerS},
                        {"utilization", s.utilization},
                        {"mean_staleness", s.meanStaleness},
                        {"host_stretch", s.hostStretch},
                        {"steps_to_target", optionalJson(s.stepsToTarget)},
                        {"time_to_target_s", optionalJson(s.timeToTargetS)}});
    }
    if (!p.convergence.empty()) std::cout << "  " << p.convergence << "\n";
    nlohmann::json checks = nlohmann::json::array();
    if (options.topology && !measured.empty())
      std::cout << "  (its runs are not set beside it: they ran on the spec's cluster, not on "
                   "this topology)\n";
    for (const core::MeasuredPoint& m :
         options.topology ? std::vector<core::MeasuredPoint>{} : measured) {
      if (!p.covers(m.variant)) continue;
      const core::ScalePoint& s = *byNodes.at(m.nodes);
      const double error = m.stepMs > 0.0 ? s.stepMs / m.stepMs - 1.0 : 0.0;
      std::printf("  measured: run %lld on %d node%s: %.3f ms a step, predicted %.3f (%+.1f%%)\n",
                  static_cast<long long>(m.runId), m.nodes, m.nodes == 1 ? "" : "s", m.stepMs,
                  s.stepMs, 100.0 * error);
      checks.push_back({{"run", m.runId},
                        {"nodes", m.nodes},
                        {"step_ms", m.stepMs},
                        {"predicted_step_ms", s.stepMs},
                        {"error", error}});
    }
    v["points"] = points;
    v["measured"] = checks;
    v["convergence"] = p.convergence;
    variants.push_back(v);
  }
  if (!calibration.notes.empty()) {
    std::cout << "\ncalibration notes:\n";
    for (const std::string& note : calibration.notes) std::cout << "  " << note << "\n";
  }
  if (args.has("--json"))
    std::cout << nlohmann::json{{"prediction",
                                 {{"experiment", spec.name},
                                  {"calibration", calibrationId},
                                  {"hosts", {{"nodes_per_host", perHost}, {"cores", cores}}},
                                  {"variants", variants}}}}
                     .dump()
              << "\n";
  return 0;
}

}  // namespace dtlab::app
