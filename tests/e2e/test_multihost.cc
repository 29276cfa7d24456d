// Runs across real network hosts: one network namespace per dtlab-node daemon, joined by
// veth pairs on a bridge in a namespace of its own, where dtlab-cli coordinates. Nothing
// here can reach a peer through loopback, so a node that advertises or binds the wrong
// address fails the run. The namespaces and their addresses exist only inside this test
// (10.213.0.0/24 on the bridge); no traffic leaves them. Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN)
// and iproute2: without them the tests skip and say why. The daemons serve with mutual TLS
// (certificates from `dtlab-node gen-certs` naming the hosts' addresses), except where a test
// says --insecure.
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/e2e/test_network.h"

using Clock = std::chrono::steady_clock;
using dtlab::test::ip;
using dtlab::test::TestNetwork;

namespace {

const QString kNode = DTLAB_BINARY_DIR "/app/dtlab-node";
const QString kCli = DTLAB_BINARY_DIR "/app/dtlab-cli";
const QString kToken = "multihost-test-token";

// A dtlab-node inside a namespace; SIGTERM, then SIGKILL, on destruction.
class NamespacedNode {
 public:
  NamespacedNode(const QString& ns, const QStringList& flags) {
    // `ip netns exec` execs the daemon, so the process is the daemon itself.
    process_.start("ip", QStringList{"netns", "exec", ns, kNode, "--token", kToken} + flags);
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline && process_.state() != QProcess::NotRunning) {
      process_.waitForReadyRead(100);
      output_ += QString::fromUtf8(process_.readAllStandardOutput());
      if (output_.contains("dtlab-node listening on ")) {
        ready_ = true;
        return;
      }
    }
  }
  ~NamespacedNode() {
    process_.terminate();
    if (!process_.waitForFinished(5000)) {
      process_.kill();
      process_.waitForFinished(5000);
    }
  }
  bool ready() const { return ready_; }
  // What it printed so far (waiting a moment lets QProcess take in what is in the pipes).
  QString log() {
    process_.waitForReadyRead(200);
    output_ += QString::fromUtf8(process_.readAllStandardOutput());
    errors_ += QString::fromUtf8(process_.readAllStandardError());
    return output_ + errors_;
  }

 private:
  QProcess process_;
  QString output_;
  QString errors_;
  bool ready_ = false;
};

struct CliOutcome {
  int exitCode = -1;
  double seconds = 0.0;
  nlohmann::json summary;  // the last stdout line, {"runs":[...]}
  QString stderrText;
};

CliOutcome runCli(const QString& ns, const QStringList& args, int timeoutMs) {
  QProcess cli;
  const Clock::time_point start = Clock::now();
  cli.start("ip", QStringList{"netns", "exec", ns, kCli} + args);
  CliOutcome out;
  if (!cli.waitForFinished(timeoutMs)) {
    cli.kill();
    cli.waitForFinished(5000);
    out.stderrText = "dtlab-cli did not finish in time";
    return out;
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  out.exitCode = cli.exitCode();
  out.stderrText = QString::fromUtf8(cli.readAllStandardError());
  const QList<QByteArray> lines = cli.readAllStandardOutput().trimmed().split('\n');
  if (!lines.isEmpty()) {
    try {
      out.summary = nlohmann::json::parse(lines.last().toStdString());
    } catch (const std::exception&) {
    }
  }
  return out;
}

// A small parameter-server spec with these variants (a JSON array), written into `dir`.
QString writePsSpec(const QTemporaryDir& dir, const char* variants) {
  const QString path = dir.filePath("ps.json");
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return {};
  file.write(R"({"name": "ps", "seed": 3,
    "dataset": {"kind": "gaussian_blobs", "train_size": 4096, "test_size": 512,
                "features": 16, "classes": 4},
    "model": {"hidden": [64]},
    "training": {"batch_size": 96, "epochs": 0, "max_steps": 40, "eval_interval": 20},
    "variants": )");
  file.write(variants);
  file.write("}");
  return path;
}

}  // namespace

class TestMultiHost : public QObject {
  Q_OBJECT

  QTemporaryDir certs_;
  QString cert(const char* name) const { return certs_.filePath(name); }
  QStringList nodeTls() const {
    return {"--tls-cert",     cert("node.pem"), "--tls-key",
            cert("node.key"), "--tls-ca",       cert("ca.pem")};
  }
  QStringList clientTls() const {
    return {"--tls-cert",       cert("client.pem"), "--tls-key",
            cert("client.key"), "--tls-ca",         cert("ca.pem")};
  }

 private slots:
  void initTestCase() {
    QProcess gen;
    gen.start(kNode, {"gen-certs", certs_.path(), "--hosts",
                      TestNetwork::address(1) + "," + TestNetwork::address(2) + "," +
                          TestNetwork::address(3)});
    QVERIFY(gen.waitForFinished(30000));
    QVERIFY2(gen.exitCode() == 0, gen.readAllStandardError().constData());
  }

  // bench_sync.json on three hosts, each reached its own way: a specific --listen address,
  // a wildcard listen without --advertise (the node binds the address the coordinator
  // dialled), and a wildcard listen with --advertise. The third emulates its link, so every
  // rank's collectives are held to the last arrival: the ranks exchange their arrivals in
  // shared memory (one machine), across the namespaces, while the data goes over TCP.
  void trainsAcrossThreeHostsWithIdenticalReplicas() {
    TestNetwork network(3);
    if (!network.error().isEmpty())
      QSKIP(qPrintable("multi-host test skipped: " + network.error()));
    NamespacedNode a(network.host(1),
                     QStringList{"--listen", TestNetwork::address(1) + ":7000"} + nodeTls());
    NamespacedNode b(network.host(2), QStringList{"--listen", "0.0.0.0:7000"} + nodeTls());
    NamespacedNode c(network.host(3),
                     QStringList{"--listen", "0.0.0.0:7000", "--advertise", TestNetwork::address(3),
                                 "--bandwidth-mbps", "4000"} +
                         nodeTls());
    QVERIFY2(a.ready(), qPrintable(a.log()));
    QVERIFY2(b.ready(), qPrintable(b.log()));
    QVERIFY2(c.ready(), qPrintable(c.log()));
    const CliOutcome out =
        runCli(network.hub(),
               QStringList{"run", DTLAB_SOURCE_DIR "/resources/specs/bench_sync.json", "--quiet",
                           "--token", kToken, "--node", TestNetwork::address(1) + ":7000", "--node",
                           TestNetwork::address(2) + ":7000", "--node",
                           TestNetwork::address(3) + ":7000"} +
                   clientTls(),
               300000);
    QVERIFY2(out.exitCode == 0, qPrintable(out.stderrText));
    const auto& run = out.summary.at("runs").at(0);
    QCOMPARE(run.at("status"), nlohmann::json("completed"));
    QCOMPARE(run.at("stop_reason"), nlohmann::json("target_accuracy"));
    const auto& checksums = run.at("param_checksum");
    QCOMPARE(checksums.size(), 3u);
    QCOMPARE(checksums[0], checksums[1]);
    QCOMPARE(checksums[0], checksums[2]);
    // Network namespaces stand for separate machines: the group measured its all-reduce on
    // TCP, without the shared-memory path that ranks on one host get.
    std::string start;
    for (const auto& event : run.at("events"))
      if (event.at("kind") == "start") start = event.at("detail").get<std::string>();
    QVERIFY2(start.find("all-reduce measured") != std::string::npos, start.c_str());
    QVERIFY2(start.find("shm") == std::string::npos, start.c_str());
    for (NamespacedNode* node : {&a, &b, &c}) {
      const QString log = node->log();
      QVERIFY2(!log.contains("exchange goes over the group's transport"), qPrintable(log));
    }

    // Every other strategy across the same hosts, over the same TLS: the parameter server
    // (every worker pulls from and pushes to the shards of the other two at the addresses
    // their nodes are reached at; a hybrid switches to them half way), bounded staleness and
    // local SGD.
    QTemporaryDir dir;
    const QString psSpec = writePsSpec(dir, R"([{"strategy": "async_ps"},
        {"strategy": "hybrid", "switch_at": 0.5}, {"strategy": "ssp"},
        {"strategy": "local_sgd"}])");
    const CliOutcome ps = runCli(
        network.hub(),
        QStringList{"run", psSpec, "--quiet", "--token", kToken, "--node",
                    TestNetwork::address(1) + ":7000", "--node", TestNetwork::address(2) + ":7000",
                    "--node", TestNetwork::address(3) + ":7000"} +
            clientTls(),
        300000);
    QVERIFY2(ps.exitCode == 0, qPrintable(ps.stderrText));
    for (const auto& r : ps.summary.at("runs")) {
      QVERIFY2(r.at("status") == "completed", r.dump().c_str());
      QVERIFY2(r.at("bytes_per_sample").get<double>() > 0.0, r.dump().c_str());
    }
    QCOMPARE(ps.summary.at("runs").size(), 4u);
    QCOMPARE(ps.summary.at("runs").at(1).at("switches").get<int64_t>(), int64_t{1});
  }

  // In plain text (--insecure) the parameter server's pulls and pushes take each shard's stream
  // beside gRPC: its port on the address the shard's node is reached at, whether the node
  // listens on that address, on every address, or advertises one.
  void parameterServerStreamsAcrossHostsInPlainText() {
    TestNetwork network(3);
    if (!network.error().isEmpty())
      QSKIP(qPrintable("multi-host test skipped: " + network.error()));
    const QStringList plain = {"--insecure", "--log-level", "debug"};
    NamespacedNode a(network.host(1),
                     QStringList{"--listen", TestNetwork::address(1) + ":7000"} + plain);
    NamespacedNode b(network.host(2), QStringList{"--listen", "0.0.0.0:7000"} + plain);
    NamespacedNode c(
        network.host(3),
        QStringList{"--listen", "0.0.0.0:7000", "--advertise", TestNetwork::address(3)} + plain);
    QVERIFY2(a.ready() && b.ready() && c.ready(), qPrintable(a.log() + b.log() + c.log()));
    QTemporaryDir dir;
    const QString spec = writePsSpec(dir, R"([{"strategy": "async_ps"}, {"strategy": "ssp"}])");
    const CliOutcome out = runCli(
        network.hub(),
        {"run", spec, "--quiet", "--token", kToken, "--node", TestNetwork::address(1) + ":7000",
         "--node", TestNetwork::address(2) + ":7000", "--node", TestNetwork::address(3) + ":7000"},
        300000);
    QVERIFY2(out.exitCode == 0, qPrintable(out.stderrText));
    QCOMPARE(out.summary.at("runs").size(), 2u);
    for (const auto& r : out.summary.at("runs"))
      QVERIFY2(r.at("status") == "completed", r.dump().c_str());
    // Every worker reached every shard over its stream, none fell back to gRPC.
    for (NamespacedNode* node : {&a, &b, &c}) {
      const QString log = node->log();
      for (int host = 1; host <= 3; ++host)
        QVERIFY2(log.contains("(" + TestNetwork::address(host) +
                              ":7000): pulls and pushes over its stream at port"),
                 qPrintable(log));
      QVERIFY2(!log.contains("cannot be used"), qPrintable(log));
    }
  }

  // A host whose advertised address swallows every packet (as a firewall that drops, or a
  // wrong address on a network without ICMP would): its peers' connection attempts get no
  // answer at all, so only the connect timeout can end them. The run must fail within it,
  // naming that host's address, and every node must take the next job.
  void unreachablePeerFailsWithinTheConnectTimeout() {
    TestNetwork network(3);
    if (!network.error().isEmpty())
      QSKIP(qPrintable("multi-host test skipped: " + network.error()));
    // Host 3 has a second address, 10.213.0.5, and advertises it; hosts 1 and 2 send what
    // they address to it to a MAC address nobody has. (It is lower than the others'
    // addresses, so in Gloo's pairing they dial it, and it waits for them.)
    const QString silent = "10.213.0.5";
    QVERIFY(ip({"netns", "exec", network.host(3), "ip", "addr", "add", silent + "/24", "dev", "v3"})
                .isEmpty());
    for (int i : {1, 2}) {
      QVERIFY(ip({"netns", "exec", network.host(i), "ip", "neigh", "add", silent, "lladdr",
                  "02:00:00:00:00:05", "dev", QString("v%1").arg(i), "nud", "permanent"})
                  .isEmpty());
    }
    // Plain text here, as a private network allows (--insecure).
    NamespacedNode a(network.host(1),
                     {"--listen", TestNetwork::address(1) + ":7000", "--insecure"});
    NamespacedNode b(network.host(2),
                     {"--listen", TestNetwork::address(2) + ":7000", "--insecure"});
    NamespacedNode c(network.host(3),
                     {"--listen", "0.0.0.0:7000", "--advertise", silent, "--insecure"});
    QVERIFY2(a.ready() && b.ready() && c.ready(), qPrintable(a.log() + b.log() + c.log()));
    const QStringList nodes = {"--node", TestNetwork::address(1) + ":7000",
                               "--node", TestNetwork::address(2) + ":7000",
                               "--node", TestNetwork::address(3) + ":7000"};
    const CliOutcome out =
        runCli(network.hub(),
               QStringList{"run", DTLAB_SOURCE_DIR "/resources/specs/bench_sync.json", "--quiet",
                           "--token", kToken, "--connect-timeout", "4"} +
                   nodes,
               120000);
    QVERIFY2(out.exitCode == 1, qPrintable(QString("exit %1, %2 s: %3 %4")
                                               .arg(out.exitCode)
                                               .arg(out.seconds)
                                               .arg(out.stderrText)
                                               .arg(QString::fromStdString(out.summary.dump()))));
    const std::string error = out.summary.at("runs").at(0).at("error");
    QVERIFY2(error.find("could not connect to rank 2 at 10.213.0.5:") != std::string::npos,
             error.c_str());
    // Connect timeout 4 s, plus starting and winding down; far from Gloo's 10 minutes.
    QVERIFY2(out.seconds < 15.0, qPrintable(QString::number(out.seconds)));

    // The nodes are free: a run on the two reachable hosts completes.
    const CliOutcome next = runCli(
        network.hub(),
        {"run", DTLAB_SOURCE_DIR "/resources/specs/bench_sync.json", "--quiet", "--token", kToken,
         "--node", TestNetwork::address(1) + ":7000", "--node", TestNetwork::address(2) + ":7000"},
        300000);
    QVERIFY2(next.exitCode == 0, qPrintable(next.stderrText));
  }
};

QTEST_GUILESS_MAIN(TestMultiHost)
#include "test_multihost.moc"
