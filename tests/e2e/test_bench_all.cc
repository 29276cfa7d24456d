// `dtlab-cli bench all`: every benchmark with a reference runs, and the one table says what
// each measured against what, with ratios that follow from the figures and the targets.
#include <QtTest/QtTest>

#include <cmath>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.h"

using dtlab::e2e::kCli;

class TestBenchAll : public QObject {
  Q_OBJECT
 private slots:
  void everyBenchmarkGivesItsRowsWithTheirReference() {
    QProcess cli;
    cli.start(kCli, {"bench", "all", "--quick", "--reference", "none", "--json"});
    QVERIFY(cli.waitForFinished(600000));
    const QString err = QString::fromUtf8(cli.readAllStandardError());
    QVERIFY2(cli.exitCode() == 0, qPrintable(err.right(2000)));
    const QStringList lines =
        QString::fromUtf8(cli.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    QVERIFY(!lines.isEmpty());
    const QString table = lines.mid(0, lines.size() - 1).join('\n');
    QVERIFY2(table.contains("| benchmark | figure | DTLab | reference |"), qPrintable(table));
    QVERIFY2(table.contains("load average"), qPrintable(table));
    // Each benchmark's own report went to stderr as it measured.
    for (const char* report : {"best step: dtlab", "all-reduce", "chunks / rows"})
      QVERIFY2(err.contains(report), report);

    const auto json = nlohmann::json::parse(lines.last().toStdString());
    QCOMPARE(json["bench"].get<std::string>(), std::string("all"));
    QCOMPARE(json["wrong"].get<int64_t>(), int64_t{0});
    std::multiset<std::string> benchmarks;
    for (const nlohmann::json& row : json["rows"]) {
      const std::string what =
          row["benchmark"].get<std::string>() + ": " + row["figure"].get<std::string>();
      benchmarks.insert(row["benchmark"].get<std::string>());
      QVERIFY2(row["dtlab"].get<double>() > 0.0, what.c_str());
      // With no PyTorch reference asked for, its rows say so; the others have their own.
      const bool torch = row["reference"].get<std::string>().find("PyTorch") == 0;
      QVERIFY2(row["reference_value"].is_null() == torch, what.c_str());
      if (torch) continue;
      const double mine = row["dtlab"].get<double>();
      const double theirs = row["reference_value"].get<double>();
      QVERIFY2(theirs > 0.0, what.c_str());
      // Higher is better in every ratio: a latency's is the reference's over DTLab's.
      const double expected = row["unit"] == "ms" ? theirs / mine : mine / theirs;
      QVERIFY2(std::abs(row["ratio"].get<double>() - expected) < 1e-9 * expected, what.c_str());
      if (!row["target"].is_null())
        QCOMPARE(row["met"].get<bool>(), row["ratio"].get<double>() >= row["target"].get<double>());
    }
    // core: the default shape's rate and its share of the best sgemm, the small shape's;
    // train; allreduce on 2 ranks against Gloo and against a TCP stream, once as local nodes
    // run it (shared memory among its choices) and once on TCP only; store's two.
    QCOMPARE(benchmarks.count("core"), std::size_t{3});
    QCOMPARE(benchmarks.count("train"), std::size_t{1});
    QCOMPARE(benchmarks.count("allreduce"), std::size_t{2});
    QCOMPARE(benchmarks.count("allreduce (tcp)"), std::size_t{2});
    QCOMPARE(json["benches"]["allreduce"]["transport"], "auto");
    QCOMPARE(json["benches"]["allreduce_tcp"]["transport"], "tcp");
    for (const auto& row : json["benches"]["allreduce_tcp"]["rows"])
      QVERIFY2(row["algorithm"] != "shm", row.dump().c_str());
    QCOMPARE(benchmarks.count("ps"), std::size_t{1});
    QCOMPARE(json["benches"]["ps"]["wrong"], 0);
    QCOMPARE(json["benches"]["ps"]["per_worker"].size(), std::size_t{2});
    QCOMPARE(benchmarks.count("store"), std::size_t{2});
    for (const char* bench :
         {"core", "core_small", "train", "allreduce", "allreduce_tcp", "ps", "store"})
      QVERIFY2(json["benches"].contains(bench), bench);
  }

  void badFlagIsNamed() {
    QProcess cli;
    cli.start(kCli, {"bench", "all", "--reps", "3"});
    QVERIFY(cli.waitForFinished(30000));
    QCOMPARE(cli.exitCode(), 2);
    const QString err = QString::fromUtf8(cli.readAllStandardError());
    QVERIFY2(err.contains("--reps"), qPrintable(err));
  }
};

QTEST_GUILESS_MAIN(TestBenchAll)
#include "test_bench_all.moc"
