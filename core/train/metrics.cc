#include "core/train/metrics.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace dtlab::core {
namespace {
nlohmann::json optionalNumber(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}
}  // namespace

nlohmann::json toJson(const RunEvent& event) {
  return {{"step", event.step},
          {"wall_ms", event.wallMs},
          {"kind", event.kind},
          {"detail", event.detail}};
}

nlohmann::json toJson(const RunSummary& s) {
  nlohmann::json events = nlohmann::json::array();
  for (const RunEvent& e : s.events) events.push_back(toJson(e));
  nlohmann::json out = {{"name", s.name},
                        {"strategy", s.strategy},
                        {"status", s.status},
                        {"stop_reason", s.stopReason},
                        {"wall_s", s.wallS},
                        {"steps", s.steps},
                        {"samples", s.samples},
                        {"samples_per_s", s.samplesPerS},
                        {"final_test_accuracy", optionalNumber(s.finalTestAccuracy)},
                        {"final_test_loss", optionalNumber(s.finalTestLoss)},
                        {"time_to_target_s", optionalNumber(s.timeToTargetS)},
                        {"mean_utilization", s.meanUtilization},
                        {"mean_wait_fraction", s.meanWaitFraction},
                        {"param_checksum", s.paramChecksum},
                        {"events", events}};
  if (!s.error.empty()) out["error"] = s.error;
  return out;
}

}  // namespace dtlab::core
