#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli replay P.dtlab RUN`: re-runs an async_ps, ssp or hybrid run from its record of
// pushes in this process (core/train/ps_replay.h) and checks every recorded replica against
// the run's checksums. Returns 0 when they match bit for bit, 1 when the replay diverged
// (naming the first push whose gradient came out other than the run's) or was refused.
int replayCommand(const std::vector<std::string>& argv);

}  // namespace dtlab::app
