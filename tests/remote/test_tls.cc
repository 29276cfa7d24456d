// Mutual TLS between real processes: certificates made by `dtlab-node gen-certs`, a dtlab-node
// serving with them on loopback, and this process dialling it as a coordinator does
// (remote::queryNode). Refusals must say which of the usual mistakes it was.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "core/common/check.h"
#include "remote/common/tls.h"
#include "remote/coordinator/coordinator.h"

#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "tests/remote/node_process.h"

using dtlab::remote::TlsFiles;
using dtlab::test::kNodeBinary;
using dtlab::test::NodeProcess;
namespace fs = std::filesystem;

namespace {

const std::string kToken = "tls-test-token";

struct Outcome {
  int code = -1;
  QString out;
  QString err;
};

Outcome genCerts(const QString& dir, const QString& hosts) {
  QProcess p;
  p.start(kNodeBinary, {"gen-certs", dir, "--hosts", hosts});
  Outcome o;
  if (!p.waitForFinished(30000)) return o;
  o.code = p.exitCode();
  o.out = QString::fromUtf8(p.readAllStandardOutput());
  o.err = QString::fromUtf8(p.readAllStandardError());
  return o;
}

TlsFiles files(const QString& dir, const char* who) {
  const std::string d = dir.toStdString();
  return {d + "/" + who + ".pem", d + "/" + who + ".key", d + "/ca.pem"};
}

QStringList serveFlags(const TlsFiles& tls) {
  return {
      "--token",   QString::fromStdString(kToken),  "--tls-cert", QString::fromStdString(tls.cert),
      "--tls-key", QString::fromStdString(tls.key), "--tls-ca",   QString::fromStdString(tls.ca)};
}

// queryNode as `tls`; "" when it answered, else its error.
std::string query(const std::string& address, const TlsFiles& tls,
                  const std::string& token = kToken) {
  try {
    dtlab::remote::queryNode(address, token, std::chrono::seconds(5), tls);
    return "";
  } catch (const dtlab::Error& e) {
    return e.what();
  }
}

std::string port(const std::string& address) {
  return address.substr(address.rfind(':') + 1);
}

}  // namespace

class TestTls : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString cluster_;  // gen-certs for 127.0.0.1
  QString other_;    // another cluster's CA and certificates

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    cluster_ = dir_.filePath("cluster");
    other_ = dir_.filePath("other");
    const Outcome made = genCerts(cluster_, "127.0.0.1");
    QVERIFY2(made.code == 0, qPrintable(made.err));
    QVERIFY2(made.out.contains("new CA"), qPrintable(made.out));
    QVERIFY2(genCerts(other_, "127.0.0.1,localhost").code == 0, "gen-certs of the other cluster");
  }

  void genCertsKeepsTheCaAndGuardsTheKeys() {
    for (const char* name : {"ca", "node", "client"}) {
      QVERIFY(fs::exists(fs::path(cluster_.toStdString()) / (std::string(name) + ".pem")));
      struct stat info {};
      QCOMPARE(::stat((cluster_.toStdString() + "/" + name + ".key").c_str(), &info), 0);
      QCOMPARE(info.st_mode & 0777, 0600u);
    }
    const QString again = dir_.filePath("again");
    QCOMPARE(genCerts(again, "10.0.0.1").code, 0);
    const Outcome second = genCerts(again, "10.0.0.2,node-b.example");
    QCOMPARE(second.code, 0);
    QVERIFY2(second.out.contains("kept the CA"), qPrintable(second.out));
    const Outcome bad = genCerts(dir_.filePath("bad"), "good.example,not a host");
    QCOMPARE(bad.code, 1);
    QVERIFY2(bad.err.contains("'not a host' is neither a host name nor an IPv4 or IPv6 address"),
             qPrintable(bad.err));
    const Outcome none = genCerts(dir_.filePath("none"), "");
    QVERIFY2(none.code != 0 && none.err.contains("--hosts is required"), qPrintable(none.err));
  }

  void mutualTlsClientIsServedAndTheTokenStillCounts() {
    NodeProcess node(serveFlags(files(cluster_, "node")));
    QVERIFY(node.ready());
    QCOMPARE(query(node.address(), files(cluster_, "client")), std::string());
    const std::string noToken = query(node.address(), files(cluster_, "client"), "");
    QVERIFY2(noToken.find("UNAUTHENTICATED") != std::string::npos, noToken.c_str());
  }

  void plainTextClientIsRefused() {
    NodeProcess node(serveFlags(files(cluster_, "node")));
    QVERIFY(node.ready());
    const std::string error = query(node.address(), {});
    QVERIFY2(error.find("UNAVAILABLE") != std::string::npos, error.c_str());
    QVERIFY2(error.find("it takes only TLS clients") != std::string::npos, error.c_str());
  }

  void clientOfAnotherCaIsRefused() {
    NodeProcess node(serveFlags(files(cluster_, "node")));
    QVERIFY(node.ready());
    // The other cluster's client certificate, though it trusts this cluster's CA.
    TlsFiles stranger = files(other_, "client");
    stranger.ca = files(cluster_, "client").ca;
    const std::string error = query(node.address(), stranger);
    QVERIFY2(error.find("the node refused this client's certificate") != std::string::npos,
             error.c_str());
    // And a client of this cluster does not trust the other cluster's node.
    NodeProcess foreign(serveFlags(files(other_, "node")));
    QVERIFY(foreign.ready());
    const std::string untrusted = query(foreign.address(), files(cluster_, "client"));
    QVERIFY2(untrusted.find("not signed by the CA of --tls-ca") != std::string::npos ||
                 untrusted.find("TLS handshake") != std::string::npos,
             untrusted.c_str());
  }

  void addressMissingFromTheCertificateIsRefused() {
    // The certificate names 127.0.0.1 only; the node listens on every address, and is dialled
    // at another loopback address (no name to resolve).
    NodeProcess node(QStringList{"--listen", "0.0.0.0:0"} + serveFlags(files(cluster_, "node")));
    QVERIFY(node.ready());
    const std::string error = query("127.0.0.2:" + port(node.address()), files(cluster_, "client"));
    QVERIFY2(error.find("does not name 127.0.0.2") != std::string::npos, error.c_str());
  }

  void replacedCertificatesAreReadAgain() {
    // The node serves from files that are then replaced by another cluster's: a client of
    // that cluster gets in without a restart.
    const fs::path live = fs::path(dir_.filePath("live").toStdString());
    fs::create_directories(live);
    for (const char* name : {"node.pem", "node.key", "ca.pem"})
      fs::copy_file(fs::path(cluster_.toStdString()) / name, live / name);
    NodeProcess node(serveFlags(files(QString::fromStdString(live.string()), "node")));
    QVERIFY(node.ready());
    QCOMPARE(query(node.address(), files(cluster_, "client")), std::string());
    for (const char* name : {"node.pem", "node.key", "ca.pem"}) {
      fs::copy_file(fs::path(other_.toStdString()) / name, live / (std::string(name) + ".new"));
      fs::rename(live / (std::string(name) + ".new"), live / name);
    }
    const auto deadline = std::chrono::steady_clock::now() + 4 * dtlab::remote::kTlsReloadInterval;
    std::string error = "never tried";
    while (!error.empty() && std::chrono::steady_clock::now() < deadline) {
      error = query(node.address(), files(other_, "client"));
      if (!error.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    QVERIFY2(error.empty(), error.c_str());
    QVERIFY(!query(node.address(), files(cluster_, "client")).empty());
  }

  void nonLoopbackWithoutTlsRefusesToStart() {
    QProcess p;
    p.start(kNodeBinary, {"--listen", "0.0.0.0:0", "--token", "t"});
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitCode(), 1);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("clear text") && err.contains("--tls-cert") && err.contains("--insecure"),
             qPrintable(err));
    NodeProcess insecure({"--listen", "0.0.0.0:0", "--token", "t", "--insecure"});
    QVERIFY(insecure.ready());
    QProcess partial;
    partial.start(kNodeBinary,
                  {"--tls-cert", QString::fromStdString(files(cluster_, "node").cert)});
    QVERIFY(partial.waitForFinished(10000));
    QCOMPARE(partial.exitCode(), 2);
    QVERIFY(QString::fromUtf8(partial.readAllStandardError()).contains("--tls-key missing"));
  }
};

QTEST_GUILESS_MAIN(TestTls)
#include "test_tls.moc"
