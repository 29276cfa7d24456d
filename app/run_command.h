#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "app/args.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/hostfile.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"

namespace dtlab::app {

// `dtlab-cli run SPEC.json [--local-nodes N] [--node HOST:PORT ...] [--token T]
//  [--project P.dtlab] [--quiet]`;
// returns the exit code.
int runCommand(const std::vector<std::string>& argv);

// Shared by `run` and `resume`.
// The flags that say where a run happens: --node, --local-nodes, --token, --connect-timeout,
// --tls-cert, --tls-key, --tls-ca, --wait.
const std::set<std::string>& clusterFlags();
// Their switches: --quiet, --no-wait.
const std::set<std::string>& clusterSwitches();
// Where a run of `spec` happens, from those flags, first match wins: --node (running daemons,
// as they are), --local-nodes (a local cluster, started here), the spec's node addresses, the
// spec's local cluster; and the coordinator's options. UsageError for flags that contradict.
struct RunPlace {
  std::vector<std::string> nodes;
  std::unique_ptr<remote::LocalCluster> cluster;  // when the run started local daemons
  remote::CoordinatorOptions options;
  std::string hostfile;                     // --hostfile's path, else ""
  std::vector<core::HostfileNode> entries;  // its lines
};
RunPlace chooseRunPlace(const Args& args, const core::ExperimentSpec& spec);
// After Coordinator::connect(): refuses (dtlab::Error naming FILE:LINE) a hostfile line whose
// slots=N differs from the worker slots its daemon runs for the spec's device.
void checkHostfileSlots(const RunPlace& place, const std::vector<remote::NodeSummary>& nodes,
                        const core::ExperimentSpec& spec);
// The first SIGINT/SIGTERM sets interruptedFlag() (the run is cancelled), a second one ends the
// process at once.
void catchInterrupts();
const std::atomic<bool>& interruptedFlag();
// A recording that can write no more (disk full, the project made read-only) stops the run:
// the cause goes to stderr, the run is cancelled as by an interrupt, and recordingFailed()
// makes the command exit 1. For TrainRecording's onFailure.
void stopOnRecordingFailure(const std::string& error);
bool recordingFailed();

}  // namespace dtlab::app
