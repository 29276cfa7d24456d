// `dtlab-cli compare` as a user meets it: a two-variant experiment run on two local nodes into
// a project, then compared in every format against the summaries `run` printed; the table at
// the end of `run`; a summary of an older version shown with its missing figures missing; and
// the errors for a wrong experiment, format or file.
#include <QtTest/QtTest>

#include <sqlite3.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/store/project_store.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;

namespace {

using e2e::cli;
using e2e::kCli;
using e2e::Outcome;
using e2e::writeSpec;

// Two local nodes, the equal split against the heterogeneity-aware one: a second or two.
core::ExperimentSpec twoVariantSpec() {
  core::ExperimentSpec spec;
  spec.name = "sched";
  spec.seed = 5;
  spec.dataset.trainSize = 2048;
  spec.dataset.testSize = 256;
  spec.dataset.features = 8;
  spec.dataset.classes = 2;
  spec.model.hidden = {16};
  spec.training.batchSize = 32;
  spec.training.epochs = 0;
  spec.training.maxSteps = 30;
  spec.training.evalInterval = 10;
  spec.cluster.localNodes = 2;
  core::VariantConfig equal;
  equal.name = "equal";
  core::VariantConfig hetero;
  hetero.name = "hetero";
  hetero.settings.set("partition", std::string("speed_proportional"));
  hetero.settings.set("rebalance_every", int64_t{10});
  spec.variants = {equal, hetero};
  return spec;
}

QStringList nonEmptyLines(const QString& text) {
  return text.split('\n', Qt::SkipEmptyParts);
}

// Replaces a run's stored summary, as an older DTLab would have written it.
void storeSummary(const QString& project, int64_t runId, const nlohmann::json& summary) {
  sqlite3* db = nullptr;
  QCOMPARE(sqlite3_open(project.toUtf8().constData(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  QCOMPARE(sqlite3_prepare_v2(db, "UPDATE run_summaries SET summary = ? WHERE run_id = ?", -1, &s,
                              nullptr),
           SQLITE_OK);
  const std::string text = summary.dump();
  sqlite3_bind_text(s, 1, text.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(s, 2, runId);
  QCOMPARE(sqlite3_step(s), SQLITE_DONE);
  QCOMPARE(sqlite3_changes(db), 1);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

}  // namespace

class TestCompareCli : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  QString project_;
  Outcome run_;
  nlohmann::json summaries_;  // what `run` printed, one per variant

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    project_ = dir_.filePath("p.dtlab");
    run_ = cli({"run", writeSpec(dir_, twoVariantSpec()), "--quiet", "--project", project_});
    QVERIFY2(run_.exitCode == 0, qPrintable(run_.err));
    summaries_ = nlohmann::json::parse(nonEmptyLines(run_.out).last().toStdString())["runs"];
    QCOMPARE(summaries_.size(), 2u);
  }

  // stdout keeps its contract (last line {"runs":[...]}); the table goes to stderr, a row per
  // variant under the column titles.
  void runPrintsTheTableOnStderr() {
    QVERIFY(run_.out.trimmed().split('\n').last().startsWith("{\"runs\":["));
    QVERIFY2(!run_.out.contains("staleness mean"), qPrintable(run_.out));
    const QStringList err = nonEmptyLines(run_.err);
    const auto heading = std::find_if(err.begin(), err.end(), [](const QString& l) {
      return l.startsWith("experiment \"sched\"");
    });
    QVERIFY2(heading != err.end(), qPrintable(run_.err));
    QVERIFY2(heading->contains(": 2 variants"), qPrintable(*heading));
    QVERIFY2(std::distance(heading, err.end()) == 4, qPrintable(run_.err));
    const QString titles = *(heading + 1);
    for (const char* title : {"variant", "staleness mean", "to target (s)", "samples/s",
                              "comm (B/sample)", "peak mem (MiB)", "test acc", "outcome"})
      QVERIFY2(titles.contains(title), qPrintable(titles));
    QVERIFY2((heading + 2)->trimmed().startsWith("equal "), qPrintable(run_.err));
    QVERIFY2((heading + 3)->trimmed().startsWith("hetero "), qPrintable(run_.err));
  }

  // The JSON rows are the variants, and their figures are the summaries' own.
  void jsonRowsAreTheSummaries() {
    const Outcome o = cli({"compare", project_, "--format", "json"});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const nlohmann::json out = nlohmann::json::parse(o.out.toStdString());
    QCOMPARE(out["experiment"], nlohmann::json("sched"));
    QCOMPARE(out["most_recent"], nlohmann::json(true));
    const nlohmann::json& rows = out["rows"];
    QCOMPARE(rows.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      const nlohmann::json& row = rows[i];
      const nlohmann::json& summary = summaries_[i];
      QCOMPARE(row["variant"], summary["name"]);
      for (const char* key :
           {"strategy", "partition", "nodes", "status", "stop_reason", "samples_per_s",
            "final_test_accuracy", "time_to_target_s", "mean_utilization", "mean_wait_fraction",
            "mean_staleness", "max_staleness", "bytes_per_sample", "wall_s"})
        QVERIFY2(row[key] == summary[key], (std::string(key) + ": " + row.dump()).c_str());
      // Synchronous runs measure no divergence: null, not 0.
      QVERIFY2(summary["mean_divergence"].is_null(), summary.dump().c_str());
      QVERIFY(row["mean_divergence"].is_null());
      const auto& peaks = summary["peak_mem_bytes"];
      QCOMPARE(peaks.size(), 2u);
      QCOMPARE(row["peak_mem_bytes"].get<int64_t>(),
               std::max(peaks[0].get<int64_t>(), peaks[1].get<int64_t>()));
      QVERIFY(row["samples_per_s"].get<double>() > 0.0);
      QVERIFY(run_.err.contains(QString("recorded run %1 in").arg(row["run_id"].get<int64_t>())));
    }
    QCOMPARE(rows[0]["partition"], nlohmann::json("equal"));
    QCOMPARE(rows[1]["partition"], nlohmann::json("speed_proportional"));

    // Named, the same rows, not marked as the most recent.
    const Outcome named = cli({"compare", project_, "sched", "--format=json"});
    QVERIFY2(named.exitCode == 0, qPrintable(named.err));
    const nlohmann::json byName = nlohmann::json::parse(named.out.toStdString());
    QCOMPARE(byName["most_recent"], nlohmann::json(false));
    QCOMPARE(byName["rows"], rows);
  }

  // CSV: a header of machine names and one line per variant; what is not measured is empty.
  void csvHasAHeaderAndALinePerVariant() {
    const Outcome o = cli({"compare", project_, "--format", "csv"});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const QStringList lines = nonEmptyLines(o.out);
    QCOMPARE(lines.size(), 3);
    const QStringList header = lines[0].split(',');
    QCOMPARE(header.first(), QString("variant"));
    for (const char* column : {"samples_per_s", "mean_divergence", "bytes_per_sample",
                               "peak_mem_bytes", "final_test_accuracy", "outcome"})
      QVERIFY2(header.contains(column), qPrintable(lines[0]));
    for (int i = 1; i <= 2; ++i) {
      const QStringList fields = lines[i].split(',');
      QCOMPARE(fields.size(), header.size());
      QCOMPARE(fields[0], QString::fromStdString(summaries_[i - 1]["name"].get<std::string>()));
      QCOMPARE(fields[header.indexOf("mean_divergence")], QString());
      QCOMPARE(fields[header.indexOf("samples_per_s")].toDouble(),
               summaries_[i - 1]["samples_per_s"].get<double>());
    }
  }

  // A run recorded by an older version has a summary without the consistency, communication
  // and memory figures: "–" in the table, empty in CSV, null in JSON; the other row keeps its.
  void olderSummaryShowsMissingFigures() {
    nlohmann::json old = summaries_[0];
    for (const char* key : {"mean_staleness", "max_staleness", "staleness_histogram",
                            "bytes_per_sample", "mean_divergence", "switches", "partition", "nodes",
                            "peak_mem_bytes", "stop_reason", "contended"})
      old.erase(key);
    const Outcome json = cli({"compare", project_, "--format", "json"});
    const int64_t runId =
        nlohmann::json::parse(json.out.toStdString())["rows"][0]["run_id"].get<int64_t>();
    storeSummary(project_, runId, old);

    const Outcome after = cli({"compare", project_, "--format", "json"});
    QVERIFY2(after.exitCode == 0, qPrintable(after.err));
    const nlohmann::json rows = nlohmann::json::parse(after.out.toStdString())["rows"];
    for (const char* key : {"mean_staleness", "max_staleness", "bytes_per_sample", "nodes",
                            "partition", "peak_mem_bytes", "stop_reason"}) {
      QVERIFY2(rows[0][key].is_null(), (std::string(key) + ": " + rows[0].dump()).c_str());
      QVERIFY2(!rows[1][key].is_null(), (std::string(key) + ": " + rows[1].dump()).c_str());
    }
    QCOMPARE(rows[0]["samples_per_s"], summaries_[0]["samples_per_s"]);

    const Outcome csv = cli({"compare", project_, "--format", "csv"});
    const QStringList lines = nonEmptyLines(csv.out);
    const QStringList header = lines[0].split(',');
    QCOMPARE(lines[1].split(',')[header.indexOf("bytes_per_sample")], QString());
    QVERIFY(!lines[2].split(',')[header.indexOf("bytes_per_sample")].isEmpty());

    const Outcome table = cli({"compare", project_});
    QVERIFY2(table.exitCode == 0, qPrintable(table.err));
    const QStringList text = nonEmptyLines(table.out);
    QCOMPARE(text.size(), 4);
    QVERIFY2(text[0].contains("experiment \"sched\" (the most recent in"), qPrintable(text[0]));
    // The old row's staleness mean is "–" where the new row has 0.00.
    const int column = text[1].indexOf("staleness mean") + QString("staleness mean").size() - 1;
    QCOMPARE(text[2].at(column), QChar(0x2013));
    QVERIFY2(text[3].mid(column - 3, 4) == "0.00", qPrintable(text[3]));
    storeSummary(project_, runId, summaries_[0]);  // as it was, for the other tests
  }

  void errorsSayWhatIsWrong() {
    const Outcome unknown = cli({"compare", project_, "nope"});
    QCOMPARE(unknown.exitCode, 1);
    QVERIFY2(unknown.err.contains("no experiment 'nope'") &&
                 unknown.err.contains("(experiments: sched)"),
             qPrintable(unknown.err));

    const Outcome format = cli({"compare", project_, "--format", "xml"});
    QCOMPARE(format.exitCode, 2);
    QVERIFY2(format.err.contains("--format: expected table, csv or json, got 'xml'"),
             qPrintable(format.err));
    QVERIFY(format.out.isEmpty());

    const Outcome missing = cli({"compare", dir_.filePath("none.dtlab")});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains("no such project file"), qPrintable(missing.err));

    const QString notProject = dir_.filePath("spec.json");  // a JSON file, not SQLite
    const Outcome wrong = cli({"compare", notProject});
    QCOMPARE(wrong.exitCode, 1);
    QVERIFY2(wrong.err.contains("not a DTLab project"), qPrintable(wrong.err));

    const Outcome noArgs = cli({"compare"});
    QCOMPARE(noArgs.exitCode, 2);
  }

  // `run --repeats 2`: one execution of four runs, each repetition's variants on one seed, the
  // first on the spec's own; compare shows the medians and the ratio of that execution, and
  // the earlier execution on request.
  void repeatsGroupOneExecution() {
    const QString project = dir_.filePath("repeats.dtlab");
    const QString spec = writeSpec(dir_, twoVariantSpec());
    const Outcome once = cli({"run", spec, "--quiet", "--project", project});
    QVERIFY2(once.exitCode == 0, qPrintable(once.err));
    const Outcome run = cli({"run", spec, "--quiet", "--project", project, "--repeats", "2"});
    QVERIFY2(run.exitCode == 0, qPrintable(run.err));
    QVERIFY2(run.err.contains("2 variants x 2 repetitions"), qPrintable(run.err));
    const nlohmann::json printed =
        nlohmann::json::parse(nonEmptyLines(run.out).last().toStdString())["runs"];
    QCOMPARE(printed.size(), 4u);
    QCOMPARE(printed[2]["repetition"], nlohmann::json(1));

    {
      auto store = core::ProjectStore::open(project.toStdString(), true);
      const std::vector<core::ExecutionRecord> executions = store->executions();
      QCOMPARE(executions.size(), std::size_t{2});
      QCOMPARE(executions[1].repeats, int64_t{2});
      std::vector<core::RunRecord> runs;
      for (const core::RunRecord& r : store->runs())
        if (r.executionId == executions[1].id) runs.push_back(r);
      QCOMPARE(runs.size(), std::size_t{4});
      // Repetition by repetition: equal, hetero, equal, hetero.
      QCOMPARE(runs[0].name, std::string("sched/equal"));
      QCOMPARE(runs[1].name, std::string("sched/hetero"));
      QCOMPARE(runs[0].seed, uint64_t{5});
      QCOMPARE(runs[1].seed, uint64_t{5});
      QCOMPARE(runs[2].repetition, int64_t{1});
      QCOMPARE(runs[2].seed, runs[3].seed);
      QVERIFY(runs[2].seed != runs[0].seed);
      // The run keeps its repetition's seed in its spec; the experiment keeps the spec's.
      QCOMPARE(runs[2].spec["seed"].get<uint64_t>(), runs[2].seed);
      QCOMPARE(store->entityByName(core::EntityKind::kExperiment, "sched")->config["seed"],
               nlohmann::json(5));
    }

    const Outcome json = cli({"compare", project, "--format", "json"});
    QVERIFY2(json.exitCode == 0, qPrintable(json.err));
    const nlohmann::json out = nlohmann::json::parse(json.out.toStdString());
    QCOMPARE(out["repeats"], nlohmann::json(2));
    QCOMPARE(out["rows"].size(), 4u);
    const nlohmann::json& stats = out["statistics"];
    QCOMPARE(stats["variants"].size(), 2u);
    QCOMPARE(stats["variants"][0]["runs"], nlohmann::json(2));
    const double a = out["rows"][0]["samples_per_s"].get<double>();
    const double b = out["rows"][1]["samples_per_s"].get<double>();
    QCOMPARE(stats["variants"][0]["figures"]["samples_per_s"]["median"].get<double>(),
             std::midpoint(a, b));
    QCOMPARE(stats["ratios"][0]["variant"], nlohmann::json("hetero"));
    QCOMPARE(stats["ratios"][0]["baseline"], nlohmann::json("equal"));

    const Outcome table = cli({"compare", project, "--pair", "equal:hetero"});
    QVERIFY2(table.exitCode == 0, qPrintable(table.err));
    QVERIFY2(table.out.contains("ratios of medians") && table.out.contains("equal    hetero"),
             qPrintable(table.out));

    const Outcome first = cli({"compare", project, "--execution", "1", "--format", "json"});
    QVERIFY2(first.exitCode == 0, qPrintable(first.err));
    QCOMPARE(nlohmann::json::parse(first.out.toStdString())["rows"].size(), 2u);

    const Outcome seed = cli({"compare", project, "--seed-table", "--format", "json"});
    QVERIFY2(seed.exitCode == 0, qPrintable(seed.err));
    const nlohmann::json seedTable = nlohmann::json::parse(seed.out.toStdString());
    QCOMPARE(seedTable["header"][2], nlohmann::json("equal (sync_allreduce)"));
    QCOMPARE(seedTable["rows"].size(), 9u);
    const Outcome seedText = cli({"compare", project, "--seed-table"});
    QVERIFY2(seedText.out.contains("debuggability") && seedText.out.contains("2 repetitions"),
             qPrintable(seedText.out));
    const Outcome seedCsv = cli({"compare", project, "--seed-table", "--format", "csv"});
    QCOMPARE(seedCsv.exitCode, 2);

    const Outcome badPair = cli({"compare", project, "--pair", "equal:nope"});
    QCOMPARE(badPair.exitCode, 2);
    QVERIFY2(badPair.err.contains("two of the variants equal, hetero"), qPrintable(badPair.err));
    const Outcome badExecution = cli({"compare", project, "--execution", "9"});
    QCOMPARE(badExecution.exitCode, 1);
    QVERIFY2(badExecution.err.contains("no execution 9 in ") &&
                 badExecution.err.contains("(its executions: 1, 2)"),
             qPrintable(badExecution.err));
  }

  void helpNamesCompare() {
    const Outcome all = cli({"--help"});
    QCOMPARE(all.exitCode, 0);
    QVERIFY(all.out.contains("\n  compare P.dtlab [EXPERIMENT] [--execution N]"));
    const Outcome one = cli({"compare", "--help"});
    QCOMPARE(one.exitCode, 0);
    QVERIFY2(one.out.contains("  compare ") && !one.out.contains("\n  run "), qPrintable(one.out));
  }
};

QTEST_GUILESS_MAIN(TestCompareCli)
#include "test_compare_cli.moc"
