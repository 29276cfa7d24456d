// Replay of asynchronous parameter-server runs (core/train/ps_replay.h, issue 23): a run of four
// workers, one of them a straggler, records every push the server applied; the replay, in one
// process, ends on every worker's final parameters bit for bit, for async_ps and ssp. A record
// with two updates swapped replays to other parameters and names the first push whose gradient
// came out different; a record with a hole is refused naming it.
#include <QtTest/QtTest>

#include <algorithm>
#include <functional>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/check.h"
#include "core/nn/model.h"
#include "core/spec/spec_json.h"
#include "core/train/ps_replay.h"
#include "core/train/push_record.h"
#include "tests/core/rank_threads.h"

using namespace dtlab;
using namespace dtlab::core;

namespace {

// Keeps the pushes and final replicas the workers record.
class Recorder final : public MetricSink {
 public:
  void onPush(const PushRecord& p) override {
    std::lock_guard lock(mutex_);
    pushes.push_back(p);
  }
  void onReplica(const ReplicaRecord& r) override {
    std::lock_guard lock(mutex_);
    replicas.push_back(r);
  }
  void onReset(const ResetRecord& r) override {
    std::lock_guard lock(mutex_);
    resets.push_back(r);
  }
  std::vector<PushRecord> pushes;
  std::vector<ReplicaRecord> replicas;
  std::vector<ResetRecord> resets;

 private:
  std::mutex mutex_;
};

struct RecordedRun {
  ExperimentSpec spec;
  std::vector<WorkerResult> results;
  Recorder record;
};

// Four workers of the variant (its JSON, or a strategy's name) on the small blobs problem;
// worker 3 stalls 20 ms in a third of its steps, so the others' pushes land between its pulls
// and pushes (stale gradients).
void runRecorded(const std::string& variant, RecordedRun& run,
                 const std::function<void(std::vector<NodeConfig>&)>& nodes = {},
                 int64_t steps = 80) {
  run.spec = test::smallBlobsSpec(steps, 20);
  run.spec.optimizer.kind = OptimizerKind::kAdam;  // its state is the block's version
  run.spec.optimizer.lr = 0.01f;
  const nlohmann::json v = variant.starts_with("{") ? nlohmann::json::parse(variant)
                                                    : nlohmann::json{{"strategy", variant}};
  run.spec.variants = {parseExperimentSpec({{"variants", {v}}}).variants[0]};
  test::RankThreads how;
  how.nodes = test::nodesAt({1.0, 1.0, 1.0, 1.0});
  how.nodes[3].straggler.probability = 0.3;
  how.nodes[3].straggler.pauseMs = 20.0;
  if (nodes) nodes(how.nodes);
  how.parameterServer = true;
  how.sink = &run.record;
  run.results = test::runRankThreads(run.spec, how);
}

}  // namespace

class TestPsReplay : public QObject {
  Q_OBJECT
 private slots:
  void replayEndsOnTheRunsParametersBitForBit_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("async_ps") << "async_ps";
    QTest::newRow("ssp") << "ssp";
    // Compressed pushes and pulls (ps_encoding.h): the replay keeps each worker's top-k error
    // and rounds as the transport did.
    QTest::newRow("async_ps, topk")
        << R"({"strategy": "async_ps", "compression": "topk", "topk_ratio": 0.05,
               "start_step": 3})";
    QTest::newRow("ssp, fp16") << R"({"strategy": "ssp", "compression": "fp16"})";
    QTest::newRow("async_ps, bf16") << R"({"strategy": "async_ps", "compression": "bf16"})";
  }
  void replayEndsOnTheRunsParametersBitForBit() {
    QFETCH(QString, strategy);
    RecordedRun run;
    runRecorded(strategy.toStdString(), run);
    for (const WorkerResult& r : run.results)
      QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
    QVERIFY(run.record.pushes.size() >= 4 * 80);
    QCOMPARE(run.record.replicas.size(), std::size_t{4});
    // The run was asynchronous for real: some pushes were applied to a version newer than the
    // one their gradient was computed from.
    int64_t stale = 0;
    for (const PushRecord& p : run.record.pushes)
      for (std::size_t b = 0; b < p.appliedTo.size(); ++b)
        stale += p.appliedTo[b] > p.basedOn[b] ? 1 : 0;
    QVERIFY2(stale > 0, "no push was stale: nothing asynchronous to replay");

    std::vector<PushRecord> shuffled = run.record.pushes;  // the replay takes any order
    std::reverse(shuffled.begin(), shuffled.end());
    const PsReplayResult replay =
        replayParameterServer(run.spec, 0, 4, PsRecordChunk{shuffled, run.record.replicas, {}});
    QVERIFY2(replay.divergence.empty(), replay.divergence.c_str());
    QCOMPARE(replay.pushesApplied, static_cast<int64_t>(run.record.pushes.size()));
    for (int r = 0; r < 4; ++r)
      QCOMPARE(QString::fromStdString(replay.replicaChecksums[static_cast<std::size_t>(r)]),
               QString::fromStdString(run.results[static_cast<std::size_t>(r)].paramChecksum));
  }

  // --until: the server after a global step (every block at step x workers), the pushes in
  // flight then (computed from before the cut, applied after), and nothing applied past it; at
  // or past the record's end, the whole replay.
  void untilStopsEveryBlockAtTheStep() {
    RecordedRun run;
    runRecorded("async_ps", run);
    const PsRecordChunk record{run.record.pushes, run.record.replicas, {}};
    const PsReplayResult whole = replayParameterServer(run.spec, 0, 4, record);
    const int64_t step = 40;
    const int64_t cut = step * 4;
    const PsReplayResult part = replayParameterServer(run.spec, 0, 4, record, step);
    QVERIFY2(part.divergence.empty(), part.divergence.c_str());
    for (int64_t v : part.versions) QCOMPARE(v, cut);
    int64_t before = 0;
    for (const PushRecord& p : run.record.pushes) {
      const bool applied = *std::max_element(p.appliedTo.begin(), p.appliedTo.end()) < cut;
      before += applied ? 1 : 0;
    }
    QCOMPARE(part.pushesApplied, before);
    QVERIFY(!part.pending.empty());
    for (const PushRecord& p : part.pending) {
      QVERIFY(*std::max_element(p.basedOn.begin(), p.basedOn.end()) <= cut);
      QVERIFY(*std::max_element(p.appliedTo.begin(), p.appliedTo.end()) >= cut);
    }
    QVERIFY(part.serverParams != whole.serverParams);
    const PsReplayResult past = replayParameterServer(run.spec, 0, 4, record, 100000);
    QVERIFY(past.pending.empty());
    QCOMPARE(past.pushesApplied, whole.pushesApplied);
    QVERIFY(past.serverParams == whole.serverParams);
  }

  // A hybrid's asynchronous phases start from the synchronous replica's values (a reset of
  // every block, recorded by rank 0): replayed from them, every worker's replica at the end of
  // each asynchronous phase, and at the end, is the run's bit for bit.
  void hybridPhasesReplayBitForBit_data() {
    QTest::addColumn<QString>("variant");
    QTest::newRow("sync_then_async")
        << R"({"strategy": "hybrid", "policy": "sync_then_async", "switch_at": 0.3})";
    QTest::newRow("adaptive") << R"({"strategy": "hybrid", "policy": "adaptive",
                                     "straggler_ratio": 1.5, "window": 5})";
    QTest::newRow("sync_then_async, topk")
        << R"({"strategy": "hybrid", "policy": "sync_then_async", "switch_at": 0.3,
               "compression": "topk", "topk_ratio": 0.05})";
    // Node 3 ten times slower until its step 15 and again from its step 40: asynchronous while
    // it lags, synchronous again when it recovers (a phase that ends), maybe asynchronous again.
    QTest::newRow("adaptive, back and forth")
        << R"({"strategy": "hybrid", "policy": "adaptive", "straggler_ratio": 3.0,
               "window": 5, "nodes": "back and forth"})";
  }
  void hybridPhasesReplayBitForBit() {
    QFETCH(QString, variant);
    RecordedRun run;
    nlohmann::json v = nlohmann::json::parse(variant.toStdString());
    const bool backAndForth = v.contains("nodes");
    v.erase("nodes");
    runRecorded(
        v.dump(), run,
        [&](std::vector<NodeConfig>& nodes) {
          if (!backAndForth) return;
          nodes[3].straggler = {};
          nodes[3].speed = 0.1;
          nodes[3].speedSchedule = {{15, 1.0}, {60, 0.1}};
        },
        backAndForth ? 140 : 80);
    for (const WorkerResult& r : run.results)
      QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
    QVERIFY2(!run.record.resets.empty(), "the run never switched to asynchronous training");
    // Phase ends recorded: each worker's replica when the run went back to synchronous (the
    // back-and-forth row does, in most runs: the switch back follows measured times).
    const auto phaseEnds = std::count_if(run.record.replicas.begin(), run.record.replicas.end(),
                                         [](const ReplicaRecord& r) { return r.phase >= 0; });
    QVERIFY(!run.record.pushes.empty());
    const PsReplayResult replay = replayParameterServer(
        run.spec, 0, 4, PsRecordChunk{run.record.pushes, run.record.replicas, run.record.resets});
    QVERIFY2(replay.divergence.empty(), replay.divergence.c_str());
    QCOMPARE(replay.pushesApplied, static_cast<int64_t>(run.record.pushes.size()));
    QCOMPARE(replay.resetsApplied, static_cast<int64_t>(run.record.resets.size()));
    QVERIFY(replay.replicas.size() >= 4);
    for (const ReplicaCheck& r : replay.replicas) {
      QVERIFY(!r.recorded.empty());
      QCOMPARE(QString::fromStdString(r.replayed), QString::fromStdString(r.recorded));
    }
    qInfo("%zu pushes, %zu resets, %zu replicas checked (%ld at a phase's end)",
          run.record.pushes.size(), run.record.resets.size(), replay.replicas.size(),
          static_cast<long>(phaseEnds));
  }

  // The record as the store keeps it (encodePsRecords): decoded, the same records; cut short
  // or from another format, refused naming where.
  void recordsSurviveTheirEncoding() {
    RecordedRun run;
    runRecorded("async_ps", run);
    PsRecordChunk chunk{run.record.pushes, run.record.replicas, run.record.resets};
    const std::vector<unsigned char> bytes = encodePsRecords(chunk);
    qInfo("%zu pushes of %zu blocks in %zu bytes", chunk.pushes.size(),
          chunk.pushes.front().appliedTo.size(), bytes.size());
    QVERIFY(bytes.size() < chunk.pushes.size() * (6 + 3 * chunk.pushes.front().appliedTo.size()));
    const PsRecordChunk back = decodePsRecords(bytes);
    QCOMPARE(back.pushes.size(), chunk.pushes.size());
    for (std::size_t i = 0; i < back.pushes.size(); ++i) {
      QCOMPARE(back.pushes[i].worker, chunk.pushes[i].worker);
      QCOMPARE(back.pushes[i].clock, chunk.pushes[i].clock);
      QVERIFY(back.pushes[i].basedOn == chunk.pushes[i].basedOn);
      QVERIFY(back.pushes[i].appliedTo == chunk.pushes[i].appliedTo);
      QCOMPARE(back.pushes[i].gradient, chunk.pushes[i].gradient);
    }
    QCOMPARE(back.replicas.size(), chunk.replicas.size());
    const PsReplayResult replay = replayParameterServer(run.spec, 0, 4, back);
    for (int r = 0; r < 4; ++r)
      QCOMPARE(QString::fromStdString(replay.replicaChecksums[static_cast<std::size_t>(r)]),
               QString::fromStdString(run.results[static_cast<std::size_t>(r)].paramChecksum));
    // Cut anywhere, between two records too (the end mark is missing), a chunk is refused.
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
      try {
        decodePsRecords(std::span(bytes.data(), cut));
        QFAIL(qPrintable(QString("a chunk cut to %1 bytes decoded").arg(cut)));
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("parameter-server record: ") == 0, e.what());
      }
    }
  }

  void aSwappedUpdateIsFoundWhereItDiverges() {
    RecordedRun run;
    runRecorded("async_ps", run);
    // Two consecutive updates of block 0 by different workers, where the second's gradient
    // was computed before the first was applied (so the other order could have happened):
    // swapped, the block's weights after them differ, and so does every gradient computed
    // from them.
    std::vector<PushRecord> pushes = run.record.pushes;
    auto at = [&](int64_t version) -> PushRecord& {
      for (PushRecord& p : pushes)
        if (p.appliedTo[0] == version) return p;
      throw Error("no push at version " + std::to_string(version));
    };
    int64_t swapped = -1;
    for (int64_t v = 10; v + 1 < static_cast<int64_t>(pushes.size()); ++v)
      if (at(v).worker != at(v + 1).worker && at(v + 1).basedOn[0] <= v) {
        swapped = v;
        break;
      }
    QVERIFY2(swapped >= 0, "no two neighbouring updates of block 0 could have swapped");
    std::swap(at(swapped).appliedTo[0], at(swapped + 1).appliedTo[0]);
    const PsReplayResult replay =
        replayParameterServer(run.spec, 0, 4, PsRecordChunk{pushes, run.record.replicas, {}});
    QVERIFY2(!replay.divergence.empty(), "the swapped record replayed without a divergence");
    qInfo("block 0 versions %lld and %lld swapped: %s", static_cast<long long>(swapped),
          static_cast<long long>(swapped + 1), replay.divergence.c_str());
    // Named where it shows first: a gradient computed from the swapped weights, or (a swap
    // among the last updates, which no gradient was computed from) a replica at the end.
    QVERIFY2(replay.divergence.find("is the first whose gradient differs") != std::string::npos ||
                 replay.divergence.find("'s replica at the end") != std::string::npos,
             replay.divergence.c_str());
    bool differs = false;
    for (int r = 0; r < 4; ++r)
      differs |= replay.replicaChecksums[static_cast<std::size_t>(r)] !=
                 run.results[static_cast<std::size_t>(r)].paramChecksum;
    QVERIFY2(differs, "the swapped record ended on the run's parameters");
  }

  void aRecordWithAHoleIsRefusedNamingIt() {
    RecordedRun run;
    runRecorded("async_ps", run);
    std::vector<PushRecord> pushes = run.record.pushes;
    // A push in the middle of a worker's record: one with a later push of the same worker (on a
    // busy machine a worker may make only a few pushes before the others end the run).
    const auto gone = std::find_if(pushes.begin(), pushes.end(), [&](const PushRecord& p) {
      return p.clock >= 1 && std::any_of(pushes.begin(), pushes.end(), [&](const PushRecord& q) {
               return q.worker == p.worker && q.clock > p.clock;
             });
    });
    QVERIFY(gone != pushes.end());
    const std::string expected = "the record misses worker " + std::to_string(gone->worker) +
                                 "'s push " + std::to_string(gone->clock);
    pushes.erase(gone);
    try {
      replayParameterServer(run.spec, 0, 4, PsRecordChunk{pushes, run.record.replicas, {}});
      QFAIL("a record with a missing push was replayed");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find(expected) != std::string::npos, e.what());
    }
  }

  void synchronousStrategiesSayTheyRepeatFromTheSeed() {
    ExperimentSpec spec = test::smallBlobsSpec(10, 5);
    spec.variants = {
        parseExperimentSpec({{"variants", {{{"strategy", "sync_allreduce"}}}}}).variants[0]};
    try {
      replayParameterServer(spec, 0, 2, PsRecordChunk{});
      QFAIL("a sync_allreduce run was replayed from a record");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("agree on every step") != std::string::npos, e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestPsReplay)
#include "test_ps_replay.moc"
