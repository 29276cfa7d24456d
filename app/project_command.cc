#include "app/project_command.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "core/metrics/metric_table.h"
#include "core/spec/spec_json.h"
#include "core/store/csv_export.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/store/trace_export.h"

namespace dtlab::app {
namespace {

using core::ProjectStore;

// Args knows only `--flags`; the commands take `-o FILE` as well. Any other
// single-dash word is refused here rather than taken for a positional.
std::vector<std::string> normalizeShortFlags(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (const std::string& a : argv) {
    if (a == "-o") {
      out.push_back("--output");
    } else if (a.size() > 1 && a[0] == '-' && a[1] != '-') {
      throw UsageError("unknown option " + a);
    } else {
      out.push_back(a);
    }
  }
  return out;
}

const char* plural(core::EntityKind kind) {
  switch (kind) {
    case core::EntityKind::kDataset:
      return "datasets";
    case core::EntityKind::kTopology:
      return "topologies";
    case core::EntityKind::kExperiment:
      return "experiments";
  }
  return "entities";
}

std::string formatTime(int64_t epochMs) {
  const std::time_t seconds = static_cast<std::time_t>(epochMs / 1000);
  std::tm local{};
  localtime_r(&seconds, &local);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S", &local);
  return buffer;
}

std::string formatNumber(double v, int precision = 4) {
  if (std::isnan(v)) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*g", precision, v);
  return buffer;
}

nlohmann::json jsonNumber(double v) {
  if (std::isnan(v)) return nullptr;
  return v;
}

// What a run listing shows, from run_metrics and the stored summary (no point is read).
struct RunLine {
  core::RunRecord run;
  std::optional<int64_t> steps;
  double finalLoss = std::nan("");
  double testAccuracy = std::nan("");
  double bestTestAccuracy = std::nan("");
  double samplesPerS = std::nan("");
};

RunLine runLine(ProjectStore& store, const core::RunRecord& r) {
  RunLine line;
  line.run = r;
  for (const core::RunMetric& m : store.runMetrics(r.id)) {
    if (m.key == core::metric::kLoss) {
      line.steps = m.lastStep;
      line.finalLoss = m.lastValue;
    } else if (m.key == core::metric::kTestAccuracy) {
      line.testAccuracy = m.lastValue;
      line.bestTestAccuracy = m.maxValue;
    }
  }
  if (const std::optional<nlohmann::json> summary = store.runSummary(r.id)) {
    if (summary->contains("steps") && (*summary)["steps"].is_number())
      line.steps = (*summary)["steps"].get<int64_t>();
    if (summary->contains("samples_per_s") && (*summary)["samples_per_s"].is_number())
      line.samplesPerS = (*summary)["samples_per_s"].get<double>();
  }
  return line;
}

nlohmann::json toJson(const RunLine& l) {
  return {{"id", l.run.id},
          {"name", l.run.name},
          {"strategy", l.run.strategy},
          {"status", core::toString(l.run.status)},
          {"seed", l.run.seed},
          {"experiment_id", l.run.experimentId ? nlohmann::json(*l.run.experimentId) : nullptr},
          {"execution_id", l.run.executionId ? nlohmann::json(*l.run.executionId) : nullptr},
          {"repetition", l.run.executionId ? nlohmann::json(l.run.repetition) : nullptr},
          {"started_ms", l.run.startedMs},
          {"ended_ms", l.run.endedMs ? nlohmann::json(*l.run.endedMs) : nullptr},
          {"program_version", l.run.programVersion},
          {"steps", l.steps ? nlohmann::json(*l.steps) : nullptr},
          {"final_loss", jsonNumber(l.finalLoss)},
          {"final_test_accuracy", jsonNumber(l.testAccuracy)},
          {"best_test_accuracy", jsonNumber(l.bestTestAccuracy)},
          {"samples_per_s", jsonNumber(l.samplesPerS)},
          {"error", l.run.error}};
}

void printRunTable(const std::vector<RunLine>& lines) {
  if (lines.empty()) {
    std::printf("  (no runs)\n");
    return;
  }
  std::printf("  %4s  %-22s %-16s %-10s %8s %10s %9s %9s %11s  %s\n", "id", "name", "strategy",
              "status", "steps", "final_loss", "test_acc", "best_acc", "samples/s", "started");
  for (const RunLine& l : lines) {
    std::printf("  %4lld  %-22s %-16s %-10s %8s %10s %9s %9s %11s  %s\n",
                static_cast<long long>(l.run.id), l.run.name.c_str(), l.run.strategy.c_str(),
                core::toString(l.run.status), l.steps ? std::to_string(*l.steps).c_str() : "-",
                formatNumber(l.finalLoss).c_str(), formatNumber(l.testAccuracy).c_str(),
                formatNumber(l.bestTestAccuracy).c_str(), formatNumber(l.samplesPerS, 6).c_str(),
                formatTime(l.run.startedMs).c_str());
    if (!l.run.error.empty()) std::printf("        error: %s\n", l.run.error.c_str());
  }
}

std::vector<RunLine> runLines(ProjectStore& store) {
  std::vector<RunLine> lines;
  for (const core::RunRecord& r : store.runs()) lines.push_back(runLine(store, r));
  return lines;
}

// Opens FILE for writing (or stdout when empty) and runs write(out).
template <typename Write>
void writeOutput(const std::string& file, Write&& write) {
  if (file.empty() || file == "-") {
    write(std::cout);
    std::cout.flush();
    return;
  }
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw core::StoreError(file + ": cannot write: " + std::strerror(errno));
  write(out);
  out.flush();
  if (!out) throw core::StoreError(file + ": write failed: " + std::strerror(errno));
}

int projectNew(const std::vector<std::string>& argv) {
  const Args args(argv, {"--name"}, {});
  if (args.positionals().size() != 1) throw UsageError("new: expected one P.dtlab");
  const std::string& path = args.positionals()[0];
  ProjectStore::create(path, args.value("--name", ""));
  std::fprintf(stderr, "created project %s\n", path.c_str());
  return 0;
}

// The spec's dataset, cluster and experiment as entities the window's editors open (each named
// --name, else the spec's name; one of that name already there is replaced). Nothing runs.
int projectAdd(const std::vector<std::string>& argv) {
  const Args args(argv, {"--name"}, {});
  if (args.positionals().size() != 2) throw UsageError("add: expected P.dtlab SPEC.json");
  const core::ExperimentSpec spec = core::loadExperimentSpec(args.positionals()[1]);
  const nlohmann::json json = core::toJson(spec);
  const std::string name = args.value("--name", spec.name);
  if (name.empty()) throw UsageError("--name: empty");
  const std::string& path = args.positionals()[0];
  auto store = std::filesystem::exists(path) ? ProjectStore::open(path)
                                             : ProjectStore::create(path, spec.name);
  store->putEntity(core::EntityKind::kDataset, name, json.at("dataset"));
  store->putEntity(core::EntityKind::kTopology, name, json.at("cluster"));
  store->putEntity(core::EntityKind::kExperiment, name, json);
  std::fprintf(stderr, "added dataset, topology and experiment '%s' to %s\n", name.c_str(),
               path.c_str());
  return 0;
}

int projectList(const std::vector<std::string>& argv) {
  const Args args(argv, {}, {"--json"});
  if (args.positionals().size() != 1) throw UsageError("list: expected one P.dtlab");
  auto store = ProjectStore::open(args.positionals()[0]);
  const std::vector<RunLine> lines = runLines(*store);
  if (args.has("--json")) {
    nlohmann::json runs = nlohmann::json::array();
    for (const RunLine& l : lines) runs.push_back(toJson(l));
    std::printf("%s\n", nlohmann::json{{"project", store->path()}, {"runs", runs}}.dump().c_str());
    return 0;
  }
  std::printf("%s: %zu run%s\n", store->path().c_str(), lines.size(), lines.size() == 1 ? "" : "s");
  printRunTable(lines);
  return 0;
}

int showProject(ProjectStore& store, bool json) {
  const std::map<std::string, std::string> meta = store.metadata();
  const std::vector<RunLine> lines = runLines(store);
  const std::vector<core::EntityKind> kinds = {
      core::EntityKind::kDataset, core::EntityKind::kTopology, core::EntityKind::kExperiment};
  if (json) {
    nlohmann::json out = {
        {"project", store.path()}, {"schema_version", store.schemaVersion()}, {"metadata", meta}};
    for (core::EntityKind kind : kinds) {
      nlohmann::json list = nlohmann::json::array();
      for (const core::Entity& e : store.entities(kind))
        list.push_back({{"id", e.id},
                        {"name", e.name},
                        {"config", e.config},
                        {"created_ms", e.createdMs},
                        {"updated_ms", e.updatedMs}});
      out[plural(kind)] = list;
    }
    nlohmann::json runs = nlohmann::json::array();
    for (const RunLine& l : lines) runs.push_back(toJson(l));
    out["runs"] = runs;
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("project %s\n", store.path().c_str());
  for (const auto& [key, value] : meta)
    std::printf("  %-14s %s\n", key.c_str(),
                key == "created_ms" ? (value + " (" + formatTime(std::stoll(value)) + ")").c_str()
                                    : value.c_str());
  std::printf("  %-14s %d\n", "schema", store.schemaVersion());
  for (core::EntityKind kind : kinds) {
    const std::vector<core::Entity> list = store.entities(kind);
    std::printf("%s: %zu\n", plural(kind), list.size());
    for (const core::Entity& e : list)
      std::printf("  %4lld  %s\n", static_cast<long long>(e.id), e.name.c_str());
  }
  std::printf("runs: %zu\n", lines.size());
  printRunTable(lines);
  return 0;
}

// Units and scopes come from the metric table; a key it does not know (a file written by a
// newer version) shows without them.
std::string_view unitOf(const std::string& key) {
  const core::MetricInfo* m = core::findMetric(key);
  return m != nullptr ? m->unit : std::string_view();
}
const char* scopeOf(const std::string& key) {
  const core::MetricInfo* m = core::findMetric(key);
  return m != nullptr ? core::toString(m->scope) : "?";
}

int showRun(ProjectStore& store, int64_t runId, bool json) {
  const core::RunRecord r = store.requireRun(runId);
  const RunLine line = runLine(store, r);
  const std::vector<core::RunMetric> metrics = store.runMetrics(runId);
  const std::vector<core::SeriesInfo> series = store.series(runId);
  const std::vector<core::RunEvent> events = store.events(runId);
  const std::optional<nlohmann::json> summary = store.runSummary(runId);
  if (json) {
    nlohmann::json out = toJson(line);
    out["spec"] = r.spec;
    out["summary"] = summary ? *summary : nlohmann::json(nullptr);
    nlohmann::json m = nlohmann::json::array();
    for (const core::RunMetric& x : metrics)
      m.push_back({{"key", x.key},
                   {"unit", std::string(unitOf(x.key))},
                   {"scope", scopeOf(x.key)},
                   {"count", x.count},
                   {"last_step", x.lastStep},
                   {"last_wall_ms", x.lastWallMs},
                   {"last", jsonNumber(x.lastValue)},
                   {"min", jsonNumber(x.minValue)},
                   {"max", jsonNumber(x.maxValue)}});
    out["metrics"] = m;
    nlohmann::json s = nlohmann::json::array();
    for (const core::SeriesInfo& x : series)
      s.push_back({{"id", x.id},
                   {"key", x.key},
                   {"node", x.node},
                   {"worker", x.worker},
                   {"points", x.count},
                   {"min_step", x.minStep},
                   {"max_step", x.maxStep}});
    out["series"] = s;
    nlohmann::json e = nlohmann::json::array();
    for (const core::RunEvent& x : events) e.push_back(core::toJson(x));
    out["events"] = e;
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("run %lld: %s\n", static_cast<long long>(r.id), r.name.c_str());
  std::printf("  strategy %s, seed %llu, status %s", r.strategy.c_str(),
              static_cast<unsigned long long>(r.seed), core::toString(r.status));
  if (r.executionId)
    std::printf(", execution %lld repetition %lld", static_cast<long long>(*r.executionId),
                static_cast<long long>(r.repetition + 1));
  std::printf("\n");
  std::printf("  started %s", formatTime(r.startedMs).c_str());
  if (r.endedMs)
    std::printf(", ended %s (%.1f s)", formatTime(*r.endedMs).c_str(),
                static_cast<double>(*r.endedMs - r.startedMs) / 1000.0);
  std::printf(", recorded by %s\n", r.programVersion.c_str());
  if (!r.error.empty()) std::printf("  error: %s\n", r.error.c_str());
  std::printf("metrics (over all workers / nodes):\n  %-16s %-10s %-7s %10s %10s %12s %12s %12s\n",
              "key", "unit", "scope", "points", "last_step", "last", "min", "max");
  for (const core::RunMetric& m : metrics)
    std::printf("  %-16s %-10s %-7s %10lld %10lld %12s %12s %12s\n", m.key.c_str(),
                std::string(unitOf(m.key)).c_str(), scopeOf(m.key), static_cast<long long>(m.count),
                static_cast<long long>(m.lastStep), formatNumber(m.lastValue, 6).c_str(),
                formatNumber(m.minValue, 6).c_str(), formatNumber(m.maxValue, 6).c_str());
  std::printf("series: %zu\n", series.size());
  for (const core::SeriesInfo& s : series) {
    const std::string where =
        s.node == core::kNoNode
            ? "run"
            : "node " + std::to_string(s.node) +
                  (s.worker == core::kNoWorker ? "" : " worker " + std::to_string(s.worker));
    std::printf("  %6lld  %-16s %-18s %10lld points, steps %lld..%lld\n",
                static_cast<long long>(s.id), s.key.c_str(), where.c_str(),
                static_cast<long long>(s.count), static_cast<long long>(s.minStep),
                static_cast<long long>(s.maxStep));
  }
  std::printf("events: %zu\n", events.size());
  for (const core::RunEvent& e : events)
    std::printf("  step %-8lld %10.1f ms  %-16s %s\n", static_cast<long long>(e.step), e.wallMs,
                e.kind.c_str(), e.detail.c_str());
  if (summary) std::printf("summary: %s\n", summary->dump().c_str());
  return 0;
}

int projectShow(const std::vector<std::string>& argv) {
  const Args args(argv, {}, {"--json"});
  if (args.positionals().empty() || args.positionals().size() > 2)
    throw UsageError("show: expected P.dtlab [RUN]");
  std::optional<int64_t> runId;
  if (args.positionals().size() == 2) runId = parseRunId(args.positionals()[1]);
  auto store = ProjectStore::open(args.positionals()[0]);
  return runId ? showRun(*store, *runId, args.has("--json"))
               : showProject(*store, args.has("--json"));
}

int projectExportCsv(const std::vector<std::string>& argv) {
  const Args args(argv, {"--output", "--key"}, {});
  if (args.positionals().empty() || args.positionals().size() > 2)
    throw UsageError("export-csv: expected P.dtlab [RUN]");
  std::optional<int64_t> runId;
  if (args.positionals().size() == 2) runId = parseRunId(args.positionals()[1]);
  if (!runId && args.has("--key")) throw UsageError("--key: only with a RUN (series export)");
  auto store = ProjectStore::open(args.positionals()[0]);
  if (runId) store->requireRun(*runId);  // before creating the output file
  const std::string output = args.value("--output", "");
  writeOutput(output, [&](std::ostream& out) {
    if (runId) {
      core::writeSeriesCsv(*store, *runId, out, args.values("--key"));
    } else {
      core::writeRunsCsv(*store, out);
    }
  });
  if (!output.empty() && output != "-") std::fprintf(stderr, "wrote %s\n", output.c_str());
  return 0;
}

int projectDeleteRun(const std::vector<std::string>& argv) {
  const Args args(argv, {}, {"--force"});
  if (args.positionals().size() != 2) throw UsageError("delete-run: expected P.dtlab RUN");
  const int64_t runId = parseRunId(args.positionals()[1]);
  auto store = ProjectStore::open(args.positionals()[0]);
  const core::RunRecord r = store->requireRun(runId);
  store->deleteRun(runId, args.has("--force"));
  std::fprintf(stderr, "deleted run %lld ('%s') from %s\n", static_cast<long long>(runId),
               r.name.c_str(), store->path().c_str());
  return 0;
}

}  // namespace

int projectCommand(const std::vector<std::string>& rawArgv) {
  if (rawArgv.empty()) throw UsageError("expected new, add, list, show, export-csv or delete-run");
  const std::vector<std::string> argv = normalizeShortFlags(rawArgv);
  const std::string& what = argv[0];
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (what == "new") return projectNew(rest);
  if (what == "add") return projectAdd(rest);
  if (what == "list") return projectList(rest);
  if (what == "show") return projectShow(rest);
  if (what == "export-csv") return projectExportCsv(rest);
  if (what == "delete-run") return projectDeleteRun(rest);
  throw UsageError("unknown subcommand '" + what +
                   "' (expected new, add, list, show, export-csv or delete-run)");
}

int exportTraceCommand(const std::vector<std::string>& rawArgv) {
  const Args args(normalizeShortFlags(rawArgv), {"--output", "--from-step", "--to-step"}, {});
  if (args.positionals().size() != 2) throw UsageError("expected P.dtlab RUN [-o trace.json]");
  const int64_t runId = parseRunId(args.positionals()[1]);
  core::TraceOptions options;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (args.has("--from-step")) options.fromStep = args.integer("--from-step", 0, 0, kMax);
  if (args.has("--to-step")) options.toStep = args.integer("--to-step", 0, 0, kMax);
  auto store = ProjectStore::open(args.positionals()[0]);
  const nlohmann::json trace = core::chromeTrace(*store, runId, options);
  const std::string output = args.value("--output", "");
  writeOutput(output, [&](std::ostream& out) { out << trace.dump() << '\n'; });
  if (!output.empty() && output != "-")
    std::fprintf(stderr, "wrote %zu trace events to %s (open it in https://ui.perfetto.dev)\n",
                 trace["traceEvents"].size(), output.c_str());
  return 0;
}

int64_t parseRunId(const std::string& text) {
  int64_t id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size() || id <= 0)
    throw UsageError("RUN: expected a run id (a positive number), got '" + text + "'");
  return id;
}

TrainRecording::TrainRecording(const std::string& projectPath, const core::ExperimentSpec& spec,
                               core::MetricSink* progress, const std::string& strategy,
                               const std::string& runName,
                               std::function<void(const std::string&)> onFailure,
                               std::optional<core::ExecutionSlot> slot) {
  bool created = false;
  store_ = ProjectStore::openOrCreate(projectPath, &created);
  if (created) std::fprintf(stderr, "created project %s\n", projectPath.c_str());
  core::AppenderOptions options;
  options.onFailure = std::move(onFailure);
  recording_ =
      std::make_unique<core::RunRecording>(*store_, spec, strategy, runName, slot, options);
  sink_ = std::make_unique<core::FanOutSink>(
      std::vector<core::MetricSink*>{progress, &recording_->sink()});
}

TrainRecording::TrainRecording(std::unique_ptr<ProjectStore> store, int64_t runId,
                               const core::ExperimentSpec& spec, core::MetricSink* progress,
                               std::function<void(const std::string&)> onFailure)
    : store_(std::move(store)) {
  core::AppenderOptions options;
  options.onFailure = std::move(onFailure);
  recording_ =
      std::make_unique<core::RunRecording>(*store_, runId, spec.training.checkpointsKept, options);
  sink_ = std::make_unique<core::FanOutSink>(
      std::vector<core::MetricSink*>{progress, &recording_->sink()});
}

TrainRecording::~TrainRecording() = default;

core::MetricSink* TrainRecording::sink() {
  return sink_.get();
}

int64_t TrainRecording::runId() const {
  return recording_->runId();
}

bool TrainRecording::finish(const core::RunSummary& summary) {
  try {
    recording_->finish(summary);
    std::fprintf(stderr, "recorded run %lld in %s\n", static_cast<long long>(recording_->runId()),
                 store_->path().c_str());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtlab-cli: recording in %s failed: %s\n", store_->path().c_str(),
                 e.what());
    return false;
  }
}

}  // namespace dtlab::app
