// The coordinator's first phase on its own: ranks, slots, shards, the rendezvous and the
// refusals, from GetInfo answers written here (no daemon, no call).
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "remote/coordinator/placement.h"

using namespace dtlab;
using remote::NodeSummary;
using remote::Placement;

namespace {

NodeSummary node(const std::string& address, int cpuSlots = 1, int gpus = 0,
                 const std::string& host = "") {
  NodeSummary n;
  n.address = address;
  n.hostname = host.empty() ? address : host;
  n.cpuSlots = cpuSlots;
  n.gpus = gpus;
  n.workerThreads = 1;
  n.cores = 8;
  n.capabilities = {"gloo", "sync_allreduce", "async_ps", "ssp", "local_sgd", "hybrid"};
  return n;
}

std::vector<std::string> labelsOf(const std::vector<NodeSummary>& nodes) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    labels.push_back("node" + std::to_string(i) + " (" + nodes[i].address + ")");
  return labels;
}

core::ExperimentSpec specOf(const nlohmann::json& variant, int64_t nodes,
                            const std::string& device = "cpu") {
  return core::parseExperimentSpec(
      {{"cluster", {{"local_nodes", nodes}, {"device", device}}}, {"variants", {variant}}});
}

std::string refusal(const core::ExperimentSpec& spec, const std::vector<NodeSummary>& nodes) {
  try {
    remote::placeRun(spec, 0, nodes, labelsOf(nodes));
  } catch (const Error& e) {
    return e.what();
  }
  return "placed";
}

}  // namespace

class TestPlacement : public QObject {
  Q_OBJECT
 private slots:
  // Node by node, one rank per CPU slot; a node's slots are named where it has several; rank
  // 0's node hosts the rendezvous, at the host it advertises.
  void ranksFollowNodesAndSlots() {
    std::vector<NodeSummary> nodes = {node("10.0.0.1:7070", 2), node("10.0.0.2:7071")};
    nodes[0].advertiseHost = "box-a";
    const Placement p =
        remote::placeRun(specOf({{"strategy", "sync_allreduce"}}, 2), 0, nodes, labelsOf(nodes));
    QCOMPARE(p.nodeCount, std::size_t{2});
    QCOMPARE(p.world(), std::size_t{3});
    QCOMPARE(p.ranks[0].node, std::size_t{0});
    QCOMPARE(p.ranks[1].node, std::size_t{0});
    QCOMPARE(p.ranks[1].slot, 1);
    QCOMPARE(p.ranks[2].node, std::size_t{1});
    QCOMPARE(p.rankNames,
             (std::vector<std::string>{"node0 (10.0.0.1:7070) slot 0",
                                       "node0 (10.0.0.1:7070) slot 1", "node1 (10.0.0.2:7071)"}));
    QCOMPARE(p.rendezvous, std::string("box-a:7070"));
    QVERIFY(p.psAddresses.empty());
    QVERIFY(p.contention.empty());
  }

  // A baseline on the first node; a GPU run takes one rank per GPU.
  void baselinesAndGpus() {
    std::vector<NodeSummary> nodes = {node("a:1", 1, 2), node("b:2", 1, 1)};
    Placement p = remote::placeRun(specOf({{"strategy", "sync_allreduce"}, {"nodes", 1}}, 2), 0,
                                   nodes, labelsOf(nodes));
    QCOMPARE(p.nodeCount, std::size_t{1});
    QCOMPARE(p.world(), std::size_t{1});
    p = remote::placeRun(specOf({{"strategy", "local_sgd"}}, 2, "cuda"), 0, nodes, labelsOf(nodes));
    QCOMPARE(p.world(), std::size_t{3});
    QCOMPARE(p.rankNames[2], std::string("node1 (b:2)"));
  }

  // Shard k lives on node k, as its peers reach it; ps_shards chooses how many.
  void parameterServerShardsOnTheFirstNodes() {
    std::vector<NodeSummary> nodes = {node("a:1"), node("[::1]:2"), node("c:3")};
    Placement p =
        remote::placeRun(specOf({{"strategy", "async_ps"}}, 3), 0, nodes, labelsOf(nodes));
    QCOMPARE(p.psAddresses, (std::vector<std::string>{"a:1", "[::1]:2", "c:3"}));
    p = remote::placeRun(specOf({{"strategy", "ssp"}, {"ps_shards", 2}}, 3), 0, nodes,
                         labelsOf(nodes));
    QCOMPARE(p.psAddresses, (std::vector<std::string>{"a:1", "[::1]:2"}));
    // One worker serves itself: no shard addresses.
    p = remote::placeRun(specOf({{"strategy", "async_ps"}, {"nodes", 1}}, 3), 0, nodes,
                         labelsOf(nodes));
    QVERIFY(p.psAddresses.empty());
  }

  // "continue" without checkpoints needs a node that serves no shard: with every node serving
  // one, any lost node would end the run, so the run is refused before it starts, saying what
  // to change.
  void continueNeedsNodesWithoutAShard() {
    std::vector<NodeSummary> nodes = {node("a:1"), node("b:2"), node("c:3")};
    const std::string refused =
        refusal(specOf({{"strategy", "async_ps"}, {"on_node_loss", "continue"}}, 3), nodes);
    QVERIFY2(refused.find("on_node_loss \"continue\"") != std::string::npos &&
                 refused.find("set ps_shards below 3") != std::string::npos,
             refused.c_str());
    QCOMPARE(
        refusal(specOf({{"strategy", "ssp"}, {"ps_shards", 2}, {"on_node_loss", "continue"}}, 3),
                nodes),
        std::string("placed"));
    // With checkpoints a lost shard restarts the run from them: every node may serve one.
    core::ExperimentSpec checkpointed =
        specOf({{"strategy", "async_ps"}, {"on_node_loss", "continue"}}, 3);
    checkpointed.training.checkpointEvery = 10;
    QCOMPARE(refusal(checkpointed, nodes), std::string("placed"));
  }

  // A group re-formed on the survivors: ranks on the nodes given, named as before, the
  // rendezvous on the first of them, the variant's own node count set aside.
  void placedAgainOnTheSurvivors() {
    std::vector<NodeSummary> nodes = {node("a:1"), node("b:2", 2), node("c:3")};
    const Placement p =
        remote::placeRunOn(specOf({{"strategy", "sync_allreduce"}, {"nodes", 3}}, 3), 0, nodes,
                           labelsOf(nodes), {1, 2});
    QCOMPARE(p.world(), std::size_t{3});
    QCOMPARE(p.ranks[0].node, std::size_t{1});
    QCOMPARE(p.ranks[1].node, std::size_t{1});
    QCOMPARE(p.ranks[1].slot, 1);
    QCOMPARE(p.ranks[2].node, std::size_t{2});
    QCOMPARE(p.rankNames[2], std::string("node2 (c:3)"));
    QCOMPARE(p.rendezvous, std::string("b:2"));
  }

  // Every refusal names the node and says what to do.
  void refusalsNameTheNode() {
    std::vector<NodeSummary> nodes = {node("a:1"), node("b:2", 2)};
    QCOMPARE(refusal(specOf({{"strategy", "hybrid"}}, 2), nodes),
             std::string("variant 'hybrid' (hybrid) runs one worker per node so far; node node1 "
                         "(b:2) has 2 worker slots (start it with --devices cpu, or choose "
                         "sync_allreduce and local_sgd)"));
    nodes[1].cpuSlots = 1;
    nodes[0].capabilities = {"gloo", "sync_allreduce"};
    QCOMPARE(refusal(specOf({{"strategy", "local_sgd"}}, 2), nodes),
             std::string("node node0 (a:1) cannot run strategy 'local_sgd' (it runs: gloo, "
                         "sync_allreduce); update its dtlab-node"));
    QCOMPARE(refusal(specOf({{"strategy", "sync_allreduce"}}, 2, "cuda"), nodes),
             std::string("cluster.device \"cuda\": no GPU on node0 (a:1), node1 (b:2) (start "
                         "each dtlab-node with --devices cuda:N, or use cluster.device \"cpu\")"));
    core::ExperimentSpec three = specOf({{"strategy", "sync_allreduce"}, {"nodes", 3}}, 3);
    QCOMPARE(refusal(three, nodes),
             std::string("variant 'sync_allreduce' asks for 3 nodes; the cluster has 2"));
  }

  // Workers that outnumber their host's cores are reported per host, with the nodes there.
  void contentionPerHost() {
    std::vector<NodeSummary> nodes = {node("a:1", 2, 0, "shared"), node("b:2", 1, 0, "shared"),
                                      node("c:3", 1, 0, "alone")};
    for (NodeSummary& n : nodes) n.cores = 2;
    const Placement p =
        remote::placeRun(specOf({{"strategy", "sync_allreduce"}}, 3), 0, nodes, labelsOf(nodes));
    QCOMPARE(p.contention,
             std::vector<std::string>{"host shared: 3 busy worker threads on 2 cores (node0 "
                                      "(a:1), node1 (b:2)); timings include the contention"});
  }
};

QTEST_GUILESS_MAIN(TestPlacement)
#include "test_placement.moc"
