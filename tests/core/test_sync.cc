// Synchronous data parallel in one process: ranks as threads, real Gloo collectives
// over an in-process store. Replicas must stay identical, and N ranks must follow the
// single-replica trajectory with the same global batch.
#include <QtTest/QtTest>

#include <gloo/rendezvous/hash_store.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/comm/gloo_communicator.h"
#include "core/train/strategy.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;

namespace {

ExperimentSpec smallSpec() {
  return test::smallBlobsSpec(10, 5);
}

// Runs `world` ranks of the job as threads; returns every rank's result.
std::vector<WorkerResult> runRanks(const ExperimentSpec& spec, int world,
                                   const std::atomic<bool>* cancel = nullptr,
                                   const std::vector<double>& speeds = {}) {
  test::RankThreads how;
  how.nodes = speeds.empty() ? std::vector<NodeConfig>(static_cast<std::size_t>(world))
                             : test::nodesAt(speeds);
  how.cancel = cancel;
  return test::runRankThreads(spec, how);
}

}  // namespace

class TestSync : public QObject {
  Q_OBJECT
 private slots:
  void replicasStayIdentical_data() {
    QTest::addColumn<int>("world");
    QTest::newRow("1") << 1;
    QTest::newRow("2") << 2;
    QTest::newRow("3 (uneven slices)") << 3;
    QTest::newRow("4") << 4;
  }
  void replicasStayIdentical() {
    QFETCH(int, world);
    const std::vector<WorkerResult> results = runRanks(smallSpec(), world);
    for (const WorkerResult& r : results) {
      QVERIFY2(std::string(toString(r.status)) == "completed", r.error.c_str());
      QCOMPARE(r.steps, int64_t{10});
      QCOMPARE(r.paramChecksum, results[0].paramChecksum);
    }
    int64_t samples = 0;
    for (const WorkerResult& r : results) samples += r.samples;
    QCOMPARE(samples, int64_t{10 * 64});  // the slices cover each global batch exactly
  }

  // The group's all-reduce is measured when the strategy sets up; the start event says what
  // won at which size and the bucket size that follows (or that bucket_kb gave).
  void startEventReportsTheMeasuredAllReduce() {
    for (const int64_t bucketKb : {int64_t{0}, int64_t{64}}) {
      nlohmann::json variant = {{"strategy", "sync_allreduce"}};
      if (bucketKb > 0) variant["bucket_kb"] = bucketKb;
      const ExperimentSpec spec = test::withVariant(smallSpec(), variant);
      test::Keeper keeper;
      test::RankThreads how;
      how.nodes.resize(2);
      how.sink = &keeper;
      for (const WorkerResult& r : test::runRankThreads(spec, how))
        QVERIFY2(std::string(toString(r.status)) == "completed", r.error.c_str());
      std::string start;
      for (const RunEvent& e : keeper.events)
        if (e.kind == "start") start = e.detail;
      QVERIFY2(start.find("all-reduce measured in ") != std::string::npos, start.c_str());
      // The 32-32 model's gradient (1.8 KiB) is below the smallest size measured.
      QVERIFY2(start.find(bucketKb > 0 ? "gradient buckets of 64 KiB (bucket_kb)"
                                       : "gradient buckets of 64 KiB (the smallest size at 75% "
                                         "of the best bandwidth)") != std::string::npos,
               start.c_str());
    }
  }

  // The pass measures the cluster, not the strategy (a later group of the same hosts reuses
  // it), so the run's clock leaves it out: on the run's clock the start event comes at least
  // the pass's time earlier than on a clock started before the ranks were.
  void tuningPassIsOutsideTheRunsClock() {
    class StartClock final : public MetricSink {
     public:
      void onEvent(const RunEvent& e) override {
        if (e.kind != "start") return;
        std::lock_guard lock(mutex);
        start = e;
        at = std::chrono::steady_clock::now();
      }
      std::mutex mutex;
      RunEvent start;
      std::chrono::steady_clock::time_point at;
    };
    const ExperimentSpec spec = test::withVariant(smallSpec(), {{"strategy", "sync_allreduce"}});
    StartClock clock;
    test::RankThreads how;
    how.nodes.resize(2);
    how.sink = &clock;
    const auto before = std::chrono::steady_clock::now();
    for (const WorkerResult& r : test::runRankThreads(spec, how))
      QVERIFY2(std::string(toString(r.status)) == "completed", r.error.c_str());
    const std::string& detail = clock.start.detail;
    const std::string measured = "all-reduce measured in ";
    const std::size_t at = detail.find(measured);
    QVERIFY2(at != std::string::npos, detail.c_str());
    QVERIFY2(detail.find("(outside the run's clock") != std::string::npos, detail.c_str());
    const double passMs = 1000.0 * std::stod(detail.substr(at + measured.size()));
    const double realMs = std::chrono::duration<double, std::milli>(clock.at - before).count();
    // The pass is printed to 10 ms ("%.2f s"): 5 ms of slack for its rounding.
    QVERIFY2(clock.start.wallMs + passMs <= realMs + 5.0,
             qPrintable(QString("start at %1 ms on the run's clock, %2 ms after the ranks began, "
                                "pass %3 ms")
                            .arg(clock.start.wallMs)
                            .arg(realMs)
                            .arg(passMs)));
  }

  void multiRankEqualsSingleReplica() {
    // Synchronous SGD equivalence: 4 ranks with slices of a global batch of 64 take the
    // same steps as one replica with batch 64; only summation order differs.
    const ExperimentSpec spec = smallSpec();
    const std::vector<float> single = runRanks(spec, 1)[0].params;
    const std::vector<float> four = runRanks(spec, 4)[0].params;
    QVERIFY2(test::relativeDifference(four, single) < 1e-4,
             qPrintable(QString::number(test::relativeDifference(four, single))));
    // The bound discriminates: another global batch gives another trajectory.
    ExperimentSpec other = spec;
    other.training.batchSize = 32;
    const std::vector<float> otherBatch = runRanks(other, 4)[0].params;
    QVERIFY2(test::relativeDifference(otherBatch, single) > 1e-3,
             qPrintable(QString::number(test::relativeDifference(otherBatch, single))));
  }

  void ranksStopTogetherOnTarget() {
    ExperimentSpec spec = smallSpec();
    spec.training.maxSteps = 2000;
    spec.training.evalInterval = 10;
    spec.training.targetAccuracy = 0.8;
    const std::vector<WorkerResult> results = runRanks(spec, 3);
    for (const WorkerResult& r : results) {
      QCOMPARE(std::string(toString(r.stopReason)), std::string("target_accuracy"));
      QCOMPARE(r.steps, results[0].steps);
      QVERIFY(r.steps < 2000);
      QVERIFY(r.timeToTargetS.has_value());
    }
  }

  void cancelStopsEveryRank() {
    ExperimentSpec spec = smallSpec();
    spec.training.maxSteps = 1000000;
    std::atomic<bool> cancel{true};
    const std::vector<WorkerResult> results = runRanks(spec, 2, &cancel);
    for (const WorkerResult& r : results) {
      QCOMPARE(std::string(toString(r.status)), std::string("cancelled"));
      QCOMPARE(r.steps, int64_t{1});  // the vote travels with the first step's gradients
    }
  }

  void slowNodeMakesItsPeerWait() {
    // Rank 1 computes at a fifth of real speed: rank 0 spends its steps waiting for
    // rank 1's gradients.
    ExperimentSpec spec = smallSpec();
    spec.model.hidden = {256, 256};
    spec.training.maxSteps = 20;
    const std::vector<WorkerResult> r = runRanks(spec, 2, nullptr, {1.0, 0.2});
    QVERIFY2(std::string(toString(r[0].status)) == "completed", r[0].error.c_str());
    QCOMPARE(r[0].paramChecksum, r[1].paramChecksum);
    // The emulated speed stretches the slow rank's compute...
    QVERIFY2(r[1].computeMsTotal > 2.0 * r[0].computeMsTotal,
             qPrintable(QString("compute ms fast %1, slow %2")
                            .arg(r[0].computeMsTotal)
                            .arg(r[1].computeMsTotal)));
    // ...and the fast rank spends its steps waiting for it. Both wait fractions include
    // the all-reduce itself, which a loaded machine stretches for both alike, so only the
    // order and a floor are asserted.
    const double fastWait = r[0].waitMsTotal / r[0].stepMsTotal;
    const double slowWait = r[1].waitMsTotal / r[1].stepMsTotal;
    QVERIFY2(fastWait > 0.25 && fastWait > slowWait,
             qPrintable(QString("wait fraction fast %1, slow %2").arg(fastWait).arg(slowWait)));
  }

  // Decisions that end a run are collective: a diverged loss or a failed evaluation on one
  // rank stops every rank at the same step with that cause, instead of leaving the others
  // blocked in a collective until a communication error hides it.
  void divergenceStopsEveryRankWithItsCause() {
    ExperimentSpec spec = smallSpec();
    spec.optimizer.lr = 1e9f;
    spec.training.maxSteps = 50;
    const std::vector<WorkerResult> r = runRanks(spec, 3);
    bool someoneOwnsIt = false;
    for (const WorkerResult& w : r) {
      QCOMPARE(std::string(toString(w.status)), std::string("failed"));
      QVERIFY2(w.error.find("diverged") != std::string::npos, w.error.c_str());
      QCOMPARE(w.stopReason, StopReason::kDiverged);
      QVERIFY2(w.origin == FailureOrigin::kThisRank || w.origin == FailureOrigin::kPeer,
               toString(w.origin));
      someoneOwnsIt = someoneOwnsIt || w.origin == FailureOrigin::kThisRank;
    }
    QVERIFY(someoneOwnsIt);
    QVERIFY(r[0].steps < 50);
  }

  void failedEvaluationStopsEveryRankNamingIt() {
    ExperimentSpec spec = smallSpec();
    spec.dataset.testSize = 0;  // rank 0's evaluation throws: the evaluation set is empty
    const std::vector<WorkerResult> r = runRanks(spec, 3);
    QCOMPARE(std::string(toString(r[0].status)), std::string("failed"));
    QVERIFY(r[0].origin == FailureOrigin::kThisRank);
    QCOMPARE(r[0].stopReason, StopReason::kError);
    QVERIFY2(r[0].error.find("evaluation at step 5 failed on rank 0") != std::string::npos,
             r[0].error.c_str());
    for (int rank : {1, 2}) {
      const WorkerResult& w = r[static_cast<std::size_t>(rank)];
      QCOMPARE(std::string(toString(w.status)), std::string("failed"));
      QVERIFY(w.origin == FailureOrigin::kPeer);
      QVERIFY2(w.error.find("stopped at step 5: the evaluation failed on another rank") !=
                   std::string::npos,
               w.error.c_str());
    }
  }

  void badJobsFailClearly() {
    WorkerJob job;
    job.spec = smallSpec();
    job.variant = 3;
    WorkerResult r = runWorker(job, nullptr, nullptr, nullptr);
    QCOMPARE(std::string(toString(r.status)), std::string("failed"));
    QVERIFY(r.error.find("variant 3") != std::string::npos);
    job.variant = 0;
    job.world = 2;
    r = runWorker(job, nullptr, nullptr, nullptr);
    QCOMPARE(std::string(toString(r.status)), std::string("failed"));
    QVERIFY(r.error.find("communicator") != std::string::npos);
  }
};

QTEST_APPLESS_MAIN(TestSync)
#include "test_sync.moc"
