// dtlab-cli bench strategies: runs the comparisons through `dtlab-cli run --repeats R`,
// records them in a project, and prints each execution's statistics and the claims with
// their measured figures, through the statistics `dtlab-cli compare` uses. Here on
// small stand-ins for the example specs (the real ones take minutes).
#include <QtCore/QProcess>
#include <QtCore/QRegularExpression>
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

#include "core/spec/spec_json.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;

namespace {

core::ExperimentSpec small(const nlohmann::json& cluster, const nlohmann::json& variants) {
  core::ExperimentSpec spec =
      core::parseExperimentSpec({{"cluster", cluster}, {"variants", variants}});
  spec.seed = 5;
  spec.dataset.trainSize = 4096;
  spec.dataset.testSize = 512;
  spec.dataset.features = 16;
  spec.dataset.classes = 4;
  spec.model.hidden = {64};
  spec.training.batchSize = 64;
  spec.training.epochs = 0;
  spec.training.maxSteps = 60;
  spec.training.evalInterval = 10;
  spec.training.targetAccuracy = 0.5;
  return spec;
}

void write(const QString& path, const core::ExperimentSpec& spec) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(QByteArray::fromStdString(core::toJson(spec).dump()));
}

}  // namespace

class TestBenchStrategies : public QObject {
  Q_OBJECT
 private slots:
  void printsTheTableAndTheClaimsFromRealRuns() {
    QTemporaryDir dir;
    core::ExperimentSpec hetero =
        small({{"local_nodes", 2}, {"nodes", {{{"speed", 1.0}}, {{"speed", 0.5}}}}},
              {{{"name", "equal"}},
               {{"name", "speed_proportional"}, {"partition", "speed_proportional"}}});
    hetero.name = "hetero_2node";
    write(dir.filePath("hetero_2node.json"), hetero);
    core::ExperimentSpec modes =
        small({{"local_nodes", 2}}, {{{"strategy", "sync_allreduce"}}, {{"strategy", "async_ps"}}});
    modes.name = "modes_straggler";
    write(dir.filePath("modes_straggler.json"), modes);

    QProcess p;
    p.setWorkingDirectory(dir.path());
    p.start(e2e::kCli, {"bench", "strategies", "--specs", dir.path(), "--only",
                        "hetero_2node,modes_straggler", "--reps", "1", "--json"});
    QVERIFY(p.waitForFinished(180000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitCode() == 0, qPrintable(err));
    const auto out = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(out["runs"]["hetero_2node"].size(), std::size_t{2});
    QCOMPARE(out["runs"]["modes_straggler"].size(), std::size_t{2});
    // Five claims (hetero_2node: time to target against equal and against one node,
    // samples/s, utilisation; modes_straggler: samples/s), each with the figure measured from
    // those runs (one repetition: the ratio of the two runs' figures, no interval, no test);
    // this hetero_2node has no one_node variant, so that claim says it was not measured.
    QCOMPARE(out["claims"].size(), std::size_t{5});
    QVERIFY2(out["claims"][1]["measured"].is_null(), out["claims"][1].dump().c_str());
    const auto& heteroRuns = out["runs"]["hetero_2node"];
    QCOMPARE(out["claims"][2]["measured"].get<double>(),
             heteroRuns[1]["samples_per_s"].get<double>() /
                 heteroRuns[0]["samples_per_s"].get<double>());
    const auto& runs = out["runs"]["modes_straggler"];
    const double expected =
        runs[1]["samples_per_s"].get<double>() / runs[0]["samples_per_s"].get<double>();
    QCOMPARE(out["claims"][4]["measured"].get<double>(), expected);
    QCOMPARE(out["claims"][4]["met"].get<bool>(), expected >= 1.5);
    QCOMPARE(out["claims"][4]["n"].get<int>(), 1);
    QVERIFY(out["claims"][4]["p_value"].is_null());
    QCOMPARE(out["statistics"]["modes_straggler"]["variants"].size(), std::size_t{2});
    double least = 1.0;
    for (const auto& u : heteroRuns[1]["utilization"]) least = std::min(least, u.get<double>());
    QCOMPARE(out["claims"][3]["measured"].get<double>(), least);
    // The runs are in the project, for `dtlab-cli compare`.
    QVERIFY(QFile::exists(dir.filePath("strategies.dtlab")));
    QProcess compare;
    compare.start(e2e::kCli, {"compare", dir.filePath("strategies.dtlab"), "hetero_2node"});
    QVERIFY(compare.waitForFinished(30000));
    QVERIFY2(compare.readAllStandardOutput().contains("speed_proportional"),
             compare.readAllStandardError().constData());

    // The markdown form, with the default three repetitions: one execution of the comparison,
    // its statistics table (a row per variant, medians with intervals), and the claim: the
    // ratio of the two variants' medians, with each repetition's own ratio, as the project's
    // runs give them.
    QProcess table;
    table.setWorkingDirectory(dir.path());
    table.start(e2e::kCli, {"bench", "strategies", "--specs", dir.path(), "--only",
                            "modes_straggler", "--project", dir.filePath("again.dtlab")});
    QVERIFY(table.waitForFinished(300000));
    const QString text = QString::fromUtf8(table.readAllStandardOutput());
    QVERIFY2(text.contains("### modes_straggler"), qPrintable(text));
    QCOMPARE(text.count(QRegularExpression("\\| async_ps \\| async_ps \\| .* \\| 3/3 \\|")), 1);
    const QRegularExpression claim(
        "async_ps samples/s over sync_allreduce's \\(x\\): ([0-9.]+) \\[([0-9.]+), ([0-9.]+)\\] "
        "\\(3 repetitions: ([0-9.]+) ([0-9.]+) ([0-9.]+); paired t-test p = [0-9.e+-]+, "
        "(holds|does "
        "not hold); claim: at least 1.50\\) (met|NOT met)");
    const QRegularExpressionMatch m = claim.match(text);
    QVERIFY2(m.hasMatch(), qPrintable(text));

    QProcess compare3;
    compare3.start(e2e::kCli, {"compare", dir.filePath("again.dtlab"), "--format", "json"});
    QVERIFY(compare3.waitForFinished(30000));
    const auto c = nlohmann::json::parse(compare3.readAllStandardOutput().toStdString());
    QCOMPARE(c["repeats"].get<int>(), 3);
    QCOMPARE(c["rows"].size(), std::size_t{6});
    std::vector<double> async(3), sync(3);
    for (const auto& row : c["rows"]) {
      auto& into = row["variant"] == "async_ps" ? async : sync;
      into.at(row["repetition"].get<std::size_t>()) = row["samples_per_s"].get<double>();
    }
    const auto median3 = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[1];
    };
    const double ratioOfMedians = median3(async) / median3(sync);
    QCOMPARE(m.captured(1), QString::number(ratioOfMedians, 'f', 2));
    QVERIFY(m.captured(2).toDouble() <= m.captured(1).toDouble());
    QVERIFY(m.captured(3).toDouble() >= m.captured(1).toDouble());
    for (int r = 0; r < 3; ++r)
      QCOMPARE(m.captured(4 + r), QString::number(async[r] / sync[r], 'f', 2));
    QCOMPARE(m.captured(8) == "met", ratioOfMedians >= 1.5);
  }

  void unknownComparisonIsAUsageError() {
    QProcess p;
    p.start(e2e::kCli, {"bench", "strategies", "--only", "nonsense"});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(p.readAllStandardError().contains("unknown comparison 'nonsense'"));
  }
};

QTEST_GUILESS_MAIN(TestBenchStrategies)
#include "test_bench_strategies.moc"
