#pragma once
// The scale simulator's calibration from a project's runs (`dtlab-cli calibrate`, issue 24),
// and what each measured run showed, to set beside predictions.
// From every run given (when none is, every completed run of the project's most recent
// experiment); the runs must train one model on one cluster (the same emulated links):
//   compute   each worker's compute_ms per step at each batch share it trained, times its
//             node's emulated speed, warm-up steps aside; a node is the host its daemon named
//             in the run's "node" event
//   links     where the strategy's transfers follow a pattern the simulator models
//             (StrategyDescriptor::transferPattern): an all-reduce's step (the fastest rank's
//             comm_ms: the others also wait there for the slowest) against its messages
//             (2(n-1) per bucket) and bytes_sent; a parameter-server step's comm_ms against its
//             pull and push (2 messages) and bytes moved
#include <cstdint>
#include <vector>

#include "core/sim/calibration.h"
#include "core/train/scale_prediction.h"

namespace dtlab::core {

class ProjectStore;

// Throws Error naming a run that cannot be used (unknown, unfinished, no stored spec), two runs
// of different models or emulated links, or when nothing could be fitted.
sim::Calibration calibrateRuns(ProjectStore& store, std::vector<int64_t> runIds = {});

// The measured points of the given runs (every finished run with a spec when none is given);
// `experiment` non-empty: only runs of that experiment name.
std::vector<MeasuredPoint> measuredPoints(ProjectStore& store, const std::string& experiment = {},
                                          std::vector<int64_t> runIds = {});

}  // namespace dtlab::core
