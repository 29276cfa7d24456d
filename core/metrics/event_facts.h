#pragma once
// The facts a run event carries beside its sentence (RunEvent::data, a JSON object): written
// where the event is made and read where something needs them, through the codecs here and
// nowhere else. No reader takes an event's sentence apart; projects recorded before events had
// facts get them from their sentences once, when the project file is upgraded
// (core/store/legacy_events.h).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/metrics/metrics.h"

namespace dtlab::core {

// A "node" event: a machine the run used, as its daemon described itself.
struct NodeFacts {
  int node = 0;         // the node's index in the run
  std::string label;    // "node0 (127.0.0.1:7070)"
  std::string host;     // its host name
  std::string version;  // DTLab's, on the node
  std::string machine;  // its CPU as the daemon says it ("AMD EPYC 9R14, 2 cores, ...")
  int64_t cores = 0;    // the host's cores; 0: not known
  std::vector<std::string> devices;  // beyond the CPU ("cuda:0 (NVIDIA H200, ...)")

  // "host lab1, DTLab 0.1.0, AMD EPYC 9R14, 2 cores, 1 worker threads; cuda:0 (...)".
  std::string description() const;
  // The event's sentence: the label, then the description.
  std::string sentence() const { return label + ": " + description(); }
  bool operator==(const NodeFacts&) const = default;
};

// A hybrid's "strategy_switch" or "hybrid_phase" event: the phase the run goes on in.
struct PhaseFacts {
  bool asynchronous = false;
  bool operator==(const PhaseFacts&) const = default;
};

// A "start" event of a strategy that all-reduces gradients in buckets: the bucket size and
// each message size its group timed, with every algorithm's time per call there (the fastest
// is the one the group uses at that size; events of earlier versions state the winner only).
struct CollectiveFacts {
  struct Call {
    int64_t bytes = 0;
    std::string algorithm;
    double ms = 0.0;
    bool operator==(const Call&) const = default;
  };
  int64_t bucketBytes = 0;  // 0: none stated
  std::vector<Call> calls;  // ascending bytes, a size's algorithms together; empty: none timed
  bool empty() const { return bucketBytes == 0 && calls.empty(); }
  bool operator==(const CollectiveFacts&) const = default;
};

// A "rebalance" event of the speed-proportional split: each rank's samples of the batch before
// and after (the same when the shares were kept), the speeds and step time behind the choice,
// and a rank the cluster would be faster without.
struct RebalanceFacts {
  std::vector<int64_t> before;           // samples per rank
  std::vector<int64_t> after;            // samples per rank from this step on
  std::vector<double> samplesPerSecond;  // each rank's measured speed
  double measuredStepMs = 0.0;           // the step time measured with `before`
  double expectedStepMs = 0.0;           // the model's step time with `after`
  int leaveOut = -1;                     // a rank worth leaving out; -1: none
  bool moved() const { return before != after; }
  bool operator==(const RebalanceFacts&) const = default;
};

// A "node_lost" event: which rank's node was lost, why, and what the run does about it.
struct NodeLossFacts {
  enum class Cause { kNoHeartbeat, kStreamBroke };
  enum class Outcome {
    kOthersGoOn,              // on_node_loss continue: the other workers train on
    kRestartsFromCheckpoint,  // the run restarts on the other nodes from its newest checkpoint
    kGroupRestarts,           // on_node_loss restart: the group re-forms on the other nodes
    kRunFails,                // the run cannot go on
    kRunHadEnded,             // lost as the run ended: its outcome stands
  };
  int rank = -1;
  std::string node;  // the rank's name: "rank 2 on node2 (127.0.0.1:7002)"
  Cause cause = Cause::kNoHeartbeat;
  std::string error;     // the broken stream's error (kStreamBroke)
  int64_t silentMs = 0;  // how long no heartbeat came (kNoHeartbeat)
  int shard = -1;        // the parameter-server shard its node served; -1: none
  Outcome outcome = Outcome::kRunFails;
  bool operator==(const NodeLossFacts&) const = default;
};
std::string_view toString(NodeLossFacts::Cause cause);
std::string_view toString(NodeLossFacts::Outcome outcome);

// Each as the JSON object text RunEvent::data holds.
std::string eventData(const NodeFacts& facts);
std::string eventData(const PhaseFacts& facts);
std::string eventData(const CollectiveFacts& facts);
std::string eventData(const RebalanceFacts& facts);
std::string eventData(const NodeLossFacts& facts);

// The facts of an event of the matching kind ("node"; "strategy_switch" or "hybrid_phase";
// "start"; "rebalance"; "node_lost"), or nullopt for another kind or an event without them. Throws
// dtlab::Error naming the field for data that is not such an object.
std::optional<NodeFacts> nodeFactsOf(const RunEvent& event);
std::optional<PhaseFacts> phaseFactsOf(const RunEvent& event);
std::optional<CollectiveFacts> collectiveFactsOf(const RunEvent& event);
std::optional<RebalanceFacts> rebalanceFactsOf(const RunEvent& event);
std::optional<NodeLossFacts> nodeLossFactsOf(const RunEvent& event);

// The kinds whose events carry those facts.
inline constexpr std::string_view kStartEvent = "start";
inline constexpr std::string_view kSwitchEvent = "strategy_switch";
inline constexpr std::string_view kPhaseEvent = "hybrid_phase";
inline constexpr std::string_view kRebalanceEvent = "rebalance";
inline constexpr std::string_view kNodeLostEvent = "node_lost";

}  // namespace dtlab::core
