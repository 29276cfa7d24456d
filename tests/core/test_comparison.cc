// The comparison of an experiment's variants (core/analysis/comparison.h): rows from summaries
// written now and by older versions (missing figures stay missing, never 0), why a variant
// stopped, the latest run per variant in the spec's order, choosing the experiment in a real
// project file, and the three formats.
#include <QtTest/QtTest>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis/comparison.h"
#include "core/analysis/comparison_output.h"
#include "core/common/check.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"

using namespace dtlab::core;

namespace {

// A summary as the first versions of DTLab stored it: none of the consistency,
// communication or memory figures, no stop reason, partition or node count.
nlohmann::json oldSummary() {
  return nlohmann::json::parse(R"({
    "name": "equal", "strategy": "sync_allreduce", "status": "completed", "wall_s": 2.5,
    "steps": 100, "samples": 3200, "samples_per_s": 1280.0, "final_test_accuracy": 0.91,
    "time_to_target_s": 1.75, "mean_utilization": 0.8, "mean_wait_fraction": 0.15,
    "param_checksum": ["ab", "ab"], "events": []})");
}

RunSummary newSummary() {
  RunSummary s;
  s.name = "async";
  s.strategy = "async_ps";
  s.status = RunStatus::kCompleted;
  s.stopReason = StopReason::kMaxSeconds;
  s.wallS = 10.0;
  s.samples = 5000;
  s.samplesPerS = 500.25;
  s.finalTestAccuracy = 0.83;
  s.meanUtilization = 0.9;
  s.meanWaitFraction = 0.05;
  s.partition = "equal";
  s.nodes = 3;
  s.meanStaleness = 2.5;
  s.maxStaleness = 7.0;
  s.bytesPerSample = 1234.5;
  s.meanDivergence = 0.0125;
  s.peakMemBytes = {100 << 20, 300 << 20, 0};
  return s;
}

// A line as the characters on screen ("–" is one column and three bytes of UTF-8).
std::vector<std::string> screenChars(const std::string& line) {
  std::vector<std::string> out;
  for (const char c : line) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) out.emplace_back();
    out.back() += c;
  }
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Splits one CSV line (fields here are quoted only when they hold a comma or quote).
std::vector<std::string> csvFields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string csvValue(const std::string& csv, std::size_t row, const std::string& column) {
  const std::vector<std::string> all = lines(csv);
  const std::vector<std::string> header = csvFields(all.at(0));
  const auto at = std::find(header.begin(), header.end(), column);
  if (at == header.end()) return "(no column " + column + ")";
  return csvFields(all.at(row + 1)).at(static_cast<std::size_t>(at - header.begin()));
}

RunRecord record(int64_t id, int64_t experimentId, const std::string& name,
                 RunStatus status = RunStatus::kCompleted, const std::string& error = "") {
  RunRecord r;
  r.id = id;
  r.experimentId = experimentId;
  r.name = name;
  r.strategy = "sync_allreduce";
  r.status = status;
  r.error = error;
  r.spec = {{"training", {{"target_accuracy", 0.9}}}};
  return r;
}

Entity experimentEntity(int64_t id, const std::string& name,
                        const std::vector<std::string>& variants) {
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& v : variants) list.push_back({{"name", v}});
  return {id, name, {{"name", name}, {"variants", list}}, 0, 0};
}

}  // namespace

class TestComparison : public QObject {
  Q_OBJECT
 private slots:
  // An old summary's missing figures are missing in every format, not 0; the figures it has
  // come through unchanged.
  void oldSummaryShowsMissingFiguresAsMissing() {
    const ComparisonRow row = comparisonRow(oldSummary(), 0.9);
    QVERIFY(row.hasSummary);
    QCOMPARE(row.variant, std::string("equal"));
    QCOMPARE(row.samplesPerS, std::optional<double>(1280.0));
    QCOMPARE(row.timeToTargetS, std::optional<double>(1.75));
    QCOMPARE(row.finalTestAccuracy, std::optional<double>(0.91));
    QVERIFY(!row.meanStaleness && !row.maxStaleness && !row.meanDivergence);
    QVERIFY(!row.bytesPerSample && !row.peakMemBytes && !row.nodes);
    QVERIFY(row.partition.empty() && row.stopReason == StopReason::kNone);
    QCOMPARE(comparisonOutcome(row), std::string("completed, target reached"));

    Comparison c;
    c.experiment = "old";
    c.rows = {row};
    const std::string csv = comparisonCsv(c);
    for (const char* column : {"mean_staleness", "max_staleness", "mean_divergence",
                               "bytes_per_sample", "peak_mem_bytes", "nodes", "partition"})
      QCOMPARE(csvValue(csv, 0, column), std::string());
    QCOMPARE(csvValue(csv, 0, "samples_per_s"), std::string("1280"));
    QCOMPARE(csvValue(csv, 0, "mean_wait_fraction"), std::string("0.15"));

    const nlohmann::json json = comparisonJson(c);
    for (const char* key : {"mean_staleness", "max_staleness", "mean_divergence",
                            "bytes_per_sample", "peak_mem_bytes", "nodes", "stop_reason"})
      QVERIFY2(json["rows"][0][key].is_null(), key);
    QCOMPARE(json["rows"][0]["mean_utilization"], nlohmann::json(0.8));

    // In the table: the header's staleness, divergence, comm and memory columns show "–" for
    // this row, right-aligned under their headings.
    const std::vector<std::string> table = lines(comparisonTable(c));
    QCOMPARE(table.size(), std::size_t{3});  // heading, column titles, one row
    const std::vector<std::string> cells = screenChars(table[2]);
    for (const std::string title :
         {"staleness mean", "staleness max", "divergence", "comm (B/sample)", "peak mem (MiB)"}) {
      const std::size_t at = table[1].find(title);
      QVERIFY2(at != std::string::npos, title.c_str());
      // Column titles are ASCII: the byte offset is the screen column.
      const std::size_t last = at + title.size() - 1;
      QVERIFY2(cells.size() > last + 1 && cells[last] == "\u2013" && cells[last + 1] == " " &&
                   cells[last - 1] == " ",
               (title + ": " + table[2]).c_str());
    }
    QVERIFY(table[2].find("1280") != std::string::npos);
  }

  // A summary of today: every figure, peak memory the largest worker's, a worker that could
  // not measure it ignored; all workers unmeasured is missing, not 0.
  void newSummaryGivesEveryFigure() {
    const RunSummary s = newSummary();
    const ComparisonRow row = comparisonRow(toJson(s), 0.9);
    QCOMPARE(row.strategy, std::string("async_ps"));
    QCOMPARE(row.partition, std::string("equal"));
    QCOMPARE(row.nodes, std::optional<int64_t>(3));
    QCOMPARE(row.meanStaleness, std::optional<double>(2.5));
    QCOMPARE(row.maxStaleness, std::optional<double>(7.0));
    QCOMPARE(row.meanDivergence, std::optional<double>(0.0125));
    QCOMPARE(row.bytesPerSample, std::optional<double>(1234.5));
    QCOMPARE(row.peakMemBytes, std::optional<int64_t>(300 << 20));
    QCOMPARE(row.wallS, std::optional<double>(10.0));
    QVERIFY(!row.timeToTargetS);
    QCOMPARE(comparisonOutcome(row), std::string("time limit, target not reached"));

    RunSummary unmeasured = s;
    unmeasured.peakMemBytes = {0, 0};
    unmeasured.meanDivergence.reset();  // a synchronous run: null in the summary
    const ComparisonRow none = comparisonRow(toJson(unmeasured));
    QVERIFY(!none.peakMemBytes);
    QVERIFY(!none.meanDivergence);

    Comparison c;
    c.experiment = "e";
    c.rows = {row};
    const std::string csv = comparisonCsv(c);
    // Shortest round-trip numbers: what the summary holds, read back exactly.
    QCOMPARE(std::stod(csvValue(csv, 0, "samples_per_s")), 500.25);
    QCOMPARE(csvValue(csv, 0, "peak_mem_bytes"), std::to_string(300 << 20));
    QCOMPARE(csvValue(csv, 0, "stop_reason"), std::string("max_seconds"));
    // In the table, memory is in MiB.
    QVERIFY(comparisonTable(c).find("300.0") != std::string::npos);
  }

  // Why a variant stopped, in words, for each way a run ends.
  void outcomeSaysWhy() {
    ComparisonRow r;
    r.hasSummary = true;
    r.status = RunStatus::kFailed;
    r.stopReason = StopReason::kDiverged;
    r.error = "rank 1: loss diverged to nan at step 12";
    QCOMPARE(comparisonOutcome(r), "diverged: " + r.error);
    // The stop reason says it, not the words: an error that mentions divergence is an error.
    r.stopReason = StopReason::kError;
    QCOMPARE(comparisonOutcome(r), "failed: " + r.error);
    r.error = "node1 (127.0.0.1:7001) stopped answering";
    QCOMPARE(comparisonOutcome(r), "failed: " + r.error);
    r.status = RunStatus::kCancelled;
    r.stopReason = StopReason::kCancelled;
    QCOMPARE(comparisonOutcome(r), std::string("cancelled"));
    r.status = RunStatus::kCompleted;
    r.stopReason = StopReason::kTargetAccuracy;
    r.timeToTargetS = 3.0;
    r.targetAccuracy = 0.9;
    QCOMPARE(comparisonOutcome(r), std::string("target reached"));
    r.stopReason = StopReason::kMaxSteps;
    r.timeToTargetS.reset();
    QCOMPARE(comparisonOutcome(r), std::string("step limit, target not reached"));
    r.targetAccuracy.reset();
    r.stopReason = StopReason::kEpochs;
    QCOMPARE(comparisonOutcome(r), std::string("epoch limit"));
    // A run without a summary has only its record's status.
    const ComparisonRow running =
        comparisonRow(record(4, 1, "e/slow", RunStatus::kRunning), std::nullopt, "e");
    QCOMPARE(running.variant, std::string("slow"));
    QVERIFY(!running.hasSummary && !running.samplesPerS);
    QCOMPARE(comparisonOutcome(running), std::string("running"));
    const ComparisonRow lost =
        comparisonRow(record(5, 1, "e/lost", RunStatus::kFailed, "node 1 lost"), std::nullopt, "e");
    QCOMPARE(comparisonOutcome(lost), std::string("failed: node 1 lost"));
  }

  // One row per variant, its latest run, in the spec's order; a variant the spec no longer
  // lists comes after; other experiments' runs are not rows.
  void latestRunPerVariantInSpecOrder() {
    const Entity e = experimentEntity(1, "e", {"sync", "async"});
    nlohmann::json first = oldSummary(), second = oldSummary(), async = oldSummary(),
                   gone = oldSummary(), other = oldSummary();
    first["samples_per_s"] = 100.0;
    second["samples_per_s"] = 200.0;
    async["samples_per_s"] = 300.0;
    gone["samples_per_s"] = 400.0;
    const std::vector<RunRecord> runs = {record(1, 1, "e/sync"), record(2, 1, "e/gone"),
                                         record(3, 1, "e/async"), record(4, 2, "f/sync"),
                                         record(5, 1, "e/sync")};
    const Comparison c = compareRuns(e, runs, {first, gone, async, other, second});
    QCOMPARE(c.rows.size(), std::size_t{3});
    QCOMPARE(c.rows[0].variant, std::string("sync"));
    QCOMPARE(c.rows[0].runId, std::optional<int64_t>(5));
    QCOMPARE(c.rows[0].samplesPerS, std::optional<double>(200.0));
    QCOMPARE(c.rows[1].variant, std::string("async"));
    QCOMPARE(c.rows[2].variant, std::string("gone"));
    QCOMPARE(c.rows[2].targetAccuracy, std::optional<double>(0.9));  // from the run's spec

    const std::string csv = comparisonCsv(c);
    QCOMPARE(lines(csv).size(), std::size_t{4});  // header and one line per variant
    QCOMPARE(csvValue(csv, 0, "run_id"), std::string("5"));
    QCOMPARE(csvValue(csv, 2, "variant"), std::string("gone"));
  }

  // Text that holds commas or quotes is quoted in CSV, and every line has the header's fields.
  void csvQuotesErrors() {
    ComparisonRow r = comparisonRow(oldSummary());
    r.status = RunStatus::kFailed;
    r.error = "bad \"thing\", twice";
    Comparison c;
    c.rows = {r};
    const std::string csv = comparisonCsv(c);
    const std::vector<std::string> all = lines(csv);
    QCOMPARE(csvFields(all[1]).size(), csvFields(all[0]).size());
    QCOMPARE(csvValue(csv, 0, "error"), r.error);
    QCOMPARE(csvValue(csv, 0, "outcome"), "failed: " + r.error);
  }

  // In a project file: the most recent experiment when none is named, the one named
  // otherwise, and errors that list the experiments there are.
  void choosesTheExperimentInAProject() {
    const QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    auto store = ProjectStore::create(path);
    try {
      compareExperiment(*store, std::nullopt);
      QFAIL("an empty project compared");
    } catch (const dtlab::Error& e) {
      QVERIFY2(std::string(e.what()).find("has no runs of an experiment") != std::string::npos,
               e.what());
    }
    const int64_t older = store->putEntity(EntityKind::kExperiment, "older",
                                           {{"variants", {{{"name", "a"}}, {{"name", "b"}}}}});
    const int64_t newer = store->putEntity(EntityKind::kExperiment, "newer", nlohmann::json{});
    store->putEntity(EntityKind::kExperiment, "never_run", nlohmann::json{});
    auto finish = [&](int64_t experiment, const std::string& name, double samplesPerS) {
      const int64_t id =
          store->beginRun({experiment, name, "sync_allreduce", 1, nullptr, std::nullopt, 0});
      RunSummary s;
      s.name = name.substr(name.find('/') + 1);
      s.status = RunStatus::kCompleted;
      s.samplesPerS = samplesPerS;
      store->finishRun(id, s);
      return id;
    };
    finish(older, "older/b", 1.0);
    finish(newer, "newer/x", 2.0);
    finish(older, "older/a", 3.0);  // run last: "older" is the most recent experiment

    const Comparison latest = compareExperiment(*store, std::nullopt);
    QCOMPARE(latest.experiment, std::string("older"));
    QVERIFY(latest.mostRecent);
    QCOMPARE(latest.rows.size(), std::size_t{2});
    QCOMPARE(latest.rows[0].variant, std::string("a"));
    QCOMPARE(latest.rows[0].samplesPerS, std::optional<double>(3.0));
    QVERIFY(comparisonTable(latest).find("the most recent in " + path) != std::string::npos);

    const Comparison named = compareExperiment(*store, std::string("newer"));
    QVERIFY(!named.mostRecent);
    QCOMPARE(named.rows.size(), std::size_t{1});
    QCOMPARE(named.rows[0].variant, std::string("x"));
    QCOMPARE(comparisonJson(named)["experiment"], nlohmann::json("newer"));

    for (const auto& [name, expected] : std::vector<std::pair<std::string, std::string>>{
             {"nope",
              "no experiment 'nope' in " + path + " (experiments: older, newer, never_run)"},
             {"never_run", "experiment 'never_run' in " + path + " has no runs yet"}}) {
      try {
        compareExperiment(*store, name);
        QFAIL(name.c_str());
      } catch (const dtlab::Error& e) {
        QCOMPARE(std::string(e.what()), expected);
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestComparison)
#include "test_comparison.moc"
