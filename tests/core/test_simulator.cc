// The scale simulator's models (core/sim, issue 24): the closed forms where they exist, to 1%,
// and the bounds and rates a strategy's step must obey.
#include <QtTest/QtTest>

#include <cmath>

#include "core/common/check.h"
#include "core/sim/cluster_model.h"
#include "core/sim/host_sharing.h"
#include "core/sim/step_models.h"
#include "core/train/strategy_registry.h"

using namespace dtlab::core::sim;

namespace {

ClusterModel cluster(int n, double secondsPerSample, double latencyS, double bytesPerS) {
  ClusterModel c;
  NodeModel node;
  node.secondsPerSample = secondsPerSample;
  c.nodes.assign(static_cast<std::size_t>(n), node);
  c.link = {latencyS, bytesPerS};
  c.serverLink = c.link;
  return c;
}

bool within(double got, double want, double share) {
  return std::abs(got - want) <= share * std::abs(want);
}

}  // namespace

class TestSimulator : public QObject {
  Q_OBJECT
 private slots:
  void closedForms() {
    const LinkModel link{50e-6, 1.25e9};
    QCOMPARE(ringAllReduceSeconds(1, 1e6, link), 0.0);
    // 2(n-1) alpha + 2(n-1)/n S/B
    QVERIFY(
        within(ringAllReduceSeconds(8, 4e6, link), 14 * 50e-6 + 14.0 / 8 * 4e6 / 1.25e9, 1e-12));
    QVERIFY(within(treeAllReduceSeconds(8, 4e6, link), 6 * (50e-6 + 4e6 / 1.25e9), 1e-12));
    QVERIFY(within(treeAllReduceSeconds(5, 1e3, link), 6 * (50e-6 + 1e3 / 1.25e9), 1e-12));
  }

  // Nothing to compute: a step is the ring all-reduce of the gradient, at any size.
  void syncStepWithoutComputeIsTheRing() {
    for (int n : {2, 16, 256, 4096}) {
      const ClusterModel c = cluster(n, 0.0, 20e-6, 1.25e9);
      ModelShape model;
      model.parameterBytes = 64e6;
      SimOptions options;
      options.globalBatch = 8192;
      options.steps = 5;
      const SimResult r = simulateSyncAllReduce(c, model, options);
      QVERIFY2(within(r.stepS, ringAllReduceSeconds(n, 64e6, c.link), 0.01),
               qPrintable(QString("%1 nodes: %2").arg(n).arg(r.stepS)));
    }
  }

  // A synchronous step is bounded by its slowest node: without communication, exactly its
  // compute; with it, at least that and at most that plus every bucket's all-reduce; and when
  // backward hides the buckets, the step is the compute plus the last bucket.
  void syncStepIsBoundedByItsSlowestNode() {
    ClusterModel c = cluster(4, 1e-4, 0.0, 1e30);
    c.nodes[2].secondsPerSample = 4e-4;  // a node four times slower
    ModelShape model;
    model.parameterBytes = 4e6;
    SimOptions options;
    options.globalBatch = 400;
    options.steps = 3;
    SimResult r = simulateSyncAllReduce(c, model, options);
    QVERIFY(within(r.stepS, 100 * 4e-4, 1e-9));
    QVERIFY(within(r.utilization[2], 1.0, 1e-9));
    QVERIFY(within(r.utilization[0], 0.25, 1e-9));

    c.link = {10e-6, 1e9};
    model.bucketBytes = {1e6, 1e6, 1e6, 1e6};
    model.bucketReady = {0.25, 0.5, 0.75, 1.0};
    r = simulateSyncAllReduce(c, model, options);
    const double slowest = 100 * 4e-4;
    const double each = ringAllReduceSeconds(4, 1e6, c.link);
    QVERIFY(r.stepS >= slowest && r.stepS <= slowest + 4 * each);
    // Each bucket's all-reduce (1.5 ms) fits in a quarter of the slowest node's backward
    // (6.7 ms): only the last one is exposed.
    QVERIFY2(within(r.stepS, slowest + each, 1e-9), qPrintable(QString::number(r.stepS)));

    // Shares that follow the speeds balance the compute: every node as busy.
    ClusterModel two = cluster(2, 1e-4, 0.0, 1e30);
    two.nodes[1].secondsPerSample = 4e-4;
    r = simulateSyncAllReduce(two, ModelShape{}, options, {320, 80});
    QVERIFY(within(r.utilization[0], 1.0, 1e-9) && within(r.utilization[1], 1.0, 1e-9));
  }

  // A node's measured shape, drawn each step: one node alone averages the line times its mean;
  // a synchronous step of two waits for the larger draw (shape {1, 3}: 3 unless both draw 1,
  // so 2.5 times the line).
  void computeIsDrawnFromTheShape() {
    ClusterModel c = cluster(1, 1e-4, 0.0, 1e30);
    c.nodes[0].shape = {1.0, 3.0};
    SimOptions options;
    options.globalBatch = 100;
    options.steps = 20000;
    QVERIFY(within(c.nodes[0].meanSeconds(100), 2 * 100 * 1e-4, 1e-12));
    SimResult r = simulateSyncAllReduce(c, ModelShape{}, options);
    QVERIFY2(within(r.stepS, 2 * 100 * 1e-4, 0.02), qPrintable(QString::number(r.stepS)));
    ClusterModel two = cluster(2, 2e-4, 0.0, 1e30);
    for (NodeModel& n : two.nodes) n.shape = {1.0, 3.0};
    r = simulateSyncAllReduce(two, ModelShape{}, options);
    QVERIFY2(within(r.stepS, 2.5 * 50 * 2e-4, 0.02), qPrintable(QString::number(r.stepS)));
  }

  // A straggler's pauses: the step's mean grows by the chance that any node pauses.
  void stragglersDelayEveryone() {
    ClusterModel c = cluster(8, 1e-4, 0.0, 1e30);
    c.nodes[3].stragglerProbability = 0.3;
    c.nodes[3].stragglerPauseS = 0.05;
    SimOptions options;
    options.globalBatch = 800;
    options.steps = 20000;
    const SimResult r = simulateSyncAllReduce(c, ModelShape{}, options);
    QVERIFY2(within(r.stepS, 100 * 1e-4 + 0.3 * 0.05, 0.03), qPrintable(QString::number(r.stepS)));
  }

  // async_ps with a server that is never the bottleneck: every worker at its own rate, and
  // each update about n - 1 pushes stale.
  void asyncWorkersRunAtTheirOwnRates() {
    ClusterModel c = cluster(8, 1e-4, 0.0, 1e30);
    c.nodes[0].secondsPerSample = 3e-4;
    ModelShape model;
    model.parameterBytes = 1e6;
    SimOptions options;
    options.globalBatch = 800;  // 100 samples a push
    options.steps = 2000;
    const SimResult r = simulateParameterServer(c, model, options, {8, 0.0, -1});
    double rate = 0.0;  // samples per second of all workers
    for (const NodeModel& node : c.nodes) rate += 1.0 / node.secondsPerSample;
    QVERIFY2(within(r.samplesPerS, rate, 0.01), qPrintable(QString::number(r.samplesPerS)));
    // 7 fast workers, one three times slower: a push sees the others' pushes in its step.
    QVERIFY2(r.meanStaleness > 5.0 && r.meanStaleness < 9.0,
             qPrintable(QString::number(r.meanStaleness)));
    QCOMPARE(r.maxStaleness >= 7, true);

    // ssp with bound 0: every worker waits for the slowest each clock, as a synchronous step.
    const SimResult bounded = simulateParameterServer(c, model, options, {8, 0.0, 0});
    QVERIFY2(within(bounded.samplesPerS, 8 * 100 / (100 * 3e-4), 0.02),
             qPrintable(QString::number(bounded.samplesPerS)));
    QVERIFY(bounded.maxStaleness <= 7);
  }

  // A server whose link is the bottleneck: pushes and pulls go at the shards' pace.
  void aSlowServerBoundsTheRate() {
    const ClusterModel c = cluster(64, 1e-6, 0.0, 1e8);  // compute is nothing
    ModelShape model;
    model.parameterBytes = 4e6;
    SimOptions options;
    options.globalBatch = 64 * 10;
    options.steps = 50;
    for (int shards : {1, 4}) {
      const SimResult r = simulateParameterServer(c, model, options, {shards, 0.0, -1});
      // Every push and pull moves 4e6 / shards bytes through each shard: 2 of them a push.
      const double pushesPerS = 1e8 / (2 * 4e6 / shards);
      QVERIFY2(within(r.samplesPerS, pushesPerS * 10, 0.02),
               qPrintable(QString("%1 shards: %2").arg(shards).arg(r.samplesPerS)));
    }
  }

  // Shards that share a host's cores serve as that many: four shards on one core serve as one.
  void coLocatedShardsShareTheirCores() {
    const ClusterModel c = cluster(64, 1e-6, 0.0, 1e8);
    ModelShape model;
    model.parameterBytes = 4e6;
    SimOptions options;
    options.globalBatch = 64 * 10;
    options.steps = 50;
    const SimResult one = simulateParameterServer(c, model, options, {1, 0.0, -1});
    ParameterServerModel shared{4, 0.0, -1};
    shared.parallelism = 1;
    const SimResult four = simulateParameterServer(c, model, options, shared);
    QVERIFY2(within(four.samplesPerS, one.samplesPerS, 0.01),
             qPrintable(QString::number(four.samplesPerS)));
  }

  // ssp asks the server for the slowest's clock before each step: a round trip per step.
  void boundedStalenessChecksTheClock() {
    const ClusterModel c = cluster(4, 1e-4, 0.0, 1e30);
    ModelShape model;
    model.parameterBytes = 1e6;
    SimOptions options;
    options.globalBatch = 400;  // 100 samples a push: 10 ms
    options.steps = 500;
    // Workers alike: nobody is ever held back, and each push hears that the slowest is within
    // the bound, so no step asks the server (its round trip, however long, costs nothing).
    ParameterServerModel bound{4, 0.0, 2};
    bound.clockCheckS = 2e-3;
    SimResult r = simulateParameterServer(c, model, options, bound);
    QVERIFY2(within(r.samplesPerS, 4 * 100 / 10e-3, 0.01),
             qPrintable(QString::number(r.samplesPerS)));
    // One worker 3 times slower: the others run ahead to the bound, then ask at every step
    // (their last push heard the slow one behind) and wait there: 4 workers at its 30 ms.
    ClusterModel slow = c;
    slow.nodes[3].secondsPerSample = 3e-4;
    bound.clockCheckS = 0.0;
    r = simulateParameterServer(slow, model, options, bound);
    QVERIFY2(within(r.samplesPerS, 4 * 100 / 30e-3, 0.02),
             qPrintable(QString::number(r.samplesPerS)));
  }

  // Each strategy's model is its descriptor's (beside its class); one without a model says so.
  void strategiesCarryTheirModels() {
    using dtlab::core::defaultVariant;
    using dtlab::core::findStrategy;
    ClusterModel c = cluster(3, 1e-4, 0.0, 1e30);
    c.nodes[2].secondsPerSample = 4e-4;
    ModelShape model;
    model.parameterBytes = 1e6;
    SimOptions options;
    options.globalBatch = 300;
    options.steps = 100;
    dtlab::core::VariantConfig equal = defaultVariant("sync_allreduce");
    dtlab::core::VariantConfig balanced = equal;
    balanced.settings.set("partition", std::string("speed_proportional"));
    const auto& sync = *findStrategy("sync_allreduce");
    QVERIFY(sync.simulate);
    const SimResult e = sync.simulate(equal, c, model, options);
    const SimResult b = sync.simulate(balanced, c, model, options);
    // Speeds 1, 1 and 0.25: the balanced shares 133, 133, 34 against 100 each.
    QVERIFY2(within(e.stepS, 100 * 4e-4, 1e-9), qPrintable(QString::number(e.stepS)));
    QVERIFY2(within(b.stepS, 134 * 1e-4, 1e-9), qPrintable(QString::number(b.stepS)));
    dtlab::core::VariantConfig ssp = defaultVariant("ssp");
    ssp.settings.set("staleness", int64_t{0});
    const SimResult bounded = findStrategy("ssp")->simulate(ssp, c, model, options);
    QVERIFY(bounded.maxStaleness <= 2);
    const SimResult free =
        findStrategy("async_ps")->simulate(defaultVariant("async_ps"), c, model, options);
    QVERIFY(free.samplesPerS > bounded.samplesPerS);
    int withModel = 0;
    for (const dtlab::core::StrategyDescriptor* d : dtlab::core::strategies())
      withModel += d->simulate ? 1 : 0;
    QCOMPARE(withModel, 5);  // every built-in strategy
  }

  // local_sgd: each node computes `period` steps on its own, then all meet the slowest and
  // average their parameters (a ring all-reduce of them and the votes): per step, the slowest
  // node's compute and a period's share of the average.
  void localSgdAveragesEveryPeriod() {
    ClusterModel c = cluster(4, 1e-4, 20e-6, 1e8);
    c.nodes[3].secondsPerSample = 3e-4;
    ModelShape model;
    model.parameterBytes = 4e6;
    SimOptions options;
    options.globalBatch = 400;
    options.steps = 800;
    const double average = ringAllReduceSeconds(4, 4e6 + 64, c.link);
    for (int64_t period : {int64_t{1}, int64_t{8}}) {
      const SimResult r = simulateLocalSgd(c, model, options, period);
      QVERIFY2(within(r.stepS, 100 * 3e-4 + average / period, 0.01),
               qPrintable(QString::number(r.stepS)));
      QCOMPARE(r.meanStaleness, 0.0);
    }
    dtlab::core::VariantConfig v = dtlab::core::defaultVariant("local_sgd");
    v.settings.set("period", int64_t{8});
    const SimResult viaDescriptor =
        dtlab::core::findStrategy("local_sgd")->simulate(v, c, model, options);
    QVERIFY(within(viaDescriptor.stepS, simulateLocalSgd(c, model, options, 8).stepS, 1e-12));
  }

  // hybrid: its phases one after another, from the step its policy switches at.
  void hybridRunsItsPhases() {
    using dtlab::core::defaultVariant;
    ClusterModel c = cluster(4, 1e-4, 0.0, 1e9);
    c.nodes[3].secondsPerSample = 4e-4;  // a straggler: 4x the median
    ModelShape model;
    model.parameterBytes = 1e6;
    SimOptions options;
    options.globalBatch = 400;
    options.steps = 200;
    const auto& hybrid = *dtlab::core::findStrategy("hybrid");
    dtlab::core::VariantConfig half = defaultVariant("hybrid");
    half.settings.set("switch_at", 0.5);
    SimOptions each = options;
    each.steps = 100;
    const SimResult sync = simulateSyncAllReduce(c, model, each);
    const SimResult async = simulateParameterServer(c, model, each, {4, 0.0, -1});
    const SimResult both = hybrid.simulate(half, c, model, options);
    QVERIFY2(within(both.wallS, sync.wallS + async.wallS, 1e-9),
             qPrintable(QString::number(both.wallS)));
    QVERIFY(within(both.meanStaleness, async.meanStaleness / 2, 1e-9));  // half the pushes
    // A run that planned 1000 steps and reached its target at 300 never switched: it trained
    // synchronously throughout, and so is simulated.
    SimOptions early = options;
    early.plannedSteps = 1000;
    early.ranSteps = 300;
    const SimResult unswitched = hybrid.simulate(half, c, model, early);
    QCOMPARE(unswitched.meanStaleness, 0.0);
    QVERIFY(within(unswitched.stepS, simulateSyncAllReduce(c, model, options).stepS, 1e-9));
    // adaptive: the straggler ratio 4 is above 1.5, so asynchronous after the window; with
    // every node alike it stays synchronous throughout.
    dtlab::core::VariantConfig adaptive = defaultVariant("hybrid");
    adaptive.settings.set("policy", std::string("adaptive"));
    adaptive.settings.set("window", int64_t{10});
    const SimResult switched = hybrid.simulate(adaptive, c, model, options);
    QVERIFY(switched.meanStaleness > 0.0);
    QVERIFY(switched.samplesPerS > simulateSyncAllReduce(c, model, options).samplesPerS);
    const ClusterModel alike = cluster(4, 1e-4, 0.0, 1e9);
    const SimResult stayed = hybrid.simulate(adaptive, alike, model, options);
    QCOMPARE(stayed.meanStaleness, 0.0);
    QVERIFY(within(stayed.stepS, simulateSyncAllReduce(alike, model, options).stepS, 1e-9));
  }

  void nodesSharingAHostShareItsCores() {
    // As many cores as nodes, or nobody busy: no stretch; everybody always busy: nodes / cores.
    QCOMPARE(sharedCoreStretch(2, 2, 1.0), 1.0);
    QCOMPARE(sharedCoreStretch(4, 2, 0.0), 1.0);
    QCOMPARE(sharedCoreStretch(4, 2, 1.0), 2.0);
    // 4 nodes on 2 cores, each busy half the time: K = 1 + Binomial(3, 1/2) busy at once,
    // stretched by max(1, K/2): 1/8 + 3/8 + 3/8 * 3/2 + 1/8 * 2 = 21/16.
    QVERIFY(within(sharedCoreStretch(4, 2, 0.5), 21.0 / 16.0, 1e-12));
    // A big host stays finite and near its mean load: K/64 with K about 1 + 4095/2.
    QVERIFY(within(sharedCoreStretch(4096, 64, 0.5), (1 + 4095 * 0.5) / 64, 0.01));
    // The host's stretch is the fixed point of the stretch and the busy share it leaves.
    for (double cpu : {0.2, 0.5, 0.9}) {
      const double s = hostStretch(4, 2, cpu, 1.0);
      QVERIFY(s > 1.0 && s < 2.0);
      QVERIFY2(within(s, sharedCoreStretch(4, 2, cpu / s), 1e-6), std::to_string(s).c_str());
    }
    QVERIFY(hostStretch(4, 2, 0.2, 1.0) < hostStretch(4, 2, 0.5, 1.0));
    // CPU work beyond the whole step on every node: always busy, so nodes / cores.
    QVERIFY(within(hostStretch(6, 2, 10.0, 1.0), 3.0, 1e-6));
    QCOMPARE(hostStretch(2, 2, 10.0, 1.0), 1.0);  // a core each
    QCOMPARE(hostStretch(4, 2, 0.0, 1.0), 1.0);   // nothing measured
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, sharedCoreStretch(4, 0, 0.5));

    // Drawn per step: a lone node's steps average the mean stretch; four nodes in step wait
    // for the slowest draw, so their step is longer than the mean stretch alone.
    ModelShape model;
    model.parameterBytes = 1.0;
    SimOptions options;
    options.globalBatch = 400;
    options.steps = 4000;
    const StretchDistribution draws = sharedCoreStretches(4, 2, 0.5);
    ClusterModel one = cluster(1, 1e-4, 0.0, 1e30);
    options.globalBatch = 100;
    stretchCompute(one.nodes[0], draws);
    QVERIFY(within(one.nodes[0].meanStretch(), 21.0 / 16.0, 1e-12));
    QVERIFY(within(one.nodes[0].meanSeconds(100), 100 * 1e-4 * 21.0 / 16.0, 1e-12));
    const double lone = simulateSyncAllReduce(one, model, options).stepS;
    QVERIFY2(within(lone, 100 * 1e-4 * 21.0 / 16.0, 0.03), std::to_string(lone).c_str());
    ClusterModel four = cluster(4, 1e-4, 0.0, 1e30);
    for (NodeModel& node : four.nodes) stretchCompute(node, draws);
    options.globalBatch = 400;
    const double together = simulateSyncAllReduce(four, model, options).stepS;
    QVERIFY2(together > 1.2 * lone, std::to_string(together).c_str());
  }

  void refusesWhatCannotRun() {
    SimOptions options;
    QVERIFY_THROWS_EXCEPTION(dtlab::Error,
                             simulateSyncAllReduce(ClusterModel{}, ModelShape{}, options));
    options.globalBatch = 2;
    QVERIFY_THROWS_EXCEPTION(
        dtlab::Error, simulateSyncAllReduce(cluster(4, 1e-4, 0, 1e9), ModelShape{}, options));
  }
};

QTEST_GUILESS_MAIN(TestSimulator)
#include "test_simulator.moc"
