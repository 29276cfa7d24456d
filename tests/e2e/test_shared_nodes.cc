// Nodes shared by several runs at once, as on a cluster several people use: every run
// reserves all of its nodes at once and waits in the daemons' queues (remote/coordinator/
// reservation.h). Real daemons on loopback, dtlab-cli processes and coordinators in this one.
#include <QtTest/QtTest>

#include <latch>
#include <memory>
#include <thread>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"
#include "remote/coordinator/reservation.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;
using Clock = std::chrono::steady_clock;

namespace {

using e2e::kCli;
using e2e::kNode;

// An experiment of one variant per strategy, each training for `seconds` (0: 20 steps).
core::ExperimentSpec experiment(const std::string& name, const std::vector<std::string>& strategies,
                                double seconds) {
  core::ExperimentSpec spec;
  spec.name = name;
  spec.seed = 7;
  spec.dataset.trainSize = 4096;
  spec.dataset.testSize = 512;
  spec.dataset.features = 16;
  spec.dataset.classes = 4;
  spec.model.hidden = {32, 32};
  spec.training.batchSize = 64;
  spec.training.epochs = 0;
  spec.training.maxSteps = seconds > 0.0 ? 0 : 20;
  spec.training.maxSeconds = seconds;
  spec.training.evalInterval = 10;
  spec.cluster.localNodes = 2;
  spec.variants.clear();
  for (const std::string& strategy : strategies) {
    core::VariantConfig v;
    v.strategy = strategy;
    v.name = strategy;
    spec.variants.push_back(v);
  }
  return spec;
}

QString writeSpec(const QTemporaryDir& dir, const QString& file, const core::ExperimentSpec& spec) {
  const QString path = dir.filePath(file);
  QFile out(path);
  if (out.open(QIODevice::WriteOnly))
    out.write(QByteArray::fromStdString(core::toJson(spec).dump()));
  return path;
}

QStringList nodeFlags(const std::vector<std::string>& addresses) {
  QStringList flags;
  for (const std::string& a : addresses) flags << "--node" << QString::fromStdString(a);
  return flags;
}

std::vector<remote::LocalNodeOptions> nodes(int n) {
  return std::vector<remote::LocalNodeOptions>(static_cast<std::size_t>(n));
}

// The statuses of the runs a dtlab-cli run printed.
std::vector<std::string> statuses(const QString& out) {
  std::vector<std::string> s;
  const nlohmann::json printed = e2e::lastJson(out);
  for (const nlohmann::json& run : printed["runs"]) s.push_back(run.value("status", std::string()));
  return s;
}

// The reservation events of every run in the project, in run order.
std::vector<std::string> reservationEvents(const QString& path) {
  std::vector<std::string> out;
  auto store = core::ProjectStore::open(path.toStdString(), true);
  for (const core::RunRecord& run : store->runs())
    for (const core::RunEvent& e : store->events(run.id))
      if (e.kind == core::kReservationEvent) out.push_back(run.name + ": " + e.detail);
  return out;
}

bool anyContains(const std::vector<std::string>& lines, const std::string& a,
                 const std::string& b) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find(a) != std::string::npos && l.find(b) != std::string::npos;
  });
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// "holder-run*, waiting-run, ...": what a node's GetInfo lists.
std::string queueOf(const std::string& address) {
  std::string out;
  for (const remote::NodeSummary::QueuedRun& r : remote::queryNode(address, {}).reservations)
    out += (out.empty() ? "" : ", ") + r.run + (r.holds ? "*" : "");
  return out;
}

bool waitForQueue(const std::string& address, const std::string& expected,
                  std::chrono::seconds timeout) {
  const Clock::time_point giveUp = Clock::now() + timeout;
  while (Clock::now() < giveUp) {
    if (queueOf(address) == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

class TestSharedNodes : public QObject {
  Q_OBJECT

 private slots:
  // Two people's experiments on the same two nodes, the second started while the first runs:
  // both complete every variant. The second waits, saying for whom; then the two interleave
  // (each variant reserves anew, and the earlier waiter goes first), and every run records how
  // it came to its nodes.
  void twoExperimentsOnTheSameNodesCompleteEveryVariant() {
    remote::LocalCluster cluster(kNode, nodes(2));
    QTemporaryDir dir;
    const QString specA = writeSpec(
        dir, "a.json", experiment("shared_a", {"sync_allreduce", "async_ps", "local_sgd"}, 1.5));
    const QString specB =
        writeSpec(dir, "b.json", experiment("shared_b", {"sync_allreduce", "ssp"}, 0.5));
    const QString projectA = dir.filePath("a.dtlab");
    const QString projectB = dir.filePath("b.dtlab");

    QProcess a;
    a.start(kCli, QStringList{"run", specA, "--project", projectA, "--quiet"} +
                      nodeFlags(cluster.addresses()));
    QVERIFY(e2e::waitForStepPoint(projectA, std::chrono::seconds(60)));
    const e2e::Outcome b = e2e::cli(QStringList{"run", specB, "--project", projectB, "--quiet"} +
                                        nodeFlags(cluster.addresses()),
                                    180000);
    QVERIFY(a.waitForFinished(180000));
    const QString aErr = QString::fromUtf8(a.readAllStandardError());
    QVERIFY2(a.exitCode() == 0, qPrintable(aErr));
    QVERIFY2(b.exitCode == 0, qPrintable(b.err));
    QCOMPARE(statuses(QString::fromUtf8(a.readAllStandardOutput())),
             (std::vector<std::string>(3, "completed")));
    QCOMPARE(statuses(b.out), (std::vector<std::string>(2, "completed")));
    QVERIFY2(b.err.contains("dtlab-cli: waiting for node0 (busy with ") &&
                 b.err.contains("'shared_a/") && b.err.contains("position 1 of 1)"),
             qPrintable(b.err));

    const std::vector<std::string> eventsA = reservationEvents(projectA);
    const std::vector<std::string> eventsB = reservationEvents(projectB);
    QCOMPARE(eventsA.size(), std::size_t{3});
    QCOMPARE(eventsB.size(), std::size_t{2});
    QVERIFY2(eventsA.front().find("node0, node1 at once") != std::string::npos,
             joined(eventsA).c_str());
    QVERIFY2(anyContains(eventsB, "after waiting", "'shared_a/"), joined(eventsB).c_str());
    // B's first variant was waiting before A's first ended, so A's second waited for it.
    QVERIFY2(anyContains(eventsA, "after waiting", "'shared_b/"), joined(eventsA).c_str());
  }

  // Two experiments of two nodes each, started at the same moment with their nodes in
  // opposite orders ({0, 1} and {1, 0}): each holds all of its nodes or none, so neither can
  // hold one node while waiting for the other's. Twenty races, every run completes.
  void oppositeOrdersNeverDeadlock() {
    remote::LocalCluster cluster(kNode, nodes(2));
    const std::vector<std::string> forward = cluster.addresses();
    const std::vector<std::string> backward{forward[1], forward[0]};
    const core::ExperimentSpec spec = experiment("race", {"sync_allreduce"}, 0.0);
    remote::CoordinatorOptions options;
    options.waitLimit = std::chrono::seconds(60);  // a deadlock fails, naming the node
    for (int race = 0; race < 20; ++race) {
      std::latch go(2);
      std::vector<core::RunSummary> summaries(2);
      std::vector<std::thread> runs;
      for (int k = 0; k < 2; ++k)
        runs.emplace_back([&, k] {
          remote::Coordinator coordinator(k == 0 ? forward : backward, options);
          try {
            coordinator.connect();
            go.arrive_and_wait();
            summaries[static_cast<std::size_t>(k)] = coordinator.run(spec, 0, nullptr);
          } catch (const std::exception& e) {
            summaries[static_cast<std::size_t>(k)].error = e.what();
          }
        });
      for (std::thread& t : runs) t.join();
      for (const core::RunSummary& s : summaries)
        QVERIFY2(s.status == core::RunStatus::kCompleted,
                 ("race " + std::to_string(race) + ": " + s.error).c_str());
    }
  }

  // A client killed while it waits in the queue loses its place when its lease runs out (6 s),
  // and the one behind it is next; a cancelled one leaves the queue at once.
  void aKilledQueuedClientLosesItsPlaceWithinItsLease() {
    remote::LocalCluster cluster(kNode, nodes(1));
    const std::string address = cluster.addresses().front();
    QTemporaryDir dir;
    core::ExperimentSpec killedSpec = experiment("killed", {"sync_allreduce"}, 0.0);
    killedSpec.cluster.localNodes = 1;
    core::ExperimentSpec nextSpec = killedSpec;
    nextSpec.name = "next";
    // The node is held by a run of this test (its lease renewed by the reservation itself).
    remote::NodeLinks links({address}, {});
    auto holder = std::make_unique<remote::GangReservation>(links, std::vector<std::size_t>{0},
                                                            "test/holder");
    QVERIFY(holder->acquire({std::chrono::seconds(10), nullptr, {}}));

    QProcess killed;
    killed.start(kCli, QStringList{"run", writeSpec(dir, "killed.json", killedSpec), "--quiet",
                                   "--node", QString::fromStdString(address)});
    QVERIFY2(waitForQueue(address, "test/holder*, killed/sync_allreduce", std::chrono::seconds(20)),
             queueOf(address).c_str());
    QProcess next;
    next.start(kCli, QStringList{"run", writeSpec(dir, "next.json", nextSpec), "--quiet", "--node",
                                 QString::fromStdString(address)});
    QVERIFY2(waitForQueue(address, "test/holder*, killed/sync_allreduce, next/sync_allreduce",
                          std::chrono::seconds(20)),
             queueOf(address).c_str());

    killed.kill();  // SIGKILL: no goodbye to the node
    const Clock::time_point killedAt = Clock::now();
    killed.waitForFinished(5000);
    QVERIFY2(waitForQueue(address, "test/holder*, next/sync_allreduce", std::chrono::seconds(30)),
             queueOf(address).c_str());
    const double gone = std::chrono::duration<double>(Clock::now() - killedAt).count();
    QVERIFY2(gone <= 10.0, (std::to_string(gone) + " s").c_str());
    // The next one is told it moved up.
    QString nextErr;
    const Clock::time_point giveUp = Clock::now() + std::chrono::seconds(10);
    while (!nextErr.contains("position 1 of 1)") && Clock::now() < giveUp) {
      next.waitForReadyRead(100);
      nextErr += QString::fromUtf8(next.readAllStandardError());
    }
    QVERIFY2(nextErr.contains("position 2 of 2)") && nextErr.contains("position 1 of 1)"),
             qPrintable(nextErr));

    // A run that is cancelled while it waits leaves the queue with it.
    {
      std::atomic<bool> cancel{false};
      core::RunSummary cancelled;
      remote::Coordinator coordinator({address}, {});
      std::thread waiting([&] { cancelled = coordinator.run(killedSpec, 0, nullptr, &cancel); });
      const bool queued =
          waitForQueue(address, "test/holder*, next/sync_allreduce, killed/sync_allreduce",
                       std::chrono::seconds(20));
      cancel.store(true);
      waiting.join();
      QVERIFY2(queued, queueOf(address).c_str());
      QVERIFY(cancelled.status == core::RunStatus::kCancelled);
      QCOMPARE(queueOf(address), std::string("test/holder*, next/sync_allreduce"));
    }

    holder.reset();  // the holder leaves: the next one starts and completes
    QVERIFY(next.waitForFinished(60000));
    nextErr += QString::fromUtf8(next.readAllStandardError());
    QVERIFY2(next.exitCode() == 0, qPrintable(nextErr));
    QCOMPARE(statuses(QString::fromUtf8(next.readAllStandardOutput())),
             (std::vector<std::string>{"completed"}));
    QVERIFY2(nextErr.contains("(reserved for ") && nextErr.contains("'s run 'test/holder', "),
             qPrintable(nextErr));
    QVERIFY2(nextErr.contains("dtlab-cli: the nodes are free, starting"), qPrintable(nextErr));
  }

  // --no-wait on a busy node fails at once, naming the node and the run that holds it.
  void noWaitFailsAtOnceNamingTheNodeAndItsRun() {
    remote::LocalCluster cluster(kNode, nodes(2));
    QTemporaryDir dir;
    const QString longSpec =
        writeSpec(dir, "long.json", experiment("long_run", {"sync_allreduce"}, 60.0));
    const QString project = dir.filePath("long.dtlab");
    QProcess running;
    running.start(kCli, QStringList{"run", longSpec, "--project", project, "--quiet"} +
                            nodeFlags(cluster.addresses()));
    QVERIFY(e2e::waitForStepPoint(project, std::chrono::seconds(60)));

    const Clock::time_point start = Clock::now();
    const e2e::Outcome refused =
        e2e::cli(QStringList{"run", writeSpec(dir, "other.json", experiment("other", {"ssp"}, 0.0)),
                             "--no-wait", "--quiet"} +
                 nodeFlags(cluster.addresses()));
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    QCOMPARE(refused.exitCode, 1);
    const QString node0 = QString::fromStdString("node0 (" + cluster.addresses()[0] + ")");
    QVERIFY2(refused.err.contains(node0 + " is busy with ") &&
                 refused.err.contains("'s run 'long_run/sync_allreduce'") &&
                 refused.err.contains("running for ") &&
                 refused.err.contains("does not wait for busy nodes"),
             qPrintable(refused.err));
    QCOMPARE(statuses(refused.out), (std::vector<std::string>{"failed"}));
    // At once: long before the 60 s run ends (the time includes starting the process).
    QVERIFY2(took < 20.0, (std::to_string(took) + " s").c_str());

    running.terminate();  // SIGTERM cancels the long run
    QVERIFY(running.waitForFinished(30000));
  }
};

QTEST_GUILESS_MAIN(TestSharedNodes)
#include "test_shared_nodes.moc"
