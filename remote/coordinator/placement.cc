#include "remote/coordinator/placement.h"

#include <algorithm>
#include <map>

#include "core/common/check.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy_registry.h"
#include "remote/common/auth.h"

namespace dtlab::remote {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Refuses the run when a node cannot take it, naming the node.
void checkNodesCanRun(const core::ExperimentSpec& spec, const core::VariantConfig& chosen,
                      const std::vector<NodeSummary>& nodes, const std::vector<std::string>& labels,
                      std::size_t nodeCount, const std::vector<int>& slots) {
  const core::StrategyDescriptor& strategy = core::strategyOf(chosen);
  for (std::size_t i = 0; i < nodeCount; ++i) {
    const auto& caps = nodes[i].capabilities;
    if (std::find(caps.begin(), caps.end(), strategy.name) == caps.end())
      throw Error("node " + labels[i] + " cannot run strategy '" + strategy.name +
                  "' (it runs: " + joined(caps) + "); update its dtlab-node");
  }
  // A GPU run needs a GPU on every node it uses: say which lack one before any job starts.
  if (spec.cluster.device == "cuda") {
    std::vector<std::string> without;
    for (std::size_t i = 0; i < nodeCount; ++i)
      if (nodes[i].gpus == 0) without.push_back(labels[i]);
    if (!without.empty())
      throw Error("cluster.device \"cuda\": no GPU on " + joined(without) +
                  " (start each dtlab-node with --devices cuda:N, or use cluster.device "
                  "\"cpu\")");
  }
  // The parameter server's shard k lives on rank k's node: one shard a node, so one rank.
  if (strategy.traits.usesParameterServer) {
    for (std::size_t n = 0; n < nodeCount; ++n)
      if (slots[n] > 1)
        throw Error("variant '" + chosen.name + "' (" + strategy.name +
                    ") runs one worker per node so far; node " + labels[n] + " has " +
                    std::to_string(slots[n]) +
                    " worker slots (start it with --devices cpu, or choose " +
                    core::strategyList([](const core::StrategyDescriptor& d) {
                      return !d.traits.usesParameterServer;
                    }) +
                    ")");
  }
}

// Workers that share a host's cores slow each other down: one line per such host.
std::vector<std::string> contentionOf(const std::vector<NodeSummary>& nodes,
                                      const std::vector<std::string>& labels, std::size_t nodeCount,
                                      const std::vector<int>& slots) {
  std::map<std::string, std::vector<std::size_t>> byHost;
  for (std::size_t i = 0; i < nodeCount; ++i) byHost[nodes[i].hostname].push_back(i);
  std::vector<std::string> out;
  for (const auto& [host, members] : byHost) {
    int threads = 0;
    std::vector<std::string> names;
    for (std::size_t i : members) {
      threads += std::max(1, nodes[i].workerThreads) * slots[i];
      names.push_back(labels[i]);
    }
    const int cores = nodes[members.front()].cores;
    if (cores <= 0 || threads <= cores) continue;
    out.push_back("host " + host + ": " + std::to_string(threads) + " busy worker threads on " +
                  std::to_string(cores) + " cores (" + joined(names) +
                  "); timings include the contention");
  }
  return out;
}

}  // namespace

int workerSlots(const NodeSummary& node, const std::string& device) {
  return std::max(1, device == "cuda" ? node.gpus : node.cpuSlots);
}

std::string reachableAddress(const NodeSummary& node) {
  const HostPort at = parseHostPort(node.address, "node address");
  const std::string host = node.advertiseHost.empty() ? at.host : node.advertiseHost;
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(at.port);
}

Placement placeRun(const core::ExperimentSpec& spec, int variant,
                   const std::vector<NodeSummary>& nodes, const std::vector<std::string>& labels) {
  DTLAB_ENFORCE_EQ(nodes.size(), labels.size(), "one label per node");
  const core::VariantConfig& chosen = spec.variants.at(static_cast<std::size_t>(variant));
  // A variant may run on the first `nodes` nodes only (a baseline beside the whole cluster).
  if (chosen.nodes > static_cast<int64_t>(nodes.size()))
    throw Error("variant '" + chosen.name + "' asks for " + std::to_string(chosen.nodes) +
                " nodes; the cluster has " + std::to_string(nodes.size()));
  if (nodes.empty()) throw Error("the cluster has no nodes");
  Placement p;
  p.nodeCount = chosen.nodes > 0 ? static_cast<std::size_t>(chosen.nodes) : nodes.size();
  // One rank per worker slot of the run's device: a node's GPUs for a cuda run, else its CPU
  // slots.
  std::vector<int> slots;
  for (std::size_t n = 0; n < p.nodeCount; ++n)
    slots.push_back(workerSlots(nodes[n], spec.cluster.device));
  checkNodesCanRun(spec, chosen, nodes, labels, p.nodeCount, slots);
  for (std::size_t n = 0; n < p.nodeCount; ++n)
    for (int s = 0; s < slots[n]; ++s) {
      p.ranks.push_back({n, s});
      p.rankNames.push_back(slots[n] == 1 ? labels[n] : labels[n] + " slot " + std::to_string(s));
      p.rankAddresses.push_back(reachableAddress(nodes[n]));
    }
  p.contention = contentionOf(nodes, labels, p.nodeCount, slots);
  p.rendezvous = reachableAddress(nodes[0]);
  if (core::strategyOf(chosen).traits.usesParameterServer && p.world() > 1)
    for (int k = 0; k < core::psShardCount(chosen, static_cast<int>(p.world())); ++k)
      p.psAddresses.push_back(reachableAddress(nodes[static_cast<std::size_t>(k)]));
  // A shard's blocks are kept nowhere else, so a run whose every node serves one cannot
  // continue after losing any of them, unless it keeps checkpoints of them to restart from.
  const bool checkpointed =
      core::strategyOf(chosen).traits.keepsCheckpoints &&
      (spec.training.checkpointEvery > 0 || spec.training.checkpointSeconds > 0.0);
  if (core::nodeLossPolicy(chosen) == core::NodeLossPolicy::kContinue && p.world() > 1 &&
      p.psAddresses.size() >= p.nodeCount && !checkpointed)
    throw Error("variant '" + chosen.name +
                "': on_node_loss \"continue\" needs nodes that serve "
                "no parameter-server shard (a lost shard's blocks are kept nowhere else), and "
                "all " +
                std::to_string(p.nodeCount) + " nodes serve one: set ps_shards below " +
                std::to_string(p.nodeCount) +
                " (the shards live on the first ps_shards nodes), or keep checkpoints "
                "(training.checkpoint_every) to restart from");
  return p;
}

Placement placeRunOn(const core::ExperimentSpec& spec, int variant,
                     const std::vector<NodeSummary>& nodes, const std::vector<std::string>& labels,
                     const std::vector<std::size_t>& use) {
  core::ExperimentSpec narrowed = spec;
  narrowed.variants.at(static_cast<std::size_t>(variant)).nodes = 0;
  std::vector<NodeSummary> subset;
  std::vector<std::string> subsetLabels;
  for (std::size_t n : use) {
    subset.push_back(nodes.at(n));
    subsetLabels.push_back(labels.at(n));
  }
  Placement p = placeRun(narrowed, variant, subset, subsetLabels);
  for (RankSlot& r : p.ranks) r.node = use[r.node];
  return p;
}

}  // namespace dtlab::remote
