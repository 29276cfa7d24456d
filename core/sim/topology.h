#pragma once
// A cluster the simulator predicts for (`dtlab-cli predict --topology FILE`, issue 24): a tree
// of switches above the nodes, and how node speeds are spread, in place of the spec's own
// cluster. The file, JSON:
//   {"levels": [{"fanout": 16, "bandwidth_mbps": 25000, "latency_ms": 0.002,
//                "oversubscription": 1},
//               {"fanout": 8, "oversubscription": 4, "latency_ms": 0.005}],
//    "speeds": [{"share": 0.1, "speed": 0.5}]}
// Level 0 is the top-of-rack switch: `fanout` nodes under each; level 1 joins `fanout` of
// those; and so on. A level's `bandwidth_mbps` is the link of each of its children (a node's
// NIC at level 0; omitted: the calibrated link's), its `oversubscription` how many times more
// its children can send than its uplink carries, `latency_ms` what a message pays to cross it.
// `speeds`: that share of the nodes runs at that speed (the shares take the nodes in turn, the
// first share the first nodes), the others at the spec's.
// How a transfer pattern meets the tree (effectiveLink):
//   ring all-reduce   ordered switch by switch, a ring crosses each uplink with one flow, so a
//                     node sends at its NIC's rate unless an uplink is slower than that; each
//                     message pays the latency of the highest level the ring crosses
//   parameter server  every worker talks to every shard, so each uplink carries the traffic of
//                     all the nodes under it that goes elsewhere, shared among them
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sim/cluster_model.h"

namespace dtlab::core::sim {

struct TopologyLevel {
  int fanout = 1;
  double bandwidthMbps = 0.0;  // 0: the calibrated link's
  double oversubscription = 1.0;
  double latencyMs = 0.0;
};

struct SpeedShare {
  double share = 0.0;
  double speed = 1.0;
};

struct Topology {
  std::vector<TopologyLevel> levels;
  std::vector<SpeedShare> speeds;

  // Throws Error naming the field (under `where`, e.g. the file's name).
  static Topology fromJson(const nlohmann::json& json, const std::string& where);
  // Reads a topology file; errors name the file and the field.
  static Topology fromFile(const std::string& path);
  // The speed of node `index` of `nodes` where a share says; 0: the spec's.
  double speedOf(int index, int nodes) const;
  // One line: "16 nodes a switch at 25000 Mbit/s, 8 switches a spine 4:1 oversubscribed; 10%
  // of nodes at 0.5".
  std::string describe() const;
};

enum class TrafficPattern { kRing, kAllToAll };

// The link a node of a cluster of `nodes` effectively has under the tree, for `pattern`,
// from the calibrated link `nic` (which stands for a level's bandwidth where it gives none).
LinkModel effectiveLink(const LinkModel& nic, const Topology& topology, int nodes,
                        TrafficPattern pattern);

}  // namespace dtlab::core::sim
