// Checkpoints (core/train/checkpoint.h): the stored form refuses damage, and a synchronous run
// resumed from any of its checkpoints, by the same number of ranks, ends with the same
// parameters as the run that never stopped.
#include <QtTest/QtTest>

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include <QtCore/QTemporaryDir>

#include "core/common/checksum.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/train/checkpoint.h"
#include "core/train/local_trainer.h"
#include "core/train/sync_allreduce.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;
using dtlab::core::test::Keeper;
using dtlab::core::test::nodesAt;
using dtlab::core::test::RankThreads;
using dtlab::core::test::runRankThreads;
using dtlab::core::test::smallBlobsSpec;

namespace {

Checkpoint sample() {
  Checkpoint c;
  c.step = 42;
  c.wallMs = 1234.5;
  c.strategy = "sync_allreduce";
  c.optimizer = "adam";
  c.params = {1.0f, -2.5f, 3.25f};
  c.optimizerState = {{0.5f, 0.25f, 0.125f}, {1e-3f, 2e-3f, 3e-3f}};
  c.strategyState = {{"shares", {30, 34}}};
  c.rankSteps = {40, 44};
  return c;
}

// The form DTLab wrote before format 2, built here byte by byte as that version did: magic
// "DTLCKPT1", the header's size and JSON, the arrays, and a byte-wise FNV-1a of all of it.
std::vector<unsigned char> formatOne(const Checkpoint& c) {
  nlohmann::json sizes = nlohmann::json::array();
  for (const std::vector<float>& st : c.optimizerState) sizes.push_back(st.size());
  nlohmann::json h = {{"format", 1},
                      {"step", c.step},
                      {"wall_ms", c.wallMs},
                      {"strategy", c.strategy},
                      {"optimizer", c.optimizer},
                      {"params", c.params.size()},
                      {"optimizer_state", sizes},
                      {"strategy_state", c.strategyState}};
  if (!c.rankSteps.empty()) h["rank_steps"] = c.rankSteps;
  const std::string header = h.dump();
  std::vector<unsigned char> out = {'D', 'T', 'L', 'C', 'K', 'P', 'T', '1'};
  auto put = [&](const void* p, std::size_t n) {
    out.insert(out.end(), static_cast<const unsigned char*>(p),
               static_cast<const unsigned char*>(p) + n);
  };
  const uint64_t headerBytes = header.size();
  put(&headerBytes, 8);
  put(header.data(), header.size());
  put(c.params.data(), c.params.size() * 4);
  for (const std::vector<float>& st : c.optimizerState) put(st.data(), st.size() * 4);
  uint64_t fnv = 0xCBF29CE484222325ull;
  for (unsigned char b : out) fnv = (fnv ^ b) * 0x100000001B3ull;
  put(&fnv, 8);
  return out;
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT
 private slots:
  void encodedCheckpointsReadBackAndRefuseDamage() {
    const Checkpoint c = sample();
    const std::vector<unsigned char> bytes = encodeCheckpoint(c);
    QVERIFY(decodeCheckpoint(bytes) == c);
    std::vector<unsigned char> flipped = bytes;
    flipped[flipped.size() / 2] ^= 0x10;
    QVERIFY_THROWS_EXCEPTION(CheckpointError, decodeCheckpoint(flipped));
    try {
      decodeCheckpoint(flipped);
    } catch (const CheckpointError& e) {
      QVERIFY2(std::string(e.what()).find("checksum does not match") != std::string::npos,
               e.what());
    }
    const std::vector<unsigned char> cut(bytes.begin(), bytes.end() - 5);
    QVERIFY_THROWS_EXCEPTION(CheckpointError, decodeCheckpoint(cut));
    QVERIFY_THROWS_EXCEPTION(CheckpointError,
                             decodeCheckpoint(std::vector<unsigned char>(40, 'x')));
    QVERIFY_THROWS_EXCEPTION(CheckpointError, decodeCheckpoint(std::vector<unsigned char>{}));
  }

  // No single changed bit, anywhere in a checkpoint, goes unnoticed; nor in the checksum's
  // own input at every length up to a few words past its four lanes (its tail handling).
  void everySingleBitFlipIsFound() {
    const std::vector<unsigned char> bytes = encodeCheckpoint(sample());
    for (std::size_t i = 0; i < bytes.size(); ++i)
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<unsigned char> flipped = bytes;
        flipped[i] ^= static_cast<unsigned char>(1u << bit);
        QVERIFY_THROWS_EXCEPTION(CheckpointError, decodeCheckpoint(flipped));
      }
    for (std::size_t n = 0; n <= 80; ++n) {
      std::vector<unsigned char> data(n);
      for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<unsigned char>(i * 37 + n);
      const uint64_t whole = checksum64(data);
      for (std::size_t i = 0; i < n; ++i)
        for (int bit = 0; bit < 8; ++bit) {
          data[i] ^= static_cast<unsigned char>(1u << bit);
          QVERIFY2(checksum64(data) != whole,
                   qPrintable(QString("length %1, byte %2, bit %3").arg(n).arg(i).arg(bit)));
          data[i] ^= static_cast<unsigned char>(1u << bit);
        }
    }
    // Length is part of the sum: a run of zeros and a longer one differ.
    QVERIFY(checksum64(std::vector<unsigned char>(64)) !=
            checksum64(std::vector<unsigned char>(72)));
  }

  // Checkpoints in projects from before format 2 still resume; damage to them is still found.
  void formatOneStillReads() {
    const Checkpoint c = sample();
    std::vector<unsigned char> old = formatOne(c);
    QVERIFY(decodeCheckpoint(old) == c);
    QCOMPARE(describeCheckpoint(old).tensors.size(), std::size_t{3});
    old[old.size() / 2] ^= 0x01;
    QVERIFY_THROWS_EXCEPTION(CheckpointError, decodeCheckpoint(old));
    // A format-1 header inside a format-2 magic is damage, not an old checkpoint.
    std::vector<unsigned char> mixed = formatOne(c);
    mixed[7] = '2';
    QVERIFY_THROWS_EXCEPTION(CheckpointError, decodeCheckpoint(mixed));
  }

  // The header alone says where each array lies: what a project's manifest records.
  void layoutNamesEveryArrayAndItsOffset() {
    const Checkpoint c = sample();
    const std::vector<unsigned char> bytes = encodeCheckpoint(c);
    const CheckpointLayout layout = describeCheckpoint(bytes);
    QCOMPARE(layout.step, c.step);
    QCOMPARE(layout.rankSteps, c.rankSteps);
    QCOMPARE(layout.strategy, c.strategy);
    QCOMPARE(layout.optimizer, c.optimizer);
    QCOMPARE(layout.tensors.size(), std::size_t{3});
    const std::vector<std::vector<float>> arrays = {c.params, c.optimizerState[0],
                                                    c.optimizerState[1]};
    const char* names[] = {"params", "optimizer_state.0", "optimizer_state.1"};
    for (std::size_t t = 0; t < arrays.size(); ++t) {
      const CheckpointTensor& tensor = layout.tensors[t];
      QCOMPARE(tensor.name, std::string(names[t]));
      QCOMPARE(tensor.floats, arrays[t].size());
      std::vector<float> at(arrays[t].size());
      std::memcpy(at.data(), bytes.data() + tensor.offset, at.size() * sizeof(float));
      QCOMPARE(at, arrays[t]);
    }
    // A header whose arrays do not fill the bytes is refused.
    const std::vector<unsigned char> longer = [&] {
      std::vector<unsigned char> b = bytes;
      b.insert(b.end() - 8, 4, 0);
      return b;
    }();
    QVERIFY_THROWS_EXCEPTION(CheckpointError, describeCheckpoint(longer));
  }

  void resumedSyncRunEndsWithTheSameParameters_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<bool>("adam");
    QTest::newRow("1 rank, sgd momentum") << 1 << false;
    QTest::newRow("2 ranks, sgd momentum") << 2 << false;
    QTest::newRow("3 ranks, adam, cosine") << 3 << true;
  }
  void resumedSyncRunEndsWithTheSameParameters() {
    QFETCH(int, ranks);
    QFETCH(bool, adam);
    // 64 steps an epoch: checkpoints inside the first epoch, on its boundary and in the next.
    ExperimentSpec spec = smallBlobsSpec(150, 50);
    spec.training.checkpointEvery = 32;
    if (adam) {
      spec.optimizer.kind = OptimizerKind::kAdam;
      spec.optimizer.lr = 0.005f;
      spec.optimizer.schedule.kind = ScheduleKind::kCosine;
    }
    RankThreads how;
    how.nodes = nodesAt(std::vector<double>(static_cast<std::size_t>(ranks), 1.0));
    Keeper keeper;
    how.sink = &keeper;
    const std::vector<WorkerResult> whole = runRankThreads(spec, how);
    for (const WorkerResult& r : whole)
      QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
    QCOMPARE(keeper.checkpoints.size(), std::size_t{4});  // steps 32, 64, 96, 128
    QCOMPARE(keeper.checkpoints[1].step, int64_t{64});

    for (const Checkpoint& taken : keeper.checkpoints) {
      // Through the stored form, as a resume gets it.
      auto from = std::make_shared<const Checkpoint>(decodeCheckpoint(encodeCheckpoint(taken)));
      RankThreads again;
      again.nodes = how.nodes;
      again.resumeFrom = from;
      Keeper resumedKeeper;
      again.sink = &resumedKeeper;
      const std::vector<WorkerResult> resumed = runRankThreads(spec, again);
      for (std::size_t r = 0; r < resumed.size(); ++r) {
        QVERIFY2(resumed[r].status == RunStatus::kCompleted, resumed[r].error.c_str());
        QCOMPARE(resumed[r].steps, whole[r].steps);
        QCOMPARE(resumed[r].paramChecksum, whole[r].paramChecksum);
      }
      // Its later checkpoints are the uninterrupted run's, and an event marks the resume.
      QVERIFY(!resumedKeeper.events.empty());
      QCOMPARE(resumedKeeper.events.size() > 1 ? resumedKeeper.events[1].kind : std::string(),
               std::string("resume"));
      for (const Checkpoint& later : resumedKeeper.checkpoints) {
        QVERIFY(later.step > taken.step);
        const Checkpoint& same = keeper.checkpoints[static_cast<std::size_t>(later.step / 32 - 1)];
        QCOMPARE(later.params, same.params);
      }
    }
  }

  // A recorded run keeps its newest checkpoints in the project, and the newest read back
  // continues the run in this process to the uninterrupted run's parameters. A project of
  // the previous schema gains the table when opened.
  void projectsKeepTheNewestCheckpoints() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    auto store = ProjectStore::create(path);
    ExperimentSpec spec = smallBlobsSpec(95, 50);
    spec.training.checkpointEvery = 20;
    spec.training.checkpointsKept = 2;
    RunSummary whole;
    int64_t runId = 0;
    {
      RunRecording recording(*store, spec, "sync_allreduce");
      runId = recording.runId();
      whole = trainLocal(spec, {}, &recording.sink());
      recording.finish(whole);
    }
    QCOMPARE(whole.status, RunStatus::kCompleted);
    const std::vector<CheckpointInfo> kept = store->checkpoints(runId);
    QCOMPARE(kept.size(), std::size_t{2});
    QCOMPARE(kept[0].step, int64_t{60});
    QCOMPARE(kept[1].step, int64_t{80});
    QVERIFY(kept[1].bytes > 0 && kept[1].wallMs > kept[0].wallMs);
    try {
      store->checkpointData(runId, 20);
      QFAIL("a dropped checkpoint was read");
    } catch (const StoreError& e) {
      QVERIFY2(std::string(e.what()).find("it has steps 60, 80") != std::string::npos, e.what());
    }
    LocalTrainOptions options;
    options.resumeFrom =
        std::make_shared<const Checkpoint>(decodeCheckpoint(store->checkpointData(runId, 80)));
    const RunSummary resumed = trainLocal(spec, options, nullptr);
    QCOMPARE(resumed.status, RunStatus::kCompleted);
    QCOMPARE(resumed.paramChecksum, whole.paramChecksum);
    store->deleteRun(runId);
    QVERIFY(store->checkpoints(runId).empty());
  }

  void checkpointsThatDoNotFitAreRefused() {
    ExperimentSpec spec = smallBlobsSpec(40, 20);
    spec.training.checkpointEvery = 10;
    RankThreads how;
    how.nodes = nodesAt({1.0});
    Keeper keeper;
    how.sink = &keeper;
    runRankThreads(spec, how);
    QVERIFY(!keeper.checkpoints.empty());
    // Another model: its parameters do not fit.
    Checkpoint other = keeper.checkpoints.front();
    other.params.pop_back();
    how.resumeFrom = std::make_shared<const Checkpoint>(other);
    WorkerResult r = runRankThreads(spec, how).front();
    QCOMPARE(r.status, RunStatus::kFailed);
    QVERIFY2(r.error.find("parameters, this model has") != std::string::npos, r.error.c_str());
    // Another strategy's.
    other = keeper.checkpoints.front();
    other.strategy = "async_ps";
    how.resumeFrom = std::make_shared<const Checkpoint>(other);
    r = runRankThreads(spec, how).front();
    QVERIFY2(r.error.find("the checkpoint is of a async_ps run") != std::string::npos,
             r.error.c_str());
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
