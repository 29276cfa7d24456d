#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// Hostfiles: a cluster of running dtlab-node daemons in the shape MPI and DeepSpeed users
// know, one daemon a line, ranks in the order of the lines (and of each daemon's slots):
//
//   # comment (to the end of the line; blank lines are skipped)
//   node1:7000 slots=4 speed=1.0
//   node2      slots=1 speed=0.25 bandwidth_mbps=1000 latency_ms=0.5
//   [fe80::1]:7001
//
// HOST alone means HOST:kDefaultNodePort. `slots` is the number of workers the line's
// daemon runs (dtlab-node --devices cpu:N, or its GPUs for a cuda run): given, the run checks
// it against the daemon and refuses a difference; left out, the daemon's own count. The other
// keys are the node's emulation, as the spec's cluster.nodes entries give it (NodeConfig:
// compute stretched to 1/speed, a link of bandwidth_mbps and latency_ms).

// The port of a HOST without one: the one the README's cluster examples give dtlab-node.
inline constexpr int kDefaultNodePort = 7000;
inline constexpr int kMaxHostfileSlots = 4096;

struct HostfileNode {
  NodeConfig node;                 // its address and emulation
  std::optional<int> workerSlots;  // slots=N: the worker slots the daemon must have (not
                                   // "slots": Qt defines that word as a macro)
  int line = 0;                    // in the file (0: not from a file)
  bool operator==(const HostfileNode&) const = default;
};

// The nodes of a hostfile's text. Throws SpecError naming `source:LINE` and what is wrong on
// a bad line (an unknown or repeated key, a value out of range, a bad or repeated address),
// or `source` when no line names a node.
std::vector<HostfileNode> parseHostfile(std::string_view text, const std::string& source);
// Reads the file at `path` (SpecError when it cannot be read) and parses it.
std::vector<HostfileNode> loadHostfile(const std::string& path);
// A hostfile of `nodes` (every one with an address), with the keys given or differing from a
// node's defaults: parseHostfile gives the same nodes back (line numbers aside). Speed
// schedules and stragglers have no hostfile keys and are left out.
std::string formatHostfile(const std::vector<HostfileNode>& nodes);
std::vector<NodeConfig> nodesOf(const std::vector<HostfileNode>& nodes);

}  // namespace dtlab::core
