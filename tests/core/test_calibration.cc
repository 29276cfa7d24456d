// The scale simulator's calibration and predictions (issue 24): the fits recover known compute
// and link parameters from observations made with them, say so when two terms cannot be told
// apart, a stored calibration reads back whole and a damaged one is refused naming the field;
// the simulated model cuts its buckets as a run does; a prediction follows the closed form of
// a synchronous step (and local SGD's) and the spec's node emulation, and a strategy without a
// model says so.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>

#include "core/analysis/run_calibration.h"
#include "core/comm/allreduce_tuning.h"
#include "core/comm/gradient_buckets.h"
#include "core/common/check.h"
#include "core/common/random.h"
#include "core/sim/calibration.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/train/scale_prediction.h"
#include "core/train/simulated_model.h"
#include "core/train/strategy_registry.h"
#include "tests/core/dummy_strategy.h"

using namespace dtlab::core;
using namespace dtlab::core::sim;

namespace {

bool within(double got, double want, double share) {
  return std::abs(got - want) <= share * std::abs(want);
}

// Steps of `samples` each taking fixed + samples * perSample, with 3% noise and, one step in
// fifty, a pause of 40 ms.
ComputeObservation observed(double samples, double fixedMs, double perSample, uint64_t seed) {
  ComputeObservation o;
  o.node = "local";
  o.strategy = "sync_allreduce";
  o.samples = samples;
  Rng rng(seed);
  for (int i = 0; i < 500; ++i) {
    double ms = (fixedMs + samples * perSample) * (1.0 + 0.03 * (2.0 * rng.uniform() - 1.0));
    if (i % 50 == 7) ms += 40.0;
    o.msAtSpeed.push_back(ms);
  }
  return o;
}

ExperimentSpec predictionSpec() {
  return parseExperimentSpec(nlohmann::json::parse(R"({
    "dataset": {"kind": "teacher", "features": 64, "classes": 10},
    "model": {"hidden": [256, 256]},
    "training": {"batch_size": 512, "epochs": 0, "max_steps": 10},
    "cluster": {"local_nodes": 2, "nodes": [{"speed": 1.0}, {"speed": 0.5}]},
    "variants": [{"name": "sync", "strategy": "sync_allreduce", "bucket_kb": 65536},
                 {"name": "ps", "strategy": "async_ps"},
                 {"name": "local", "strategy": "local_sgd"}]})"));
}

Calibration handMade() {
  Calibration c;
  c.runs = {1, 2};
  c.pooled.fixedMs = 1.0;
  c.pooled.msPerSample = 0.01;
  c.pooled.batchSizes = {128, 256};
  c.pooled.steps = 100;
  c.collective.bandwidthMbps = 800.0;  // 100 MB/s
  c.collective.latencyMs = 0.5;
  c.collective.latencySeparated = true;
  c.collective.observations = 2;
  c.parameterServer.bandwidthMbps = 8000.0;
  c.parameterServer.observations = 2;
  return c;
}

}  // namespace

class TestCalibration : public QObject {
  Q_OBJECT
 private slots:
  void computeFitRecoversTheLineAndThePauses() {
    const ComputeObservation a = observed(128, 2.0, 0.05, 1);
    const ComputeObservation b = observed(512, 2.0, 0.05, 2);
    std::vector<std::string> notes;
    const ComputeFit f = fitCompute({&a, &b}, "", "every node", &notes);
    QVERIFY2(within(f.fixedMs, 2.0, 0.05), std::to_string(f.fixedMs).c_str());
    QVERIFY2(within(f.msPerSample, 0.05, 0.02), std::to_string(f.msPerSample).c_str());
    QCOMPARE(f.steps, int64_t{1000});
    QCOMPARE(f.batchSizes, (std::vector<double>{128, 512}));
    // The spread is the noise's (uniform 3%: sd 1.7%), the pauses one step in fifty.
    QVERIFY2(f.spread > 0.005 && f.spread < 0.04, std::to_string(f.spread).c_str());
    QVERIFY2(within(f.pauseProbability, 0.02, 0.01), std::to_string(f.pauseProbability).c_str());
    QVERIFY2(within(f.pauseMs, 40.0, 0.1), std::to_string(f.pauseMs).c_str());
    QVERIFY(notes.empty());
    // The whole distribution about the line: 100 equally likely quantiles, ascending, the
    // noise's 3% about 1 in the middle and the pauses (40 ms over 8.4 or 27.6) at the top.
    QCOMPARE(f.shape.size(), std::size_t{100});
    QVERIFY(std::is_sorted(f.shape.begin(), f.shape.end()));
    QVERIFY2(within(f.shape[49], 1.0, 0.03), std::to_string(f.shape[49]).c_str());
    QVERIFY2(f.shape[2] > 0.95 && f.shape[96] < 1.05, std::to_string(f.shape[96]).c_str());
    QVERIFY2(f.shape[99] > 2.0, std::to_string(f.shape[99]).c_str());
  }

  void computeAtOneBatchSizeIsProportionalAndSaysSo() {
    const ComputeObservation a = observed(256, 2.0, 0.05, 3);
    std::vector<std::string> notes;
    const ComputeFit f = fitCompute({&a}, "vm", "node vm", &notes);
    QCOMPARE(f.fixedMs, 0.0);
    QVERIFY(within(f.msPerSample * 256, 2.0 + 256 * 0.05, 0.03));
    QCOMPARE(notes.size(), std::size_t{1});
    QVERIFY(notes[0].find("node vm") != std::string::npos);
    QVERIFY(notes[0].find("one batch size") != std::string::npos);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, fitCompute({}, "", "every node", nullptr));
  }

  void linkFitSeparatesLatencyFromBandwidth() {
    // ms = 0.2 per message + bytes / (50 bytes per microsecond): 400 Mbit/s.
    const auto ms = [](double m, double bytes) { return 0.2 * m + bytes / 50000.0; };
    std::vector<TransferObservation> obs = {
        {2, 1e6, ms(2, 1e6), 50}, {12, 1e6, ms(12, 1e6), 50}, {6, 4e6, ms(6, 4e6), 30}};
    std::vector<std::string> notes;
    const LinkFit f = fitLink(obs, "all-reduce link", &notes);
    QVERIFY(f.latencySeparated);
    QVERIFY2(within(f.latencyMs, 0.2, 1e-6), std::to_string(f.latencyMs).c_str());
    QVERIFY2(within(f.bandwidthMbps, 400.0, 1e-6), std::to_string(f.bandwidthMbps).c_str());
    QVERIFY(f.spread < 1e-9);
    QVERIFY(notes.empty());
    // Its model: what the simulator's links take.
    QVERIFY(within(f.model().bytesPerS, 50e6, 1e-6));
    QVERIFY(within(f.model().latencyS, 0.2e-3, 1e-6));
  }

  void collinearObservationsAreAllBandwidthAndSaySo() {
    // Two observations with the same messages per byte: the split is not identifiable.
    std::vector<TransferObservation> obs = {{2, 1e6, 24.0, 50}, {4, 2e6, 48.0, 50}};
    std::vector<std::string> notes;
    const LinkFit f = fitLink(obs, "parameter-server link", &notes);
    QVERIFY(!f.latencySeparated);
    QCOMPARE(f.latencyMs, 0.0);
    QVERIFY(within(f.bandwidthMbps, 8e-3 / (24.0 / 1e6), 1e-9));
    QCOMPARE(notes.size(), std::size_t{1});
    QVERIFY(notes[0].find("parameter-server link") != std::string::npos);
    // Nothing observed: no link.
    QVERIFY(!fitLink({}, "x", nullptr).measured());
  }

  // With the latency known from elsewhere (the calls of several sizes a group timed), the
  // collinear observations' time beyond it is bandwidth: 2 messages of 0.5 ms leave 23 ms for
  // 1e6 bytes. A latency that leaves no time is replaced by the observations' own, all of it.
  void aGivenLatencyLeavesTheRestToBandwidth() {
    const std::vector<TransferObservation> obs = {{2, 1e6, 24.0, 50}, {4, 2e6, 48.0, 50}};
    std::vector<std::string> notes;
    const LinkFit f = fitLink(obs, "all-reduce link", &notes, 0.5);
    QVERIFY(f.latencySeparated);
    QCOMPARE(f.latencyMs, 0.5);
    QVERIFY2(within(f.bandwidthMbps, 8e-3 / (23.0 / 1e6), 1e-9),
             std::to_string(f.bandwidthMbps).c_str());
    QVERIFY(f.spread < 1e-9);
    QVERIFY(notes.empty());
    const LinkFit all = fitLink(obs, "all-reduce link", nullptr, 20.0);
    QVERIFY(within(all.latencyMs, 12.0, 1e-9));
    QCOMPARE(all.bandwidthMbps, 1e9);
  }

  void negativeLatencyIsClampedToZero() {
    // Bigger messages that cost less per message than nothing: latency 0, the rest bandwidth.
    std::vector<TransferObservation> obs = {{2, 1e6, 10.0, 10}, {20, 1e6, 9.0, 10}};
    const LinkFit f = fitLink(obs, "x", nullptr);
    QCOMPARE(f.latencyMs, 0.0);
    QVERIFY(f.bandwidthMbps > 0.0);
  }

  void jsonRoundTripAndErrors() {
    Calibration c = handMade();
    c.nodes = {c.pooled};
    c.nodes[0].label = "vm";
    c.nodes[0].shape = {0.9, 1.0, 1.0, 1.4};
    c.strategies = {c.pooled};
    c.strategies[0].label = "async_ps";
    c.bucketBytes = 65536;
    c.clockCheckMs = 0.1;
    c.hostCores = {{"vm", 2}};
    c.cpu = {{"async_ps", 0.5, 1, 4, 2}};
    c.notes = {"a note"};
    const nlohmann::json j = c.toJson();
    const Calibration back = Calibration::fromJson(j, "calibration 1");
    QCOMPARE(back.toJson(), j);
    QCOMPARE(back.nodes[0].label, std::string("vm"));
    QVERIFY(!back.describe().empty());

    auto refused = [&](nlohmann::json bad, const std::string& says) {
      try {
        Calibration::fromJson(bad, "calibration 1");
      } catch (const dtlab::Error& e) {
        return std::string(e.what()).find(says) != std::string::npos;
      }
      return false;
    };
    nlohmann::json bad = j;
    bad["collective"].erase("bandwidth_mbps");
    QVERIFY(refused(bad, "calibration 1.collective: the calibration has no \"bandwidth_mbps\""));
    bad = j;
    bad["compute"]["ms_per_sample"] = -1.0;
    QVERIFY(refused(bad, "calibration 1.compute.ms_per_sample"));
    bad = j;
    bad["nodes"][0]["pause_probability"] = 2.0;
    QVERIFY(refused(bad, "calibration 1.nodes[0].pause_probability"));
    bad = j;
    bad["nodes"][0]["shape"] = {1.0, 0.9};
    QVERIFY(refused(bad, "calibration 1.nodes[0].shape[1]: expected ascending numbers > 0"));
    bad = j;
    bad["host_cores"]["vm"] = 0;
    QVERIFY(refused(bad, "calibration 1.host_cores.vm: expected at least 1 core"));
    bad = j;
    bad["cpu"][0]["calls_ms"] = -0.5;
    QVERIFY(refused(bad, "calibration 1.cpu[0].calls_ms: expected a finite number >= 0"));
    bad = j;
    bad["cpu"][0]["compute_threads"] = 0;
    QVERIFY(refused(bad, "calibration 1.cpu[0].compute_threads: expected at least 1"));
    bad = j;
    bad["bucket_bytes"] = "big";
    QVERIFY(refused(bad, "calibration 1.bucket_bytes: wrong type"));
    QVERIFY(refused(nlohmann::json::array(), "must be a JSON object"));
  }

  void cpuFitIsComputePlusTheCallsOfRemoteRuns() {
    // A node's CPU per step is its compute's and its calls': the calls from the runs of 2 or
    // more nodes (one node calls nobody), weighted by their samples; per strategy.
    std::vector<CpuObservation> seen = {
        {"async_ps", 1, 5.2, 5.0, 1, 10},  // one node: 0.2 of calls
        {"async_ps", 2, 3.5, 2.5, 1, 30},  // 1.0
        {"async_ps", 2, 3.9, 2.5, 1, 10},  // 1.4
        {"sync_allreduce", 1, 2.0, 1.5, 2, 10},
    };
    const std::optional<CpuFit> ps = fitCpu(seen, "async_ps");
    QVERIFY(ps);
    QVERIFY(within(ps->callsMs, (30 * 1.0 + 10 * 1.4) / 40, 1e-9));
    QCOMPARE(ps->observations, int64_t{2});
    QCOMPARE(ps->fromNodes, 2);
    // Runs of one node only: what they have, with the compute's threads.
    const std::optional<CpuFit> sync = fitCpu(seen, "sync_allreduce");
    QVERIFY(sync && within(sync->callsMs, 0.5, 1e-9));
    QCOMPARE(sync->computeThreads, 2);
    QCOMPARE(sync->fromNodes, 1);
    QVERIFY(!fitCpu(seen, "ssp"));
  }

  void nodesSharingAHostAreStretchedByTheirCpuWork() {
    // Two local nodes on one host of one core, each wanting its core all the time (CPU work far
    // beyond a step): both take twice as long to compute and to call the server, and the
    // all-reduce's link is the wire's, unchanged.
    const ExperimentSpec spec = predictionSpec();
    Calibration shared = handMade();
    shared.hostCores = {{"vm", 1}};
    for (const char* strategy : {"sync_allreduce", "async_ps", "local_sgd"})
      shared.cpu.push_back({strategy, 1000.0, 1, 2, 2});
    Calibration doubled = handMade();  // the same cluster, slowed by hand
    doubled.hostCores = shared.hostCores;
    doubled.pooled.fixedMs *= 2.0;
    doubled.pooled.msPerSample *= 2.0;
    doubled.parameterServer.bandwidthMbps /= 2.0;
    PredictOptions options;
    options.nodes = {1, 2};
    options.steps = 50;
    const std::vector<VariantPrediction> got = predictScale(spec, shared, options);
    const std::vector<VariantPrediction> want = predictScale(spec, doubled, options);
    const std::vector<VariantPrediction> alone = predictScale(spec, handMade(), options);
    for (std::size_t v = 0; v < got.size(); ++v) {
      // One node has the core to itself.
      QCOMPARE(got[v].points[0].hostStretch, 1.0);
      QVERIFY(within(got[v].points[0].stepMs, alone[v].points[0].stepMs, 1e-9));
      QVERIFY(within(got[v].points[1].hostStretch, 2.0, 1e-6));
      QVERIFY2(within(got[v].points[1].stepMs, want[v].points[1].stepMs, 1e-6),
               (got[v].variant + ": " + std::to_string(got[v].points[1].stepMs) + " vs " +
                std::to_string(want[v].points[1].stepMs))
                   .c_str());
    }
    QVERIFY(hostAssumption(spec, shared, options).find("2 nodes to a host of 1 core, shared") == 0);
    // A node to a host: nothing shared.
    options.nodesPerHost = 1;
    const std::vector<VariantPrediction> own = predictScale(spec, shared, options);
    QCOMPARE(own[1].points[1].hostStretch, 1.0);
    QVERIFY(within(own[1].points[1].stepMs, alone[1].points[1].stepMs, 1e-9));
    QCOMPARE(hostAssumption(spec, shared, options), std::string("each node a host of its own"));
    // Without the runs' cpu_util there is nothing to stretch by, and the assumption says so.
    options.nodesPerHost = 0;
    Calibration unmeasured = shared;
    unmeasured.cpu.clear();
    QCOMPARE(predictScale(spec, unmeasured, options)[1].points[1].hostStretch, 1.0);
    QVERIFY(hostAssumption(spec, unmeasured, options).find("no cpu_util") != std::string::npos);
  }

  void byteSizesReadBack() {
    for (int64_t bytes : {int64_t{12}, int64_t{65536}, int64_t{1} << 20, int64_t{3} << 29})
      QCOMPARE(parseByteSizeText(byteSizeText(bytes)), std::optional<int64_t>(bytes));
    QCOMPARE(parseByteSizeText("1.5 MiB (bucket_kb)"), std::optional<int64_t>(1572864));
    QCOMPARE(parseByteSizeText("64 KiBs"), std::nullopt);
    QCOMPARE(parseByteSizeText("KiB"), std::nullopt);
    QCOMPARE(parseByteSizeText("64KiB"), std::nullopt);
  }

  void simulatedModelCutsBucketsAsARunDoes() {
    const ExperimentSpec spec = predictionSpec();
    // 64*256 + 256 + 256*256 + 256 + 256*10 + 10 parameters.
    const double params = 64 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10;
    const ModelShape one = simulatedModel(spec, int64_t{64} << 20);
    QCOMPARE(one.parameterBytes, 4 * params);
    QCOMPARE(one.bucketBytes.size(), std::size_t{1});
    QCOMPARE(one.bucketReady, std::vector<double>{1.0});
    const ModelShape small = simulatedModel(spec, 64 * 1024);
    QCOMPARE(small.bucketBytes.size(), std::size_t{2});  // [votes, layer 3, layer 2], [layer 1]
    double total = 0.0;
    for (std::size_t i = 0; i < small.bucketBytes.size(); ++i) {
      total += small.bucketBytes[i];
      if (i > 0) QVERIFY(small.bucketReady[i] > small.bucketReady[i - 1]);
    }
    QCOMPARE(small.bucketReady.back(), 1.0);
    QCOMPARE(total, 4 * (params + 16));  // the votes' control block rides along
  }

  void measuredHandOffsPlaceTheBuckets() {
    const ExperimentSpec spec = predictionSpec();
    // Three dense layers, each handed over whole (none of 1 MiB): three hand-offs, timed.
    const std::vector<double> shares = measureHandOffShares(spec, 128);
    QCOMPARE(shares.size(), std::size_t{3});
    QVERIFY(shares[0] > 0.0);
    QVERIFY(shares[0] <= shares[1] && shares[1] <= shares[2]);
    QCOMPARE(shares[2], 1.0);
    // A bucket is ready at its last hand-off's share, and the shares are of the whole step.
    const ModelShape shape = simulatedModel(spec, 64 * 1024, {0.3, 0.7, 1.0});
    QCOMPARE(shape.backwardShare, 1.0);
    QCOMPARE(shape.bucketReady, (std::vector<double>{0.7, 1.0}));  // [votes, 3, 2], [1]
    // Shares of another model (a count that does not match) are not used.
    QCOMPARE(simulatedModel(spec, 64 * 1024, {0.5, 1.0}).backwardShare, 2.0 / 3.0);
  }

  void predictionFollowsTheClosedFormAndTheSpeeds() {
    const ExperimentSpec spec = predictionSpec();
    PredictOptions options;
    options.nodes = {2, 8};
    options.steps = 50;
    const std::vector<VariantPrediction> p = predictScale(spec, handMade(), options);
    QCOMPARE(p.size(), std::size_t{3});
    // sync: one bucket, so a step is the slowest node's compute, then the ring all-reduce.
    // Node i emulates the spec's node i mod 2: every other node at half speed.
    const double bytes = simulatedModel(spec, int64_t{64} << 20).bucketBytes[0];
    for (const ScalePoint& s : p[0].points) {
      const double n = s.nodes;
      const double compute = (1.0 + 0.01 * 512 / n) / 0.5;
      const double ring = 2 * (n - 1) * 0.5 + 2 * (n - 1) / n * bytes / 100e6 * 1e3;
      QVERIFY2(within(s.stepMs, compute + ring, 0.01),
               (std::to_string(s.stepMs) + " vs " + std::to_string(compute + ring)).c_str());
      QVERIFY(s.lowMs <= s.stepMs && s.stepMs <= s.highMs);
      QVERIFY(within(s.samplesPerS, 512 / (s.stepMs * 1e-3), 1e-6));
    }
    QVERIFY(p[0].unmodelled.empty());
    // async_ps is modelled, with staleness growing with the workers.
    QVERIFY(p[1].unmodelled.empty());
    QVERIFY(p[1].points[1].meanStaleness > p[1].points[0].meanStaleness);
    // local_sgd (period 8 by default, and the last step): the slowest node's step, then 7 averages
    // in 50 steps of the parameters and the votes.
    const double params = simulatedModel(spec, 0).parameterBytes;
    for (const ScalePoint& s : p[2].points) {
      const double n = s.nodes;
      const double compute = (1.0 + 0.01 * 512 / n) / 0.5;
      const double ring = 2 * (n - 1) * 0.5 + 2 * (n - 1) / n * (params + 64) / 100e6 * 1e3;
      QVERIFY2(within(s.stepMs, compute + ring * 7 / 50, 0.01), std::to_string(s.stepMs).c_str());
    }
    // A strategy without a model (a test's own) says so.
    test::registerDummyStrategy();
    ExperimentSpec other = spec;
    other.variants = {defaultVariant(test::kDummyStrategy)};
    const std::vector<VariantPrediction> none = predictScale(other, handMade(), options);
    QVERIFY(none[0].points.empty());
    QVERIFY(none[0].unmodelled.find(std::string("no model of ") + test::kDummyStrategy) !=
            std::string::npos);
    // No parameter-server link measured: async_ps cannot be predicted, and says why.
    Calibration noServer = handMade();
    noServer.parameterServer = {};
    const std::vector<VariantPrediction> q = predictScale(spec, noServer, options);
    QVERIFY(q[1].unmodelled.find("no parameter-server link") != std::string::npos);
  }

  // A step's compute is drawn from the calibrated shape: one node alone averages the line times
  // the shape's mean. Where the spec emulates straggler pauses, those are drawn as it emulates
  // them and the shape's top share (where the measured pauses were) goes: no pause twice.
  void predictionDrawsComputeFromTheShape() {
    ExperimentSpec spec = predictionSpec();
    spec.variants = {spec.variants[0]};
    spec.cluster.localNodes = 1;
    spec.cluster.nodes = {NodeConfig{}};
    Calibration c = handMade();
    c.pooled.shape.assign(90, 1.0);
    c.pooled.shape.resize(100, 3.0);  // one step in ten at 3 times the line
    PredictOptions options;
    options.nodes = {1};
    options.steps = 4000;
    options.throughputOnly = true;
    const double line = 1.0 + 0.01 * 512;
    double step = predictScale(spec, c, options)[0].points[0].stepMs;
    QVERIFY2(within(step, line * 1.2, 0.03), std::to_string(step).c_str());
    spec.cluster.nodes[0].straggler.probability = 0.1;
    spec.cluster.nodes[0].straggler.pauseMs = 30.0;
    step = predictScale(spec, c, options)[0].points[0].stepMs;
    QVERIFY2(within(step, line + 0.1 * 30.0, 0.03), std::to_string(step).c_str());
  }

  // A run's figures leave its warm-up out: its first tenth (and at least its first two
  // steps), where first touches and workers that started apart (a bounded-staleness worker's
  // first wait for the last to start) slow steps once for the run. 100 steps: 1 to 10 at
  // 100 ms, the rest at 10 ms, so the measured step is 10 ms, not 17.3 from step 3 on.
  void measuredFiguresLeaveTheWarmUpOut() {
    const QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    auto store = ProjectStore::create(path);
    ExperimentSpec spec = predictionSpec();
    spec.name = "warm";
    spec.variants = {spec.variants[0]};
    const int64_t experiment = store->putEntity(EntityKind::kExperiment, "warm", toJson(spec));
    const int64_t run = store->beginRun(
        {experiment, "warm/sync", "sync_allreduce", 1, toJson(spec), std::nullopt, 0});
    {
      PointAppender appender(path);
      const SeriesHandle step = appender.series(run, 0, 0, "step_ms");
      const SeriesHandle compute = appender.series(run, 0, 0, "compute_ms");
      for (int64_t i = 1; i <= 100; ++i) {
        const double ms = i <= 10 ? 100.0 : 10.0;
        appender.append(step, i, static_cast<double>(i) * 10.0, ms);
        appender.append(compute, i, static_cast<double>(i) * 10.0, ms);
      }
      appender.close();
    }
    RunSummary summary;
    summary.name = "sync";
    summary.status = RunStatus::kCompleted;
    summary.steps = 100;
    summary.nodes = 1;
    store->finishRun(run, summary);
    const std::vector<MeasuredPoint> points = measuredPoints(*store, "warm");
    QCOMPARE(points.size(), std::size_t{1});
    QVERIFY2(within(points[0].stepMs, 10.0, 1e-9), std::to_string(points[0].stepMs).c_str());
  }

  void convergenceModelScalesStaleStepsOnly() {
    ExperimentSpec spec = predictionSpec();
    spec.training.targetAccuracy = 0.8;
    PredictOptions options;
    options.nodes = {8};
    options.steps = 50;
    std::vector<MeasuredPoint> measured(2);
    measured[0].variant = "sync";
    measured[0].nodes = 2;
    measured[0].stepsToTarget = 400;
    measured[1].variant = "ps";
    measured[1].nodes = 2;
    measured[1].meanStaleness = 1.0;
    measured[1].stepsToTarget = 400;
    const std::vector<VariantPrediction> p = predictScale(spec, handMade(), options, measured);
    const ScalePoint& sync = p[0].points[0];
    QCOMPARE(sync.stepsToTarget, std::optional<double>(400.0));
    QVERIFY(within(*sync.timeToTargetS, 400 * sync.stepMs * 1e-3, 1e-9));
    const ScalePoint& ps = p[1].points[0];
    QVERIFY(within(*ps.stepsToTarget, 400 * (1 + ps.meanStaleness) / 2.0, 1e-9));
    QVERIFY(!p[1].convergence.empty());
    options.throughputOnly = true;
    const std::vector<VariantPrediction> t = predictScale(spec, handMade(), options, measured);
    QVERIFY(!t[0].points[0].stepsToTarget);
    QVERIFY(t[0].convergence.empty());
  }
};

QTEST_GUILESS_MAIN(TestCalibration)
#include "test_calibration.moc"
