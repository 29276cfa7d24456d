#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli bench allreduce --local-nodes N --bytes S [--iters K] [--json]`.
int benchAllReduceCommand(const std::vector<std::string>& argv);
// Hidden subcommands: one rank of the measurement, one end of the TCP stream.
int benchAllReduceRank(const std::vector<std::string>& argv);
int benchTcpRank(const std::vector<std::string>& argv);

}  // namespace dtlab::app
