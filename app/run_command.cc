#include "app/run_command.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/config_file.h"
#include "app/progress.h"
#include "app/project_command.h"
#include "core/analysis/comparison.h"
#include "core/analysis/comparison_output.h"
#include "core/spec/execution_plan.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/hostfile.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/train/local_trainer.h"
#include "core/train/strategy_registry.h"
#include "remote/cluster/local_cluster.h"
#include "remote/common/tls.h"
#include "remote/coordinator/coordinator.h"
#include "remote/coordinator/execution_runner.h"
#include "remote/coordinator/placement.h"

namespace dtlab::app {
namespace {

std::atomic<bool> interrupted{false};
std::atomic<bool> recordingBroke{false};

// The first SIGINT/SIGTERM cancels the run (the nodes stop together, or abort within a few
// seconds); the same signal again ends the process at once (the local daemons die with it),
// the other one only cancels: installer/slurm/dtlab.sbatch sends SIGINT after the TERM a
// cancelled Slurm job gives every process, and the run is still recorded as cancelled.
extern "C" void onInterrupt(int signal) {
  interrupted.store(true);
  std::signal(signal, SIG_DFL);
}

}  // namespace

const std::set<std::string>& clusterFlags() {
  static const std::set<std::string> flags = {
      "--local-nodes",     "--node",     "--hostfile", "--token",  "--token-file",
      "--connect-timeout", "--tls-cert", "--tls-key",  "--tls-ca", "--wait"};
  return flags;
}

const std::set<std::string>& clusterSwitches() {
  static const std::set<std::string> switches = {"--quiet", "--no-wait"};
  return switches;
}

void catchInterrupts() {
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
}

const std::atomic<bool>& interruptedFlag() {
  return interrupted;
}

void stopOnRecordingFailure(const std::string& error) {
  if (recordingBroke.exchange(true)) return;
  std::fprintf(stderr, "dtlab-cli: %s; stopping the run\n", error.c_str());
  interrupted.store(true);
}

bool recordingFailed() {
  return recordingBroke.load();
}

RunPlace chooseRunPlace(const Args& args, const core::ExperimentSpec& spec) {
  RunPlace place;
  std::vector<std::string>& nodes = place.nodes;
  remote::CoordinatorOptions& options = place.options;
  nodes = args.values("--node");
  if (!nodes.empty() && args.has("--local-nodes"))
    throw UsageError("--node and --local-nodes exclude each other");
  if (args.has("--hostfile") && (!nodes.empty() || args.has("--local-nodes")))
    throw UsageError("--hostfile names the cluster: leave out --node and --local-nodes");
  const std::string token = tokenFromArgs(args);
  options.token = token;
  const remote::TlsFiles tls{args.value("--tls-cert", ""), args.value("--tls-key", ""),
                             args.value("--tls-ca", "")};
  try {
    remote::checkTlsFiles(tls);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  options.tls = tls;

  // Where the run happens, first match wins: --node (running daemons, as they are),
  // --hostfile (running daemons, each given its line's emulation), --local-nodes (a local
  // cluster), the spec's node addresses (running daemons, each given the spec's emulation
  // for it), or the spec's local cluster.
  if (args.has("--hostfile")) {
    place.hostfile = args.value("--hostfile", "");
    place.entries = core::loadHostfile(place.hostfile);
    options.emulation = core::nodesOf(place.entries);
    for (const core::NodeConfig& n : options.emulation) nodes.push_back(n.address);
  } else if (nodes.empty() && spec.cluster.remote() && !args.has("--local-nodes")) {
    nodes = spec.cluster.addresses();
    options.emulation = spec.cluster.nodes;
  } else if (nodes.empty()) {
    if (tls.enabled())
      throw UsageError(
          "--tls-cert/--tls-key/--tls-ca are for running daemons (--node, or the "
          "spec's node addresses); a local cluster runs on loopback without TLS");
    // The embedded default: a local cluster on loopback, kept for every variant.
    const int64_t count = args.integer("--local-nodes", spec.cluster.localNodes, 1, 256);
    // A per-node list describes exactly that many nodes; another count would leave some
    // nodes without their settings (or drop some), so it is refused. A remote cluster's
    // entries serve as the local nodes' settings (the same topology, tried on this machine).
    if (spec.cluster.nodes.size() > 1 && count != static_cast<int64_t>(spec.cluster.nodes.size()))
      throw UsageError("--local-nodes " + std::to_string(count) + " contradicts the spec's " +
                       std::to_string(spec.cluster.nodes.size()) +
                       " per-node entries in cluster.nodes (drop --local-nodes, or edit the spec)");
    place.cluster = std::make_unique<remote::LocalCluster>(
        remote::defaultNodeBinary(), remote::localNodeOptions(spec.cluster, count), token);
    nodes = place.cluster->addresses();
  }

  if (args.has("--connect-timeout")) {
    const int64_t seconds = args.integer("--connect-timeout", 30, 1, 3600);
    options.connectTimeout = std::chrono::seconds(seconds);
  }
  if (args.has("--wait") && args.has("--no-wait"))
    throw UsageError("--wait and --no-wait exclude each other");
  if (args.has("--no-wait")) options.waitLimit = std::chrono::milliseconds(0);
  if (args.has("--wait"))
    options.waitLimit = std::chrono::seconds(
        args.integer("--wait", core::kDefaultWaitSeconds, 0, core::kMaxWaitSeconds));
  // Said whatever --quiet says: a run that waits must not look hung.
  options.onWaiting = [](const std::string& what) {
    std::fprintf(stderr, "dtlab-cli: %s\n",
                 what.empty() ? "the nodes are free, starting" : what.c_str());
  };
  return place;
}

void checkHostfileSlots(const RunPlace& place, const std::vector<remote::NodeSummary>& nodes,
                        const core::ExperimentSpec& spec) {
  const bool cuda = spec.cluster.device == "cuda";
  for (std::size_t i = 0; i < place.entries.size() && i < nodes.size(); ++i) {
    const core::HostfileNode& entry = place.entries[i];
    const int has = remote::workerSlots(nodes[i], spec.cluster.device);
    if (entry.workerSlots && *entry.workerSlots != has)
      throw Error(place.hostfile + ":" + std::to_string(entry.line) +
                  ": slots=" + std::to_string(*entry.workerSlots) + ", but " + entry.node.address +
                  " runs " + std::to_string(has) + (has == 1 ? " worker" : " workers") +
                  (cuda ? " (one a GPU: dtlab-node --devices cuda:0,cuda:1,...)"
                        : " (dtlab-node --devices cpu:N)") +
                  "; say slots=" + std::to_string(has) + " or leave slots out");
  }
}

int runCommand(const std::vector<std::string>& argv) {
  std::set<std::string> flags = clusterFlags();
  flags.insert("--project");
  flags.insert("--repeats");
  const Args args(argv, flags, clusterSwitches());  // first: a dry run stops here
  // Before anything that may take time (starting daemons, connecting), so that a signal
  // always cancels rather than kills half way.
  catchInterrupts();
  if (args.positionals().size() != 1) throw UsageError("run: expected one SPEC.json");
  core::ExperimentSpec spec = core::loadExperimentSpec(args.positionals()[0]);
  if (args.has("--repeats")) spec.repeats = args.integer("--repeats", 1, 1, core::kMaxRepeats);
  RunPlace place = chooseRunPlace(args, spec);
  remote::Coordinator coordinator(place.nodes, place.options);
  checkHostfileSlots(place, coordinator.connect(), spec);

  // --project records the execution: the spec as its experiment, each planned run as a run of
  // it with its series, events and summary as they happen.
  const std::string project = args.value("--project", "");
  std::unique_ptr<core::ProjectStore> store;
  if (args.has("--project")) {
    bool created = false;
    store = core::ProjectStore::openOrCreate(project, &created);
    if (created) std::fprintf(stderr, "created project %s\n", project.c_str());
  }
  const remote::ExecutionPlan plan = remote::planExecution(store.get(), spec);
  store.reset();  // each run's recording opens the project itself

  // Each run's progress on stderr and, with --project, its recording; at the end the variants
  // side by side, as `dtlab-cli compare` shows them.
  struct Observer final : remote::ExecutionObserver {
    const Args& args;
    const remote::ExecutionPlan& plan;
    const std::string& project;
    int64_t stepsPerEpoch;
    std::optional<double> target;
    nlohmann::json runs = nlohmann::json::array();
    core::Comparison comparison;
    bool failed = false;
    std::unique_ptr<ProgressPrinter> progress;
    std::unique_ptr<TrainRecording> recording;

    Observer(const Args& a, const remote::ExecutionPlan& p, const std::string& path,
             const core::ExperimentSpec& spec)
        : args(a),
          plan(p),
          project(path),
          stepsPerEpoch(spec.dataset.trainSize / spec.training.batchSize),
          target(core::specTargetAccuracy(core::toJson(spec))) {
      comparison.experiment = spec.name;
      comparison.project = path;
      comparison.executionId = plan.executionId;
      comparison.repeats = spec.repeats;
    }
    core::MetricSink* runStarting(const core::PlannedRun& run, const std::string& label) override {
      progress = std::make_unique<ProgressPrinter>(
          label, core::plannedSteps(run.spec, stepsPerEpoch), args.has("--quiet"));
      if (!plan.executionId) return progress.get();
      const core::VariantConfig& variant = run.spec.variants[static_cast<std::size_t>(run.variant)];
      recording = std::make_unique<TrainRecording>(
          project, run.spec, progress.get(), core::strategyOf(variant).name, run.name,
          stopOnRecordingFailure, core::ExecutionSlot{*plan.executionId, run.repetition});
      return recording->sink();
    }
    void runFinished(const core::PlannedRun& run, const std::string& label,
                     const core::RunSummary& summary) override {
      if (recording && !recording->finish(summary)) failed = true;
      runs.push_back(core::toJson(summary));
      if (run.spec.repeats > 1) runs.back()["repetition"] = run.repetition;
      comparison.rows.push_back(core::comparisonRow(runs.back(), target));
      comparison.rows.back().repetition = run.repetition;
      if (recording) comparison.rows.back().runId = recording->runId();
      if (summary.status == core::RunStatus::kFailed) {
        failed = true;
        std::cerr << "dtlab-cli run: " << label << " failed: " << summary.error << "\n";
      }
      recording.reset();  // as each run's printer and recording end with it
      progress.reset();
    }
  } observer(args, plan, project, spec);
  remote::runExecution(coordinator, plan, observer, &interrupted);
  const nlohmann::json& runs = observer.runs;
  const core::Comparison& comparison = observer.comparison;
  const bool failed = observer.failed;
  std::cout << nlohmann::json{{"runs", runs}}.dump() << std::endl;
  std::cerr << core::comparisonTable(comparison) << std::flush;
  if (recordingFailed()) return 1;
  if (interrupted.load()) return 130;
  return failed ? 1 : 0;
}

}  // namespace dtlab::app
