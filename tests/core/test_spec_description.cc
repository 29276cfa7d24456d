// An experiment spec in words (core/spec/spec_description.h), as the experiment report shows
// it: every aspect once, each strategy's and dataset kind's own settings read through their
// schemas, nodes described alike said once.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_description.h"
#include "core/spec/spec_json.h"

using namespace dtlab::core;

namespace {

std::string factOf(const std::vector<SpecFact>& facts, const std::string& label) {
  for (const SpecFact& f : facts)
    if (f.label == label) return f.text;
  return "(no fact " + label + ")";
}

}  // namespace

class TestSpecDescription : public QObject {
  Q_OBJECT

 private slots:
  void saysEveryAspect() {
    const ExperimentSpec spec = parseExperimentSpec(nlohmann::json::parse(R"({
      "name": "words", "seed": 3,
      "dataset": {"kind": "two_spirals", "train_size": 12000, "test_size": 1000, "noise": 0.25},
      "model": {"hidden": [32, 16], "activation": "tanh"},
      "optimizer": {"kind": "adam", "lr": 0.001},
      "training": {"batch_size": 64, "epochs": 2, "max_seconds": 30, "target_accuracy": 0.9},
      "cluster": {"local_nodes": 4, "threads_per_node": 2,
                  "nodes": [{"speed": 1}, {"speed": 1}, {"speed": 1},
                            {"speed": 0.25, "bandwidth_mbps": 100, "latency_ms": 2,
                             "straggler": {"probability": 0.1, "pause_ms": 50}}]},
      "variants": [{"name": "bounded", "strategy": "ssp", "staleness": 4},
                   {"strategy": "local_sgd", "period": 16, "nodes": 2}]})"));
    const std::vector<SpecFact> facts = describeSpec(spec);
    QCOMPARE(facts.size(), std::size_t{6});
    const std::string dataset = factOf(facts, "Dataset");
    QVERIFY2(dataset.find("two_spirals") == 0, dataset.c_str());
    QVERIFY2(dataset.find("12,000 training and 1,000 test samples, 2 features, 2 classes") !=
                 std::string::npos,
             dataset.c_str());
    QVERIFY2(dataset.find("noise 0.25") != std::string::npos, dataset.c_str());
    // 2-32-16-2 with biases: 3*32 + 33*16 + 17*2 = 96 + 528 + 34.
    QCOMPARE(factOf(facts, "Model").substr(0, 18), std::string("MLP 2-32-16-2 (tan"));
    QVERIFY(factOf(facts, "Model").find("658 parameters") != std::string::npos);
    const std::string training = factOf(facts, "Training");
    QVERIFY2(training.find("adam at learning rate 0.001") == 0, training.c_str());
    QVERIFY2(training.find("at most 2 epochs and 30 s") != std::string::npos, training.c_str());
    QVERIFY2(training.find("stops at test accuracy 0.9") != std::string::npos, training.c_str());
    const std::string cluster = factOf(facts, "Cluster");
    QVERIFY2(cluster.find("4 local nodes (daemons on loopback, 2 threads each)") == 0,
             cluster.c_str());
    QVERIFY2(cluster.find("nodes 0-2: speed 1, link not emulated; node 3: speed 0.25, 100 "
                          "Mbit/s, 2 ms latency, straggling: pauses 50 ms at 10% of its steps") !=
                 std::string::npos,
             cluster.c_str());
    const std::string ssp = factOf(facts, "Variant bounded");
    QVERIFY2(ssp.find("ssp (") == 0 && ssp.find("staleness 4") != std::string::npos, ssp.c_str());
    const std::string local = factOf(facts, "Variant local_sgd");
    QVERIFY2(local.find("period 16") != std::string::npos, local.c_str());
    QVERIFY2(local.find("on the first 2 nodes only") != std::string::npos, local.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSpecDescription)
#include "test_spec_description.moc"
