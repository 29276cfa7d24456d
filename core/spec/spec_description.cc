#include "core/spec/spec_description.h"

#include <cstdio>
#include <string>
#include <vector>

#include "core/data/dataset_kinds.h"
#include "core/nn/model_kinds.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy_registry.h"

namespace dtlab::core {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// 60000 -> "60,000".
std::string count(int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string plural(int64_t n, const std::string& one, const std::string& many) {
  return count(n) + " " + (n == 1 ? one : many);
}

// "separation 2, noise 0.1": every setting of the schema that applies, as the spec has it.
std::string settingsText(std::span<const SettingSchema> schema, const SettingValues& values) {
  const SettingsView view(schema, values);
  std::vector<std::string> parts;
  for (const SettingSchema& s : schema) {
    if (!view.applies(s.key)) continue;
    const SettingValue& v = view.value(s.key);
    const bool word =
        !s.zeroMeans.empty() && std::holds_alternative<int64_t>(v) && std::get<int64_t>(v) == 0;
    parts.push_back(s.key + " " + (word ? s.zeroMeans : settingText(v)));
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string link(const NodeConfig& n) {
  if (n.bandwidthMbps <= 0.0 && n.latencyMs <= 0.0) return "link not emulated";
  std::string out =
      n.bandwidthMbps > 0.0 ? number(n.bandwidthMbps) + " Mbit/s" : "unlimited bandwidth";
  return out + ", " + number(n.latencyMs) + " ms latency";
}

std::string nodeText(const NodeConfig& n) {
  std::string out = "speed " + number(n.speed);
  for (const SpeedChange& c : n.speedSchedule)
    out += ", " + number(c.speed) + " from step " + std::to_string(c.atStep);
  out += ", " + link(n);
  if (n.straggler.probability > 0.0)
    out += ", straggling: pauses " + number(n.straggler.pauseMs) + " ms at " +
           number(n.straggler.probability * 100.0) + "% of its steps";
  if (!n.address.empty()) out += ", daemon at " + n.address;
  return out;
}

std::string datasetText(const DatasetConfig& d) {
  const DatasetKindDescriptor& kind = datasetKindOf(d);
  std::string out = kind.name + " (" + kind.summary + "): " + count(d.trainSize) +
                    " training and " + count(d.testSize) + " test samples, " +
                    plural(d.features, "feature", "features") + ", ";
  out += kind.task == TaskKind::kClassification ? plural(d.classes, "class", "classes")
                                                : std::string("regression");
  const std::string parameters = settingsText(kind.parameters, d.parameters);
  if (!parameters.empty()) out += "; " + parameters;
  return out + "; data seed " + std::to_string(d.seed);
}

std::string modelText(const ExperimentSpec& spec) {
  const std::string shape =
      modelKindOf(spec.model).shape(spec.model, sampleShapeOf(spec.dataset));
  return shape + " (" + toString(spec.model.activation) + ", " + toString(spec.model.init) +
         " initialisation, " + toString(spec.model.loss) + " loss), " +
         count(modelParameterCount(spec)) + " parameters";
}

std::string trainingText(const ExperimentSpec& spec) {
  const OptimizerConfig& o = spec.optimizer;
  const TrainingConfig& t = spec.training;
  std::string out = std::string(toString(o.kind)) + " at learning rate " + number(o.lr);
  if (o.kind == OptimizerKind::kSgd && o.momentum > 0.0f)
    out += ", momentum " + number(o.momentum) + (o.nesterov ? " (Nesterov)" : "");
  if (o.weightDecay > 0.0f) out += ", weight decay " + number(o.weightDecay);
  if (o.schedule.kind != ScheduleKind::kConstant)
    out += ", " + std::string(toString(o.schedule.kind)) + " schedule";
  if (o.schedule.warmupSteps > 0)
    out += " after " + plural(o.schedule.warmupSteps, "warm-up step", "warm-up steps");
  out += "; global batch " + count(t.batchSize) + " (" + toString(t.precision) + ")";
  std::vector<std::string> limits;
  if (t.epochs > 0) limits.push_back(plural(t.epochs, "epoch", "epochs"));
  if (t.maxSteps > 0) limits.push_back(plural(t.maxSteps, "step", "steps"));
  if (t.maxSeconds > 0.0) limits.push_back(number(t.maxSeconds) + " s");
  if (!limits.empty()) out += "; at most " + listText(limits);
  if (t.targetAccuracy) out += "; stops at test accuracy " + number(*t.targetAccuracy);
  out += "; evaluated every " + plural(t.evalInterval, "step", "steps");
  if (t.dataPartition.kind != DataPartitionKind::kShared)
    out += "; data split across workers: " + std::string(toString(t.dataPartition.kind)) +
           (t.dataPartition.kind == DataPartitionKind::kDirichlet
                ? " (alpha " + number(t.dataPartition.alpha) + ")"
                : std::string());
  return out;
}

std::string clusterText(const ClusterConfig& c) {
  const int64_t n = c.remote() ? static_cast<int64_t>(c.nodes.size()) : c.localNodes;
  std::string out = c.remote()
                        ? plural(n, "running daemon", "running daemons")
                        : plural(n, "local node", "local nodes") + " (daemons on loopback, " +
                              plural(c.threadsPerNode, "thread", "threads") + " each)";
  out += ", workers on " + c.device;
  if (c.nodes.empty()) return out + "; every node at its real speed, links not emulated";
  if (c.nodes.size() == 1) return out + "; every node: " + nodeText(c.nodes.front());
  // Runs of nodes described alike are said once: "nodes 0-2: speed 1, link not emulated".
  for (std::size_t i = 0; i < c.nodes.size();) {
    const std::string text = nodeText(c.nodes[i]);
    std::size_t j = i + 1;
    while (j < c.nodes.size() && nodeText(c.nodes[j]) == text) ++j;
    out += j - i == 1 ? "; node " + std::to_string(i)
                      : "; nodes " + std::to_string(i) + (j - i == 2 ? " and " : "-") +
                            std::to_string(j - 1);
    out += ": " + text;
    i = j;
  }
  return out;
}

std::string variantText(const VariantConfig& v, int64_t clusterNodes) {
  const StrategyDescriptor& strategy = strategyOf(v);
  std::string out = strategy.name + " (" + strategy.summary + ")";
  const std::string settings = settingsText(strategy.settings, v.settings);
  if (!settings.empty()) out += "; " + settings;
  if (v.nodes > 0 && v.nodes < clusterNodes)
    out += "; on the first " + plural(v.nodes, "node", "nodes") + " only";
  return out;
}

}  // namespace

std::vector<SpecFact> describeSpec(const ExperimentSpec& spec) {
  std::vector<SpecFact> facts = {{"Dataset", datasetText(spec.dataset)},
                                 {"Model", modelText(spec)},
                                 {"Training", trainingText(spec)},
                                 {"Cluster", clusterText(spec.cluster)}};
  const int64_t nodes = spec.cluster.remote() ? static_cast<int64_t>(spec.cluster.nodes.size())
                                              : spec.cluster.localNodes;
  for (const VariantConfig& v : spec.variants)
    facts.push_back(
        {"Variant " + (v.name.empty() ? strategyOf(v).name : v.name), variantText(v, nodes)});
  return facts;
}

}  // namespace dtlab::core
