#include "core/metrics/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/common/check.h"
#include "core/common/enum_names.h"

#include <nlohmann/json.hpp>

namespace dtlab::core {
namespace {
nlohmann::json optionalNumber(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

constexpr std::array<std::pair<RunStatus, const char*>, 5> kStatusNames = {{
    {RunStatus::kRunning, "running"},
    {RunStatus::kCompleted, "completed"},
    {RunStatus::kCancelled, "cancelled"},
    {RunStatus::kFailed, "failed"},
    {RunStatus::kInterrupted, "interrupted"},
}};
constexpr std::array<std::pair<StopReason, const char*>, 9> kStopReasonNames = {{
    {StopReason::kNone, ""},
    {StopReason::kTargetAccuracy, "target_accuracy"},
    {StopReason::kEpochs, "epochs"},
    {StopReason::kMaxSteps, "max_steps"},
    {StopReason::kMaxSeconds, "max_seconds"},
    {StopReason::kCancelled, "cancelled"},
    {StopReason::kError, "error"},
    {StopReason::kDiverged, "diverged"},
    {StopReason::kNodeLost, "node_lost"},
}};

}  // namespace

const char* toString(RunStatus status) {
  return enumName(kStatusNames, status, "unknown");
}
const char* toString(StopReason reason) {
  return enumName(kStopReasonNames, reason, "unknown");
}
RunStatus parseRunStatus(std::string_view text) {
  if (const auto status = enumValue(kStatusNames, text)) return *status;
  throw Error(
      detail::concat("unknown run status '", text, "' (valid: ", enumNameList(kStatusNames), ")"));
}
StopReason parseStopReason(std::string_view text) {
  if (const auto reason = enumValue(kStopReasonNames, text)) return *reason;
  throw Error(detail::concat("unknown stop reason '", text,
                             "' (valid: ", enumNameList(kStopReasonNames), ")"));
}
RunStatus readRunStatus(std::string_view text) {
  return enumValue(kStatusNames, text).value_or(RunStatus::kUnknown);
}
StopReason readStopReason(std::string_view text) {
  return enumValue(kStopReasonNames, text).value_or(StopReason::kUnknown);
}

nlohmann::json toJson(const RunEvent& event) {
  nlohmann::json out = {{"step", event.step},
                        {"wall_ms", event.wallMs},
                        {"kind", event.kind},
                        {"detail", event.detail}};
  if (!event.data.empty()) out["data"] = nlohmann::json::parse(event.data, nullptr, false);
  return out;
}

void ExchangeTotals::add(const StepMetrics& step) {
  if (stalenessHistogram.empty()) stalenessHistogram.assign(kStalenessBuckets, 0);
  ++steps;
  const double staleness = std::max(0.0, step.staleness);
  stalenessSum += staleness;
  maxStaleness = std::max(maxStaleness, staleness);
  const auto bucket = static_cast<std::size_t>(
      std::min<double>(std::floor(staleness + 0.5), kStalenessBuckets - 1));
  ++stalenessHistogram[bucket];
  bytesSent += static_cast<int64_t>(step.bytesSent);
  bytesReceived += static_cast<int64_t>(step.bytesReceived);
  if (std::isfinite(step.divergence)) {
    divergenceSum += step.divergence;
    ++divergenceSteps;
  }
}

void ExchangeTotals::merge(const ExchangeTotals& other) {
  if (!other.stalenessHistogram.empty()) {
    stalenessHistogram.resize(std::max(stalenessHistogram.size(), other.stalenessHistogram.size()));
    for (std::size_t i = 0; i < other.stalenessHistogram.size(); ++i)
      stalenessHistogram[i] += other.stalenessHistogram[i];
  }
  steps += other.steps;
  stalenessSum += other.stalenessSum;
  maxStaleness = std::max(maxStaleness, other.maxStaleness);
  bytesSent += other.bytesSent;
  bytesReceived += other.bytesReceived;
  divergenceSum += other.divergenceSum;
  divergenceSteps += other.divergenceSteps;
  compressDenseBytes += other.compressDenseBytes;
  compressPayloadBytes += other.compressPayloadBytes;
  compressSeconds += other.compressSeconds;
}

void summarizeExchange(const ExchangeTotals& t, RunSummary& s) {
  s.meanStaleness = t.steps > 0 ? t.stalenessSum / static_cast<double>(t.steps) : 0.0;
  s.maxStaleness = t.maxStaleness;
  s.stalenessHistogram = t.stalenessHistogram;
  // Trim the empty tail so that a synchronous run's histogram reads [steps].
  while (s.stalenessHistogram.size() > 1 && s.stalenessHistogram.back() == 0)
    s.stalenessHistogram.pop_back();
  s.bytesPerSample = s.samples > 0 ? static_cast<double>(t.bytesSent + t.bytesReceived) /
                                         static_cast<double>(s.samples)
                                   : 0.0;
  s.compressionRatio = t.compressPayloadBytes > 0
                           ? std::optional(static_cast<double>(t.compressDenseBytes) /
                                           static_cast<double>(t.compressPayloadBytes))
                           : std::nullopt;
  s.compressMsPerStep = t.compressPayloadBytes > 0 && t.steps > 0
                            ? std::optional(t.compressSeconds * 1e3 / static_cast<double>(t.steps))
                            : std::nullopt;
  s.meanDivergence = t.divergenceSteps > 0
                         ? std::optional(t.divergenceSum / static_cast<double>(t.divergenceSteps))
                         : std::nullopt;
}

nlohmann::json toJson(const RunSummary& s) {
  nlohmann::json events = nlohmann::json::array();
  for (const RunEvent& e : s.events) events.push_back(toJson(e));
  nlohmann::json out = {{"name", s.name},
                        {"strategy", s.strategy},
                        {"status", toString(s.status)},
                        {"stop_reason", toString(s.stopReason)},
                        {"wall_s", s.wallS},
                        {"steps", s.steps},
                        {"samples", s.samples},
                        {"samples_per_s", s.samplesPerS},
                        {"final_test_accuracy", optionalNumber(s.finalTestAccuracy)},
                        {"final_test_loss", optionalNumber(s.finalTestLoss)},
                        {"time_to_target_s", optionalNumber(s.timeToTargetS)},
                        {"mean_utilization", s.meanUtilization},
                        {"mean_wait_fraction", s.meanWaitFraction},
                        {"utilization", s.utilization},
                        {"nodes", s.nodes},
                        {"rebalances", s.rebalances},
                        {"switches", s.switches},
                        {"recoveries", s.recoveries},
                        {"recovery_s", s.recoveryS},
                        {"steps_lost", s.stepsLost},
                        {"mean_staleness", s.meanStaleness},
                        {"max_staleness", s.maxStaleness},
                        {"staleness_histogram", s.stalenessHistogram},
                        {"bytes_per_sample", s.bytesPerSample},
                        {"compression_ratio", optionalNumber(s.compressionRatio)},
                        {"compress_ms_per_step", optionalNumber(s.compressMsPerStep)},
                        {"mean_divergence", optionalNumber(s.meanDivergence)},
                        {"contended", s.contended},
                        {"param_checksum", s.paramChecksum},
                        {"peak_mem_bytes", s.peakMemBytes},
                        {"events", events}};
  if (!s.partition.empty()) out["partition"] = s.partition;
  if (!s.error.empty()) out["error"] = s.error;
  return out;
}

}  // namespace dtlab::core
