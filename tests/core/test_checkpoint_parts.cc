// Checkpoints in a project (core/store/checkpoint_parts.h), at the sizes users train: a model of
// tens of millions of parameters is kept in checksummed parts and read back byte for byte, the
// retention drops old ones with their parts, a damaged or missing part is named with the
// previous whole checkpoint offered, and projects of schema 7 (one blob per checkpoint) move
// their checkpoints into parts when opened.
#include <QtTest/QtTest>

#include <cstdio>
#include <cstring>

#include <filesystem>
#include <string>
#include <vector>

#include <QtCore/QTemporaryDir>

#include "core/common/checksum.h"
#include "core/store/checkpoint_parts.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/schema.h"
#include "core/store/sqlite_db.h"
#include "core/train/checkpoint.h"

using namespace dtlab::core;

namespace {

// A checkpoint of `params` parameters with SGD momentum: 8 bytes a parameter, each value
// depending on the step so that checkpoints of different steps differ everywhere.
Checkpoint momentumCheckpoint(int64_t step, std::size_t params) {
  Checkpoint c;
  c.step = step;
  c.wallMs = 10.0 * static_cast<double>(step);
  c.strategy = "sync_allreduce";
  c.optimizer = "sgd";
  c.params.resize(params);
  std::vector<float> momentum(params);
  for (std::size_t i = 0; i < params; ++i) {
    c.params[i] = static_cast<float>(i % 1009) * 1e-3f + static_cast<float>(step);
    momentum[i] = static_cast<float>(i % 997) * -1e-4f;
  }
  c.optimizerState = {std::move(momentum)};
  c.strategyState = {{"shares", {64, 64}}};
  return c;
}

int64_t beginRun(ProjectStore& store, const std::string& name) {
  RunStart start;
  start.name = name;
  start.strategy = "sync_allreduce";
  return store.beginRun(start);
}

int64_t partsOf(const std::string& path, int64_t runId, int64_t step) {
  sqlite::Db db(path, SQLITE_OPEN_READONLY);
  sqlite::Statement s(db, "SELECT count(*) FROM checkpoint_parts WHERE run_id = ? AND step = ?");
  s.bind(1, runId).bind(2, step);
  s.step();
  return s.columnInt(0);
}

// Changes one byte of a stored part, as a failing disk might.
void damagePart(const std::string& path, int64_t runId, int64_t step, int64_t part) {
  sqlite::Db db(path, SQLITE_OPEN_READWRITE);
  std::vector<unsigned char> data;
  {
    sqlite::Statement read(
        db, "SELECT data FROM checkpoint_parts WHERE run_id = ? AND step = ? AND part = ?");
    read.bind(1, runId).bind(2, step).bind(3, part);
    QVERIFY(read.step());
    const std::span<const unsigned char> blob = read.columnBlob(0);
    data.assign(blob.begin(), blob.end());
  }
  data[data.size() / 3] ^= 0x04;
  sqlite::Statement write(
      db, "UPDATE checkpoint_parts SET data = ? WHERE run_id = ? AND step = ? AND part = ?");
  write.bindBlob(1, data).bind(2, runId).bind(3, step).bind(4, part);
  write.run();
}

std::string damageOf(ProjectStore& store, int64_t runId, int64_t step,
                     std::optional<int64_t>* previous) {
  try {
    store.checkpointData(runId, step);
  } catch (const CheckpointDamaged& e) {
    *previous = e.previousWhole();
    return e.what();
  }
  return "(no error)";
}

}  // namespace

class TestCheckpointParts : public QObject {
  Q_OBJECT

 private slots:
  // 13 million parameters with momentum: 104 MB a checkpoint, seven parts. The newest two of
  // three stay, each read back equal to what was kept, and the oldest leaves no part behind.
  void largeCheckpointsRoundTripInParts() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("big.dtlab").toStdString();
    auto store = ProjectStore::create(path);
    RunStart start;
    start.name = "big";
    start.strategy = "sync_allreduce";
    start.spec = {{"name", "big"}, {"training", {{"checkpoint_every", 100}}}};
    const int64_t run = store->beginRun(start);
    const std::size_t params = 13'000'000;
    std::vector<std::vector<unsigned char>> encoded;
    {
      PointAppender appender(path);
      for (int64_t step : {100, 200, 300}) {
        encoded.push_back(encodeCheckpoint(momentumCheckpoint(step, params)));
        appender.appendCheckpoint(
            {run, step, 10.0 * static_cast<double>(step),
             std::make_shared<const std::vector<unsigned char>>(encoded.back()), 2});
      }
      appender.close();
    }
    const std::vector<CheckpointInfo> kept = store->checkpoints(run);
    QCOMPARE(kept.size(), std::size_t{2});
    QCOMPARE(kept[0].step, int64_t{200});
    QCOMPARE(kept[1].step, int64_t{300});
    const int64_t bytes = static_cast<int64_t>(encoded[2].size());
    QVERIFY(bytes > 104'000'000);
    QCOMPARE(kept[1].bytes, bytes);
    const auto partCount =
        static_cast<int64_t>((encoded[2].size() + kCheckpointPartBytes - 1) / kCheckpointPartBytes);
    QCOMPARE(partCount, int64_t{7});
    QCOMPARE(partsOf(path, run, 300), partCount);
    QCOMPARE(partsOf(path, run, 100), int64_t{0});  // gone with its row
    QVERIFY(store->checkpointData(run, 200) == encoded[1]);
    const std::vector<unsigned char> back = store->checkpointData(run, 300);
    QVERIFY(back == encoded[2]);
    QVERIFY(decodeCheckpoint(back) == momentumCheckpoint(300, params));

    // The manifest says what is where without reading the parts.
    sqlite::Db raw(path, SQLITE_OPEN_READONLY);
    sqlite::Statement m(raw, "SELECT manifest FROM checkpoints WHERE run_id = ? AND step = 300");
    m.bind(1, run);
    QVERIFY(m.step());
    const nlohmann::json manifest = nlohmann::json::parse(m.columnText(0));
    QCOMPARE(manifest.at("parts").size(), static_cast<std::size_t>(partCount));
    QCOMPARE(manifest.at("bytes").get<int64_t>(), bytes);
    QCOMPARE(manifest.at("tensors").size(), std::size_t{2});
    QCOMPARE(manifest.at("tensors")[0].at("name").get<std::string>(), std::string("params"));
    QCOMPARE(manifest.at("tensors")[1].at("floats").get<std::size_t>(), params);
    // The run's spec as stored, by its checksum.
    sqlite::Statement spec(raw, "SELECT spec FROM runs WHERE id = ?");
    spec.bind(1, run);
    QVERIFY(spec.step());
    const std::string text = spec.columnText(0);
    QVERIFY(text.find("checkpoint_every") != std::string::npos);
    char expected[17];
    std::snprintf(expected, sizeof expected, "%016llx",
                  static_cast<unsigned long long>(checksum64(
                      {reinterpret_cast<const unsigned char*>(text.data()), text.size()})));
    QCOMPARE(manifest.at("spec_hash").get<std::string>(), std::string(expected));
    QCOMPARE(raw.queryText("PRAGMA integrity_check"), std::string("ok"));
  }

  // A part changed on disk, or gone, is found and named, with the newest older checkpoint
  // whose parts all verify offered instead; with none left whole, the error says so.
  void damageIsNamedAndThePreviousWholeOneOffered() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("damaged.dtlab").toStdString();
    auto store = ProjectStore::create(path);
    const int64_t run = beginRun(*store, "r");
    const std::size_t params = 5'000'000;  // 40 MB: three parts
    {
      PointAppender appender(path);
      for (int64_t step : {10, 20, 30})
        appender.appendCheckpoint({run, step, 1.0,
                                   std::make_shared<const std::vector<unsigned char>>(
                                       encodeCheckpoint(momentumCheckpoint(step, params))),
                                   3});
      appender.close();
    }
    damagePart(path, run, 30, 1);
    std::optional<int64_t> previous;
    std::string error = damageOf(*store, run, 30, &previous);
    QVERIFY2(error.find("part 2 of 3 (bytes 16777216-33554431) does not match its checksum") !=
                 std::string::npos,
             error.c_str());
    QVERIFY2(error.find("the previous checkpoint, of step 20, is whole") != std::string::npos,
             error.c_str());
    QCOMPARE(previous, std::optional<int64_t>(20));

    {
      sqlite::Db db(path, SQLITE_OPEN_READWRITE);
      db.exec("DELETE FROM checkpoint_parts WHERE step = 20 AND part = 2");
    }
    error = damageOf(*store, run, 30, &previous);
    QCOMPARE(previous, std::optional<int64_t>(10));
    error = damageOf(*store, run, 20, &previous);
    QVERIFY2(error.find("it has 2 of its 3 parts") != std::string::npos, error.c_str());
    QCOMPARE(previous, std::optional<int64_t>(10));

    damagePart(path, run, 10, 0);
    error = damageOf(*store, run, 30, &previous);
    QVERIFY2(error.find("no earlier checkpoint is whole") != std::string::npos, error.c_str());
    QVERIFY(!previous.has_value());
    // Nothing stored was changed by reading it.
    QCOMPARE(store->checkpoints(run).size(), std::size_t{3});
  }

  // A project of schema 7 kept each checkpoint as one blob; opening it moves them into parts,
  // byte for byte, and drops the old table.
  void schemaSevenCheckpointsMoveIntoParts() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("v7.dtlab").toStdString();
    const std::vector<unsigned char> big = encodeCheckpoint(momentumCheckpoint(40, 3'000'000));
    const std::vector<unsigned char> small = encodeCheckpoint(momentumCheckpoint(20, 1000));
    // A damaged one whose strategy name is not UTF-8 (the fuzzer's find: the manifest, JSON,
    // could not be written and the upgrade threw): moved as it is, refused when decoded.
    Checkpoint strange = momentumCheckpoint(30, 10);
    strange.strategy = "syncX";
    std::vector<unsigned char> damaged = encodeCheckpoint(strange);
    const std::string_view text(reinterpret_cast<const char*>(damaged.data()), damaged.size());
    damaged[text.find("syncX") + 4] = 0x85;
    const uint64_t sum = checksum64(std::span(damaged).first(damaged.size() - 8));
    std::memcpy(damaged.data() + damaged.size() - 8, &sum, 8);
    {
      sqlite::Db db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
      int count = 0;
      const Migration* steps = migrationSteps(&count);
      QVERIFY(count > 7);
      for (int i = 0; i < 7; ++i) steps[i].apply(db);
      db.exec(R"sql(
        INSERT INTO runs (id, name, strategy, seed, status, started_ms, program_version)
          VALUES (1, 'old', 'sync_allreduce', 1, 'failed', 1700000000000, 'DTLab 0.9');
        PRAGMA user_version = 7;
      )sql");
      sqlite::Statement insert(db, "INSERT INTO checkpoints VALUES (1, ?, ?, 1700000000001, ?)");
      insert.bind(1, int64_t{20}).bind(2, 200.0).bindBlob(3, small);
      insert.run();
      insert.reset();
      insert.bind(1, int64_t{40}).bind(2, 400.0).bindBlob(3, big);
      insert.run();
      insert.reset();
      insert.bind(1, int64_t{30}).bind(2, 300.0).bindBlob(3, damaged);
      insert.run();
    }
    auto store = ProjectStore::open(path);
    QCOMPARE(store->schemaVersion(), kSchemaVersion);
    const std::vector<CheckpointInfo> kept = store->checkpoints(1);
    QCOMPARE(kept.size(), std::size_t{3});
    QCOMPARE(kept[2].step, int64_t{40});
    QCOMPARE(kept[2].wallMs, 400.0);
    QCOMPARE(kept[2].bytes, static_cast<int64_t>(big.size()));
    QVERIFY(store->checkpointData(1, 30) == damaged);
    QVERIFY(store->checkpointData(1, 40) == big);
    QVERIFY(store->checkpointData(1, 20) == small);
    QCOMPARE(partsOf(path, 1, 40), int64_t{2});
    store.reset();
    sqlite::Db raw(path, SQLITE_OPEN_READONLY);
    QCOMPARE(raw.queryInt("SELECT count(*) FROM sqlite_schema WHERE name = 'checkpoints_whole'"),
             int64_t{0});
    QCOMPARE(raw.queryText("PRAGMA integrity_check"), std::string("ok"));
  }
};

QTEST_GUILESS_MAIN(TestCheckpointParts)
#include "test_checkpoint_parts.moc"
