#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli resume P.dtlab RUN [--step S] [where to run: as `run`] [--quiet]`: continues a
// failed, cancelled or interrupted run from its newest checkpoint (or the one of step S), on
// the same or other nodes, recording into the same run. Returns the exit code.
int resumeCommand(const std::vector<std::string>& argv);

}  // namespace dtlab::app
