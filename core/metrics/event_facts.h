#pragma once
// The facts a run event carries beside its sentence (RunEvent::data, a JSON object): written
// where the event is made and read where something needs them, through the codecs here and
// nowhere else. No reader takes an event's sentence apart; projects recorded before events had
// facts get them from their sentences once, when the project file is upgraded
// (core/store/legacy_events.h).
#include <cstdint>
#include <optional>
#include <string>
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
// each message size its group timed, with the winning algorithm's time per call.
struct CollectiveFacts {
  struct Call {
    int64_t bytes = 0;
    std::string algorithm;
    double ms = 0.0;
    bool operator==(const Call&) const = default;
  };
  int64_t bucketBytes = 0;  // 0: none stated
  std::vector<Call> calls;  // ascending bytes; empty: nothing timed
  bool empty() const { return bucketBytes == 0 && calls.empty(); }
  bool operator==(const CollectiveFacts&) const = default;
};

// Each as the JSON object text RunEvent::data holds.
std::string eventData(const NodeFacts& facts);
std::string eventData(const PhaseFacts& facts);
std::string eventData(const CollectiveFacts& facts);

// The facts of an event of the matching kind ("node"; "strategy_switch" or "hybrid_phase";
// "start"), or nullopt for another kind or an event without them. Throws dtlab::Error naming
// the field for data that is not such an object.
std::optional<NodeFacts> nodeFactsOf(const RunEvent& event);
std::optional<PhaseFacts> phaseFactsOf(const RunEvent& event);
std::optional<CollectiveFacts> collectiveFactsOf(const RunEvent& event);

// The kinds whose events carry those facts.
inline constexpr std::string_view kStartEvent = "start";
inline constexpr std::string_view kSwitchEvent = "strategy_switch";
inline constexpr std::string_view kPhaseEvent = "hybrid_phase";

}  // namespace dtlab::core
