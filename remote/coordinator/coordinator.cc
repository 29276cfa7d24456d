#include "remote/coordinator/coordinator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "core/common/check.h"
#include "core/metrics/event_facts.h"
#include "core/spec/spec_json.h"
#include "core/train/checkpoint.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy.h"
#include "core/train/strategy_registry.h"
#include "remote/common/protocol.h"
#include "remote/coordinator/dispatch.h"
#include "remote/coordinator/merge.h"
#include "remote/coordinator/placement.h"
#include "remote/coordinator/reservation.h"

namespace dtlab::remote {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

struct Coordinator::Impl {
  Impl(std::vector<std::string> addresses, CoordinatorOptions options)
      : links(std::move(addresses), std::move(options)) {}
  NodeLinks links;
  std::vector<NodeSummary> summaries;  // from connect()
  // Jobs of earlier runs whose end a node never reported (lost, its stream broken, the
  // wind-down passed): (node, job id). The next run settles them before it starts.
  std::vector<std::pair<std::size_t, std::string>> unsettled;

  // Aborts each unsettled job again and waits, up to kSettleWait, until its node says it has
  // ended, so that a failed run does not fail the next one with a busy node. An unreachable
  // node is not waited for (the start says so). Each wait is an event of the run about to start.
  void settle(const std::function<void(std::string)>& note);
};

namespace {
constexpr auto kSettleWait = std::chrono::seconds(30);
}

void Coordinator::Impl::settle(const std::function<void(std::string)>& note) {
  if (unsettled.empty()) return;
  const Clock::time_point start = Clock::now();
  const Clock::time_point giveUp = start + kSettleWait;
  std::vector<std::pair<std::size_t, std::string>> waiting = std::move(unsettled);
  unsettled.clear();
  std::vector<bool> aborted(waiting.size(), false);
  std::vector<Clock::time_point> waitedUntil(waiting.size(), start);
  std::vector<bool> done(waiting.size(), false);
  bool anyWaited = false;
  for (;;) {
    bool open = false;
    for (std::size_t k = 0; k < waiting.size(); ++k) {
      if (done[k]) continue;
      const auto& [node, jobId] = waiting[k];
      const NodeLinks::JobState state = links.jobState(node, jobId);
      if (state == NodeLinks::JobState::kEnded || state == NodeLinks::JobState::kUnreachable) {
        done[k] = true;
        waitedUntil[k] = Clock::now();
        continue;
      }
      if (state == NodeLinks::JobState::kRunning && !aborted[k]) {
        links.cancelJob(node, jobId, true);
        aborted[k] = true;
      }
      anyWaited = true;
      open = true;
    }
    if (!open || Clock::now() >= giveUp) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!anyWaited) return;
  for (std::size_t k = 0; k < waiting.size(); ++k) {
    const auto& [node, jobId] = waiting[k];
    char seconds[32];
    if (done[k]) {
      std::snprintf(seconds, sizeof seconds, "%.1f s",
                    std::chrono::duration<double>(waitedUntil[k] - start).count());
      note(links.label(node) + " was still running job " + jobId +
           " of an earlier run that failed; it was aborted and had ended " + seconds + " later");
    } else {
      std::snprintf(seconds, sizeof seconds, "%.0f s",
                    std::chrono::duration<double>(kSettleWait).count());
      note(links.label(node) + " did not confirm the end of job " + jobId +
           " of an earlier run that failed within " + seconds +
           " (a stopped or overloaded node); this run may find it busy");
    }
  }
}

Coordinator::Coordinator(std::vector<std::string> addresses, CoordinatorOptions options) {
  // One daemon named twice would be asked for the same job twice; several workers on one
  // node are its slots (dtlab-node --devices cpu:N), not repeated addresses.
  for (std::size_t i = 0; i < addresses.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (addresses[i] == addresses[j])
        throw Error("node " + addresses[i] + " is listed twice (as node" + std::to_string(j) +
                    " and node" + std::to_string(i) +
                    "); for several workers on one node, start its dtlab-node with --devices "
                    "cpu:N");
  if (!options.emulation.empty() && options.emulation.size() != addresses.size())
    throw Error("per-node emulation for " + std::to_string(options.emulation.size()) +
                " nodes, but " + std::to_string(addresses.size()) + " node addresses");
  impl_ = std::make_unique<Impl>(std::move(addresses), std::move(options));
}

Coordinator::~Coordinator() = default;

std::vector<NodeSummary> Coordinator::connect() {
  NodeLinks& links = impl_->links;
  if (links.size() == 0) throw Error("no nodes to run on");
  const std::vector<core::NodeConfig>& emulation = links.options().emulation;
  std::vector<NodeSummary> out;
  bool linksEmulated = false;
  for (std::size_t i = 0; i < links.size(); ++i) {
    NodeSummary s = links.info(i);
    const bool emulates = std::find(s.capabilities.begin(), s.capabilities.end(),
                                    kJobEmulationCapability) != s.capabilities.end();
    if (!emulation.empty() && !emulates)
      throw Error("node " + s.address + " (dtlab-node " + s.programVersion +
                  ") cannot apply the topology's per-node speed, bandwidth and latency: update "
                  "it to this version of dtlab-node");
    // The link its jobs will have: the per-node emulation's when given, else its own flags.
    const double bandwidth = emulation.empty() ? s.bandwidthMbps : emulation[i].bandwidthMbps;
    const double latency = emulation.empty() ? s.latencyMs : emulation[i].latencyMs;
    linksEmulated = linksEmulated || bandwidth > 0.0 || latency > 0.0;
    out.push_back(s);
  }
  links.setLinksEmulated(linksEmulated);
  impl_->summaries = out;
  return out;
}

namespace {

// The node event's facts: "node0 (127.0.0.1:7070): host lab1, DTLab 0.1.0, AMD EPYC 9R14,
// 2 cores, 1 worker threads; cuda:0 (NVIDIA H200, ...)" as its sentence.
core::NodeFacts nodeFacts(int index, const std::string& label, const NodeSummary& node) {
  return {index,        label,      node.hostname,    node.programVersion,
          node.machine, node.cores, node.accelerators};
}

// A restart after a lost node (on_node_loss "restart"), reported as a "recovery" event once
// the re-formed group trains again.
struct PendingRecovery {
  Clock::time_point lostAt;  // when the lost node last reported
  int64_t stepsLost = 0;
  std::string detail;
};

std::string stepsText(int64_t n) {
  return std::to_string(n) + (n == 1 ? " step" : " steps");
}

// The nodes of `placement` without the one that ran rank `lost` and those the run already
// went on without (their ranks dropped under "continue"), in rank order.
std::vector<std::size_t> survivorsOf(const Placement& placement, std::size_t lost,
                                     const std::vector<RankEnd>& ends) {
  std::vector<std::size_t> gone{placement.ranks[lost].node};
  for (std::size_t i = 0; i < ends.size() && i < placement.ranks.size(); ++i)
    if (ends[i].dropped) gone.push_back(placement.ranks[i].node);
  std::vector<std::size_t> nodes;
  for (const RankSlot& r : placement.ranks)
    if (std::find(gone.begin(), gone.end(), r.node) == gone.end() &&
        std::find(nodes.begin(), nodes.end(), r.node) == nodes.end())
      nodes.push_back(r.node);
  return nodes;
}

}  // namespace

core::RunSummary Coordinator::run(const core::ExperimentSpec& spec, int variant,
                                  core::MetricSink* sink, const std::atomic<bool>* cancel,
                                  std::span<const unsigned char> resume) {
  Impl& impl = *impl_;
  const NodeLinks& links = impl.links;
  if (impl.summaries.size() != links.size()) connect();
  const core::VariantConfig& chosen = spec.variants.at(static_cast<std::size_t>(variant));
  // a. Place the ranks (every check that can refuse the run is made here, before any job).
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < links.size(); ++i) labels.push_back(links.label(i));
  Placement placement = placeRun(spec, variant, impl.summaries, labels);
  const std::string specJson = core::toJson(spec).dump();
  const std::string strategy = core::strategyOf(chosen).name;
  const core::NodeLossPolicy onNodeLoss = core::nodeLossPolicy(chosen);

  // Nodes still busy with an earlier run's job of this coordinator are freed first (bounded,
  // each wait a note), then the run reserves all of its nodes, waiting behind others' runs.
  std::vector<std::string> notes;
  impl.settle([&](std::string detail) { notes.push_back(std::move(detail)); });
  std::vector<std::size_t> runNodes;
  for (const RankSlot& r : placement.ranks)
    if (std::find(runNodes.begin(), runNodes.end(), r.node) == runNodes.end())
      runNodes.push_back(r.node);
  GangReservation reservation(links, runNodes, runNameOf(specJson, variant));
  const CoordinatorOptions& options = links.options();
  const std::chrono::milliseconds waitLimit =
      options.waitLimit ? *options.waitLimit
      : spec.cluster.waitSeconds
          ? std::chrono::milliseconds(*spec.cluster.waitSeconds * 1000)
          : std::chrono::duration_cast<std::chrono::milliseconds>(kDefaultWait);
  core::RunSummary summary;
  summary.name = chosen.name.empty() ? strategy : chosen.name;
  summary.strategy = strategy;
  if (!reservation.acquire({waitLimit, cancel, options.onWaiting})) {
    summary.status = core::RunStatus::kCancelled;
    summary.stopReason = core::StopReason::kCancelled;
    summary.events.push_back(
        {0, 0.0, std::string(core::kReservationEvent), "cancelled while waiting for its nodes"});
    return summary;
  }
  // The run's clock starts once it has its nodes: a wait in a queue is not training time.
  const Clock::time_point start = Clock::now();

  // What a restart continues from: the newest checkpoint, at first the one resumed from.
  std::shared_ptr<const std::vector<unsigned char>> checkpoint;  // null: none yet
  int64_t checkpointStep = 0;
  double clockBaseMs = 0.0;  // the run's clock when this coordinator started it
  if (!resume.empty()) {
    const core::CheckpointLayout c = core::verifyCheckpoint(resume);
    checkpoint = std::make_shared<const std::vector<unsigned char>>(resume.begin(), resume.end());
    checkpointStep = c.step;
    clockBaseMs = c.wallMs;
  }

  std::mutex mutex;  // guards sink calls, summary.events and the per-node state below
  auto addEvent = [&](int64_t step, std::string kind, std::string detail, std::string data = {}) {
    core::RunEvent e{
        step, clockBaseMs + std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
        std::move(kind), std::move(detail), std::move(data)};
    if (sink != nullptr) sink->onEvent(e);
    summary.events.push_back(std::move(e));
  };
  auto recovered = [&](int64_t step, double seconds, int64_t stepsLost, std::string detail) {
    ++summary.recoveries;
    summary.recoveryS += seconds;
    summary.stepsLost += stepsLost;
    char took[48];
    std::snprintf(took, sizeof(took), "; recovered in %.2f s", seconds);
    addEvent(step, "recovery", detail + took);
  };
  std::optional<PendingRecovery> restarting;
  auto firstStep = [&](int64_t step) {
    if (!restarting) return;
    recovered(step, std::chrono::duration<double>(Clock::now() - restarting->lostAt).count(),
              restarting->stepsLost, restarting->detail);
    restarting.reset();
  };
  // Where it ran: each node of the run as it described itself, so that a report of the run
  // says which machines and versions measured it.
  for (std::size_t i = 0; i < placement.nodeCount && i < impl.summaries.size(); ++i) {
    const core::NodeFacts facts = nodeFacts(static_cast<int>(i), labels[i], impl.summaries[i]);
    addEvent(0, std::string(core::kNodeEvent), facts.sentence(), core::eventData(facts));
  }
  // Workers that share a host's cores: the run says so, its timings measure that too.
  for (const std::string& host : placement.contention) {
    summary.contended = true;
    addEvent(0, "contention", host);
  }
  std::optional<double> clockStartMs;  // a restart's: the run's time so far
  for (std::string& note : notes) addEvent(0, "note", std::move(note));
  addEvent(0, std::string(core::kReservationEvent), reservation.account());

  std::vector<RankEnd> ends;
  WatchEnd watched;
  std::string restartFailed;  // why a restart could not start (the run ends with the loss)
  for (;;) {
    // b. Start everywhere (or nowhere). A restart that cannot start ends the run as the lost
    // node left it, its events kept, saying why.
    const std::string jobId = randomId();
    try {
      links.startJobs(placement, jobId, specJson, variant, reservation.id(),
                      checkpoint != nullptr ? std::span<const unsigned char>(*checkpoint)
                                            : std::span<const unsigned char>(),
                      clockStartMs);
    } catch (const std::exception& e) {
      if (!restarting) throw;
      restartFailed = e.what();
      break;
    }
    // c. Watch every rank to its end; a lost node or a failed rank ends the group.
    const core::StrategyTraits& traits = core::strategyOf(chosen).traits;
    watched =
        links.watchJobs(placement, jobId, cancel,
                        {sink, mutex, summary.events, addEvent, onNodeLoss, continueByOf(traits),
                         traits.keepsCheckpoints, checkpoint != nullptr, recovered, firstStep},
                        ends);
    // Ranks whose end was never reported may still run on their nodes: settled before the
    // next start (of a restart, or of the next run).
    for (std::size_t r = 0; r < ends.size() && r < placement.ranks.size(); ++r)
      if (const std::pair<std::size_t, std::string> job{placement.ranks[r].node, jobId};
          !ends[r].finished &&
          std::find(impl.unsettled.begin(), impl.unsettled.end(), job) == impl.unsettled.end())
        impl.unsettled.push_back(job);
    if (restarting && !watched.failing) firstStep(watched.lastStep);  // ended without a step
    if (watched.checkpoint != nullptr) {
      checkpoint = watched.checkpoint;
      checkpointStep = watched.checkpointStep;
    }
    const bool cancelled = cancel != nullptr && cancel->load();
    if (!watched.lostRank || cancelled) break;
    // "continue" that could not go on in place (a lost parameter-server shard, the hybrid's
    // group in use) restarts from the newest checkpoint on the other nodes, the progress since
    // lost.
    const std::size_t lostNode = placement.ranks[*watched.lostRank].node;
    const bool shardLost = lostNode < placement.psAddresses.size();
    if (onNodeLoss != core::NodeLossPolicy::kRestart && !watched.restartable) break;
    const std::vector<std::size_t> survivors = survivorsOf(placement, *watched.lostRank, ends);
    if (survivors.empty()) break;
    const std::string lost =
        placement.rankNames[*watched.lostRank] +
        (shardLost ? " (parameter-server shard " + std::to_string(lostNode) + ")" : "");
    // The group re-forms from the survivors at the newest checkpoint (the global batch kept,
    // divided among fewer ranks), as Horovod elastic does; the run's clock goes on.
    placement = placeRunOn(spec, variant, impl.summaries, labels, survivors);
    std::string nodes;
    for (const std::string& name : placement.rankNames) nodes += (nodes.empty() ? "" : ", ") + name;
    const int64_t stepsLost = std::max<int64_t>(0, watched.lastStep - checkpointStep);
    restarting = PendingRecovery{
        watched.lostLastHeard, stepsLost,
        lost + " lost; restarted on " + std::to_string(placement.world()) +
            (placement.world() == 1 ? " rank (" : " ranks (") + nodes + ") from " +
            (checkpoint == nullptr ? std::string("the start (no checkpoint yet)")
                                   : "the checkpoint of step " + std::to_string(checkpointStep)) +
            ", " + stepsText(stepsLost) + " lost"};
    clockStartMs =
        clockBaseMs + std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  }

  // d. Merge.
  mergeRankEnds(ends, watched, summary);
  if (!restartFailed.empty()) {
    summary.status = core::RunStatus::kFailed;
    summary.stopReason = core::StopReason::kNodeLost;
    summary.error = watched.lostNode + "; restarting on the other nodes failed: " + restartFailed;
  }
  // The split of the batch, for a strategy that has the setting (a variant built in code may
  // leave it at its default).
  if (const core::SettingsView view = core::strategyOf(chosen).view(chosen);
      view.declares("partition") && view.applies("partition"))
    summary.partition = core::settingText(view.value("partition"));
  summary.rebalances = std::count_if(summary.events.begin(), summary.events.end(),
                                     [](const core::RunEvent& e) { return e.kind == "rebalance"; });
  summary.switches =
      std::count_if(summary.events.begin(), summary.events.end(),
                    [](const core::RunEvent& e) { return e.kind == core::kSwitchEvent; });
  summary.wallS = std::chrono::duration<double>(Clock::now() - start).count();
  addEvent(summary.steps, "finish",
           std::string(core::toString(summary.status)) + " (" + core::toString(summary.stopReason) +
               ")");
  return summary;
}

}  // namespace dtlab::remote
