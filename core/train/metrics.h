#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dtlab::core {

// Metric names are the contract between core, store and UI (DESIGN.md, "Metrics").
namespace metric {
inline constexpr const char* kLoss = "loss";
inline constexpr const char* kSamplesPerS = "samples_per_s";
inline constexpr const char* kStepMs = "step_ms";
inline constexpr const char* kComputeMs = "compute_ms";
inline constexpr const char* kCommMs = "comm_ms";
inline constexpr const char* kWaitMs = "wait_ms";
inline constexpr const char* kUtilization = "utilization";
inline constexpr const char* kBatchShare = "batch_share";
inline constexpr const char* kStaleness = "staleness";
inline constexpr const char* kTestLoss = "test_loss";
inline constexpr const char* kTestAccuracy = "test_accuracy";
}  // namespace metric

// One worker's measurements for one training step.
struct StepMetrics {
  int worker = 0;
  int64_t step = 0;
  double wallMs = 0.0;  // since the run started
  double loss = 0.0;
  double samplesPerS = 0.0;
  double stepMs = 0.0;
  double computeMs = 0.0;
  double commMs = 0.0;
  double waitMs = 0.0;
  double utilization = 0.0;  // computeMs / stepMs
  double batchShare = 1.0;
  double staleness = 0.0;
};

struct EvalMetrics {
  int64_t step = 0;
  double wallMs = 0.0;
  double testLoss = 0.0;
  double testAccuracy = 0.0;  // NaN for regression
};

// Event kinds: start, rebalance, strategy_switch, node_lost, cancel, finish.
struct RunEvent {
  int64_t step = 0;
  double wallMs = 0.0;
  std::string kind;
  std::string detail;
};

// How a run (or one rank of it) ended. Their text forms ("completed", "max_steps", ...) are
// what summaries, the wire and the store carry.
enum class RunStatus { kRunning, kCompleted, kCancelled, kFailed };
enum class StopReason {
  kNone,  // still running
  kTargetAccuracy,
  kEpochs,
  kMaxSteps,
  kMaxSeconds,
  kCancelled,
  kError
};
const char* toString(RunStatus status);
const char* toString(StopReason reason);
// Inverses of toString; throw dtlab::Error naming the text and the valid values.
RunStatus parseRunStatus(std::string_view text);
StopReason parseStopReason(std::string_view text);

// What `dtlab-cli` prints per run (DESIGN.md, "Run summary").
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
  std::vector<std::string> paramChecksum;  // one per replica
  std::vector<int64_t> peakMemBytes;       // peak resident memory per worker (0: unknown)
  std::vector<RunEvent> events;
};

nlohmann::json toJson(const RunSummary& summary);
nlohmann::json toJson(const RunEvent& event);

// Receives a run's metrics as they happen. Called on the training thread: an
// implementation must be quick (queue, don't write files here).
class MetricSink {
 public:
  virtual ~MetricSink() = default;
  virtual void onStep(const StepMetrics& /*metrics*/) {}
  virtual void onEval(const EvalMetrics& /*metrics*/) {}
  virtual void onEvent(const RunEvent& /*event*/) {}
};

}  // namespace dtlab::core
