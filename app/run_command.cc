#include "app/run_command.h"

#include <csignal>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/progress.h"
#include "app/project_command.h"
#include "core/spec/experiment_spec.h"
#include "core/train/local_trainer.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"

namespace dtlab::app {
namespace {

std::atomic<bool> interrupted{false};

extern "C" void onInterrupt(int) {
  interrupted.store(true);
}

}  // namespace

int runCommand(const std::vector<std::string>& argv) {
  const Args args(argv, {"--local-nodes", "--node", "--token", "--project"}, {"--quiet"});
  if (args.positionals().size() != 1) throw UsageError("run: expected one SPEC.json");
  const core::ExperimentSpec spec = core::loadExperimentSpec(args.positionals()[0]);
  std::vector<std::string> nodes = args.values("--node");
  if (!nodes.empty() && args.has("--local-nodes"))
    throw UsageError("--node and --local-nodes exclude each other");
  const std::string token = args.value("--token", "");

  // The embedded default: a local cluster on loopback, kept for every variant.
  std::unique_ptr<remote::LocalCluster> cluster;
  if (nodes.empty()) {
    const int64_t count = args.integer("--local-nodes", spec.cluster.localNodes, 1, 256);
    std::vector<remote::LocalNodeOptions> options;
    for (int64_t i = 0; i < count; ++i) {
      // Per-node settings follow the spec's node list; a --local-nodes count that does
      // not match a per-node list leaves the nodes at their defaults.
      const bool listFits = spec.cluster.nodes.size() <= 1 || count == spec.cluster.localNodes;
      const core::NodeConfig node = listFits ? spec.cluster.node(i) : core::NodeConfig{};
      options.push_back(
          {node.speed, node.bandwidthMbps, node.latencyMs, spec.cluster.threadsPerNode});
    }
    cluster = std::make_unique<remote::LocalCluster>(remote::defaultNodeBinary(), options, token);
    nodes = cluster->addresses();
  }

  remote::CoordinatorOptions options;
  options.token = token;
  remote::Coordinator coordinator(nodes, options);
  coordinator.connect();

  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
  nlohmann::json runs = nlohmann::json::array();
  bool failed = false;
  const int64_t stepsPerEpoch = spec.dataset.trainSize / spec.training.batchSize;
  for (std::size_t v = 0; v < spec.variants.size() && !interrupted.load(); ++v) {
    ProgressPrinter progress(spec.variants[v].name, core::plannedSteps(spec, stepsPerEpoch),
                             args.has("--quiet"));
    // --project records each variant as a run: series, events and summary as they happen.
    std::unique_ptr<TrainRecording> recording;
    if (args.has("--project")) {
      core::ExperimentSpec named = spec;
      named.name = spec.name + "/" + spec.variants[v].name;
      recording = std::make_unique<TrainRecording>(args.value("--project", ""), named, &progress,
                                                   core::toString(spec.variants[v].strategy));
    }
    const core::RunSummary summary = coordinator.run(
        spec, static_cast<int>(v), recording ? recording->sink() : &progress, &interrupted);
    if (recording && !recording->finish(summary)) failed = true;
    runs.push_back(core::toJson(summary));
    if (summary.status == "failed") {
      failed = true;
      std::cerr << "dtlab-cli run: " << summary.name << " failed: " << summary.error << "\n";
    }
  }
  std::cout << nlohmann::json{{"runs", runs}}.dump() << std::endl;
  if (interrupted.load()) return 130;
  return failed ? 1 : 0;
}

}  // namespace dtlab::app
