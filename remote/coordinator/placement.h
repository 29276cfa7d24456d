#pragma once
// The first phase of a run (Coordinator::run): where its ranks go and what each node must be
// told, decided from the nodes' GetInfo answers alone, before any job starts. Every refusal
// names the node: a strategy it cannot run, a GPU run on a node without GPUs, a
// parameter-server variant on a node with several worker slots.
#include <cstddef>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "remote/coordinator/cluster_options.h"

namespace dtlab::remote {

struct RankSlot {
  std::size_t node = 0;  // index into the cluster's nodes
  int slot = 0;          // the node's worker slot (its GPU for a cuda run, else a CPU slot)
};

struct Placement {
  std::size_t nodeCount = 0;  // the variant's nodes: the cluster's first N
  // Rank r runs on ranks[r].node in slot ranks[r].slot: node by node, one rank per slot.
  std::vector<RankSlot> ranks;
  // How messages name rank r: its node's label, and its slot where the node has several.
  std::vector<std::string> rankNames;
  std::string rendezvous;  // rank 0's node as its peers reach it (rank 0 hosts the store)
  // Rank r's node as its peers reach it (where a group re-formed without a lost node meets).
  std::vector<std::string> rankAddresses;
  // Parameter-server shard k on node k, as peers reach it; empty for a variant without a
  // server, or with one worker (which serves itself).
  std::vector<std::string> psAddresses;
  // One line per host whose busy worker threads outnumber its cores (the run's timings then
  // measure the contention too); a "contention" event each.
  std::vector<std::string> contention;

  std::size_t world() const { return ranks.size(); }
};

// `nodes`: every node's GetInfo (its dialled address included), in rank order; `labels`: how
// messages name each node ("node0 (10.0.0.5:7070)"). Throws dtlab::Error naming what is wrong.
Placement placeRun(const core::ExperimentSpec& spec, int variant,
                   const std::vector<NodeSummary>& nodes, const std::vector<std::string>& labels);

// placeRun on the nodes `use` (indices into `nodes`, in rank order) alone, the variant's own
// node count set aside: a group re-formed from the nodes that survived a lost one. The
// placement's node indices are into `nodes`.
Placement placeRunOn(const core::ExperimentSpec& spec, int variant,
                     const std::vector<NodeSummary>& nodes, const std::vector<std::string>& labels,
                     const std::vector<std::size_t>& use);

// The ranks a node runs for a run on `device` ("cpu" or "cuda"): its GPUs for a cuda run,
// else its CPU worker slots (dtlab-node --devices); at least one.
int workerSlots(const NodeSummary& node, const std::string& device);

// A node's services as its peers reach them: its advertised host (else the host the
// coordinator dialled) on the port it serves on.
std::string reachableAddress(const NodeSummary& node);

}  // namespace dtlab::remote
