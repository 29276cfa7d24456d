// dtlab-node as a system service runs it (installer/systemd): its settings from a
// configuration file (--config, what /etc/dtlab/node.conf holds), the command line overriding
// them, its token from a file readable by its user only (--token-file, never on the command
// line where ps shows it), a bad line named by file and line; and the unit itself passes
// systemd-analyze verify.
#include <QtTest/QtTest>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <string>

#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>

#include "core/spec/experiment_spec.h"
#include "remote/coordinator/coordinator.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;
using namespace std::chrono_literals;

namespace {

void writeFile(const QString& path, const std::string& text, mode_t mode) {
  std::ofstream(path.toStdString()) << text;
  QVERIFY(::chmod(path.toLocal8Bit().constData(), mode) == 0);
}

// Starts dtlab-node with `args`; returns the address it prints, or "" when it exits first
// (its stderr then in *error).
QString startNode(QProcess& node, const QStringList& args, QString* error) {
  node.start(QString::fromStdString(e2e::kNode), args);
  if (!node.waitForStarted(10000)) return {};
  const QString prefix = "dtlab-node listening on ";
  while (node.waitForReadyRead(10000) || node.canReadLine()) {
    while (node.canReadLine()) {
      const QString line = QString::fromUtf8(node.readLine()).trimmed();
      if (line.startsWith(prefix)) return line.mid(prefix.size());
    }
    if (node.state() == QProcess::NotRunning) break;
  }
  node.waitForFinished(10000);
  if (error != nullptr) *error = QString::fromUtf8(node.readAllStandardError());
  return {};
}

// Five steps of a small MLP: a run that only has to reach the daemon and finish.
core::ExperimentSpec tinySpec() {
  core::ExperimentSpec spec;
  spec.dataset.trainSize = 512;
  spec.dataset.testSize = 64;
  spec.model.hidden = {8};
  spec.training.batchSize = 32;
  spec.training.epochs = 0;
  spec.training.maxSteps = 5;
  return spec;
}

}  // namespace

class TestNodeService : public QObject {
  Q_OBJECT
 private slots:
  void configFileAndTokenFile() {
    QTemporaryDir dir;
    const QString token = dir.filePath("token");
    writeFile(token, "s3cret-token\n", 0600);
    const QString conf = dir.filePath("node.conf");
    writeFile(conf,
              "# as /etc/dtlab/node.conf\nlisten = 127.0.0.1:0\ntoken_file = " +
                  token.toStdString() + "\nthreads = 3\nspeed = 0.5\n",
              0644);
    QProcess node;
    QString error;
    const QString address = startNode(node, {"--config", conf, "--threads", "2"}, &error);
    QVERIFY2(!address.isEmpty(), qPrintable(error));
    const remote::NodeSummary info =
        remote::queryNode(address.toStdString(), "s3cret-token", 5000ms);
    QCOMPARE(info.speed, 0.5);        // from the file
    QCOMPARE(info.workerThreads, 2);  // the command line's, over the file's 3
    QVERIFY_THROWS_EXCEPTION(Error, remote::queryNode(address.toStdString(), "wrong", 5000ms));
    node.terminate();
    QVERIFY(node.waitForFinished(10000));
  }

  void refusalsNameTheFileAndLine_data() {
    QTest::addColumn<QString>("conf");
    QTest::addColumn<int>("tokenMode");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown key") << "listen = 127.0.0.1:0\ncolour = blue\n"
                                 << 0600 << "node.conf:2: unknown key 'colour'";
    QTest::newRow("no token in the file") << "token = visible\n"
                                          << 0600 << "node.conf:1: unknown key 'token'";
    QTest::newRow("no equals sign") << "# c\nlisten 127.0.0.1:0\n"
                                    << 0600 << "node.conf:2: expected KEY = VALUE";
    QTest::newRow("a switch") << "insecure = yes\n"
                              << 0600 << "node.conf:1: insecure must be true or false, got 'yes'";
    QTest::newRow("a token others may read") << "token_file = TOKEN\n" << 0640 << "--token-file ";
  }
  void refusalsNameTheFileAndLine() {
    QFETCH(QString, conf);
    QFETCH(int, tokenMode);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString token = dir.filePath("token");
    writeFile(token, "t\n", static_cast<mode_t>(tokenMode));
    const QString path = dir.filePath("node.conf");
    writeFile(path, conf.replace("TOKEN", token).toStdString(), 0644);
    QProcess node;
    QString error;
    QVERIFY(startNode(node, {"--config", path}, &error).isEmpty());
    QCOMPARE(node.exitCode(), 2);
    QVERIFY2(error.contains(expected), qPrintable(error));
    if (tokenMode != 0600) QVERIFY2(error.contains("chmod 600"), qPrintable(error));
  }

  // dtlab-cli takes the cluster's token from a file too (a Kubernetes Job does, and a shell
  // history keeps no secret): owner-only, or refused.
  void theCliReadsTheTokenFromAFile() {
    QTemporaryDir dir;
    const QString token = dir.filePath("token");
    writeFile(token, "s3cret\n", 0600);
    QProcess node;
    QString error;
    const QString address =
        startNode(node, {"--listen", "127.0.0.1:0", "--token-file", token}, &error);
    QVERIFY2(!address.isEmpty(), qPrintable(error));
    const QString path = e2e::writeSpec(dir, tinySpec());
    const e2e::Outcome ran =
        e2e::cli({"run", path, "--quiet", "--node", address, "--token-file", token});
    QVERIFY2(ran.exitCode == 0, qPrintable(ran.err));
    QVERIFY(::chmod(token.toLocal8Bit().constData(), 0644) == 0);
    const e2e::Outcome refused =
        e2e::cli({"run", path, "--quiet", "--node", address, "--token-file", token});
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("chmod 600"), qPrintable(refused.err));
    node.terminate();
    QVERIFY(node.waitForFinished(10000));
  }

  void tokenAndTokenFileExcludeEachOther() {
    QTemporaryDir dir;
    const QString token = dir.filePath("token");
    writeFile(token, "t\n", 0600);
    QProcess node;
    QString error;
    QVERIFY(startNode(node, {"--token", "x", "--token-file", token}, &error).isEmpty());
    QVERIFY2(error.contains("--token, --token-file and DTLAB_TOKEN: give one"), qPrintable(error));
  }

  // DTLAB_TOKEN keeps the token out of the process list too: the daemon and the CLI read it
  // (and drop it from their environment); given beside --token it is refused like a second one.
  void theTokenMayComeFromTheEnvironment() {
    QTemporaryDir dir;
    qputenv("DTLAB_TOKEN", "from-env");
    QProcess node;
    QString error;
    const QString address =
        startNode(node, {"--listen", "127.0.0.1:0", "--log-level", "debug"}, &error);
    QVERIFY2(!address.isEmpty(), qPrintable(error));
    const QString path = e2e::writeSpec(dir, tinySpec());
    const e2e::Outcome ran = e2e::cli({"run", path, "--quiet", "--node", address});
    QVERIFY2(ran.exitCode == 0, qPrintable(ran.err));
    qputenv("DTLAB_TOKEN", "wrong");
    const e2e::Outcome refused = e2e::cli({"run", path, "--quiet", "--node", address});
    QVERIFY(refused.exitCode != 0);
    QVERIFY2(refused.err.contains("token"), qPrintable(refused.err));
    const e2e::Outcome both =
        e2e::cli({"run", path, "--quiet", "--node", address, "--token", "from-env"});
    QCOMPARE(both.exitCode, 2);
    QVERIFY2(both.err.contains("give one"), qPrintable(both.err));
    qunsetenv("DTLAB_TOKEN");
    // Nothing given at all: the daemon refuses the token-less run.
    QVERIFY(e2e::cli({"run", path, "--quiet", "--node", address}).exitCode != 0);
    node.terminate();
    QVERIFY(node.waitForFinished(10000));
    // No line the daemon logged at its most talkative, and nothing the CLI printed (refusals
    // included), holds the token.
    const QByteArray logs = node.readAllStandardError() + node.readAllStandardOutput();
    QVERIFY(logs.contains("job"));  // it did log the jobs
    for (const e2e::Outcome* o : {&ran, &refused, &both})
      QVERIFY2(!o->out.contains("from-env") && !o->err.contains("from-env"), qPrintable(o->err));
    QVERIFY2(!logs.contains("from-env"), logs.constData());
  }

  // The packaged unit, pointed at this build's daemon, passes systemd's own checks.
  void theUnitPassesSystemdAnalyzeVerify() {
    const QString analyze = QStandardPaths::findExecutable("systemd-analyze");
    if (analyze.isEmpty()) QSKIP("systemd-analyze is not installed (Debian's systemd has it)");
    QFile unit(DTLAB_SOURCE_DIR "/installer/systemd/dtlab-node.service");
    QVERIFY(unit.open(QIODevice::ReadOnly));
    QString text = QString::fromUtf8(unit.readAll());
    QVERIFY(text.contains("ExecStart=/usr/bin/dtlab-node --config /etc/dtlab/node.conf"));
    for (const char* option : {"NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes",
                               "RestrictAddressFamilies=", "User=dtlab", "Restart=on-failure"})
      QVERIFY2(text.contains(option), option);
    QVERIFY(!text.contains("--token "));  // never on the command line
    text.replace("/usr/bin/dtlab-node", QString::fromStdString(e2e::kNode));
    QTemporaryDir dir;
    const QString copy = dir.filePath("dtlab-node.service");
    QFile out(copy);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(text.toUtf8());
    out.close();
    QProcess verify;
    verify.start(analyze, {"verify", copy});
    QVERIFY(verify.waitForFinished(60000));
    // Its warnings about the unit (a line it ignores, say) name the file: none may come.
    const QString said = QString::fromUtf8(verify.readAllStandardError());
    QVERIFY2(verify.exitCode() == 0 && !said.contains("dtlab-node.service"), qPrintable(said));
  }
};

QTEST_GUILESS_MAIN(TestNodeService)
#include "test_node_service.moc"
