#include "core/store/comparison.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "core/common/check.h"
#include "core/store/csv_export.h"

namespace dtlab::core {
namespace {

// What the table shows for a figure the run does not have.
constexpr const char* kUnknown = "\u2013";

std::optional<double> jsonNumber(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

std::optional<int64_t> jsonInteger(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string jsonString(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// One figure of a row: text, a number, or nothing (missing).
struct Value {
  enum Kind { kMissing, kText, kInteger, kNumber } kind = kMissing;
  std::string text;
  int64_t integer = 0;
  double number = 0.0;
};
Value text(const std::string& s) {
  return s.empty() ? Value{} : Value{Value::kText, s};
}
Value integer(const std::optional<int64_t>& v) {
  return v ? Value{Value::kInteger, {}, *v} : Value{};
}
Value number(const std::optional<double>& v) {
  return v ? Value{Value::kNumber, {}, 0, *v} : Value{};
}

// A column: its machine name (CSV header, JSON key), its heading in the text table with the
// unit (nullptr: not in the table, which has the outcome in words instead), how the table
// shows its numbers (decimals; -1: three significant digits; scale divides first), and how a
// row gives its value.
struct Column {
  const char* key;
  const char* title;
  int decimals;
  double scale;
  Value (*get)(const ComparisonRow&);
};

constexpr double kMiB = 1024.0 * 1024.0;

const Column kColumns[] = {
    {"variant", "variant", 0, 1, [](const ComparisonRow& r) { return text(r.variant); }},
    {"run_id", "run", 0, 1, [](const ComparisonRow& r) { return integer(r.runId); }},
    {"strategy", "strategy", 0, 1, [](const ComparisonRow& r) { return text(r.strategy); }},
    {"partition", "partition", 0, 1, [](const ComparisonRow& r) { return text(r.partition); }},
    {"nodes", "nodes", 0, 1, [](const ComparisonRow& r) { return integer(r.nodes); }},
    {"status", nullptr, 0, 1, [](const ComparisonRow& r) { return text(toString(r.status)); }},
    {"stop_reason", nullptr, 0, 1,
     [](const ComparisonRow& r) { return text(toString(r.stopReason)); }},
    {"error", nullptr, 0, 1, [](const ComparisonRow& r) { return text(r.error); }},
    {"target_accuracy", nullptr, 0, 1,
     [](const ComparisonRow& r) { return number(r.targetAccuracy); }},
    {"mean_staleness", "staleness mean", 2, 1,
     [](const ComparisonRow& r) { return number(r.meanStaleness); }},
    {"max_staleness", "staleness max", 0, 1,
     [](const ComparisonRow& r) { return number(r.maxStaleness); }},
    {"mean_divergence", "divergence", -1, 1,
     [](const ComparisonRow& r) { return number(r.meanDivergence); }},
    {"time_to_target_s", "to target (s)", 2, 1,
     [](const ComparisonRow& r) { return number(r.timeToTargetS); }},
    {"wall_s", "wall (s)", 2, 1, [](const ComparisonRow& r) { return number(r.wallS); }},
    {"samples_per_s", "samples/s", 0, 1,
     [](const ComparisonRow& r) { return number(r.samplesPerS); }},
    {"mean_utilization", "util", 2, 1,
     [](const ComparisonRow& r) { return number(r.meanUtilization); }},
    {"mean_wait_fraction", "wait", 2, 1,
     [](const ComparisonRow& r) { return number(r.meanWaitFraction); }},
    {"bytes_per_sample", "comm (B/sample)", 0, 1,
     [](const ComparisonRow& r) { return number(r.bytesPerSample); }},
    {"peak_mem_bytes", "peak mem (MiB)", 1, kMiB,
     [](const ComparisonRow& r) { return integer(r.peakMemBytes); }},
    {"final_test_accuracy", "test acc", 4, 1,
     [](const ComparisonRow& r) { return number(r.finalTestAccuracy); }},
    {"recoveries", "recoveries", 0, 1,
     [](const ComparisonRow& r) { return integer(r.recoveries); }},
    {"recovery_s", "recovery (s)", 2, 1,
     [](const ComparisonRow& r) { return number(r.recoveryS); }},
    {"steps_lost", "steps lost", 0, 1, [](const ComparisonRow& r) { return integer(r.stepsLost); }},
    {"outcome", "outcome", 0, 1, [](const ComparisonRow& r) { return text(comparisonOutcome(r)); }},
};

std::string tableCell(const Column& column, const Value& v) {
  switch (v.kind) {
    case Value::kMissing:
      return kUnknown;
    case Value::kText:
      return v.text;
    case Value::kInteger:
      if (column.scale == 1) return std::to_string(v.integer);
      [[fallthrough]];
    case Value::kNumber: {
      const double x =
          (v.kind == Value::kInteger ? static_cast<double>(v.integer) : v.number) / column.scale;
      char buffer[64];
      if (column.decimals < 0)
        std::snprintf(buffer, sizeof(buffer), "%.3g", x);
      else
        std::snprintf(buffer, sizeof(buffer), "%.*f", column.decimals, x);
      return buffer;
    }
  }
  return kUnknown;
}

// Numbers in the shortest form that reads back to the same value (as csv_export.cc).
std::string csvCell(const Value& v) {
  char buffer[64];
  switch (v.kind) {
    case Value::kMissing:
      return {};
    case Value::kText:
      return csvField(v.text);
    case Value::kInteger: {
      const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v.integer);
      return ec == std::errc() ? std::string(buffer, end) : std::string();
    }
    case Value::kNumber: {
      const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v.number);
      return ec == std::errc() ? std::string(buffer, end) : std::string();
    }
  }
  return {};
}

nlohmann::json jsonCell(const Value& v) {
  switch (v.kind) {
    case Value::kMissing:
      return nullptr;
    case Value::kText:
      return v.text;
    case Value::kInteger:
      return v.integer;
    case Value::kNumber:
      return v.number;
  }
  return nullptr;
}

// Terminal columns, not bytes: "–" is three bytes of UTF-8 and one column.
std::size_t displayWidth(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string formatTarget(double target) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", target);
  return buffer;
}

}  // namespace

std::string comparisonOutcome(const ComparisonRow& r) {
  if (r.status == RunStatus::kFailed) {
    if (r.stopReason == StopReason::kDiverged) return "diverged: " + r.error;
    return r.error.empty() ? "failed" : "failed: " + r.error;
  }
  if (r.status == RunStatus::kCancelled || r.stopReason == StopReason::kCancelled)
    return "cancelled";
  if (r.status == RunStatus::kRunning) return "running";
  if (r.status == RunStatus::kInterrupted) return r.error.empty() ? "interrupted" : r.error;
  std::string out;
  switch (r.stopReason) {
    case StopReason::kTargetAccuracy:
      return "target reached";
    case StopReason::kMaxSeconds:
      out = "time limit";
      break;
    case StopReason::kMaxSteps:
      out = "step limit";
      break;
    case StopReason::kEpochs:
      out = "epoch limit";
      break;
    case StopReason::kNone:
      out = toString(r.status);
      break;
    default:
      out = toString(r.stopReason);
      break;
  }
  // Only a finished summary can say whether the target was reached.
  if (r.targetAccuracy && r.hasSummary)
    out += r.timeToTargetS ? ", target reached" : ", target not reached";
  return out;
}

std::optional<double> specTargetAccuracy(const nlohmann::json& spec) {
  if (!spec.is_object() || !spec.contains("training")) return std::nullopt;
  const std::optional<double> target = jsonNumber(spec["training"], "target_accuracy");
  return target && *target > 0.0 ? target : std::nullopt;
}

ComparisonRow comparisonRow(const nlohmann::json& s, std::optional<double> targetAccuracy) {
  ComparisonRow row;
  row.hasSummary = s.is_object();
  row.targetAccuracy = targetAccuracy;
  row.variant = jsonString(s, "name");
  row.strategy = jsonString(s, "strategy");
  row.partition = jsonString(s, "partition");
  row.nodes = jsonInteger(s, "nodes");
  row.status = readRunStatus(jsonString(s, "status"));
  row.stopReason = readStopReason(jsonString(s, "stop_reason"));
  row.error = jsonString(s, "error");
  // Summaries written before divergence had a stop reason of its own said so in the error.
  if (row.stopReason == StopReason::kError && row.error.find("diverged") != std::string::npos)
    row.stopReason = StopReason::kDiverged;
  row.meanStaleness = jsonNumber(s, "mean_staleness");
  row.maxStaleness = jsonNumber(s, "max_staleness");
  row.meanDivergence = jsonNumber(s, "mean_divergence");
  row.timeToTargetS = jsonNumber(s, "time_to_target_s");
  row.samplesPerS = jsonNumber(s, "samples_per_s");
  row.meanUtilization = jsonNumber(s, "mean_utilization");
  row.meanWaitFraction = jsonNumber(s, "mean_wait_fraction");
  row.bytesPerSample = jsonNumber(s, "bytes_per_sample");
  row.finalTestAccuracy = jsonNumber(s, "final_test_accuracy");
  row.wallS = jsonNumber(s, "wall_s");
  row.recoveries = jsonInteger(s, "recoveries");
  row.recoveryS = jsonNumber(s, "recovery_s");
  row.stepsLost = jsonInteger(s, "steps_lost");
  // One figure per worker, 0 where a worker could not measure it; the row shows the largest.
  if (row.hasSummary && s.contains("peak_mem_bytes") && s["peak_mem_bytes"].is_array()) {
    int64_t peak = 0;
    for (const nlohmann::json& v : s["peak_mem_bytes"])
      if (v.is_number_integer()) peak = std::max(peak, v.get<int64_t>());
    if (peak > 0) row.peakMemBytes = peak;
  }
  return row;
}

ComparisonRow comparisonRow(const RunRecord& run, const std::optional<nlohmann::json>& summary,
                            const std::string& experimentName) {
  ComparisonRow row =
      comparisonRow(summary ? *summary : nlohmann::json(nullptr), specTargetAccuracy(run.spec));
  row.runId = run.id;
  const std::string prefix = experimentName + "/";
  if (run.name.size() > prefix.size() && run.name.compare(0, prefix.size(), prefix) == 0)
    row.variant = run.name.substr(prefix.size());
  else if (row.variant.empty())
    row.variant = run.name;
  if (row.strategy.empty()) row.strategy = run.strategy;
  // The record's status is the store's word on the run (a summary is written with it); a run
  // that ended without a summary has only the record's status and error.
  row.status = run.status;
  if (row.error.empty()) row.error = run.error;
  return row;
}

Comparison compareRuns(const Entity& experiment, const std::vector<RunRecord>& runs,
                       const std::vector<std::optional<nlohmann::json>>& summaries) {
  DTLAB_ENFORCE(runs.size() == summaries.size(), "runs ", runs.size(), " summaries ",
                summaries.size());
  Comparison out;
  out.experiment = experiment.name;
  out.experimentId = experiment.id;
  // The latest run of each variant: a variant run again replaces its earlier row.
  std::map<std::string, ComparisonRow> latest;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].experimentId != experiment.id) continue;
    ComparisonRow row = comparisonRow(runs[i], summaries[i], experiment.name);
    auto it = latest.find(row.variant);
    if (it == latest.end() || it->second.runId < row.runId)
      latest.insert_or_assign(row.variant, std::move(row));
  }
  if (experiment.config.is_object() && experiment.config.contains("variants") &&
      experiment.config["variants"].is_array()) {
    for (const nlohmann::json& v : experiment.config["variants"]) {
      const auto it = latest.find(jsonString(v, "name"));
      if (it == latest.end()) continue;
      out.rows.push_back(std::move(it->second));
      latest.erase(it);
    }
  }
  std::vector<ComparisonRow> rest;
  for (auto& [name, row] : latest) rest.push_back(std::move(row));
  std::sort(rest.begin(), rest.end(),
            [](const ComparisonRow& a, const ComparisonRow& b) { return a.runId < b.runId; });
  for (ComparisonRow& row : rest) out.rows.push_back(std::move(row));
  return out;
}

Comparison compareExperiment(ProjectStore& store, const std::optional<std::string>& experiment) {
  const std::vector<Entity> experiments = store.entities(EntityKind::kExperiment);
  const std::vector<RunRecord> runs = store.runs();
  std::string names;
  for (const Entity& e : experiments) {
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  const std::string known = experiments.empty() ? "it has no experiments" : "experiments: " + names;

  const Entity* chosen = nullptr;
  if (experiment) {
    for (const Entity& e : experiments)
      if (e.name == *experiment) chosen = &e;
    if (chosen == nullptr)
      throw Error("no experiment '" + *experiment + "' in " + store.path() + " (" + known + ")");
  } else {
    // The most recent experiment is the one that was run last (runs are in id order).
    for (auto run = runs.rbegin(); run != runs.rend() && chosen == nullptr; ++run)
      for (const Entity& e : experiments)
        if (run->experimentId == e.id) chosen = &e;
    if (chosen == nullptr)
      throw Error(store.path() + " has no runs of an experiment to compare (" + known + ")");
  }

  std::vector<RunRecord> mine;
  std::vector<std::optional<nlohmann::json>> summaries;
  for (const RunRecord& r : runs) {
    if (r.experimentId != chosen->id) continue;
    mine.push_back(r);
    summaries.push_back(store.runSummary(r.id));
  }
  if (mine.empty())
    throw Error("experiment '" + chosen->name + "' in " + store.path() + " has no runs yet");
  Comparison out = compareRuns(*chosen, mine, summaries);
  out.project = store.path();
  out.mostRecent = !experiment.has_value();
  return out;
}

std::string comparisonTable(const Comparison& c) {
  std::ostringstream out;
  out << "experiment \"" << c.experiment << "\"";
  if (!c.project.empty())
    out << (c.mostRecent ? " (the most recent in " : " (in ") << c.project << ")";
  out << ": " << c.rows.size() << (c.rows.size() == 1 ? " variant" : " variants");
  // The target is said once when the rows share it (runs of an edited spec may not; each
  // row's outcome still says whether its own target was reached).
  if (!c.rows.empty() && c.rows.front().targetAccuracy &&
      std::all_of(c.rows.begin(), c.rows.end(), [&](const ComparisonRow& r) {
        return r.targetAccuracy == c.rows.front().targetAccuracy;
      }))
    out << ", target test accuracy " << formatTarget(*c.rows.front().targetAccuracy);
  out << "\n";

  std::vector<const Column*> columns;
  for (const Column& column : kColumns)
    if (column.title != nullptr) columns.push_back(&column);
  std::vector<std::vector<std::string>> cells(c.rows.size() + 1);
  for (const Column* column : columns) cells[0].push_back(column->title);
  for (std::size_t i = 0; i < c.rows.size(); ++i)
    for (const Column* column : columns)
      cells[i + 1].push_back(tableCell(*column, column->get(c.rows[i])));
  std::vector<std::size_t> widths(columns.size(), 0);
  for (const auto& line : cells)
    for (std::size_t j = 0; j < line.size(); ++j)
      widths[j] = std::max(widths[j], displayWidth(line[j]));

  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::string line;
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const std::string& cell = cells[i][j];
      const std::string pad(widths[j] - displayWidth(cell), ' ');
      // Text left, figures right (a figure column's heading over its figures); the last
      // column, the outcome, gets no padding after it.
      const std::string_view key = columns[j]->key;
      const bool last = j + 1 == columns.size();
      const bool leftAligned = last || key == "variant" || key == "strategy" || key == "partition";
      if (j > 0) line += "  ";
      line += leftAligned ? (last ? cell : cell + pad) : pad + cell;
    }
    out << "  " << line << "\n";
  }
  return out.str();
}

std::string comparisonCsv(const Comparison& c) {
  std::string out;
  for (const Column& column : kColumns) {
    if (!out.empty()) out += ',';
    out += column.key;
  }
  out += "\n";
  for (const ComparisonRow& row : c.rows) {
    std::string line;
    bool first = true;
    for (const Column& column : kColumns) {
      if (!first) line += ",";
      first = false;
      line += csvCell(column.get(row));
    }
    out += line + "\n";
  }
  return out;
}

nlohmann::json comparisonJson(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ComparisonRow& row : c.rows) {
    nlohmann::json r = nlohmann::json::object();
    for (const Column& column : kColumns) r[column.key] = jsonCell(column.get(row));
    rows.push_back(std::move(r));
  }
  return {{"project", c.project.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.project)},
          {"experiment", c.experiment},
          {"experiment_id", c.experimentId ? nlohmann::json(*c.experimentId) : nullptr},
          {"most_recent", c.mostRecent},
          {"rows", rows}};
}

}  // namespace dtlab::core
