// Topologies for predictions (issue 24): a tree of switches gives a ring all-reduce the slowest
// uplink it crosses and a parameter server's traffic the share of the uplinks the nodes under
// them leave, each message the latency of the switches it crosses (closed forms); node speeds
// spread by share; a file that says something wrong is refused naming the field; a prediction
// under an oversubscribed tree is slower than on the calibrated links.
#include <QtTest/QtTest>

#include <cmath>

#include "core/common/check.h"
#include "core/sim/topology.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/scale_prediction.h"

using namespace dtlab::core;
using namespace dtlab::core::sim;

namespace {

bool within(double got, double want, double share) {
  return std::abs(got - want) <= share * std::abs(want);
}

Topology tree(double rackOversubscription) {
  return Topology::fromJson(nlohmann::json::parse(R"({"levels": [
      {"fanout": 4, "bandwidth_mbps": 8000, "latency_ms": 0.01, "oversubscription": )" +
                                                  std::to_string(rackOversubscription) + R"(},
      {"fanout": 4, "latency_ms": 0.05}],
    "speeds": [{"share": 0.25, "speed": 0.5}]})"),
                            "tree.json");
}

}  // namespace

class TestTopology : public QObject {
  Q_OBJECT
 private slots:
  void ringTakesTheSlowestUplinkItCrosses() {
    const LinkModel nic{20e-6, 1e9};
    // Racks of 4 at 1 GB/s: an uplink of 4 GB/s, or 0.5 GB/s at 8:1.
    QVERIFY(within(effectiveLink(nic, tree(1), 16, TrafficPattern::kRing).bytesPerS, 1e9, 1e-12));
    QVERIFY(within(effectiveLink(nic, tree(8), 16, TrafficPattern::kRing).bytesPerS, 0.5e9, 1e-12));
    // Inside one rack nothing goes up.
    QVERIFY(within(effectiveLink(nic, tree(8), 4, TrafficPattern::kRing).bytesPerS, 1e9, 1e-12));
    // Across racks a message crosses the spine: its latency and the racks' on both sides.
    QVERIFY(within(effectiveLink(nic, tree(1), 16, TrafficPattern::kRing).latencyS,
                   20e-6 + 0.05e-3 + 2 * 0.01e-3, 1e-9));
  }

  void allToAllSharesTheUplinks() {
    const LinkModel nic{0.0, 1e9};
    // 16 nodes in 4 racks: 3/4 of each node's traffic leaves its rack, 3 nodes' worth a rack.
    QVERIFY(
        within(effectiveLink(nic, tree(1), 16, TrafficPattern::kAllToAll).bytesPerS, 1e9, 1e-12));
    QVERIFY(within(effectiveLink(nic, tree(4), 16, TrafficPattern::kAllToAll).bytesPerS, 1e9 / 3.0,
                   1e-12));
    // The mean path: 3/16 of destinations in the rack, 12/16 across the spine.
    QVERIFY(within(effectiveLink(nic, tree(1), 16, TrafficPattern::kAllToAll).latencyS,
                   3.0 / 16 * 0.01e-3 + 12.0 / 16 * (0.05e-3 + 2 * 0.01e-3), 1e-9));
  }

  void speedsBySharesAndRefusals() {
    const Topology t = tree(1);
    QCOMPARE(t.speedOf(0, 16), 0.5);
    QCOMPARE(t.speedOf(3, 16), 0.5);
    QCOMPARE(t.speedOf(4, 16), 0.0);  // the spec's
    QVERIFY(!t.describe().empty());
    auto refused = [](const char* json, const std::string& says) {
      try {
        Topology::fromJson(nlohmann::json::parse(json), "t.json");
      } catch (const dtlab::Error& e) {
        return std::string(e.what()).find(says) != std::string::npos;
      }
      return false;
    };
    QVERIFY(refused(R"({"levels": [{"fanout": 0}]})", "t.json.levels[0].fanout"));
    QVERIFY(refused(R"({"levels": [{"bandwidth_mbps": 10}]})", "t.json.levels[0]: needs"));
    QVERIFY(refused(R"({"levels": [{"fanout": 2, "oversubscription": 0.5}]})",
                    "t.json.levels[0].oversubscription"));
    QVERIFY(refused(R"({"levles": []})", "t.json: unknown field \"levles\""));
    QVERIFY(refused(R"({"speeds": [{"share": 0.7, "speed": 0.5}, {"share": 0.6, "speed": 2}]})",
                    "the shares add up to"));
  }

  void predictionsFeelTheTree() {
    const ExperimentSpec spec = parseExperimentSpec(nlohmann::json::parse(R"({
      "dataset": {"kind": "teacher", "features": 64, "classes": 10},
      "model": {"hidden": [256, 256]},
      "training": {"batch_size": 512, "epochs": 0, "max_steps": 10},
      "variants": [{"name": "sync", "strategy": "sync_allreduce"}]})"));
    Calibration c;
    c.pooled.fixedMs = 1.0;
    c.pooled.msPerSample = 0.01;
    c.pooled.batchSizes = {128, 256};
    c.collective.bandwidthMbps = 8000.0;
    c.parameterServer.bandwidthMbps = 8000.0;
    PredictOptions options;
    options.nodes = {16};
    options.steps = 50;
    const double flat = predictScale(spec, c, options)[0].points[0].stepMs;
    options.topology = tree(8);
    const double tight = predictScale(spec, c, options)[0].points[0].stepMs;
    QVERIFY2(tight > flat, qPrintable(QString("%1 vs %2").arg(tight).arg(flat)));
  }
};

QTEST_GUILESS_MAIN(TestTopology)
#include "test_topology.moc"
