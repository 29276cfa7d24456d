#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// Hostfiles: a cluster of running dtlab-node daemons in the shape MPI and DeepSpeed users
// know, one node a line, ranks in the order of the lines:
//
//   # comment (to the end of the line; blank lines are skipped)
//   node1:7000 slots=1 speed=1.0
//   node2      slots=1 speed=0.25 bandwidth_mbps=1000 latency_ms=0.5
//   [fe80::1]:7001
//
// HOST alone means HOST:kDefaultNodePort. `slots` is the number of workers on the line's
// daemon: a daemon runs one worker of a job, so 1 (the default) is the only count taken; a
// host with more cores or GPUs runs a daemon per worker, each on its own port and line. The
// other keys are the node's emulation, as the spec's cluster.nodes entries give it
// (NodeConfig: compute stretched to 1/speed, a link of bandwidth_mbps and latency_ms).

// The port of a HOST without one: the one the README's cluster examples give dtlab-node.
inline constexpr int kDefaultNodePort = 7000;

// The nodes of a hostfile's text, each with its address. Throws SpecError naming
// `source:LINE` and what is wrong on a bad line (an unknown key, a value out of range, a
// repeated key or address, a bad address), or when no line names a node.
std::vector<NodeConfig> parseHostfile(std::string_view text, const std::string& source);
// Reads the file at `path` (SpecError when it cannot be read) and parses it.
std::vector<NodeConfig> loadHostfile(const std::string& path);
// A hostfile of `nodes` (every one with an address), with the keys that differ from a
// node's defaults: parseHostfile gives the same nodes back. Speed schedules and stragglers
// have no hostfile keys and are left out.
std::string formatHostfile(const std::vector<NodeConfig>& nodes);

}  // namespace dtlab::core
