// Writing specs: toJson (the parser is spec_json.cc).
#include "core/spec/spec_json.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/nn/model_kinds.h"
#include "core/spec/data_partition_checks.h"
#include "core/spec/dataset_section.h"
#include "core/spec/setting_json.h"
#include "core/spec/spec_names.h"
#include "core/spec/variants.h"

namespace dtlab::core {

using namespace spec_detail;
using nlohmann::json;

namespace {

json modelJson(const ModelConfig& m) {
  const ModelKindDescriptor& kind = modelKindOf(m);
  json out = {{"kind", kind.name},
              {"hidden", m.hidden},
              {"activation", toString(m.activation)},
              {"init", toString(m.init)},
              {"loss", toString(m.loss)}};
  writeSettings(kind.parameters, kind.view(m), out);
  return out;
}

}  // namespace

json toJson(const NodeConfig& n) {
  json node = json::object();
  if (!n.address.empty()) node["address"] = n.address;
  node["speed"] = n.speed;
  node["bandwidth_mbps"] = n.bandwidthMbps;
  node["latency_ms"] = n.latencyMs;
  if (!n.speedSchedule.empty()) {
    json schedule = json::array();
    for (const SpeedChange& c : n.speedSchedule)
      schedule.push_back({{"at_step", c.atStep}, {"speed", c.speed}});
    node["speed_schedule"] = schedule;
  }
  if (n.straggler.probability > 0.0 || n.straggler.pauseMs > 0.0)
    node["straggler"] = {{"probability", n.straggler.probability},
                         {"pause_ms", n.straggler.pauseMs}};
  return node;
}

json toJson(const ExperimentSpec& spec) {
  const ModelConfig& m = spec.model;
  const OptimizerConfig& o = spec.optimizer;
  const ScheduleConfig& s = o.schedule;
  const TrainingConfig& t = spec.training;
  json nodes = json::array();
  for (const NodeConfig& n : spec.cluster.nodes) nodes.push_back(toJson(n));
  // A remote cluster's size is its list of addresses; "local_nodes" would only mislead.
  json cluster = json::object();
  if (!spec.cluster.remote()) cluster["local_nodes"] = spec.cluster.localNodes;
  cluster["nodes"] = nodes;
  cluster["threads_per_node"] = spec.cluster.threadsPerNode;
  cluster["device"] = spec.cluster.device;
  if (spec.cluster.waitSeconds) cluster["wait_seconds"] = *spec.cluster.waitSeconds;
  return json{
      {"name", spec.name},
      {"seed", spec.seed},
      {"repeats", spec.repeats},
      {"dataset", datasetJson(spec.dataset)},
      {"model", modelJson(m)},
      {"optimizer",
       {{"kind", toString(o.kind)},
        {"lr", floatJson(o.lr)},
        {"momentum", floatJson(o.momentum)},
        {"nesterov", o.nesterov},
        {"weight_decay", floatJson(o.weightDecay)},
        {"beta1", floatJson(o.beta1)},
        {"beta2", floatJson(o.beta2)},
        {"eps", floatJson(o.eps)},
        {"rho", floatJson(o.rho)},
        {"schedule",
         {{"kind", toString(s.kind)},
          {"warmup_steps", s.warmupSteps},
          {"step_size", s.stepSize},
          {"gamma", floatJson(s.gamma)},
          {"min_lr", floatJson(s.minLr)}}},
        {"scale_lr_base_batch", o.scaleLrBaseBatch ? json(*o.scaleLrBaseBatch) : json(nullptr)}}},
      {"training",
       {{"batch_size", t.batchSize},
        {"epochs", t.epochs},
        {"max_steps", t.maxSteps},
        {"max_seconds", t.maxSeconds},
        {"target_accuracy", t.targetAccuracy ? json(*t.targetAccuracy) : json(nullptr)},
        {"eval_interval", t.evalInterval},
        {"threads", t.threads},
        {"precision", nameOf(kPrecisionNames, t.precision)},
        {"data_partition", dataPartitionJson(t.dataPartition)},
        {"checkpoint_every", t.checkpointEvery},
        {"checkpoint_seconds", t.checkpointSeconds},
        {"checkpoints_kept", t.checkpointsKept}}},
      {"cluster", cluster},
      {"variants", variantsJson(spec.variants)},
  };
}

}  // namespace dtlab::core
