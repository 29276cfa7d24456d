// hybrid: synchronous all-reduce and the parameter server in one run (threads over real Gloo
// collectives, sharing the server's blocks in process). A sync_then_async run switches once,
// where switch_at says, and records it; an adaptive run goes asynchronous when one node
// straggles and comes back when it recovers, each switch an event with its reason and figures.
#include <QtTest/QtTest>

#include <gloo/rendezvous/hash_store.h>

#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/comm/gloo_communicator.h"
#include "core/spec/spec_json.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy.h"
#include "core/train/switch_policy.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;

namespace {

class Recorder final : public MetricSink {
 public:
  void onStep(const StepMetrics& m) override {
    std::lock_guard lock(mutex_);
    steps.push_back(m);
  }
  void onEvent(const RunEvent& e) override {
    std::lock_guard lock(mutex_);
    events.push_back(e);
  }
  std::vector<RunEvent> switches() const {
    std::vector<RunEvent> out;
    for (const RunEvent& e : events)
      if (e.kind == "strategy_switch") out.push_back(e);
    return out;
  }
  std::vector<StepMetrics> steps;
  std::vector<RunEvent> events;

 private:
  std::mutex mutex_;
};

ExperimentSpec hybridSpec(const nlohmann::json& variant, int64_t steps) {
  ExperimentSpec spec = parseExperimentSpec(
      {{"cluster", {{"local_nodes", 3}}}, {"variants", nlohmann::json::array({variant})}});
  spec.seed = 21;
  spec.dataset.kind = "gaussian_blobs";
  spec.dataset.trainSize = 6144;
  spec.dataset.testSize = 512;
  // Compute of a few milliseconds a step, so that measured times are not timer and
  // scheduling noise (three ranks share two cores here).
  spec.dataset.features = 512;
  spec.dataset.classes = 4;
  spec.model.hidden = {1024};
  spec.training.batchSize = 96;
  spec.training.epochs = 0;
  spec.training.maxSteps = steps;
  spec.training.evalInterval = 25;
  return spec;
}

std::vector<WorkerResult> runRanks(const ExperimentSpec& spec, const std::vector<NodeConfig>& nodes,
                                   MetricSink* sink) {
  test::RankThreads how;
  how.nodes = nodes;
  how.sink = sink;
  how.parameterServer = true;
  return test::runRankThreads(spec, how);
}

}  // namespace

class TestHybrid : public QObject {
  Q_OBJECT
 private slots:
  void stragglerRatioAndPolicyHaveHysteresis() {
    QCOMPARE(stragglerRatio({10.0, 10.0, 30.0}), 3.0);
    QCOMPARE(stragglerRatio({10.0, 20.0}), 20.0 / 15.0);
    QCOMPARE(stragglerRatio({10.0}), 1.0);
    // Unmeasured entries do not count.
    QCOMPARE(stragglerRatio({10.0, std::numeric_limits<double>::quiet_NaN(), 30.0}), 30.0 / 20.0);
    SwitchPolicy p(2.0, 3);
    QCOMPARE(p.backBelow(), 1.5);
    QVERIFY(!p.switchFromSync(2.5));
    QVERIFY(!p.switchFromSync(2.5));
    QVERIFY(!p.switchFromSync(1.9));  // one step inside the band resets the count
    QVERIFY(!p.switchFromSync(2.5));
    QVERIFY(!p.switchFromSync(2.5));
    QVERIFY(p.switchFromSync(2.5));
    // Between the thresholds nothing moves either way.
    for (int i = 0; i < 10; ++i) QVERIFY(!p.switchFromAsync(1.7) && !p.switchFromSync(1.7));
    QVERIFY(!p.switchFromAsync(1.2));
    QVERIFY(!p.switchFromAsync(1.2));
    QVERIFY(p.switchFromAsync(1.2));
  }

  void syncThenAsyncSwitchesOnceWhereSwitchAtSays() {
    const ExperimentSpec spec =
        hybridSpec({{"strategy", "hybrid"}, {"policy", "sync_then_async"}, {"switch_at", 0.4}}, 50);
    Recorder recorder;
    const std::vector<WorkerResult> results =
        runRanks(spec, {NodeConfig{}, NodeConfig{}, NodeConfig{}}, &recorder);
    for (const WorkerResult& r : results) {
      QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
      QCOMPARE(r.stopReason, StopReason::kMaxSteps);
    }
    const std::vector<RunEvent> switches = recorder.switches();
    QCOMPARE(switches.size(), std::size_t{1});
    QCOMPARE(switches[0].step, int64_t{20});  // 0.4 of 50
    QVERIFY2(switches[0].detail.find("sync -> async at step 20 of 50") != std::string::npos,
             switches[0].detail.c_str());
    // Synchronous steps are never stale; asynchronous ones are, and they push.
    double staleBefore = 0.0, staleAfter = 0.0;
    for (const StepMetrics& m : recorder.steps) {
      if (m.step <= 20 && m.worker == 0) staleBefore += m.staleness;
      if (m.step > 20) staleAfter += m.staleness;
    }
    QCOMPARE(staleBefore, 0.0);
    QVERIFY(staleAfter > 0.0);
    QVERIFY(results[0].finalTestAccuracy.value_or(0.0) > 0.5);
  }

  void adaptiveGoesAsyncForAStragglerAndBackWhenItRecovers() {
    const ExperimentSpec spec = hybridSpec(
        {{"strategy", "hybrid"}, {"policy", "adaptive"}, {"straggler_ratio", 3.0}, {"window", 5}},
        140);
    std::vector<NodeConfig> nodes(3);
    nodes[2].speed = 0.1;
    nodes[2].speedSchedule = {{15, 1.0}};  // recovers at its 15th step
    Recorder recorder;
    const std::vector<WorkerResult> results = runRanks(spec, nodes, &recorder);
    for (const WorkerResult& r : results)
      QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
    const std::vector<RunEvent> switches = recorder.switches();

    QVERIFY2(switches.size() >= 2, qPrintable(QString::number(switches.size())));
    QVERIFY2(switches[0].detail.find("sync -> async") == 0, switches[0].detail.c_str());
    QVERIFY2(switches[0].detail.find("straggler ratio") != std::string::npos,
             switches[0].detail.c_str());
    // Went asynchronous within a few windows of the start (the slow node is 10x slower).
    QVERIFY2(switches[0].step <= 15, qPrintable(QString::number(switches[0].step)));
    QVERIFY2(switches[1].detail.find("async -> sync") == 0, switches[1].detail.c_str());
    QVERIFY(switches[1].step > switches[0].step);
    // After the node recovered, hysteresis keeps the run synchronous: no flapping.
    QVERIFY2(switches.size() <= 3, qPrintable(QString::number(switches.size())));
    // Back in synchronous mode every replica ends identical.
    if (switches.size() == 2) {
      QCOMPARE(results[0].paramChecksum, results[1].paramChecksum);
      QCOMPARE(results[0].paramChecksum, results[2].paramChecksum);
    }
  }

  // Evaluating often: during the asynchronous phase each rank evaluates on its own view of the
  // run's progress, so the ranks have passed different evaluation boundaries when they come
  // back together; the synchronous evaluations after that must still be the same collective
  // calls on every rank (else they hang or mix up their all-reduces).
  void evaluationsLineUpAgainAfterTheSwitchBack() {
    ExperimentSpec spec = hybridSpec(
        {{"strategy", "hybrid"}, {"policy", "adaptive"}, {"straggler_ratio", 3.0}, {"window", 5}},
        400);
    spec.training.evalInterval = 3;
    std::vector<NodeConfig> nodes(3);
    nodes[2].speed = 0.1;
    nodes[2].speedSchedule = {{25, 1.0}};
    Recorder recorder;
    const std::vector<WorkerResult> results = runRanks(spec, nodes, &recorder);
    for (const WorkerResult& r : results) {
      QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
      QCOMPARE(r.stopReason, StopReason::kMaxSteps);
    }
    const std::vector<RunEvent> switches = recorder.switches();
    QVERIFY2(switches.size() >= 2, qPrintable(QString::number(switches.size())));
    if (switches.size() % 2 == 0) {  // ended synchronous: one model everywhere
      QCOMPARE(results[0].paramChecksum, results[1].paramChecksum);
      QCOMPARE(results[0].paramChecksum, results[2].paramChecksum);
    }
  }
};

QTEST_GUILESS_MAIN(TestHybrid)
#include "test_hybrid.moc"
