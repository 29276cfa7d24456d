#include "core/store/csv_export.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "core/store/project_store.h"

namespace dtlab::core {
namespace {

template <typename T>
std::string number(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) return {};
  }
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : std::string();
}

std::string optionalNumber(const std::optional<double>& v) {
  return v ? number(*v) : std::string();
}

// Metric values are float32 in the store; printed as float they read "0.1", not
// "0.10000000149011612", and still read back to the stored value.
std::string metricValue(const std::optional<RunMetric>& m, double RunMetric::*field) {
  return m ? number(static_cast<float>((*m).*field)) : std::string();
}

std::optional<double> summaryNumber(const std::optional<nlohmann::json>& summary,
                                    const char* field) {
  if (!summary || !summary->contains(field) || !(*summary)[field].is_number()) return std::nullopt;
  return (*summary)[field].get<double>();
}

}  // namespace

std::string csvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

void writeRunsCsv(ProjectStore& store, std::ostream& out) {
  out << "run_id,name,experiment_id,strategy,seed,status,started_ms,ended_ms,program_version,"
         "steps,final_loss,final_test_loss,final_test_accuracy,best_test_accuracy,"
         "samples_per_s,wall_s,time_to_target_s,error\n";
  for (const RunRecord& r : store.runs()) {
    std::optional<RunMetric> loss, testLoss, testAccuracy;
    for (const RunMetric& m : store.runMetrics(r.id)) {
      if (m.key == metric::kLoss) loss = m;
      if (m.key == metric::kTestLoss) testLoss = m;
      if (m.key == metric::kTestAccuracy) testAccuracy = m;
    }
    const std::optional<nlohmann::json> summary = store.runSummary(r.id);
    std::optional<double> steps = summaryNumber(summary, "steps");
    if (!steps && loss) steps = static_cast<double>(loss->lastStep);
    out << r.id << ',' << csvField(r.name) << ','
        << (r.experimentId ? std::to_string(*r.experimentId) : "") << ',' << csvField(r.strategy)
        << ',' << r.seed << ',' << csvField(toString(r.status)) << ',' << r.startedMs << ','
        << (r.endedMs ? std::to_string(*r.endedMs) : "") << ',' << csvField(r.programVersion) << ','
        << optionalNumber(steps) << ',' << metricValue(loss, &RunMetric::lastValue) << ','
        << metricValue(testLoss, &RunMetric::lastValue) << ','
        << metricValue(testAccuracy, &RunMetric::lastValue) << ','
        << metricValue(testAccuracy, &RunMetric::maxValue) << ','
        << optionalNumber(summaryNumber(summary, "samples_per_s")) << ','
        << optionalNumber(summaryNumber(summary, "wall_s")) << ','
        << optionalNumber(summaryNumber(summary, "time_to_target_s")) << ',' << csvField(r.error)
        << '\n';
  }
}

void writeSeriesCsv(ProjectStore& store, int64_t runId, std::ostream& out,
                    const std::vector<std::string>& keys) {
  store.requireRun(runId);
  out << "run_id,node,worker,key,step,wall_ms,value\n";
  for (const SeriesInfo& s : store.series(runId)) {
    if (!keys.empty() && std::find(keys.begin(), keys.end(), s.key) == keys.end()) continue;
    const std::string prefix = std::to_string(runId) + ',' + std::to_string(s.node) + ',' +
                               std::to_string(s.worker) + ',' + csvField(s.key) + ',';
    for (const SeriesPoint& p : store.readSeries(s.id)) {
      // Float32 values printed as float (see metricValue).
      out << prefix << p.step << ',' << number(p.wallMs) << ','
          << number(static_cast<float>(p.value)) << '\n';
    }
  }
}

}  // namespace dtlab::core
