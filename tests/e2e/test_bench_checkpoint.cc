// `dtlab-cli bench checkpoint` on a small model: its three runs go through real daemons and
// the CLI (one SIGKILLed after a checkpoint drawn from the seed, then resumed), and what it
// prints follows from what the projects hold: the stalls and writes of every checkpoint, the
// stored size, and the same parameters for all three runs of a synchronous strategy.
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.h"

using dtlab::e2e::cli;

class TestBenchCheckpoint : public QObject {
  Q_OBJECT
 private slots:
  void threeRunsEndAlikeAndTheFiguresAreTheProjects() {
    QTemporaryDir dir;
    const dtlab::e2e::Outcome o = cli(
        {"bench", "checkpoint", "--in", "16", "--hidden", "512,512", "--classes", "4", "--batch",
         "32", "--steps", "400", "--every", "100", "--seed", "7", "--dir", dir.path(), "--json"},
        300000);
    QVERIFY2(o.exitCode == 0, qPrintable(o.err.right(2000)));
    const QStringList lines = o.out.split('\n', Qt::SkipEmptyParts);
    QVERIFY(lines.size() > 2);
    const QString table = lines.mid(0, lines.size() - 1).join('\n');
    QVERIFY2(table.contains("MLP 16-512-512-4") && table.contains("load average") &&
                 table.contains("bit for bit the uninterrupted run's"),
             qPrintable(table));

    const auto json = nlohmann::json::parse(lines.last().toStdString());
    QCOMPARE(json["bench"], nlohmann::json("checkpoint"));
    QCOMPARE(json["parameters"].get<int64_t>(),
             int64_t{16 * 512 + 512 + 512 * 512 + 512 + 512 * 4 + 4});
    QVERIFY(json["same_parameters"].get<bool>());
    QCOMPARE(json["checksum_resumed"], json["checksum"]);
    QCOMPARE(json["checksum_with_checkpoints"], json["checksum"]);
    // Checkpoints of steps 100 to 400: a stall on the step after each of the first three,
    // and a write for each (the last one's is drained at the end of the run).
    QCOMPARE(json["stall_ms"].size(), std::size_t{3});
    QVERIFY(json["write_ms"].size() >= 3);
    for (const nlohmann::json& ms : json["stall_ms"]) QVERIFY(ms.get<double>() >= 0.0);
    // The seed draws the kill after the checkpoint of step 100, 200 or 300, and the run was
    // cut before the next one.
    const int64_t killed = json["killed_after_step"].get<int64_t>();
    QVERIFY2(killed == 100 || killed == 200 || killed == 300, std::to_string(killed).c_str());
    // Momentum doubles the parameters: the checkpoint holds at least both, in one part.
    QVERIFY(json["checkpoint_bytes"].get<int64_t>() > 2 * 4 * json["parameters"].get<int64_t>());
    QCOMPARE(json["checkpoint_parts"].get<int64_t>(), int64_t{1});
    // The projects are kept in --dir.
    for (const char* name : {"plain.dtlab", "checkpoints.dtlab", "killed.dtlab"})
      QVERIFY2(QFile::exists(dir.filePath(name)), name);
  }
};

QTEST_GUILESS_MAIN(TestBenchCheckpoint)
#include "test_bench_checkpoint.moc"
