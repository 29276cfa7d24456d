#include "core/analysis/comparison.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "core/common/check.h"
#include "core/common/text_table.h"
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

using Value = ComparisonValue;
using Column = ComparisonColumn;

Value text(const std::string& s) {
  return s.empty() ? Value{} : Value{Value::kText, s};
}
Value integer(const std::optional<int64_t>& v) {
  return v ? Value{Value::kInteger, {}, *v} : Value{};
}
Value number(const std::optional<double>& v) {
  return v ? Value{Value::kNumber, {}, 0, *v} : Value{};
}

constexpr double kMiB = 1024.0 * 1024.0;

constexpr unsigned kSummarised = ComparisonColumn::kSummarised;
constexpr unsigned kRatio = ComparisonColumn::kRatio;

const Column kColumns[] = {
    {"variant", "variant", 0, 1, 0, [](const ComparisonRow& r) { return text(r.variant); }},
    {"run_id", "run", 0, 1, 0, [](const ComparisonRow& r) { return integer(r.runId); }},
    {"repetition", nullptr, 0, 1, 0,
     [](const ComparisonRow& r) { return integer(std::optional<int64_t>(r.repetition)); }},
    {"strategy", "strategy", 0, 1, 0, [](const ComparisonRow& r) { return text(r.strategy); }},
    {"partition", "partition", 0, 1, 0, [](const ComparisonRow& r) { return text(r.partition); }},
    {"nodes", "nodes", 0, 1, 0, [](const ComparisonRow& r) { return integer(r.nodes); }},
    {"status", nullptr, 0, 1, 0, [](const ComparisonRow& r) { return text(toString(r.status)); }},
    {"stop_reason", nullptr, 0, 1, 0,
     [](const ComparisonRow& r) { return text(toString(r.stopReason)); }},
    {"error", nullptr, 0, 1, 0, [](const ComparisonRow& r) { return text(r.error); }},
    {"target_accuracy", nullptr, 0, 1, 0,
     [](const ComparisonRow& r) { return number(r.targetAccuracy); }},
    {"mean_staleness", "staleness mean", 2, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.meanStaleness); }},
    {"max_staleness", "staleness max", 0, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.maxStaleness); }},
    {"mean_divergence", "divergence", -1, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.meanDivergence); }},
    {"time_to_target_s", "to target (s)", 2, 1, kSummarised | kRatio,
     [](const ComparisonRow& r) { return number(r.timeToTargetS); }},
    {"wall_s", "wall (s)", 2, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.wallS); }},
    {"samples_per_s", "samples/s", 0, 1, kSummarised | kRatio,
     [](const ComparisonRow& r) { return number(r.samplesPerS); }},
    {"mean_utilization", "util", 2, 1, kSummarised | kRatio,
     [](const ComparisonRow& r) { return number(r.meanUtilization); }},
    {"mean_wait_fraction", "wait", 2, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.meanWaitFraction); }},
    {"bytes_per_sample", "comm (B/sample)", 0, 1, kSummarised | kRatio,
     [](const ComparisonRow& r) { return number(r.bytesPerSample); }},
    {"compression_ratio", "compression (x)", 1, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.compressionRatio); }},
    {"compress_ms_per_step", "compress (ms/step)", 2, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.compressMsPerStep); }},
    {"peak_mem_bytes", "peak mem (MiB)", 1, kMiB, kSummarised,
     [](const ComparisonRow& r) { return integer(r.peakMemBytes); }},
    {"final_test_accuracy", "test acc", 4, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.finalTestAccuracy); }},
    {"recoveries", "recoveries", 0, 1, kSummarised,
     [](const ComparisonRow& r) { return integer(r.recoveries); }},
    {"recovery_s", "recovery (s)", 2, 1, kSummarised,
     [](const ComparisonRow& r) { return number(r.recoveryS); }},
    {"steps_lost", "steps lost", 0, 1, kSummarised,
     [](const ComparisonRow& r) { return integer(r.stepsLost); }},
    {"outcome", "outcome", 0, 1, 0,
     [](const ComparisonRow& r) { return text(comparisonOutcome(r)); }},
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
    case Value::kNumber:
      return formatComparisonFigure(
          column, v.kind == Value::kInteger ? static_cast<double>(v.integer) : v.number);
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

std::string formatTarget(double target) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", target);
  return buffer;
}

}  // namespace

std::span<const ComparisonColumn> comparisonColumns() {
  return kColumns;
}

std::optional<double> ComparisonColumn::numberOf(const ComparisonRow& row) const {
  const Value v = get(row);
  if (v.kind == Value::kInteger) return static_cast<double>(v.integer);
  if (v.kind == Value::kNumber) return v.number;
  return std::nullopt;
}

std::string formatComparisonFigure(const ComparisonColumn& column, double value) {
  const double x = value / column.scale;
  char buffer[64];
  if (column.decimals < 0)
    std::snprintf(buffer, sizeof(buffer), "%.3g", x);
  else
    std::snprintf(buffer, sizeof(buffer), "%.*f", column.decimals, x);
  return buffer;
}

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
  row.meanStaleness = jsonNumber(s, "mean_staleness");
  row.maxStaleness = jsonNumber(s, "max_staleness");
  row.meanDivergence = jsonNumber(s, "mean_divergence");
  row.timeToTargetS = jsonNumber(s, "time_to_target_s");
  row.samplesPerS = jsonNumber(s, "samples_per_s");
  row.meanUtilization = jsonNumber(s, "mean_utilization");
  row.meanWaitFraction = jsonNumber(s, "mean_wait_fraction");
  row.bytesPerSample = jsonNumber(s, "bytes_per_sample");
  row.compressionRatio = jsonNumber(s, "compression_ratio");
  row.compressMsPerStep = jsonNumber(s, "compress_ms_per_step");
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
                       const std::vector<std::optional<nlohmann::json>>& summaries,
                       std::optional<int64_t> executionId) {
  DTLAB_ENFORCE(runs.size() == summaries.size(), "runs ", runs.size(), " summaries ",
                summaries.size());
  Comparison out;
  out.experiment = experiment.name;
  out.experimentId = experiment.id;
  out.executionId = executionId;
  // Each variant's rows: in an execution, all its runs; outside, its latest run (a variant run
  // again replaces its earlier row).
  std::map<std::string, std::vector<ComparisonRow>> byVariant;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].experimentId != experiment.id || runs[i].executionId != executionId) continue;
    ComparisonRow row = comparisonRow(runs[i], summaries[i], experiment.name);
    row.repetition = runs[i].repetition;
    std::vector<ComparisonRow>& rows = byVariant[row.variant];
    if (!executionId && !rows.empty()) {
      if (rows.front().runId < row.runId) rows.front() = std::move(row);
      continue;
    }
    rows.push_back(std::move(row));
  }
  const auto append = [&out](std::vector<ComparisonRow>& rows) {
    std::stable_sort(rows.begin(), rows.end(), [](const ComparisonRow& a, const ComparisonRow& b) {
      return a.repetition < b.repetition;
    });
    for (ComparisonRow& row : rows) out.rows.push_back(std::move(row));
  };
  if (experiment.config.is_object() && experiment.config.contains("variants") &&
      experiment.config["variants"].is_array()) {
    for (const nlohmann::json& v : experiment.config["variants"]) {
      const auto it = byVariant.find(jsonString(v, "name"));
      if (it == byVariant.end()) continue;
      append(it->second);
      byVariant.erase(it);
    }
  }
  std::vector<std::vector<ComparisonRow>> rest;
  for (auto& [name, rows] : byVariant) rest.push_back(std::move(rows));
  std::sort(rest.begin(), rest.end(),
            [](const auto& a, const auto& b) { return a.front().runId < b.front().runId; });
  for (std::vector<ComparisonRow>& rows : rest) append(rows);
  return out;
}

bool hasRepetitions(const Comparison& c) {
  std::set<std::string> seen;
  for (const ComparisonRow& row : c.rows)
    if (!seen.insert(row.variant).second) return true;
  return false;
}

Entity experimentNamedOrLatest(ProjectStore& store, const std::optional<std::string>& experiment) {
  const std::vector<Entity> experiments = store.entities(EntityKind::kExperiment);
  std::string names;
  for (const Entity& e : experiments) {
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  const std::string known = experiments.empty() ? "it has no experiments" : "experiments: " + names;
  if (experiment) {
    for (const Entity& e : experiments)
      if (e.name == *experiment) return e;
    throw Error("no experiment '" + *experiment + "' in " + store.path() + " (" + known + ")");
  }
  // The most recent experiment is the one that was run last (runs are in id order).
  const std::vector<RunRecord> runs = store.runs();
  for (auto run = runs.rbegin(); run != runs.rend(); ++run)
    for (const Entity& e : experiments)
      if (run->experimentId == e.id) return e;
  throw Error(store.path() + " has no runs of an experiment (" + known + ")");
}

Comparison compareExperiment(ProjectStore& store, const std::optional<std::string>& experiment,
                             std::optional<int64_t> executionId) {
  const bool named = experiment.has_value() || executionId.has_value();
  const std::vector<RunRecord> runs = store.runs();
  std::optional<Entity> chosenEntity;
  if (experiment || !executionId) {
    chosenEntity = experimentNamedOrLatest(store, experiment);
  } else {
    const std::optional<ExecutionRecord> execution = store.execution(*executionId);
    for (const Entity& e : store.entities(EntityKind::kExperiment))
      if (execution && execution->experimentId == e.id) chosenEntity = e;
  }
  const Entity* chosen = chosenEntity ? &*chosenEntity : nullptr;

  std::vector<int64_t> executions;  // the chosen experiment's, oldest first
  for (const ExecutionRecord& e : store.executions())
    if (chosen != nullptr && e.experimentId == chosen->id) executions.push_back(e.id);
  if (executionId) {
    if (chosen == nullptr ||
        std::find(executions.begin(), executions.end(), *executionId) == executions.end()) {
      // Those of the experiment named, else every execution of the project.
      std::string listed;
      for (const ExecutionRecord& e : store.executions())
        if (chosen == nullptr || e.experimentId == chosen->id)
          listed += (listed.empty() ? "" : ", ") + std::to_string(e.id);
      const std::string what =
          chosen == nullptr ? "no execution " + std::to_string(*executionId) + " in " + store.path()
                            : "experiment '" + chosen->name + "' has no execution " +
                                  std::to_string(*executionId);
      throw Error(what + (listed.empty() ? std::string(" (it has none)")
                                         : " (its executions: " + listed + ")"));
    }
  } else if (!executions.empty()) {
    executionId = executions.back();
  }

  std::vector<RunRecord> mine;
  std::vector<std::optional<nlohmann::json>> summaries;
  for (const RunRecord& r : runs) {
    if (r.experimentId != chosen->id || r.executionId != executionId) continue;
    mine.push_back(r);
    summaries.push_back(store.runSummary(r.id));
  }
  if (mine.empty())
    throw Error("experiment '" + chosen->name + "' in " + store.path() + " has no runs yet");
  Comparison out = compareRuns(*chosen, mine, summaries, executionId);
  if (executionId)
    if (const std::optional<ExecutionRecord> e = store.execution(*executionId))
      out.repeats = e->repeats;
  out.project = store.path();
  out.mostRecent = !named;
  return out;
}

namespace {

bool textColumn(std::string_view key) {
  return key == "variant" || key == "strategy" || key == "partition" || key == "outcome";
}

}  // namespace

// The table's first line: the experiment, where it comes from, its size and its target.
std::string comparisonHeading(const Comparison& c, std::size_t variants, int64_t repetitions) {
  std::ostringstream out;
  out << "experiment \"" << c.experiment << "\"";
  if (!c.project.empty()) {
    out << (c.mostRecent ? " (the most recent" : " (");
    if (c.executionId && repetitions > 1)
      out << (c.mostRecent ? ", " : "") << "execution " << *c.executionId;
    out << (c.mostRecent || (c.executionId && repetitions > 1) ? " in " : "in ") << c.project
        << ")";
  }
  out << ": " << variants << (variants == 1 ? " variant" : " variants");
  if (repetitions > 1) out << " x " << repetitions << " repetitions";
  // The target is said once when the rows share it (runs of an edited spec may not; each
  // row's outcome still says whether its own target was reached).
  if (!c.rows.empty() && c.rows.front().targetAccuracy &&
      std::all_of(c.rows.begin(), c.rows.end(), [&](const ComparisonRow& r) {
        return r.targetAccuracy == c.rows.front().targetAccuracy;
      }))
    out << ", target test accuracy " << formatTarget(*c.rows.front().targetAccuracy);
  out << "\n";
  return out.str();
}

std::string comparisonRowsTable(const Comparison& c) {
  std::string out = comparisonHeading(c, c.rows.size(), 1);
  std::vector<const Column*> columns;
  for (const Column& column : kColumns)
    if (column.title != nullptr) columns.push_back(&column);
  std::vector<std::vector<std::string>> cells(c.rows.size() + 1);
  for (const Column* column : columns) cells[0].push_back(column->title);
  for (std::size_t i = 0; i < c.rows.size(); ++i)
    for (const Column* column : columns)
      cells[i + 1].push_back(tableCell(*column, column->get(c.rows[i])));
  std::vector<bool> left;
  for (const Column* column : columns) left.push_back(textColumn(column->key));
  return out + alignedLines(cells, left);
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

nlohmann::json comparisonRowsJson(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ComparisonRow& row : c.rows) {
    nlohmann::json r = nlohmann::json::object();
    for (const Column& column : kColumns) r[column.key] = jsonCell(column.get(row));
    rows.push_back(std::move(r));
  }
  nlohmann::json out = {
      {"project", c.project.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.project)},
      {"experiment", c.experiment},
      {"experiment_id", c.experimentId ? nlohmann::json(*c.experimentId) : nullptr},
      {"execution_id", c.executionId ? nlohmann::json(*c.executionId) : nullptr},
      {"repeats", c.repeats},
      {"most_recent", c.mostRecent},
      {"rows", rows}};
  return out;
}

}  // namespace dtlab::core
