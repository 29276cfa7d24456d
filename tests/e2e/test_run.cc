// Whole runs through real dtlab-node daemons on loopback: the launcher, the
// coordinator, Gloo collectives between processes, failure detection, dtlab-cli run.
#include <QtTest/QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"

using namespace dtlab;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kNode = DTLAB_BINARY_DIR "/app/dtlab-node";
const QString kCli = DTLAB_BINARY_DIR "/app/dtlab-cli";

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

QString writeSpec(const QTemporaryDir& dir, const core::ExperimentSpec& spec) {
  const QString path = dir.filePath("spec.json");
  QFile file(path);
  if (file.open(QIODevice::WriteOnly))
    file.write(QByteArray::fromStdString(core::toJson(spec).dump()));
  return path;
}

class StepCounter : public core::MetricSink {
 public:
  void onStep(const core::StepMetrics& m) override {
    if (m.worker == 0) steps.fetch_add(1);
  }
  std::atomic<int64_t> steps{0};
};

}  // namespace

class TestRun : public QObject {
  Q_OBJECT
 private slots:
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
    QVERIFY2(s.status == "completed", s.error.c_str());
    QCOMPARE(s.steps, int64_t{30});
    QCOMPARE(counter.steps.load(), int64_t{30});
    QCOMPARE(static_cast<int>(s.paramChecksum.size()), world);
    for (const std::string& c : s.paramChecksum) QCOMPARE(c, s.paramChecksum[0]);
    QCOMPARE(s.samples, int64_t{30 * 64});
    QVERIFY(s.finalTestAccuracy.has_value());
  }

  void nodesTakeNewJobsDeterministically() {
    remote::LocalCluster cluster(kNode, nodes(2));
    remote::Coordinator coordinator(cluster.addresses(), {});
    coordinator.connect();
    const core::RunSummary a = coordinator.run(smallSpec(20), 0, nullptr);
    const core::RunSummary b = coordinator.run(smallSpec(20), 0, nullptr);
    QCOMPARE(a.paramChecksum, b.paramChecksum);  // deterministic, and the nodes took a new job
  }

  void killedNodeFailsTheRunNamingIt() {
    remote::LocalCluster cluster(kNode, nodes(3));
    remote::Coordinator coordinator(cluster.addresses(), {});
    coordinator.connect();
    StepCounter counter;
    Clock::time_point killedAt;
    std::thread killer([&] {
      while (counter.steps.load() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      killedAt = Clock::now();
      cluster.signal(1, SIGKILL);
    });
    const core::RunSummary s = coordinator.run(smallSpec(1000000), 0, &counter);
    const double detectS = std::chrono::duration<double>(Clock::now() - killedAt).count();
    killer.join();
    QCOMPARE(s.status, std::string("failed"));
    QVERIFY2(s.error.find("node1") != std::string::npos &&
                 s.error.find(cluster.address(1)) != std::string::npos,
             s.error.c_str());
    QVERIFY2(detectS < 5.0, qPrintable(QString::number(detectS)));
    // The survivors dropped the job and take a new one.
    remote::Coordinator survivors({cluster.address(0), cluster.address(2)}, {});
    survivors.connect();
    const core::RunSummary again = survivors.run(smallSpec(10), 0, nullptr);
    QVERIFY2(again.status == "completed", again.error.c_str());
  }

  void launcherKilledLeavesNoDaemon() {
    // dtlab-cli run starts the daemons; SIGKILL gives it no chance to stop them.
    QTemporaryDir dir;
    const QString path = writeSpec(dir, smallSpec(100000000));
    QProcess cli;
    cli.start(kCli, {"run", path, "--local-nodes", "2", "--quiet"});
    QVERIFY(cli.waitForStarted());
    const pid_t cliPid = static_cast<pid_t>(cli.processId());
    std::vector<pid_t> daemons;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
    while (daemons.size() < 2 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      daemons = childrenOf(cliPid);
    }
    QCOMPARE(daemons.size(), std::size_t{2});
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

  // The all-reduce benchmark runs DTLab's side and Gloo's algorithms between processes and
  // finds no wrong element on a correct run.
  void cliBenchAllReduceChecksResults() {
    QProcess cli;
    cli.start(kCli, {"bench", "allreduce", "--local-nodes", "2", "--bytes", "4096", "--reps", "2",
                     "--json"});
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, qPrintable(cli.readAllStandardError()));
    const QList<QByteArray> lines = cli.readAllStandardOutput().trimmed().split('\n');
    const auto out = nlohmann::json::parse(lines.last().toStdString());
    QCOMPARE(out["wrong"], nlohmann::json(0));
    QCOMPARE(out["sides"].size(), 5u);
    QCOMPARE(out["sides"][0]["name"], nlohmann::json("dtlab (own)"));
    for (const auto& side : out["sides"]) QVERIFY(side["busbw_gbps"].get<double>() > 0.0);
    QVERIFY(out["ratio_vs_best_gloo"].get<double>() > 0.0);
  }
};

QTEST_GUILESS_MAIN(TestRun)
#include "test_run.moc"
