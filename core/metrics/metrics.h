#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/metrics/metric_table.h"

namespace dtlab::core {

struct Checkpoint;     // core/train/checkpoint.h
struct PushRecord;     // core/train/push_record.h
struct ReplicaRecord;  // core/train/push_record.h
struct ResetRecord;    // core/train/push_record.h

// Event kinds: start, node, contention, rebalance, strategy_switch, node_lost, recovery,
// resume, cancel, finish, note, and those below. `detail` is the sentence people read; what
// code needs of an event it reads from `data` (core/metrics/event_facts.h), never the sentence.
struct RunEvent {
  int64_t step = 0;
  double wallMs = 0.0;
  std::string kind;
  std::string detail;
  std::string data{};  // the event's facts as a JSON object ("" when it has none)
};

// A machine the run used, as its daemon described itself (host, DTLab version, CPU, devices):
// one per node, at the start of every run.
inline constexpr std::string_view kNodeEvent = "node";
// A checkpoint a rank took that the run did not keep (its stream broke while it travelled, a
// part of it was refused); the detail says which and why.
inline constexpr std::string_view kCheckpointNotKeptEvent = "checkpoint_not_kept";
// The spec asks for checkpoints that the run's strategy does not keep.
inline constexpr std::string_view kNoCheckpointsEvent = "no_checkpoints";
// How the run came to hold its nodes: at once, or after waiting behind whose runs (nodes shared
// by several people queue their runs).
inline constexpr std::string_view kReservationEvent = "reservation";
// Whether events of `kind` say what the run is or how it ended ("start", "node", "finish")
// rather than mark something that happened while it trained: charts draw no line for them and
// a report lists them apart.
inline bool describesRun(std::string_view kind) {
  return kind == "start" || kind == "finish" || kind == kNodeEvent || kind == kReservationEvent;
}

// How a run (or one rank of it) ended. Their text forms ("completed", "max_steps", ...) are
// what summaries, the wire and the store carry; everywhere else they are these enums.
// kUnknown: a name this build does not know, read from a file a newer DTLab wrote.
// kInterrupted: the process recording the run ended without finishing it (killed, its machine
// rebooted); set when a project is next opened (core/store/recorder.h).
enum class RunStatus { kRunning, kCompleted, kCancelled, kFailed, kInterrupted, kUnknown };
enum class StopReason {
  kNone,  // still running
  kTargetAccuracy,
  kEpochs,
  kMaxSteps,
  kMaxSeconds,
  kCancelled,
  kError,
  kDiverged,  // a rank's loss was not finite (the run failed)
  kNodeLost,  // a node was lost and the run's policy could not go on without it (the run failed)
  kUnknown
};
const char* toString(RunStatus status);  // kUnknown: "unknown"
const char* toString(StopReason reason);
// Inverses of toString for peers of this build (the wire); throw dtlab::Error naming the text
// and the valid values.
RunStatus parseRunStatus(std::string_view text);
StopReason parseStopReason(std::string_view text);
// For what files hold, which a newer version may have written: an unknown name is kUnknown.
RunStatus readRunStatus(std::string_view text);
StopReason readStopReason(std::string_view text);

// What a worker's steps add up to for the summary's consistency and communication figures;
// the node daemon sends it with the worker's result and the coordinator merges the workers'.
struct ExchangeTotals {
  // Staleness histogram: bucket s counts steps with staleness s; the last bucket counts
  // kStalenessBuckets - 1 or more.
  static constexpr int kStalenessBuckets = 32;
  int64_t steps = 0;
  double stalenessSum = 0.0;
  double maxStaleness = 0.0;
  std::vector<int64_t> stalenessHistogram;  // empty until a step is added
  int64_t bytesSent = 0;
  int64_t bytesReceived = 0;
  double divergenceSum = 0.0;
  int64_t divergenceSteps = 0;  // steps that measured a divergence
  // Gradient compression (the variant's "compression"): bytes of the values the worker's
  // compressed exchanges were asked to move, bytes of what they moved instead (before the
  // collectives' own traffic), and seconds spent compressing and decompressing. Zero without.
  int64_t compressDenseBytes = 0;
  int64_t compressPayloadBytes = 0;
  double compressSeconds = 0.0;

  void add(const StepMetrics& step);
  void merge(const ExchangeTotals& other);
};

// The strategy a run trained in one process names (dtlab-cli train, the single-replica
// baseline); a distributed run names its variant's strategy.
inline constexpr std::string_view kSingleProcessStrategy = "single";

// What a run ended with: `dtlab-cli` prints it per run, the project stores it.
struct RunSummary {
  std::string name;
  std::string strategy;
  RunStatus status = RunStatus::kRunning;
  StopReason stopReason = StopReason::kNone;
  std::string error;  // when failed
  double wallS = 0.0;
  int64_t steps = 0;
  int64_t samples = 0;
  double samplesPerS = 0.0;
  std::optional<double> finalTestAccuracy;
  std::optional<double> finalTestLoss;
  std::optional<double> timeToTargetS;
  double meanUtilization = 0.0;
  double meanWaitFraction = 0.0;
  std::string partition;            // the variant's ("" for a single-process run)
  int64_t nodes = 1;                // workers the run had
  std::vector<double> utilization;  // per worker: compute / step wall time
  int64_t rebalances = 0;           // speed_proportional: times the shares moved
  int64_t switches = 0;             // hybrid: times the run switched between sync and async
  // Lost nodes the run survived (on_node_loss "continue" or "restart"), the time from each
  // node's last report to the run training again without it, summed, and the steps a restart
  // took again (from its checkpoint to where the lost group had got).
  int64_t recoveries = 0;
  double recoveryS = 0.0;
  int64_t stepsLost = 0;
  double meanStaleness = 0.0;  // over every worker's steps
  double maxStaleness = 0.0;
  std::vector<int64_t> stalenessHistogram;  // as ExchangeTotals
  // Bytes in and out of the workers' links (collectives, pushes, pulls) per sample trained.
  double bytesPerSample = 0.0;
  // Compressed runs: bytes of the values compressed over bytes sent instead, and the time a
  // worker spent compressing per step (ExchangeTotals).
  std::optional<double> compressionRatio;
  std::optional<double> compressMsPerStep;
  std::optional<double> meanDivergence;  // asynchronous modes only
  bool contended = false;  // more busy worker threads than cores on a host (a contention event)
  std::vector<std::string> paramChecksum;  // one per replica
  std::vector<int64_t> peakMemBytes;       // peak resident memory per worker (0: unknown)
  std::vector<RunEvent> events;
};

// Fills the summary's staleness, communication and divergence figures from the merged totals
// of its workers; `samples` is the run's.
void summarizeExchange(const ExchangeTotals& totals, RunSummary& summary);

nlohmann::json toJson(const RunSummary& summary);
nlohmann::json toJson(const RunEvent& event);

// A checkpoint in its stored form (core/train/checkpoint.h: encodeCheckpoint's bytes), as a
// node sent it. Shared, never copied: a large model's is hundreds of MB.
struct EncodedCheckpoint {
  int64_t step = 0;
  double wallMs = 0.0;
  std::shared_ptr<const std::vector<unsigned char>> bytes;
};

// Receives a run's metrics as they happen. Called on the training thread: an
// implementation must be quick (queue, don't write files here).
class MetricSink {
 public:
  virtual ~MetricSink() = default;
  virtual void onStep(const StepMetrics& /*metrics*/) {}
  virtual void onEval(const EvalMetrics& /*metrics*/) {}
  virtual void onNode(const NodeMetrics& /*metrics*/) {}
  virtual void onEvent(const RunEvent& /*event*/) {}
  // A checkpoint of the run (core/train/checkpoint.h), taken by rank 0 as the spec's
  // training.checkpoint_every / checkpoint_seconds ask.
  virtual void onCheckpoint(const Checkpoint& /*checkpoint*/) {}
  // The same, already encoded and checked (the coordinator's: it stores what the node sent).
  virtual void onEncodedCheckpoint(const EncodedCheckpoint& /*checkpoint*/) {}
  // A parameter-server worker's pushes, as the server applied them, and the versions its
  // replica ended on (core/train/push_record.h): the record a replay follows.
  virtual void onPush(const PushRecord& /*push*/) {}
  virtual void onReplica(const ReplicaRecord& /*replica*/) {}
  virtual void onReset(const ResetRecord& /*reset*/) {}
  // The same records already encoded (a chunk of encodePsRecords, as a node sends them).
  virtual void onPsRecords(std::span<const unsigned char> /*chunk*/) {}
};

}  // namespace dtlab::core
