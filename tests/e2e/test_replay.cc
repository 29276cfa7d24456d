// `dtlab-cli replay` (issue 23): an async_ps and an ssp run of four real daemons, one of them a
// straggler, recorded by `dtlab-cli run`; the replay, in one process, ends on every worker's
// final parameters bit for bit. A record with a chunk gone is refused naming the first push
// missing, and a synchronous run is refused saying why it needs no record.
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/spec/spec_json.h"
#include "core/store/sqlite_db.h"
#include "core/train/push_record.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;

namespace {

core::ExperimentSpec replaySpec() {
  core::ExperimentSpec spec;
  spec.seed = 5;
  spec.dataset.kind = "gaussian_blobs";
  spec.dataset.trainSize = 8192;
  spec.dataset.testSize = 512;
  spec.dataset.features = 32;
  spec.dataset.classes = 4;
  spec.model.hidden = {128};
  spec.optimizer.kind = core::OptimizerKind::kAdam;
  spec.optimizer.lr = 0.005f;
  spec.training.batchSize = 128;
  spec.training.epochs = 0;
  spec.training.maxSteps = 60;
  spec.training.evalInterval = 20;
  spec.cluster.localNodes = 4;
  spec.cluster.nodes.resize(4);
  spec.cluster.nodes[3].straggler.probability = 0.3;
  spec.cluster.nodes[3].straggler.pauseMs = 15.0;
  auto variant = [](const char* json) {
    return core::parseExperimentSpec(
               {{"cluster", {{"local_nodes", 4}}}, {"variants", {nlohmann::json::parse(json)}}})
        .variants[0];
  };
  spec.variants = {variant(R"({"strategy": "async_ps"})"),
                   variant(R"({"strategy": "ssp", "staleness": 2})"),
                   variant(R"({"strategy": "sync_allreduce"})"),
                   variant(R"({"name": "adaptive", "strategy": "hybrid", "policy": "adaptive",
                               "straggler_ratio": 1.5, "window": 5})")};
  return spec;
}

}  // namespace

class TestReplay : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString project_;

 private slots:
  void initTestCase() {
    project_ = dir_.filePath("replay.dtlab");
    const e2e::Outcome run = e2e::cli(
        {"run", e2e::writeSpec(dir_, replaySpec()), "--project", project_, "--quiet"}, 240000);
    QVERIFY2(run.exitCode == 0, qPrintable(run.err));
  }

  void asynchronousRunsReplayBitForBit_data() {
    QTest::addColumn<QString>("run");
    QTest::newRow("async_ps") << "1";
    QTest::newRow("ssp") << "2";
    QTest::newRow("adaptive hybrid") << "4";
  }
  void asynchronousRunsReplayBitForBit() {
    QFETCH(QString, run);
    const e2e::Outcome replay = e2e::cli({"replay", project_, run}, 120000);
    QVERIFY2(replay.exitCode == 0, qPrintable(replay.out + replay.err));
    const nlohmann::json result = e2e::lastJson(replay.out)["replay"];
    QVERIFY(result["same"].get<bool>());
    QVERIFY(result["pushes"].get<int64_t>() >= (run == "4" ? 4 : 4 * 60));
    QVERIFY(result["replicas"].size() >= 4);
    for (const auto& w : result["replicas"]) {
      QVERIFY(!w["checksum"].get<std::string>().empty());
      QCOMPARE(w["checksum"], w["run"]);
    }
    QVERIFY2(replay.out.contains("= the run's, bit for bit"), qPrintable(replay.out));
  }

  // --until: the server after step 20 (every block at version 80 of four workers), its weights
  // written, the pushes in flight then listed.
  void untilWritesTheServerAtAStep() {
    const QString weights = dir_.filePath("step20.bin");
    const e2e::Outcome replay =
        e2e::cli({"replay", project_, "1", "--until", "20", "--weights", weights}, 120000);
    QVERIFY2(replay.exitCode == 0, qPrintable(replay.out + replay.err));
    const nlohmann::json result = e2e::lastJson(replay.out)["replay"];
    for (const auto& v : result["versions"]) QCOMPARE(v.get<int64_t>(), int64_t{80});
    QVERIFY(result["pushes"].get<int64_t>() <= 80);
    for (const auto& p : result["pending"]) QVERIFY(p["staleness"].get<int64_t>() >= 0);
    // 32 features, 128 hidden, 4 classes: (32 * 128 + 128) + (128 * 4 + 4) parameters.
    QCOMPARE(QFileInfo(weights).size(), qint64{4 * ((32 * 128 + 128) + (128 * 4 + 4))});
  }

  void aSynchronousRunNeedsNoRecord() {
    const e2e::Outcome replay = e2e::cli({"replay", project_, "3"});
    QCOMPARE(replay.exitCode, 1);
    QVERIFY2(replay.err.contains("agree on every step"), qPrintable(replay.err));
  }

  // A record with one push cut out of its stored chunk (a copy of the project): the replay
  // names the push it lacks instead of replaying something else.
  void aRecordWithAPushGoneIsRefusedNamingIt() {
    const QString copy = dir_.filePath("cut.dtlab");
    QVERIFY(QFile::copy(project_, copy));
    {
      core::sqlite::Db db(copy.toStdString(), SQLITE_OPEN_READWRITE);
      core::sqlite::Statement read(db,
                                   "SELECT id, data FROM ps_records WHERE run_id = 1 ORDER BY id");
      int64_t id = 0;
      core::PsRecordChunk chunk;
      while (read.step()) {
        chunk = core::decodePsRecords(read.columnBlob(1));
        id = read.columnInt(0);
        const auto gone =
            std::find_if(chunk.pushes.begin(), chunk.pushes.end(),
                         [](const core::PushRecord& p) { return p.worker == 2 && p.clock == 5; });
        if (gone == chunk.pushes.end()) continue;
        chunk.pushes.erase(gone);
        break;
      }
      QVERIFY(id > 0);
      core::sqlite::Statement write(db, "UPDATE ps_records SET data = ? WHERE id = ?");
      write.bindBlob(1, core::encodePsRecords(chunk)).bind(2, id).run();
    }
    const e2e::Outcome replay = e2e::cli({"replay", copy, "1"});
    QCOMPARE(replay.exitCode, 1);
    QVERIFY2(replay.err.contains("the record misses worker 2's push 5"), qPrintable(replay.err));
  }
};

QTEST_GUILESS_MAIN(TestReplay)
#include "test_replay.moc"
