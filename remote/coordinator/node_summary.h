#pragma once
// What the coordinator keeps of a daemon's GetInfo answer (cluster_options.h's NodeSummary).
#include <string>

#include "remote/coordinator/cluster_options.h"
#include "remote/proto/dtlab.pb.h"

namespace dtlab::remote {

// The node at `address` as its answer describes it: version, host, emulation flags, who holds
// or waits for it, and its devices (in words, and those that are not its CPU apart).
NodeSummary nodeSummaryOf(const proto::NodeInfo& info, const std::string& address);

}  // namespace dtlab::remote
