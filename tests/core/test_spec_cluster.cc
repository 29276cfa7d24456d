// The spec's cluster object: local clusters and clusters of running daemons named by address,
// and a variant that runs on the cluster's first nodes only.
#include <QtTest/QtTest>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/strategy_registry.h"

using dtlab::core::ExperimentSpec;
using dtlab::core::NodeConfig;
using dtlab::core::SpecError;
using dtlab::core::strategyOf;
using nlohmann::json;

namespace {

std::optional<SpecError> specErrorOf(const json& cluster) {
  try {
    dtlab::core::parseExperimentSpec({{"cluster", cluster}});
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

json remoteNodes(std::initializer_list<const char*> addresses) {
  json nodes = json::array();
  for (const char* a : addresses) nodes.push_back({{"address", a}});
  return nodes;
}

}  // namespace

class TestSpecCluster : public QObject {
  Q_OBJECT
 private slots:
  // GPU runs: the device kind in the spec, the GPU each node's daemon was given; reduced
  // precision only with it, and both written back as read.
  void cudaDeviceAndPrecisionRoundTrip() {
    for (const char* precision : {"fp32", "tf32", "bf16"}) {
      const ExperimentSpec spec = dtlab::core::parseExperimentSpec(
          {{"training", {{"precision", precision}}}, {"cluster", {{"device", "cuda"}}}});
      QCOMPARE(spec.cluster.device, std::string("cuda"));
      QCOMPARE(std::string(dtlab::core::toString(spec.training.precision)), std::string(precision));
      QVERIFY(dtlab::core::sameExperiment(
          dtlab::core::parseExperimentSpec(dtlab::core::toJson(spec)), spec));
    }
    const ExperimentSpec cpu = dtlab::core::parseExperimentSpec({{"cluster", json::object()}});
    QCOMPARE(cpu.cluster.device, std::string("cpu"));
    QVERIFY(cpu.training.precision == dtlab::core::Precision::kFp32);
    const std::optional<SpecError> gpuIndex = specErrorOf({{"device", "gpu"}});
    QVERIFY(gpuIndex && gpuIndex->path() == "cluster.device");
    // Every strategy runs on GPUs, the parameter-server ones included.
    const ExperimentSpec ps = dtlab::core::parseExperimentSpec(
        {{"cluster", {{"device", "cuda"}}},
         {"variants",
          {{{"name", "a"}, {"strategy", "async_ps"}}, {{"name", "h"}, {"strategy", "hybrid"}}}}});
    QVERIFY(strategyOf(ps.variants[0]).traits.usesParameterServer &&
            strategyOf(ps.variants[1]).traits.usesParameterServer);
  }

  // How long a run waits for busy nodes: absent (the default, and not written), or 0 up to a
  // week, read and written back as given.
  void waitSecondsIsOptionalAndBounded() {
    const ExperimentSpec unset = dtlab::core::parseExperimentSpec({{"cluster", json::object()}});
    QVERIFY(!unset.cluster.waitSeconds);
    QVERIFY(!dtlab::core::toJson(unset)["cluster"].contains("wait_seconds"));
    for (int64_t seconds : {int64_t{0}, int64_t{90}, dtlab::core::kMaxWaitSeconds}) {
      const ExperimentSpec spec =
          dtlab::core::parseExperimentSpec({{"cluster", {{"wait_seconds", seconds}}}});
      QCOMPARE(spec.cluster.waitSeconds, std::optional<int64_t>(seconds));
      QCOMPARE(dtlab::core::toJson(spec)["cluster"]["wait_seconds"].get<int64_t>(), seconds);
      QVERIFY(dtlab::core::sameExperiment(
          dtlab::core::parseExperimentSpec(dtlab::core::toJson(spec)), spec));
    }
    for (const json& bad : {json(-1), json(dtlab::core::kMaxWaitSeconds + 1), json(1.5)}) {
      const std::optional<SpecError> e = specErrorOf({{"wait_seconds", bad}});
      QVERIFY2(e && e->path() == "cluster.wait_seconds", bad.dump().c_str());
    }
  }

  void remoteClusterListsItsDaemonsInRankOrder() {
    const ExperimentSpec spec = dtlab::core::parseExperimentSpec(
        {{"cluster",
          {{"nodes",
            {{{"address", "node-a.lab:7070"}, {"speed", 0.5}},
             {{"address", "10.0.0.7:7071"}, {"latency_ms", 2.5}, {"bandwidth_mbps", 100}},
             {{"address", "[fe80::1]:7072"}}}}}}});
    QVERIFY(spec.cluster.remote());
    QCOMPARE(spec.cluster.localNodes, int64_t{3});  // the node count, not a local cluster
    QCOMPARE(spec.cluster.addresses(),
             (std::vector<std::string>{"node-a.lab:7070", "10.0.0.7:7071", "[fe80::1]:7072"}));
    QCOMPARE(spec.cluster.nodes[0].speed, 0.5);
    QCOMPARE(spec.cluster.nodes[1].latencyMs, 2.5);
    QCOMPARE(spec.cluster.nodes[1].bandwidthMbps, 100.0);
    QCOMPARE(spec.cluster.nodes[2].speed, 1.0);

    const ExperimentSpec one =
        dtlab::core::parseExperimentSpec({{"cluster", {{"nodes", remoteNodes({"solo:1"})}}}});
    QVERIFY(one.cluster.remote());
    QCOMPARE(one.cluster.localNodes, int64_t{1});

    const ExperimentSpec local =
        dtlab::core::parseExperimentSpec({{"cluster", {{"local_nodes", 2}}}});
    QVERIFY(!local.cluster.remote());
  }

  void localNodesOfARemoteClusterIsItsCountOrAbsent() {
    json cluster = {{"local_nodes", 2}, {"nodes", remoteNodes({"a:1", "b:2"})}};
    QVERIFY(!specErrorOf(cluster));
    cluster["local_nodes"] = 3;
    const auto e = specErrorOf(cluster);
    QVERIFY(e);
    QCOMPARE(QString::fromStdString(e->path()), QString("cluster.local_nodes"));
    QVERIFY2(e->reason().find("equal the number of nodes (2)") != std::string::npos, e->what());
  }

  void roundTripKeepsAddressesAndWritesNoLocalNodes() {
    ExperimentSpec spec;
    spec.cluster.nodes = {NodeConfig{}, NodeConfig{}};
    spec.cluster.nodes[0].address = "gpu-box:7070";
    spec.cluster.nodes[0].speed = 0.25;
    spec.cluster.nodes[1].address = "[::1]:7071";
    spec.cluster.nodes[1].latencyMs = 5.0;
    spec.cluster.localNodes = 2;
    const json document = dtlab::core::toJson(spec);
    QVERIFY2(!document["cluster"].contains("local_nodes"), document.dump().c_str());
    QCOMPARE(document["cluster"]["nodes"][0]["address"], json("gpu-box:7070"));
    QCOMPARE(document["cluster"]["nodes"][1]["address"], json("[::1]:7071"));
    QVERIFY(dtlab::core::sameExperiment(dtlab::core::parseExperimentSpec(document), spec));
    QVERIFY(
        dtlab::core::sameExperiment(dtlab::core::parseExperimentSpecText(document.dump()), spec));

    // A local cluster is written as before: local_nodes, and nodes without addresses.
    ExperimentSpec local;
    local.cluster.localNodes = 2;
    local.cluster.nodes = {NodeConfig{}, NodeConfig{}};
    const json localDocument = dtlab::core::toJson(local);
    QCOMPARE(localDocument["cluster"]["local_nodes"], json(2));
    QVERIFY(!localDocument["cluster"]["nodes"][0].contains("address"));
    QVERIFY(dtlab::core::sameExperiment(dtlab::core::parseExperimentSpec(localDocument), local));
  }

  void invalidClusters_data() {
    QTest::addColumn<QByteArray>("cluster");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("phrase");
    const auto row = [](const char* name, const json& cluster, const char* path,
                        const char* phrase) {
      QTest::newRow(name) << QByteArray::fromStdString(cluster.dump()) << QString(path)
                          << QString(phrase);
    };
    row("mixed: a local node after remote ones",
        {{"nodes", {{{"address", "a:1"}}, {{"address", "b:2"}}, {{"speed", 2}}}}},
        "cluster.nodes[2].address", "either every node has an address");
    row("mixed: a remote node after a local one",
        {{"nodes", {{{"speed", 2}}, {{"address", "b:2"}}}}}, "cluster.nodes[1].address",
        "cluster.nodes[0] has no address");
    row("port zero", {{"nodes", remoteNodes({"a:1", "b:2", "c:0"})}}, "cluster.nodes[2].address",
        "1..65535");
    row("port too large", {{"nodes", remoteNodes({"a:65536"})}}, "cluster.nodes[0].address",
        "1..65535");
    row("port not a number", {{"nodes", remoteNodes({"a:http"})}}, "cluster.nodes[0].address",
        "1..65535");
    row("empty port", {{"nodes", remoteNodes({"a:"})}}, "cluster.nodes[0].address", "1..65535");
    row("no port", {{"nodes", remoteNodes({"node1"})}}, "cluster.nodes[0].address",
        "missing :PORT");
    row("no host", {{"nodes", remoteNodes({"a:1", ":7070"})}}, "cluster.nodes[1].address",
        "missing host name");
    row("empty bracketed host", {{"nodes", remoteNodes({"[]:7070"})}}, "cluster.nodes[0].address",
        "missing host name");
    row("empty address", {{"nodes", remoteNodes({""})}}, "cluster.nodes[0].address", "HOST:PORT");
    row("ipv6 without brackets", {{"nodes", remoteNodes({"::1:7070"})}}, "cluster.nodes[0].address",
        "in brackets");
    row("bracketed host without port", {{"nodes", remoteNodes({"[::1]"})}},
        "cluster.nodes[0].address", "missing :PORT");
    row("space in host", {{"nodes", remoteNodes({"my host:1"})}}, "cluster.nodes[0].address",
        "spaces");
    row("scheme", {{"nodes", remoteNodes({"http://a:1"})}}, "cluster.nodes[0].address",
        "without a scheme");
    row("odd host character", {{"nodes", remoteNodes({"a/b:1"})}}, "cluster.nodes[0].address",
        "letters, digits");
    row("not a string", {{"nodes", {{{"address", 7070}}}}}, "cluster.nodes[0].address",
        "must be a string");
    row("same daemon twice", {{"nodes", remoteNodes({"a:1", "b:2", "a:1"})}},
        "cluster.nodes[2].address", "also cluster.nodes[0]");
    row("address typo", {{"nodes", {{{"adress", "a:1"}}}}}, "cluster.nodes[0].adress",
        "did you mean 'address'");
  }

  void invalidClusters() {
    QFETCH(QByteArray, cluster);
    QFETCH(QString, path);
    QFETCH(QString, phrase);
    const auto e = specErrorOf(json::parse(cluster.toStdString()));
    QVERIFY2(e, cluster.constData());
    QCOMPARE(QString::fromStdString(e->path()), path);
    QVERIFY2(QString::fromStdString(e->reason()).contains(phrase), e->what());
    // what() reads "path: reason", as every other spec error.
    QVERIFY2(QString(e->what()).startsWith(path + ": "), e->what());
  }

  // A node whose speed changes during the run, and one that pauses at random.
  void speedScheduleAndStraggler() {
    const json drifting = {
        {"speed", 1.0},
        {"speed_schedule",
         {{{"at_step", 100}, {"speed", 0.3}}, {{"at_step", 200}, {"speed", 0.6}}}},
        {"straggler", {{"probability", 0.05}, {"pause_ms", 200}}}};
    const ExperimentSpec spec = dtlab::core::parseExperimentSpec(
        {{"cluster", {{"local_nodes", 2}, {"nodes", json::array({{{"speed", 1.0}}, drifting})}}}});
    const NodeConfig& node = spec.cluster.nodes[1];
    QCOMPARE(node.speedSchedule.size(), std::size_t{2});
    QCOMPARE(node.speedAt(99), 1.0);
    QCOMPARE(node.speedAt(100), 0.3);
    QCOMPARE(node.speedAt(250), 0.6);
    QCOMPARE(node.straggler.probability, 0.05);
    QCOMPARE(node.straggler.pauseMs, 200.0);
    QCOMPARE(dtlab::core::parseExperimentSpec(dtlab::core::toJson(spec)), spec);
    QVERIFY(!dtlab::core::toJson(spec)["cluster"]["nodes"][0].contains("speed_schedule"));

    const auto errorOf = [](const json& entry) -> std::string {
      try {
        dtlab::core::parseExperimentSpec({{"cluster", {{"nodes", json::array({entry})}}}});
      } catch (const SpecError& e) {
        return e.what();
      }
      return "accepted";
    };
    const auto change = [](int step, double speed) {
      return json{{"at_step", step}, {"speed", speed}};
    };
    QCOMPARE(errorOf({{"speed_schedule", {change(5, 0.5), change(5, 0.7)}}}),
             std::string("cluster.nodes[0].speed_schedule[1].at_step: must come after the "
                         "previous change's step 5, got 5"));
    QCOMPARE(errorOf({{"speed_schedule", json::array({{{"speed", 0.5}}})}}),
             std::string("cluster.nodes[0].speed_schedule[0].at_step: missing: the step the "
                         "speed applies from"));
    for (const auto& [entry, path] : std::vector<std::pair<json, std::string>>{
             {{{"speed_schedule", json::array({change(5, 0.0)})}},
              "cluster.nodes[0].speed_schedule[0].speed: "},
             {{{"speed_schedule", 3}}, "cluster.nodes[0].speed_schedule: must be a list"},
             {{{"straggler", {{"probability", 1.5}}}}, "cluster.nodes[0].straggler.probability: "},
             {{{"straggler", {{"pause", 10}}}}, "cluster.nodes[0].straggler.pause: "}}) {
      const std::string error = errorOf(entry);
      QVERIFY2(error.find(path) == 0, error.c_str());
    }
  }

  // A baseline inside one experiment: a variant on the first N nodes of the cluster.
  void variantNodesIsAtMostTheCluster() {
    const auto spec = [](const json& cluster, const json& variant) {
      return dtlab::core::parseExperimentSpec(
          {{"cluster", cluster}, {"variants", json::array({{{"name", "all"}}, variant})}});
    };
    const ExperimentSpec baseline =
        spec({{"local_nodes", 4}}, {{"name", "one node"}, {"nodes", 1}});
    QCOMPARE(baseline.variants[0].nodes, int64_t{0});  // all
    QCOMPARE(baseline.variants[1].nodes, int64_t{1});
    QCOMPARE(dtlab::core::parseExperimentSpec(dtlab::core::toJson(baseline)), baseline);
    QVERIFY(!dtlab::core::toJson(baseline)["variants"][0].contains("nodes"));
    // The cluster's size is what the nodes are counted against, remote clusters too.
    QCOMPARE(spec({{"nodes", remoteNodes({"a:1", "b:2"})}}, {{"name", "two"}, {"nodes", 2}})
                 .variants[1]
                 .nodes,
             int64_t{2});
    try {
      spec({{"local_nodes", 2}}, {{"name", "three"}, {"nodes", 3}});
      QFAIL("accepted 3 nodes of 2");
    } catch (const SpecError& e) {
      QCOMPARE(std::string(e.what()),
               std::string("variants[1].nodes: at most the cluster's 2 nodes, got 3"));
    }
    try {
      spec({{"local_nodes", 2}}, {{"name", "none"}, {"nodes", 0}});
      QFAIL("accepted 0 nodes");
    } catch (const SpecError& e) {
      QVERIFY2(std::string(e.what()).find("variants[1].nodes: ") == 0, e.what());
    }
  }

  void addressProblemIsEmptyForUsableAddresses() {
    for (const char* ok : {"localhost:1", "127.0.0.1:65535", "node_3.cluster-a.example:7070",
                           "[::1]:7070", "[2001:db8::7]:443", "[::ffff:10.0.0.1]:80"})
      QVERIFY2(dtlab::core::nodeAddressProblem(ok).empty(), ok);
  }
};

QTEST_GUILESS_MAIN(TestSpecCluster)
#include "test_spec_cluster.moc"
