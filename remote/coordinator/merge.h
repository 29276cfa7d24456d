#pragma once
// The last phase of a run (Coordinator::run): the ranks' results merged into the run's
// summary. Which rank's error is the run's, whether a cancelled run with stragglers is still
// cancelled, the throughput, utilisation and exchange figures: decided here from the ranks'
// ends alone, so each rule has a test of its own (tests/remote/test_merge.cc).
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "remote/proto/dtlab.pb.h"

namespace dtlab::remote {

// How one rank's watch ended.
struct RankEnd {
  std::string name;         // how messages name it (Placement::rankNames)
  bool finished = false;    // its final result arrived
  bool abandoned = false;   // still running at the end of the wind-down: left behind
  std::string error;        // why its stream ended without a result ("its stream broke (...)")
  proto::JobResult result;  // when finished
  // Its node was lost and the run went on without it (on_node_loss "continue"): it has no
  // say in the run's outcome, and what it trained is on the server, not in its figures.
  bool dropped = false;
};

// How the watch itself ended.
struct WatchEnd {
  std::string lostNode;     // a node declared lost ("node1 (...) lost: ..."); empty: none
  bool failing = false;     // the coordinator ended the run on a failure or a lost node
  bool cancelSent = false;  // the user's cancel was forwarded
  std::chrono::milliseconds windDown{0};  // how long ranks were given to report their end
  // What a restart after a lost node needs (on_node_loss "restart"): the rank whose node was
  // lost, the highest step any rank reported, and the newest checkpoint handed to the sink
  // (encoded; null: none in this watch).
  std::optional<std::size_t> lostRank;
  std::chrono::steady_clock::time_point lostLastHeard{};  // when the lost rank last reported
  int64_t lastStep = 0;
  std::shared_ptr<const std::vector<unsigned char>> checkpoint;
  int64_t checkpointStep = 0;
  // On "continue": the loss could not be survived in place (a parameter-server shard's node,
  // or the hybrid's while its group was in use), and the run has a checkpoint to restart from.
  bool restartable = false;
};

// The ranks whose node was lost as the run ended: a stream broke (no result, not left behind,
// not dropped) while every rank on the other nodes completed the run, so the outcome stands
// without them (their own figures are missing). Never rank 0's node: its evaluation is the
// run's. `nodeOf[i]`: rank i's node. (The watch asks only when it did not end the run itself
// on a failure or a cancel.)
std::vector<std::size_t> lostAsTheRunEnded(const std::vector<RankEnd>& ranks,
                                           const std::vector<std::size_t>& nodeOf);

// Fills `summary`'s outcome (status, stop reason, error) and figures (steps, samples,
// throughput, utilisation, wait, checksums, memory, exchange, test figures) from `ranks`, in
// rank order. Events, name, strategy, partition and wall time are the caller's.
void mergeRankEnds(const std::vector<RankEnd>& ranks, const WatchEnd& watch,
                   core::RunSummary& summary);

}  // namespace dtlab::remote
