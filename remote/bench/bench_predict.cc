#include "remote/bench/bench_predict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "core/analysis/run_calibration.h"
#include "core/common/program_path.h"
#include "core/common/statistics.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/train/scale_prediction.h"
#include "remote/bench/bench_common.h"
#include "remote/bench/netns_hosts.h"

namespace dtlab::bench {
namespace {

// The daemons' token of a run across namespace hosts (they live as long as the bench).
constexpr const char* kNetnsToken = "dtlab-bench-predict";

// "sync@3" -> the variant "sync" on 3 nodes.
std::string sized(const std::string& variant, int nodes) {
  return variant + "@" + std::to_string(nodes);
}

}  // namespace

namespace {

// Runs `original` with each variant on every size, calibrates on the smaller sizes and sets the
// predictions for the larger beside the runs. `hosts`: across those namespace hosts (the
// spec's nodes given their addresses, the runs driven from the hub) instead of local nodes.
void crossValidate(nlohmann::json json, const std::string& stem, const PredictBenchOptions& options,
                   NetnsHosts* hosts, PredictBenchResult& result) {
  std::vector<int> sizes = options.calibrateOn;
  sizes.insert(sizes.end(), options.predictAt.begin(), options.predictAt.end());
  const int most = *std::max_element(sizes.begin(), sizes.end());
  std::vector<std::string> launcher, extra;
  if (hosts != nullptr) {
    json["name"] = json.at("name").get<std::string>() + "_netns";
    nlohmann::json& cluster = json["cluster"];
    const nlohmann::json given = cluster.value("nodes", nlohmann::json::array());
    nlohmann::json nodes = nlohmann::json::array();
    for (int i = 0; i < most; ++i) {
      nlohmann::json node = given.empty()       ? nlohmann::json::object()
                            : given.size() == 1 ? given[0]
                                                : given.at(static_cast<std::size_t>(i));
      node["address"] = hosts->daemon(i);
      nodes.push_back(node);
    }
    cluster.erase("local_nodes");
    cluster["nodes"] = nodes;
    launcher = {"ip", "netns", "exec", hosts->hub()};
    extra = {"--token", kNetnsToken};
  }
  const core::ExperimentSpec spec = core::parseExperimentSpecText(json.dump());
  nlohmann::json variants = nlohmann::json::array();
  for (const nlohmann::json& v : json.at("variants"))
    for (int n : sizes) {
      nlohmann::json copy = v;
      copy["nodes"] = n;
      copy["name"] = sized(v.at("name").get<std::string>(), n);
      variants.push_back(copy);
    }
  json["variants"] = variants;
  const std::filesystem::path expanded =
      std::filesystem::path(options.project).parent_path() /
      (stem + (hosts != nullptr ? ".netns" : "") + ".sizes.json");
  std::ofstream(expanded) << json.dump(2);
  std::cerr << "bench predict: " << spec.name << ": " << variants.size() << " runs"
            << (hosts != nullptr ? " across network-namespace hosts" : "") << "\n";
  runSpecThroughCli(expanded.string(), options.reps, options.project, launcher, extra);

  auto store = core::ProjectStore::open(options.project);
  // This spec's runs of each sized variant, the last `reps` of them (this invocation's); the
  // calibration takes every one on the calibrating node counts.
  std::map<std::string, std::vector<core::MeasuredPoint>> runs;
  for (const core::MeasuredPoint& m : core::measuredPoints(*store, spec.name))
    runs[m.variant].push_back(m);
  std::map<std::string, core::MeasuredPoint> measured;  // their medians
  std::vector<int64_t> calibrationRuns;
  for (auto& [name, points] : runs) {
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.runId < b.runId; });
    if (points.size() > static_cast<std::size_t>(options.reps))
      points.erase(points.begin(), points.end() - options.reps);
    std::vector<double> steps, cpu;
    for (const core::MeasuredPoint& m : points) {
      steps.push_back(m.stepMs);
      cpu.push_back(m.cpuUtil);
      if (std::find(options.calibrateOn.begin(), options.calibrateOn.end(), m.nodes) !=
          options.calibrateOn.end())
        calibrationRuns.push_back(m.runId);
    }
    core::MeasuredPoint median = points.back();
    median.stepMs = core::median(steps);
    median.cpuUtil = core::median(cpu);
    measured[name] = median;
  }
  const core::sim::Calibration calibration = core::calibrateRuns(*store, calibrationRuns);
  result.calibrations.push_back(spec.name + ":\n" + calibration.describe());
  core::PredictOptions predict;
  predict.nodes = options.predictAt;
  predict.throughputOnly = true;
  for (const core::VariantPrediction& p : core::predictScale(spec, calibration, predict)) {
    for (int n : options.predictAt) {
      PredictCheck check;
      check.spec = spec.name;
      check.variant = p.variant;
      check.strategy = p.strategy;
      check.nodes = n;
      const auto m = measured.find(sized(p.variant, n));
      if (m == measured.end())
        check.why = "the run on " + std::to_string(n) + " nodes did not complete";
      else {
        check.measuredMs = m->second.stepMs;
        check.cpuUtil = m->second.cpuUtil;
      }
      if (!p.unmodelled.empty()) check.why = p.unmodelled;
      for (const core::ScalePoint& s : p.points)
        if (s.nodes == n && check.why.empty()) {
          check.predictedMs = s.stepMs;
          check.hostStretch = s.hostStretch;
        }
      result.checks.push_back(check);
    }
  }
}

}  // namespace

PredictBenchResult runPredictBench(const PredictBenchOptions& options) {
  namespace fs = std::filesystem;
  std::vector<fs::path> specs;
  for (const fs::directory_entry& e : fs::directory_iterator(options.specsDir))
    if (e.path().extension() == ".json" &&
        (options.only.empty() || std::find(options.only.begin(), options.only.end(),
                                           e.path().stem().string()) != options.only.end()))
      specs.push_back(e.path());
  std::sort(specs.begin(), specs.end());
  if (specs.empty()) throw Error("no spec to run in " + options.specsDir);
  std::unique_ptr<NetnsHosts> hosts;
  if (options.netns) {
    int most = 1;
    for (int n : options.predictAt) most = std::max(most, n);
    hosts = std::make_unique<NetnsHosts>(
        most, fs::path(core::programPath()).parent_path() / "dtlab-node", kNetnsToken);
  }
  PredictBenchResult result;
  result.tolerance = options.tolerance;
  for (const fs::path& path : specs) {
    std::ifstream in(path);
    const nlohmann::json json = nlohmann::json::parse(in);
    crossValidate(json, path.stem().string(), options, nullptr, result);
    if (hosts) crossValidate(json, path.stem().string(), options, hosts.get(), result);
  }
  result.machine = machineDescription();
  result.measuredAt = utcNow();
  return result;
}

nlohmann::json toJson(const PredictBenchResult& result) {
  nlohmann::json checks = nlohmann::json::array();
  for (const PredictCheck& c : result.checks)
    checks.push_back({{"spec", c.spec},
                      {"variant", c.variant},
                      {"strategy", c.strategy},
                      {"nodes", c.nodes},
                      {"measured_step_ms", c.measuredMs},
                      {"predicted_step_ms",
                       c.predictedMs > 0 ? nlohmann::json(c.predictedMs) : nlohmann::json(nullptr)},
                      {"error", c.predictedMs > 0 && c.measuredMs > 0 ? nlohmann::json(c.error())
                                                                      : nlohmann::json(nullptr)},
                      {"host_stretch", c.hostStretch},
                      {"cpu_util", c.cpuUtil},
                      {"why", c.why}});
  return {{"bench", "predict"},
          {"machine", result.machine},
          {"measured_at", result.measuredAt},
          {"tolerance", result.tolerance},
          {"checks", checks}};
}

void writeReport(const PredictBenchResult& result, std::ostream& out) {
  out << "Measured " << result.measuredAt << " on " << result.machine << "\n\n";
  // "host busy": the measured run's nodes' cpu_util summed (their host's cores, where they share
  // one); "shared": the stretch the prediction gave their compute and server calls for it.
  out << "| spec | variant | strategy | nodes | host busy | measured (ms/step) | predicted | "
         "shared | error |\n"
      << "|---|---|---|---|---|---|---|---|---|\n";
  int within = 0, predicted = 0;
  for (const PredictCheck& c : result.checks) {
    char line[512];
    if (c.predictedMs > 0 && c.measuredMs > 0) {
      ++predicted;
      const bool ok = std::abs(c.error()) <= result.tolerance;
      within += ok ? 1 : 0;
      std::snprintf(
          line, sizeof line, "| %s | %s | %s | %d | %.0f%% | %.3f | %.3f | x%.2f | %+.1f%%%s |\n",
          c.spec.c_str(), c.variant.c_str(), c.strategy.c_str(), c.nodes, 100.0 * c.cpuUtil,
          c.measuredMs, c.predictedMs, c.hostStretch, 100.0 * c.error(), ok ? "" : " (miss)");
    } else {
      char measured[32] = "–";
      if (c.measuredMs > 0) std::snprintf(measured, sizeof measured, "%.3f", c.measuredMs);
      std::snprintf(line, sizeof line, "| %s | %s | %s | %d | – | %s | – | – | %s |\n",
                    c.spec.c_str(), c.variant.c_str(), c.strategy.c_str(), c.nodes, measured,
                    c.why.c_str());
    }
    out << line;
  }
  out << "\n"
      << within << " of " << predicted << " predictions within "
      << std::lround(100 * result.tolerance) << "% of the measured time per step.\n";
  for (const std::string& c : result.calibrations) out << "\ncalibration of " << c;
}

}  // namespace dtlab::bench
