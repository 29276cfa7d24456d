#pragma once

// The metric table: every metric DTLab measures, with its name, unit and scope, in one place.
// The wire format, the project store, the CLI and the charts read
// names, units and kinds from here; adding a metric is a field in its record below, one row
// in kMetricTable, and the code that measures it. Plain C++, no dependencies: the store and
// remote/ include it without core/train.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dtlab::core {

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
  // The part of waitMs after the last rank's backward ended: communication nothing hid (the
  // rest of the wait is for slower peers' compute). Synchronous all-reduce only (NaN: not
  // measured); a step's figure is known once the next step's control block arrives.
  double tailMs = std::numeric_limits<double>::quiet_NaN();
  double utilization = 0.0;  // computeMs / stepMs
  double batchShare = 1.0;
  double staleness = 0.0;
  double bytesSent = 0.0;      // payload bytes this worker's step sent (collectives, pushes)
  double bytesReceived = 0.0;  // and received (collectives, pulls)
  // Relative L2 distance between the weights the worker computed its gradient on and the
  // server's copy when it next pulled (parameter-server modes; NaN: not measured). It
  // includes the worker's own update, so a lone worker's figure is the baseline: the update
  // size; what others pushed in between adds to it.
  double divergence = std::numeric_limits<double>::quiet_NaN();
  // Checkpoints (NaN on steps without one): how long the training thread was held taking the
  // checkpoint that came just before this step (the snapshot of the state, and any wait for
  // the previous one's write), and how long writing the newest one finished since took off
  // the training thread (encoding it and handing it to the store or the node's stream).
  double checkpointStallMs = std::numeric_limits<double>::quiet_NaN();
  double checkpointWriteMs = std::numeric_limits<double>::quiet_NaN();
};

// One node's resource use over a sampling interval (the node daemon samples its process).
struct NodeMetrics {
  int node = 0;      // the node's rank in the run
  int64_t step = 0;  // the node's latest step when sampled (0 before the first)
  double wallMs = 0.0;
  double cpuUtil = 0.0;  // share of all the node's cores
  // The node's GPU, when its worker trains on one (NaN on a CPU worker: not measured).
  double gpuUtil = std::numeric_limits<double>::quiet_NaN();
  double memBytes = 0.0;  // resident bytes of the node's process
  double gpuMemBytes = std::numeric_limits<double>::quiet_NaN();
};

// A run-level evaluation of the model on the test split.
struct EvalMetrics {
  int64_t step = 0;
  double wallMs = 0.0;
  double testLoss = 0.0;
  double testAccuracy = 0.0;                                         // NaN for regression
  double testPerplexity = std::numeric_limits<double>::quiet_NaN();  // token kinds only
};

// Whose series a metric is: one per worker, one per node, or one for the run.
enum class MetricScope { kWorker, kNode, kRun };

struct MetricInfo {
  std::string_view name;  // the series key everywhere (store, wire, CSV, charts)
  std::string_view unit;  // "" for plain numbers and ratios
  MetricScope scope;
  std::string_view description;
  // Where the value sits in the record of its scope (exactly one is set).
  double StepMetrics::*worker = nullptr;
  double NodeMetrics::*node = nullptr;
  double EvalMetrics::*run = nullptr;
};

// A value that is NaN was not measured (accuracy of a regression): it gets no point.
inline constexpr std::array<MetricInfo, 22> kMetricTable = {{
    {"loss", "", MetricScope::kWorker, "training loss of the worker's batch", &StepMetrics::loss},
    {"samples_per_s", "samples/s", MetricScope::kWorker, "samples the worker trained per second",
     &StepMetrics::samplesPerS},
    {"step_ms", "ms", MetricScope::kWorker, "wall time of the worker's step", &StepMetrics::stepMs},
    {"compute_ms", "ms", MetricScope::kWorker, "batch preparation, forward, backward and update",
     &StepMetrics::computeMs},
    {"comm_ms", "ms", MetricScope::kWorker, "time in communication, hidden or not",
     &StepMetrics::commMs},
    {"wait_ms", "ms", MetricScope::kWorker, "time blocked on peers or servers",
     &StepMetrics::waitMs},
    {"tail_ms", "ms", MetricScope::kWorker,
     "the part of the wait after the last worker's backward ended: communication nothing hid "
     "(synchronous all-reduce)",
     &StepMetrics::tailMs},
    {"utilization", "", MetricScope::kWorker, "compute_ms / step_ms", &StepMetrics::utilization},
    {"batch_share", "", MetricScope::kWorker, "the worker's share of the global batch",
     &StepMetrics::batchShare},
    {"staleness", "versions", MetricScope::kWorker,
     "server version at push minus the version pulled", &StepMetrics::staleness},
    {"bytes_sent", "bytes", MetricScope::kWorker, "payload bytes the worker's step sent",
     &StepMetrics::bytesSent},
    {"bytes_received", "bytes", MetricScope::kWorker, "payload bytes the worker's step received",
     &StepMetrics::bytesReceived},
    {"divergence", "", MetricScope::kWorker,
     "relative L2 distance of the weights the worker computed on from the server copy at its "
     "next pull (parameter-server modes; includes its own update)",
     &StepMetrics::divergence},
    {"checkpoint_stall_ms", "ms", MetricScope::kWorker,
     "time the training thread was held by the checkpoint taken before this step",
     &StepMetrics::checkpointStallMs},
    {"checkpoint_write_ms", "ms", MetricScope::kWorker,
     "time a checkpoint's write took off the training thread (encoding, handing it over)",
     &StepMetrics::checkpointWriteMs},
    {"cpu_util", "", MetricScope::kNode, "CPU use of the node's process, share of all cores",
     nullptr, &NodeMetrics::cpuUtil},
    {"gpu_util", "", MetricScope::kNode,
     "share of the interval the node's GPU was busy (NVML, else the worker's measured kernel "
     "time)",
     nullptr, &NodeMetrics::gpuUtil},
    {"mem_bytes", "bytes", MetricScope::kNode, "resident memory of the node's process", nullptr,
     &NodeMetrics::memBytes},
    {"gpu_mem_bytes", "bytes", MetricScope::kNode,
     "device memory in use on the node's GPU (all processes on it)", nullptr,
     &NodeMetrics::gpuMemBytes},
    {"test_loss", "", MetricScope::kRun, "loss on the test split", nullptr, nullptr,
     &EvalMetrics::testLoss},
    {"test_accuracy", "", MetricScope::kRun,
     "accuracy on the test split (classification; per token for sequence kinds)", nullptr, nullptr,
     &EvalMetrics::testAccuracy},
    {"test_perplexity", "", MetricScope::kRun,
     "exp(test_loss): the model's perplexity per token (sequence kinds)", nullptr, nullptr,
     &EvalMetrics::testPerplexity},
}};

// The table's rows of one scope, in table order: the order values travel in on the wire.
std::span<const MetricInfo* const> metricsOf(MetricScope scope);

// The record type of each scope, for code that handles every metric alike:
//   for (const MetricInfo* m : metricsOf(scopeOf<R>())) use(record.*fieldOf<R>(*m));
template <typename Record>
constexpr MetricScope scopeOf();
template <>
constexpr MetricScope scopeOf<StepMetrics>() {
  return MetricScope::kWorker;
}
template <>
constexpr MetricScope scopeOf<NodeMetrics>() {
  return MetricScope::kNode;
}
template <>
constexpr MetricScope scopeOf<EvalMetrics>() {
  return MetricScope::kRun;
}
template <typename Record>
constexpr double Record::*fieldOf(const MetricInfo& m) {
  if constexpr (std::is_same_v<Record, StepMetrics>) return m.worker;
  if constexpr (std::is_same_v<Record, NodeMetrics>) return m.node;
  if constexpr (std::is_same_v<Record, EvalMetrics>) return m.run;
}
// The row named `name`, or null.
const MetricInfo* findMetric(std::string_view name);
const char* toString(MetricScope scope);  // "worker", "node", "run"

// Metric names for code that refers to one metric by name (a chart's default, a summary).
namespace metric {
inline constexpr const char* kLoss = "loss";
inline constexpr const char* kSamplesPerS = "samples_per_s";
inline constexpr const char* kStepMs = "step_ms";
inline constexpr const char* kComputeMs = "compute_ms";
inline constexpr const char* kCommMs = "comm_ms";
inline constexpr const char* kWaitMs = "wait_ms";
inline constexpr const char* kTailMs = "tail_ms";
inline constexpr const char* kBatchShare = "batch_share";
inline constexpr const char* kStaleness = "staleness";
inline constexpr const char* kBytesSent = "bytes_sent";
inline constexpr const char* kBytesReceived = "bytes_received";
inline constexpr const char* kDivergence = "divergence";
inline constexpr const char* kCheckpointStallMs = "checkpoint_stall_ms";
inline constexpr const char* kCheckpointWriteMs = "checkpoint_write_ms";
inline constexpr const char* kTestLoss = "test_loss";
inline constexpr const char* kTestAccuracy = "test_accuracy";
inline constexpr const char* kTestPerplexity = "test_perplexity";
inline constexpr const char* kCpuUtil = "cpu_util";
inline constexpr const char* kGpuUtil = "gpu_util";
inline constexpr const char* kGpuMemBytes = "gpu_mem_bytes";
}  // namespace metric

// Whether only a worker training on a GPU has this metric (a CPU run records no points of it).
constexpr bool gpuOnly(const MetricInfo& m) {
  return m.name == metric::kGpuUtil || m.name == metric::kGpuMemBytes;
}

// Whether only a run on a sequence dataset (a token kind) measures it.
constexpr bool sequenceOnly(const MetricInfo& m) {
  return m.name == metric::kTestPerplexity;
}

// Whether only the rank that keeps checkpoints (rank 0) records it, at the steps around them (a
// run without checkpoints has no points of it).
constexpr bool checkpointOnly(const MetricInfo& m) {
  return m.name == metric::kCheckpointStallMs || m.name == metric::kCheckpointWriteMs;
}

}  // namespace dtlab::core
