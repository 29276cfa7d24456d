// The facts events carry beside their sentences (core/metrics/event_facts.h): each kind's
// codec round-trips, refuses what is not its data with the event named, and the readers of
// the old sentences (core/store/legacy_events.h, used only by the project upgrade) read what
// the DTLab of 2026-12-07 wrote back to the facts the events now carry.
#include <QtTest/QtTest>

#include <string>

#include "core/common/check.h"
#include "core/metrics/event_facts.h"
#include "core/store/legacy_events.h"
#include "core/train/strategy_registry.h"
#include "tests/support/specs.h"

using namespace dtlab;
using namespace dtlab::core;

class TestEventFacts : public QObject {
  Q_OBJECT

 private slots:
  void eachKindRoundTrips() {
    const NodeFacts node{3,
                         "node3 (10.0.0.4:7000)",
                         "lab4",
                         "0.1.0",
                         "AMD EPYC 9R14, 16 cores, 1 worker threads",
                         16,
                         {"cuda:0 (NVIDIA H200, 139.8 GiB, compute capability 9.0)"}};
    QCOMPARE(nodeFactsOf({0, 0.0, "node", node.sentence(), eventData(node)}), node);
    QCOMPARE(node.sentence(),
             std::string("node3 (10.0.0.4:7000): host lab4, DTLab 0.1.0, AMD EPYC 9R14, 16 "
                         "cores, 1 worker threads; cuda:0 (NVIDIA H200, 139.8 GiB, compute "
                         "capability 9.0)"));
    for (const bool asynchronous : {true, false}) {
      const PhaseFacts phase{asynchronous};
      QCOMPARE(phaseFactsOf({5, 0.0, "strategy_switch", "", eventData(phase)}), phase);
      QCOMPARE(phaseFactsOf({5, 0.0, "hybrid_phase", "", eventData(phase)}), phase);
    }
    const CollectiveFacts collective{262144, {{65536, "shm", 0.0441}, {262144, "gloo", 0.146}}};
    QCOMPARE(collectiveFactsOf({0, 0.0, "start", "", eventData(collective)}), collective);
    const RebalanceFacts moved{{96, 32}, {80, 48}, {18335.0, 4592.5}, 41.5, 33.25, -1};
    QCOMPARE(rebalanceFactsOf({40, 0.0, "rebalance", "", eventData(moved)}), moved);
    QVERIFY(moved.moved());
    const RebalanceFacts kept{{64, 64}, {64, 64}, {900.0, 300.0}, 50.0, 50.0, 1};
    QCOMPARE(rebalanceFactsOf({40, 0.0, "rebalance", "", eventData(kept)}), kept);
    QVERIFY(!kept.moved());
    for (const auto cause :
         {NodeLossFacts::Cause::kNoHeartbeat, NodeLossFacts::Cause::kStreamBroke})
      for (const auto outcome :
           {NodeLossFacts::Outcome::kOthersGoOn, NodeLossFacts::Outcome::kRestartsFromCheckpoint,
            NodeLossFacts::Outcome::kGroupRestarts, NodeLossFacts::Outcome::kRunFails,
            NodeLossFacts::Outcome::kRunHadEnded}) {
        const NodeLossFacts lost{
            2, "rank 2 on node2 (127.0.0.1:7002)", cause, "Socket closed", 1500, 1, outcome};
        QCOMPARE(nodeLossFactsOf({30, 0.0, "node_lost", "", eventData(lost)}), lost);
      }
  }

  // sync_allreduce's pattern for the calibration: the calls of its buckets' algorithm (the
  // fastest at the bucket size) at every size the group timed it, though another algorithm won
  // at some size; from a winner-only event (earlier versions) just the sizes it won.
  void theBucketsAlgorithmIsTimedAtEverySize() {
    const StrategyDescriptor* sync = findStrategy("sync_allreduce");
    QVERIFY(sync != nullptr && sync->transferPattern);
    const VariantConfig v = test::variant({{"strategy", "sync_allreduce"}});
    constexpr int64_t kK = 1024;
    const CollectiveFacts every{256 * kK,
                                {{64 * kK, "shm", 0.50},
                                 {64 * kK, "gloo_allreduce", 0.40},
                                 {256 * kK, "shm", 1.00},
                                 {256 * kK, "gloo_allreduce", 1.20}}};
    const sim::TransferPattern p = sync->transferPattern(v, every);
    QCOMPARE(p.bucketBytes, 256 * kK);
    QCOMPARE(p.calls.size(), std::size_t{2});
    QCOMPARE(p.calls[0].bytes, 64 * kK);
    QCOMPARE(p.calls[0].ms, 0.50);  // shm's, not gloo's faster call
    QCOMPARE(p.calls[1].bytes, 256 * kK);
    QCOMPARE(p.calls[1].ms, 1.00);
    const CollectiveFacts winners{256 * kK,
                                  {{64 * kK, "gloo_allreduce", 0.40}, {256 * kK, "shm", 1.00}}};
    const sim::TransferPattern q = sync->transferPattern(v, winners);
    QCOMPARE(q.calls.size(), std::size_t{1});
    QCOMPARE(q.calls[0].bytes, 256 * kK);
  }

  void otherKindsAndEventsWithoutFactsHaveNone() {
    const std::string phase = eventData(PhaseFacts{true});
    QVERIFY(!nodeFactsOf({0, 0.0, "start", "", phase}).has_value());
    QVERIFY(!phaseFactsOf({0, 0.0, "rebalance", "", phase}).has_value());
    QVERIFY(!phaseFactsOf({0, 0.0, "strategy_switch", "sync -> async at step 3"}).has_value());
    // A start event of a strategy without buckets (async_ps) says nothing of them.
    QVERIFY(!collectiveFactsOf({0, 0.0, "start", "rank 0/2 on cpu", ""}).has_value());
  }

  void damagedFactsAreRefusedNamingTheEvent() {
    const struct {
      RunEvent event;
      const char* says;
    } cases[] = {
        {{7, 0.0, "strategy_switch", "", "[true]"}, "\"strategy_switch\" event at step 7"},
        {{7, 0.0, "strategy_switch", "", "{\"asynchronous\": 1}"}, "\"asynchronous\""},
        {{0, 0.0, "node", "", "{\"node\": 0}"}, "\"label\""},
        {{0, 0.0, "start", "", "{\"bucket_bytes\": 4, \"calls\": 3}"}, "\"calls\""},
        {{0, 0.0, "start", "", "not json"}, "not a JSON object"},
        {{9, 0.0, "rebalance", "",
          R"({"before": [1, 2], "after": [3], "samples_per_second": [], "measured_step_ms": 1,
              "expected_step_ms": 1, "leave_out": -1})"},
         "2 shares before and 1 after"},
        {{9, 0.0, "node_lost", "",
          R"({"rank": 1, "node": "n", "cause": "fire", "error": "", "silent_ms": 0,
              "shard": -1, "outcome": "run_fails"})"},
         "unknown \"cause\": \"fire\""},
    };
    for (const auto& c : cases) {
      QString message;
      try {
        static_cast<void>(nodeFactsOf(c.event));
        static_cast<void>(phaseFactsOf(c.event));
        static_cast<void>(collectiveFactsOf(c.event));
        static_cast<void>(rebalanceFactsOf(c.event));
        static_cast<void>(nodeLossFactsOf(c.event));
      } catch (const dtlab::Error& e) {
        message = e.what();
      }
      QVERIFY2(message.contains(c.says),
               qPrintable(QString::fromStdString(c.event.data) + " -> " + message));
    }
  }

  // Sentences as the build of 2026-12-07 wrote them.
  void theOldSentencesReadBack() {
    const std::string node =
        "node1 (127.0.0.1:44499): host vm, DTLab 0.1.0, AMD EPYC, 2 cores, 1 worker threads";
    const std::optional<NodeFacts> f = legacyNodeFacts(node);
    QVERIFY(f.has_value());
    QCOMPARE(f->node, 1);
    QCOMPARE(f->label, std::string("node1 (127.0.0.1:44499)"));
    QCOMPARE(f->host, std::string("vm"));
    QCOMPARE(f->version, std::string("0.1.0"));
    QCOMPARE(f->machine, std::string("AMD EPYC, 2 cores, 1 worker threads"));
    QCOMPARE(f->cores, int64_t{2});
    QVERIFY(f->devices.empty());
    QCOMPARE(f->sentence(), node);
    const std::string gpu =
        "node0 (h1:7000): host h1, DTLab 0.1.0, Intel Xeon, 64 cores, 1 "
        "worker threads; cuda:0 (NVIDIA H200, 139.8 GiB); cuda:1 (NVIDIA H200)";
    QCOMPARE(legacyNodeFacts(gpu)->devices.size(), std::size_t{2});
    QCOMPARE(legacyNodeFacts(gpu)->sentence(), gpu);
    QVERIFY(!legacyNodeFacts("a machine").has_value());

    QCOMPARE(legacyPhaseFacts("strategy_switch", "sync -> async at step 15 of 30")->asynchronous,
             true);
    QCOMPARE(legacyPhaseFacts("strategy_switch", "async -> sync at step 9: ratio")->asynchronous,
             false);
    QCOMPARE(legacyPhaseFacts("hybrid_phase", "asynchronous (phase 2, resumed)")->asynchronous,
             true);
    QCOMPARE(legacyPhaseFacts("hybrid_phase", "synchronous (resumed)")->asynchronous, false);
    QVERIFY(!legacyPhaseFacts("rebalance", "sync -> async").has_value());

    const std::optional<CollectiveFacts> c = legacyCollectiveFacts(
        "rank 0/4 on cpu (1 thread), 64 of 256 samples per step, all-reduce measured in 0.18 s: "
        "shm 64 KiB-256 KiB (1.79 GB/s); per call shm 0.0441 ms at 64 KiB, shm 0.146 ms at 256 "
        "KiB (outside the run's clock: later groups of these hosts reuse it); gradient buckets "
        "of 64 KiB (the smallest size at 75% of the best bandwidth), 85002 parameters");
    QVERIFY(c.has_value());
    QCOMPARE(c->bucketBytes, int64_t{65536});
    QCOMPARE(c->calls.size(), std::size_t{2});
    QCOMPARE(c->calls[1].bytes, int64_t{262144});
    QCOMPARE(c->calls[1].algorithm, std::string("shm"));
    QVERIFY(std::abs(c->calls[1].ms - 0.146) < 1e-9);
    QVERIFY(!legacyCollectiveFacts("rank 0/2 on cpu (1 thread), 64 samples per push").has_value());
  }
};

QTEST_GUILESS_MAIN(TestEventFacts)
#include "test_event_facts.moc"
