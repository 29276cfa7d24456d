// Whole runs through real dtlab-node daemons on loopback: the launcher, the
// coordinator, Gloo collectives between processes, failure detection, dtlab-cli run.
#include <QtTest/QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/metrics/metric_table.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"
#include "tests/e2e/e2e_support.h"
#include "tests/sanitizers/sanitizers.h"
#include "tests/support/wait.h"

using namespace dtlab;
using Clock = std::chrono::steady_clock;

namespace {

using e2e::kCli;
using e2e::kNode;
using e2e::writeSpec;

core::ExperimentSpec smallSpec(int64_t steps) {
  core::ExperimentSpec spec;
  spec.seed = 5;
  spec.dataset.trainSize = 4096;
  spec.dataset.testSize = 512;
  spec.dataset.features = 16;
  spec.dataset.classes = 4;
  spec.dataset.seed = 5;
  spec.model.hidden = {32, 32};
  spec.training.batchSize = 64;
  spec.training.epochs = 0;
  spec.training.maxSteps = steps;
  spec.training.evalInterval = 10;
  return spec;
}

std::vector<remote::LocalNodeOptions> nodes(int n) {
  return std::vector<remote::LocalNodeOptions>(static_cast<std::size_t>(n));
}

// A process that exited but was not reaped yet (a zombie) counts as gone.
bool alive(pid_t pid) {
  QFile stat(QString("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return false;
  const QByteArray text = stat.readAll();
  const int close = text.lastIndexOf(')');
  return close > 0 && text.size() > close + 2 && text[close + 2] != 'Z';
}

// A process stopped by a signal (state T in /proc/PID/stat).
bool stopped(pid_t pid) {
  QFile stat(QString("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return false;
  const QByteArray text = stat.readAll();
  const int close = text.lastIndexOf(')');
  return close > 0 && text.size() > close + 2 && text[close + 2] == 'T';
}

// The dtlab-node processes whose parent is `parent`.
std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (const QString& entry : QDir("/proc").entryList(QDir::Dirs)) {
    bool isPid = false;
    const pid_t pid = entry.toInt(&isPid);
    if (!isPid) continue;
    QFile stat("/proc/" + entry + "/stat");
    if (!stat.open(QIODevice::ReadOnly)) continue;
    const QByteArray text = stat.readAll();
    const int close = text.lastIndexOf(')');
    if (close < 0 || !text.mid(0, close).contains("dtlab-node")) continue;
    const QList<QByteArray> fields = text.mid(close + 2).split(' ');
    if (fields.size() > 1 && fields[1].toInt() == parent) out.push_back(pid);
  }
  return out;
}

// The workers that reported steps.
class WorkerSteps : public core::MetricSink {
 public:
  void onStep(const core::StepMetrics& m) override {
    std::lock_guard<std::mutex> lock(mutex_);
    workers_.insert(m.worker);
  }
  std::set<int> workers() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return workers_;
  }

 private:
  mutable std::mutex mutex_;
  std::set<int> workers_;
};

class StepCounter : public core::MetricSink {
 public:
  void onStep(const core::StepMetrics& m) override {
    if (m.worker == 0) steps.fetch_add(1);
  }
  std::atomic<int64_t> steps{0};
};

// Where startEndlessCliRun records the run.
QString endlessProject(const QTemporaryDir& dir) {
  return dir.filePath("endless.dtlab");
}

// Starts `dtlab-cli run` of an endless job on 2 local nodes, recorded into
// endlessProject(dir); returns the daemons' pids once both are up (fewer when they did not
// come within 20 s).
std::vector<pid_t> startEndlessCliRun(const QTemporaryDir& dir, QProcess& cli) {
  cli.start(kCli, {"run", writeSpec(dir, smallSpec(100000000)), "--local-nodes", "2", "--quiet",
                   "--project", endlessProject(dir)});
  if (!cli.waitForStarted()) return {};
  const auto cliPid = static_cast<pid_t>(cli.processId());
  std::vector<pid_t> daemons;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
  while (daemons.size() < 2 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    daemons = childrenOf(cliPid);
  }
  return daemons;
}

// Runs an endless job on `cluster` and sends `sig` to node 1 after its fifth step. Returns
// the run's summary, the seconds from the signal to the run's end, and whether the fifth step
// came (within a minute; the signal goes anyway).
std::tuple<core::RunSummary, double, bool> runAndSignalNode1(remote::LocalCluster& cluster,
                                                             int sig) {
  remote::Coordinator coordinator(cluster.addresses(), {});
  coordinator.connect();
  StepCounter counter;
  Clock::time_point signalledAt;
  bool underWay = false;
  std::thread signaller([&] {
    // Signalled anyway when no step comes, so that the run ends (and the caller's check fails).
    underWay = test::waitUntil([&] { return counter.steps.load() >= 5; }, std::chrono::seconds(60));
    signalledAt = Clock::now();
    cluster.signal(1, sig);
  });
  core::RunSummary s = coordinator.run(smallSpec(1000000), 0, &counter);
  const Clock::time_point ended = Clock::now();
  signaller.join();
  return {std::move(s), std::chrono::duration<double>(ended - signalledAt).count(), underWay};
}

}  // namespace

class TestRun : public QObject {
  Q_OBJECT
 private slots:
  // A node with two CPU worker slots takes two ranks: three workers on two daemons train one
  // model (identical replicas, every rank's steps reported); a parameter-server variant, which
  // keeps one shard a node, is refused naming the node.
  void aNodeWithTwoSlotsTakesTwoRanks() {
    std::vector<remote::LocalNodeOptions> options = nodes(2);
    options[0].devices = "cpu:2";
    remote::LocalCluster cluster(kNode, options);
    remote::Coordinator coordinator(cluster.addresses(), {});
    const std::vector<remote::NodeSummary> summaries = coordinator.connect();
    QCOMPARE(summaries[0].cpuSlots, 2);
    QCOMPARE(summaries[1].cpuSlots, 1);
    WorkerSteps steps;
    const core::RunSummary s = coordinator.run(smallSpec(20), 0, &steps);
    QVERIFY2(s.status == core::RunStatus::kCompleted, s.error.c_str());
    QCOMPARE(s.nodes, int64_t{3});
    QCOMPARE(s.paramChecksum.size(), std::size_t{3});
    QCOMPARE(s.paramChecksum[1], s.paramChecksum[0]);
    QCOMPARE(s.paramChecksum[2], s.paramChecksum[0]);
    QCOMPARE(steps.workers(), (std::set<int>{0, 1, 2}));

    core::ExperimentSpec ps = smallSpec(20);
    ps.variants = {core::VariantConfig{"async"}};
    ps.variants[0].strategy = "async_ps";
    try {
      coordinator.run(ps, 0, nullptr);
      QFAIL("a parameter-server run took two ranks on one node");
    } catch (const Error& e) {
      const std::string what = e.what();
      QVERIFY2(what.find("runs one worker per node so far") != std::string::npos &&
                   what.find("has 2 worker slots") != std::string::npos,
               e.what());
    }
  }

  void replicasIdenticalOnOneTwoFourNodes_data() {
    QTest::addColumn<int>("world");
    QTest::newRow("1 node") << 1;
    QTest::newRow("2 nodes") << 2;
    QTest::newRow("4 nodes") << 4;
  }
  void replicasIdenticalOnOneTwoFourNodes() {
    QFETCH(int, world);
    remote::LocalCluster cluster(kNode, nodes(world));
    remote::Coordinator coordinator(cluster.addresses(), {});
    QCOMPARE(static_cast<int>(coordinator.connect().size()), world);
    StepCounter counter;
    const core::RunSummary s = coordinator.run(smallSpec(30), 0, &counter);
    QVERIFY2(std::string(core::toString(s.status)) == "completed", s.error.c_str());
    QCOMPARE(s.steps, int64_t{30});
    QCOMPARE(counter.steps.load(), int64_t{30});
    QCOMPARE(static_cast<int>(s.paramChecksum.size()), world);
    for (const std::string& c : s.paramChecksum) QCOMPARE(c, s.paramChecksum[0]);
    QCOMPARE(s.samples, int64_t{30 * 64});
    QVERIFY(s.finalTestAccuracy.has_value());
  }

  // Each worker generates only the samples it trains on, so its memory falls as nodes are
  // added (beside the group's own, see below): on bench_sync.json's model with four times its
  // data (81920 x 256 floats, 80 MiB), rank 0's peak resident memory (it also holds the test set)
  // at 1, 2 and 4 nodes. One node holds its whole training set; a rank of a group only the
  // batch it trains on (and the next, where a batch takes long enough to make ahead: a few MiB), so
  // about the whole set is saved at 2 and at 4 nodes; the rest of the process (libraries, model,
  // optimizer, buffers) is the same at every size. The data is large enough for the savings to
  // stand well clear of what a group costs of its own.
  void peakMemoryPerWorkerFallsWithTheNodeCount() {
    core::ExperimentSpec spec =
        core::loadExperimentSpec(DTLAB_SOURCE_DIR "/resources/specs/bench_sync.json");
    spec.dataset.trainSize = 81920;
    spec.training.epochs = 0;
    spec.training.maxSteps = 5;
    spec.training.evalInterval = 5;
    std::vector<double> peakMiB;
    for (int world : {1, 2, 4}) {
      remote::LocalCluster cluster(kNode, nodes(world));
      remote::Coordinator coordinator(cluster.addresses(), {});
      coordinator.connect();
      const core::RunSummary s = coordinator.run(spec, 0, nullptr);
      QVERIFY2(s.status == core::RunStatus::kCompleted, s.error.c_str());
      QCOMPARE(static_cast<int>(s.peakMemBytes.size()), world);
      for (int64_t bytes : s.peakMemBytes) QVERIFY(bytes > 0);
      peakMiB.push_back(static_cast<double>(s.peakMemBytes[0]) / (1 << 20));
    }
    const QString figures = QString("rank 0 peak MiB at 1/2/4 nodes: %1 %2 %3")
                                .arg(peakMiB[0])
                                .arg(peakMiB[1])
                                .arg(peakMiB[2]);
#if defined(DTLAB_ASAN)
    // The daemons are AddressSanitizer builds too: freed memory (the tuning pass's staging,
    // the generator's scratch) stays resident in the quarantine, so a peak does not show what
    // the process needs. The savings are asserted in the normal build.
    QSKIP(qPrintable("resident peaks are not comparable under AddressSanitizer: " + figures));
#endif
    // A group costs some MiB of its own that one node does not pay (its all-reduce's receive
    // areas, and while it measures its all-reduce the staging buffer of Gloo's
    // halving-doubling at the largest size: 4 MiB here); 10-15 MiB measured here at 2 and 4
    // nodes, well under the savings asserted.
    QVERIFY2(peakMiB[0] - peakMiB[1] > 40.0, qPrintable(figures));  // 80 MiB expected
    QVERIFY2(peakMiB[0] - peakMiB[2] > 40.0, qPrintable(figures));
    // Four nodes hold smaller batches than two: no more than what the group itself costs.
    QVERIFY2(peakMiB[2] < peakMiB[1] + 15.0, qPrintable(figures));
  }

  void nodesTakeNewJobsDeterministically() {
    remote::LocalCluster cluster(kNode, nodes(2));
    remote::Coordinator coordinator(cluster.addresses(), {});
    coordinator.connect();
    const core::RunSummary a = coordinator.run(smallSpec(20), 0, nullptr);
    const core::RunSummary b = coordinator.run(smallSpec(20), 0, nullptr);
    QCOMPARE(a.paramChecksum, b.paramChecksum);  // deterministic, and the nodes took a new job
  }

  // A killed node fails the run within 5 s naming it (with two slots, both its ranks go at
  // once), and the survivors take a new job.
  void killedNodeFailsTheRunNamingIt_data() {
    QTest::addColumn<QString>("devices");
    QTest::newRow("one slot") << "cpu";
    QTest::newRow("two slots") << "cpu:2";
  }
  void killedNodeFailsTheRunNamingIt() {
    QFETCH(QString, devices);
    std::vector<remote::LocalNodeOptions> options = nodes(3);
    options[1].devices = devices.toStdString();
    remote::LocalCluster cluster(kNode, options);
    const auto [s, detectS, underWay] = runAndSignalNode1(cluster, SIGKILL);
    QVERIFY2(underWay, "the run did not reach its fifth step");
    QCOMPARE(std::string(core::toString(s.status)), std::string("failed"));
    QVERIFY2(s.error.find("node1") != std::string::npos &&
                 s.error.find(cluster.address(1)) != std::string::npos,
             s.error.c_str());
    QVERIFY2(detectS < 5.0, qPrintable(QString::number(detectS)));
    // The survivors dropped the job and take a new one.
    remote::Coordinator survivors({cluster.address(0), cluster.address(2)}, {});
    survivors.connect();
    const core::RunSummary again = survivors.run(smallSpec(10), 0, nullptr);
    QVERIFY2(std::string(core::toString(again.status)) == "completed", again.error.c_str());
  }

  // A node that stops answering (SIGSTOP: its sockets stay open, its collectives never
  // finish) fails the run naming it within 5 s, and every daemon is free for a new job
  // within 10 s of the stop: the others abort their pending collectives at once.
  void stoppedNodeFailsTheRunAndFreesTheOthers() {
    remote::LocalCluster cluster(kNode, nodes(3));
    const auto [s, failedAfterS, underWay] = runAndSignalNode1(cluster, SIGSTOP);
    const Clock::time_point stoppedAt =
        Clock::now() -
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(failedAfterS));
    cluster.signal(1, SIGCONT);
    QVERIFY2(underWay, "the run did not reach its fifth step");
    QCOMPARE(std::string(core::toString(s.status)), std::string("failed"));
    QVERIFY2(s.error.find("node1") != std::string::npos &&
                 s.error.find(cluster.address(1)) != std::string::npos,
             s.error.c_str());
    QVERIFY2(failedAfterS < 5.0, qPrintable(QString::number(failedAfterS)));

    // Every daemon, the stopped one included once it runs again, drops the job.
    bool allFree = false;
    while (!allFree && Clock::now() < stoppedAt + std::chrono::seconds(10)) {
      remote::Coordinator probe(cluster.addresses(), {});
      const std::vector<remote::NodeSummary> info = probe.connect();
      allFree = std::none_of(info.begin(), info.end(),
                             [](const remote::NodeSummary& n) { return n.busy; });
      if (!allFree) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const double freeAfterS = std::chrono::duration<double>(Clock::now() - stoppedAt).count();
    QVERIFY2(allFree, qPrintable(QString("still busy %1 s after the stop").arg(freeAfterS)));
    remote::Coordinator again(cluster.addresses(), {});
    again.connect();
    const core::RunSummary next = again.run(smallSpec(10), 0, nullptr);
    QVERIFY2(std::string(core::toString(next.status)) == "completed", next.error.c_str());
  }

  // SIGTERM (or Ctrl-C) cancels the run: the summary says so and dtlab-cli exits within 5 s,
  // even when a node has stopped answering and the others are blocked on it.
  void cliCancelsOnSigtermWithinFiveSeconds_data() {
    QTest::addColumn<bool>("stopANode");
    QTest::newRow("healthy cluster") << false;
    QTest::newRow("one node stopped") << true;
  }
  void cliCancelsOnSigtermWithinFiveSeconds() {
    QFETCH(bool, stopANode);
    QTemporaryDir dir;
    QProcess cli;
    const std::vector<pid_t> daemons = startEndlessCliRun(dir, cli);
    QCOMPARE(daemons.size(), std::size_t{2});
    const pid_t cliPid = static_cast<pid_t>(cli.processId());
    QVERIFY2(e2e::waitForStepPoint(endlessProject(dir), std::chrono::seconds(60)),
             "no step point recorded within 60 s: the run did not get under way");
    if (stopANode) {
      ::kill(daemons[1], SIGSTOP);
      // Stopped, not merely signalled; the other node blocks on it at its next all-reduce.
      const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
      while (!stopped(daemons[1]) && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const bool isStopped = stopped(daemons[1]);
      if (!isStopped) ::kill(daemons[1], SIGCONT);
      QVERIFY2(isStopped, "the node did not stop within 10 s of SIGSTOP");
    }
    const Clock::time_point sent = Clock::now();
    ::kill(cliPid, SIGTERM);
    const bool exited = cli.waitForFinished(15000);
    const double tookS = std::chrono::duration<double>(Clock::now() - sent).count();
    if (stopANode) ::kill(daemons[1], SIGCONT);
    QVERIFY(exited);
    QVERIFY2(tookS < 5.0, qPrintable(QString::number(tookS)));
    QCOMPARE(cli.exitCode(), 130);
    const QList<QByteArray> lines = cli.readAllStandardOutput().trimmed().split('\n');
    const auto out = nlohmann::json::parse(lines.last().toStdString());
    QCOMPARE(out["runs"].size(), 1u);
    // Cancelled while healthy; with a node stopped, the run may instead fail naming it
    // (its heartbeat stops while the cancel is under way).
    const std::string status = out["runs"][0]["status"];
    QVERIFY2(status == "cancelled" || (stopANode && status == "failed"), status.c_str());
  }

  void launcherKilledLeavesNoDaemon() {
    // dtlab-cli run starts the daemons; SIGKILL gives it no chance to stop them.
    QTemporaryDir dir;
    QProcess cli;
    const std::vector<pid_t> daemons = startEndlessCliRun(dir, cli);
    QCOMPARE(daemons.size(), std::size_t{2});
    const pid_t cliPid = static_cast<pid_t>(cli.processId());
    ::kill(cliPid, SIGKILL);
    QVERIFY(cli.waitForFinished(10000));
    const Clock::time_point gone = Clock::now() + std::chrono::seconds(10);
    while ((alive(daemons[0]) || alive(daemons[1])) && Clock::now() < gone)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    QVERIFY(!alive(daemons[0]));
    QVERIFY(!alive(daemons[1]));
  }

  void cliRunPrintsSummaries() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec(20);
    spec.variants = {core::VariantConfig{"first"}, core::VariantConfig{"second"}};
    const QString path = writeSpec(dir, spec);
    QProcess cli;
    cli.start(kCli, {"run", path, "--local-nodes", "2", "--quiet"});
    QVERIFY(cli.waitForFinished(120000));
    QCOMPARE(cli.exitCode(), 0);
    const QList<QByteArray> lines = cli.readAllStandardOutput().trimmed().split('\n');
    const auto out = nlohmann::json::parse(lines.last().toStdString());
    QCOMPARE(out["runs"].size(), 2u);
    QCOMPARE(out["runs"][0]["name"], nlohmann::json("first"));
    for (const auto& run : out["runs"]) {
      QCOMPARE(run["status"], nlohmann::json("completed"));
      QCOMPARE(run["param_checksum"].size(), 2u);
      QCOMPARE(run["param_checksum"][0], run["param_checksum"][1]);
    }
    // Identical data and initial weights for every variant: same strategy, same model.
    QCOMPARE(out["runs"][0]["param_checksum"], out["runs"][1]["param_checksum"]);
  }

  void cliRunRecordsIntoProject() {
    QTemporaryDir dir;
    const QString path = writeSpec(dir, smallSpec(30));
    const QString project = dir.filePath("p.dtlab");
    QProcess cli;
    cli.start(kCli, {"run", path, "--local-nodes", "2", "--quiet", "--project", project});
    QVERIFY(cli.waitForFinished(120000));
    QCOMPARE(cli.exitCode(), 0);
    QProcess list;
    list.start(kCli, {"project", "list", project, "--json"});
    QVERIFY(list.waitForFinished(30000));
    QCOMPARE(list.exitCode(), 0);
    const auto runs = nlohmann::json::parse(list.readAllStandardOutput().toStdString());
    const auto& array = runs.is_array() ? runs : runs.at("runs");
    QCOMPARE(array.size(), 1u);
    QCOMPARE(array[0]["strategy"], nlohmann::json("sync_allreduce"));
    QCOMPARE(array[0]["status"], nlohmann::json("completed"));
  }

  // The metric table drives every consumer: each of its rows, whatever its scope, reaches
  // the project file as a series of every worker / node / the run, `project show` lists it
  // with the table's unit and scope, and the CSV export carries its points. A row added to
  // the table is checked here without touching this test.
  void everyMetricOfTheTableReachesStoreShowAndCsv() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec(100000000);
    spec.training.maxSeconds = 2.0;      // long enough for the nodes' 500 ms resource samples
    spec.training.checkpointEvery = 50;  // for the checkpoints' own metrics
    const QString path = writeSpec(dir, spec);
    const QString project = dir.filePath("p.dtlab");
    QProcess cli;
    cli.start(kCli, {"run", path, "--local-nodes", "2", "--quiet", "--project", project});
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());

    QProcess show;
    show.start(kCli, {"project", "show", project, "1", "--json"});
    QVERIFY(show.waitForFinished(30000));
    QCOMPARE(show.exitCode(), 0);
    const auto shown = nlohmann::json::parse(show.readAllStandardOutput().toStdString());
    QProcess csv;
    csv.start(kCli, {"project", "export-csv", project, "1"});
    QVERIFY(csv.waitForFinished(30000));
    QCOMPARE(csv.exitCode(), 0);
    const QString points = QString::fromUtf8(csv.readAllStandardOutput());

    for (const core::MetricInfo& m : core::kMetricTable) {
      const std::string name(m.name);
      // The owners a series of this scope has: workers 0 and 1 (each on its own node),
      // nodes 0 and 1, or the run.
      std::vector<std::pair<int, int>> owners;  // (node, worker)
      if (m.scope == core::MetricScope::kWorker)
        owners = core::checkpointOnly(m) ? std::vector<std::pair<int, int>>{{0, 0}}
                                         : std::vector<std::pair<int, int>>{{0, 0}, {1, 1}};
      if (m.scope == core::MetricScope::kNode) owners = {{0, -1}, {1, -1}};
      if (m.scope == core::MetricScope::kRun) owners = {{-1, -1}};
      // Only asynchronous strategies measure divergence, only GPU workers the GPU's figures,
      // only runs on token sequences the perplexity; this synchronous CPU run on vectors has
      // none of them (tests/gpu checks the GPU's, core_test_sequences the perplexity).
      if (name == core::metric::kDivergence || core::gpuOnly(m) || core::sequenceOnly(m)) continue;
      for (const auto& [node, worker] : owners) {
        const bool stored =
            std::any_of(shown["series"].begin(), shown["series"].end(),
                        // Captured by name: clang 14 cannot capture a structured binding.
                        [&, node = node, worker = worker](const nlohmann::json& x) {
                          return x["key"] == name && x["node"] == node && x["worker"] == worker &&
                                 x["points"].get<int64_t>() > 0;
                        });
        QVERIFY2(stored, qPrintable(QString("no points of %1 for node %2 worker %3")
                                        .arg(QString::fromStdString(name))
                                        .arg(node)
                                        .arg(worker)));
      }
      const auto listed = std::find_if(shown["metrics"].begin(), shown["metrics"].end(),
                                       [&](const nlohmann::json& x) { return x["key"] == name; });
      QVERIFY2(listed != shown["metrics"].end(), name.c_str());
      QCOMPARE((*listed)["unit"].get<std::string>(), std::string(m.unit));
      QCOMPARE((*listed)["scope"].get<std::string>(), std::string(core::toString(m.scope)));
      QVERIFY2(points.contains(QString(",%1,").arg(QString::fromStdString(name))), name.c_str());
    }
  }

  void cliRunReportsUnreachableNode() {
    QTemporaryDir dir;
    const QString path = writeSpec(dir, smallSpec(5));
    QProcess cli;
    cli.start(kCli, {"run", path, "--node", "127.0.0.1:1"});
    QVERIFY(cli.waitForFinished(60000));
    QVERIFY(cli.exitCode() != 0);
    const QString err = cli.readAllStandardError();
    QVERIFY2(err.contains("127.0.0.1:1"), qPrintable(err));
  }

  void cliRunReportsWrongToken() {
    remote::LocalCluster cluster(kNode, nodes(1), "right-token");
    QTemporaryDir dir;
    const QString path = writeSpec(dir, smallSpec(5));
    QProcess cli;
    cli.start(kCli, {"run", path, "--node", QString::fromStdString(cluster.address(0)), "--token",
                     "wrong-token"});
    QVERIFY(cli.waitForFinished(60000));
    QVERIFY(cli.exitCode() != 0);
    const QString err = cli.readAllStandardError();
    QVERIFY2(err.contains("UNAUTHENTICATED"), qPrintable(err));
    QVERIFY2(!err.contains("right-token"), qPrintable(err));
  }

  // `bench --help` names every benchmark's flags (the parsers refuse any other).
  void cliBenchHelpListsFlags() {
    QProcess cli;
    cli.start(kCli, {"bench", "--help"});
    QVERIFY(cli.waitForFinished(10000));
    QCOMPARE(cli.exitCode(), 0);
    const QString help = cli.readAllStandardOutput();
    for (const char* flag :
         {"bench core",     "--threads",   "--batch",       "--in",      "--hidden",
          "--layers",       "--classes",   "--reps",        "--steps",   "--reference",
          "--json",         "bench train", "--local-nodes", "--warmup",  "bench allreduce",
          "--bytes",        "bench store", "--points",      "--workers", "--ingest-reps",
          "--query-points", "--buckets",   "--dir"})
      QVERIFY2(help.contains(flag), flag);
  }
};

QTEST_GUILESS_MAIN(TestRun)
#include "test_run.moc"
