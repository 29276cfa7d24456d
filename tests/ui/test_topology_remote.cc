// Topologies of running daemons, driven through the real topology page and window under
// QT_QPA_PLATFORM=offscreen, against real token-protected dtlab-node daemons on loopback.
#include <QtTest/QAbstractItemModelTester>
#include <QtTest/QtTest>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <QtCore/QDateTime>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QProcess>
#include <QtCore/QSettings>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtGui/QAction>
#include <QtWidgets/QGroupBox>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QTreeView>

#include "core/spec/hostfile.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "remote/cluster/local_cluster.h"
#include "ui/controller/cluster_controller.h"
#include "ui/controller/experiment_controller.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/node_secrets.h"
#include "ui/models/project_snapshot.h"
#include "ui/models/topology_model.h"
#include "ui/pages/topology_page.h"

#include "tests/ui/keyring_session.h"
#include "tests/ui/ui_support.h"

using namespace dtlab;

namespace {

// A controller that answers node checks from a table and records who asked: the topology
// page talks to nodes only through it. Runs are not its business.
class FakeController final : public ui::ExperimentController {
 public:
  bool start(const ui::RunRequest&) override { return false; }
  void cancel() override {}
  bool busy() const override { return false; }
  ui::LiveFeed* liveFeed() override { return nullptr; }
  ui::NodeInfo queryNode(const std::string& address, const std::string& token,
                         const ui::TlsPaths&) const override {
    std::lock_guard lock(mutex_);
    asked_.push_back(address + " " + token);
    if (address == "down:1") throw dtlab::Error("down:1: UNAVAILABLE (connection refused)");
    ui::NodeInfo n;
    n.address = address;
    n.programVersion = "9.9.9";
    n.hostname = "fake-" + address.substr(0, address.find(':'));
    n.devices = {"cuda:0 (Fake GPU, 80.0 GiB)"};
    n.workerThreads = 3;
    n.cores = 12;
    return n;
  }
  std::vector<ui::NodeInfo> queryLocalNodes(const core::ClusterConfig& cluster) const override {
    std::lock_guard lock(mutex_);
    asked_.push_back("local x" + std::to_string(cluster.localNodes));
    std::vector<ui::NodeInfo> out(static_cast<std::size_t>(cluster.localNodes));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i].programVersion = "9.9.9";
      out[i].hostname = "here";
      out[i].devices = {"cpu (1 slot)"};
      out[i].speed = cluster.node(static_cast<int64_t>(i)).speed;
    }
    return out;
  }
  std::vector<std::string> asked() const {
    std::lock_guard lock(mutex_);
    return asked_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::string> asked_;
};

const std::string kNode = DTLAB_BINARY_DIR "/app/dtlab-node";

QString found(const ui::TopologyModel* model, int row) {
  return model->index(row, ui::TopologyModel::kFoundColumn).data().toString();
}

// Every byte SQLite keeps for the project: the file and, if present, its write-ahead log.
QByteArray projectBytes(const QString& path) {
  QByteArray bytes;
  for (const QString& p : {path, path + "-wal", path + "-journal"}) {
    QFile file(p);
    if (file.open(QIODevice::ReadOnly)) bytes += file.readAll();
  }
  return bytes;
}

// Turns the page's table into remote rows for `addresses`, as a user does: "Add remote node",
// type the address and the token, remove the local rows.
void makeRemote(ui::TopologyPage& page, const std::vector<std::string>& addresses,
                const std::vector<QString>& tokens) {
  ui::TopologyModel* model = page.model();
  const int localRows = model->rowCount();
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    page.addRemoteButton()->click();
    const int row = model->rowCount() - 1;
    QVERIFY(model->setData(model->index(row, ui::TopologyModel::kAddressColumn),
                           QString::fromStdString(addresses[i])));
    QVERIFY(model->setData(model->index(row, ui::TopologyModel::kTokenColumn), tokens[i]));
  }
  // Local and remote rows together are not a cluster: the spec says so on the first remote row.
  QVERIFY2(page.error().contains(QString("cluster.nodes[%1].address").arg(localRows)),
           qPrintable(page.error()));
  QVERIFY(!page.saveButton()->isEnabled());
  for (int i = 0; i < localRows; ++i) model->removeNode(0);
  QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
}

}  // namespace

class TestTopologyRemote : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    // Tokens typed into the editor go to a real keyring on a session bus of this test's own.
    // The keyring's files go under a home of this test's own, which is the whole process's
    // HOME: afterwards every file in it is searched for the token.
    QVERIFY(keyringHome_.isValid());
    qputenv("HOME", QFile::encodeName(keyringHome_.path()));
    keyring_ = std::make_unique<ui_test::KeyringSession>(keyringHome_.path());
    QStandardPaths::setTestModeEnabled(true);
    // Tokens go to the user's settings: here a directory of this test's own.
    QVERIFY(settingsDir_.isValid());
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settingsDir_.path());
    QCoreApplication::setOrganizationName("DTLabTest");
    QCoreApplication::setApplicationName("test_topology_remote");
  }

  // Remote rows ask their own daemon with their own token; a wrong token or an unreachable
  // daemon is that row's answer, and the other rows still show what their daemons are.
  void testConnectionAsksEachRemoteNode() {
    remote::LocalCluster cluster(kNode, std::vector<remote::LocalNodeOptions>(2), "right-token");
    ui::ClusterController controller;
    ui::TopologyPage page;
    page.setController(&controller);
    page.edit(-1, "lab", {{"local_nodes", 1}});
    ui::TopologyModel* model = page.model();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(!page.isModified());
    QSignalSpy modified(&page, &ui::TopologyPage::modifiedChanged);

    makeRemote(page, {cluster.address(0), cluster.address(1), "127.0.0.1:1"},
               {"right-token", "wrong-token", ""});
    QVERIFY(page.isModified());
    QCOMPARE(modified.size(), 1);
    QCOMPARE(modified.first().first().toBool(), true);
    QCOMPARE(model->rowCount(), 3);
    QCOMPARE(model->index(0, ui::TopologyModel::kNodeColumn).data().toString(), QString("remote"));
    QCOMPARE(model->headerData(2, Qt::Vertical).toString(), QString("2"));  // cluster.nodes[2]
    // A token is shown masked and never read back, not even by its editor.
    const QModelIndex token = model->index(0, ui::TopologyModel::kTokenColumn);
    QCOMPARE(token.data().toString(), QString("\u2022\u2022\u2022\u2022 set"));
    QCOMPARE(token.data(Qt::EditRole).toString(), QString());
    QCOMPARE(model->index(2, ui::TopologyModel::kTokenColumn).data().toString(), QString("none"));
    // ... and is not part of the topology.
    QVERIFY(page.cluster().dump().find("token") == std::string::npos);

    QSignalSpy tested(&page, &ui::TopologyPage::connectionTested);
    page.testButton()->click();
    QVERIFY(tested.wait(30000));
    QCOMPARE(tested.first().first().toBool(), false);
    QVERIFY2(found(model, 0).startsWith("dtlab-node") && found(model, 0).contains("cpu (1 slot)") &&
                 found(model, 0).contains("1 worker threads") && found(model, 0).contains("idle"),
             qPrintable(found(model, 0)));
    QVERIFY2(found(model, 1).contains("UNAUTHENTICATED") &&
                 found(model, 1).contains("token does not match"),
             qPrintable(found(model, 1)));
    QVERIFY2(found(model, 2).contains("127.0.0.1:1") && found(model, 2).contains("UNAVAILABLE"),
             qPrintable(found(model, 2)));
    QCOMPARE(model->index(1, ui::TopologyModel::kFoundColumn).data(Qt::ForegroundRole).isValid(),
             true);
    QVERIFY(page.testButton()->isEnabled());

    // The right token for row 1, the unreachable row gone: every node answers.
    QVERIFY(model->setData(model->index(1, ui::TopologyModel::kTokenColumn), "right-token"));
    model->removeNode(2);
    tested.clear();
    page.testButton()->click();
    QVERIFY(tested.wait(30000));
    QCOMPARE(tested.first().first().toBool(), true);
    for (int row = 0; row < 2; ++row)
      QVERIFY2(found(model, row).startsWith("dtlab-node"), qPrintable(found(model, row)));

    // edit() is the saved state: not modified, and a token change does not make it so (the
    // token lives in the user's settings, not in the topology).
    page.edit(7, "lab", page.cluster());
    QVERIFY(!page.isModified());
    QCOMPARE(modified.last().first().toBool(), false);
    QVERIFY(model->setData(model->index(0, ui::TopologyModel::kTokenColumn), "right-token"));
    QVERIFY(!page.isModified());
    QVERIFY(model->setData(model->index(0, ui::TopologyModel::kLatencyColumn), 3.0));
    QVERIFY(page.isModified());
  }

  // "Test connection" asks the controller, never a node itself: against a fake one the page
  // shows what it answers, row by row, with the row's own token, and no daemon is started.
  void testConnectionGoesThroughTheController() {
    ui::TopologyPage page;
    page.edit(-1, "lab", {{"local_nodes", 2}, {"nodes", {{{"speed", 0.5}}}}});
    QVERIFY(!page.testButton()->isEnabled());  // no controller yet: nobody to ask
    FakeController fake;
    page.setController(&fake);
    QVERIFY(page.testButton()->isEnabled());
    QSignalSpy tested(&page, &ui::TopologyPage::connectionTested);
    page.testButton()->click();
    QVERIFY(tested.wait(10000));
    QCOMPARE(tested.first().first().toBool(), true);
    ui::TopologyModel* model = page.model();
    QCOMPARE(found(model, 0), QString("dtlab-node 9.9.9 on here: cpu (1 slot), 0 worker threads, "
                                      "0 cores, speed 0.5, idle"));
    QCOMPARE(fake.asked(), std::vector<std::string>{"local x2"});

    makeRemote(page, {"gpu-box:7070", "down:1"}, {"secret", ""});
    tested.clear();
    page.testButton()->click();
    QVERIFY(tested.wait(10000));
    QCOMPARE(tested.first().first().toBool(), false);
    QCOMPARE(found(model, 0),
             QString("dtlab-node 9.9.9 on fake-gpu-box: cuda:0 (Fake GPU, 80.0 GiB), 3 worker "
                     "threads, 12 cores, idle"));
    QCOMPARE(found(model, 1), QString("down:1: UNAVAILABLE (connection refused)"));
    std::vector<std::string> asked = fake.asked();
    std::sort(asked.begin() + 1, asked.end());
    QCOMPARE(asked, (std::vector<std::string>{"local x2", "down:1 ", "gpu-box:7070 secret"}));
  }

  // Addresses that the spec refuses show its message, naming the row's field.
  void badAddressesAreNamedByRow() {
    ui::TopologyPage page;
    page.edit(-1, "lab", {{"nodes", {{{"address", "a:1"}}, {{"address", "b:2"}}}}});
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    ui::TopologyModel* model = page.model();
    QVERIFY(model->setData(model->index(1, ui::TopologyModel::kAddressColumn), "b:99999"));
    QVERIFY2(page.error().startsWith("cluster.nodes[1].address: the port must be"),
             qPrintable(page.error()));
    QVERIFY(!page.testButton()->isEnabled());
    QVERIFY(model->setData(model->index(1, ui::TopologyModel::kAddressColumn), ":7070"));
    QVERIFY2(page.error().contains("missing host name"), qPrintable(page.error()));
    page.addRemoteNode();  // its address not typed yet
    QVERIFY(model->setData(model->index(1, ui::TopologyModel::kAddressColumn), "b:2"));
    QVERIFY2(page.error().startsWith("cluster.nodes[2].address"), qPrintable(page.error()));
  }

  // Hostfiles in and out of the page: imported lines become remote rows with their
  // emulation; exported rows read back as the same nodes; a bad line is named and changes
  // nothing; a local row cannot be exported.
  void hostfilesInAndOut() {
    QTemporaryDir dir;
    const QString in = dir.filePath("hosts");
    {
      QFile f(in);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("# lab\nn1:7001 slots=1\nn2 speed=0.5 latency_ms=1.5\n");
    }
    ui::TopologyPage page;
    page.edit(-1, "lab", {{"local_nodes", 3}, {"device", "cpu"}});
    QCOMPARE(page.model()->nodes().size(), std::size_t{3});
    QVERIFY(page.importButton()->isEnabled());
    QVERIFY(!page.exportButton()->isEnabled());  // local nodes: nothing a hostfile can name
    QCOMPARE(page.importHostfile(in), QString());
    const std::vector<ui::TopologyModel::Node>& nodes = page.model()->nodes();
    QCOMPARE(nodes.size(), std::size_t{2});
    QVERIFY(nodes[0].remote && nodes[1].remote);
    QCOMPARE(nodes[0].address, QString("n1:7001"));
    QCOMPARE(nodes[1].address, QString("n2:7000"));
    QCOMPARE(nodes[1].speed, 0.5);
    QCOMPARE(nodes[1].latencyMs, 1.5);
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    QVERIFY(page.isModified());
    QCOMPARE(page.cluster()["device"], nlohmann::json("cpu"));  // the rest of the form stays
    QVERIFY(page.exportButton()->isEnabled());

    const QString out = dir.filePath("out");
    QString note;
    QCOMPARE(page.exportHostfile(out, &note), QString());
    QVERIFY(note.isEmpty());
    const std::vector<core::NodeConfig> back = core::nodesOf(core::loadHostfile(out.toStdString()));
    QCOMPARE(back.size(), std::size_t{2});
    QCOMPARE(back[1].address, std::string("n2:7000"));
    QCOMPARE(back[1].latencyMs, 1.5);

    {
      QFile f(in);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write("n3:1\nn4:2 slots=0\n");
    }
    const QString refused = page.importHostfile(in);
    QVERIFY2(refused.startsWith(in + ":2: slots must be in [1, 4096]"), qPrintable(refused));
    QCOMPARE(page.model()->nodes().size(), std::size_t{2});  // unchanged
    QCOMPARE(page.model()->nodes()[0].address, QString("n1:7001"));

    page.addNodes(1);  // a local row among remote ones
    QVERIFY(page.exportHostfile(out).startsWith("node 2 is a local node"));
  }

  // A remote topology saved from the page and an experiment on it run from the window: the
  // run completes on the daemons (with the topology's latency, applied per job), and no token
  // is in the project file.
  void runsAnExperimentOnARemoteTopologyFromTheWindow() {
    const QString token = "tok-" + QString::number(QDateTime::currentMSecsSinceEpoch());
    remote::LocalCluster cluster(kNode, std::vector<remote::LocalNodeOptions>(2),
                                 token.toStdString());
    QTemporaryDir dir;
    const QString path = dir.filePath("p.dtlab");
    core::ProjectStore::create(path.toStdString());
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    window.openProject(path);
    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    QVERIFY(loaded.wait(20000));

    window.newTopology();
    ui::TopologyPage* page = window.topologyPage();
    makeRemote(*page, cluster.addresses(), {token, token});
    for (int row = 0; row < 2; ++row)
      QVERIFY(page->model()->setData(page->model()->index(row, ui::TopologyModel::kLatencyColumn),
                                     40.0));
    page->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().topologies.size(), std::size_t{1},
                              10000);
    const nlohmann::json saved = window.explorerModel()->snapshot().topologies.front().config;
    QVERIFY2(!saved.contains("local_nodes"), saved.dump().c_str());
    QCOMPARE(saved["nodes"][1]["address"], nlohmann::json(cluster.address(1)));
    QTRY_VERIFY_WITH_TIMEOUT(!page->isModified(), 10000);  // the saved state is the new baseline

    // An experiment on that topology, stored as the experiment editor stores one.
    core::ExperimentSpec spec = ui_test::smallSpec("remote pair", 20);
    spec.cluster = core::parseExperimentSpec({{"cluster", saved}}).cluster;
    {
      auto store = core::ProjectStore::open(path.toStdString());
      store->putEntity(core::EntityKind::kExperiment, spec.name, core::toJson(spec));
    }
    runTheExperiment(window);
    if (QTest::currentTestFailed()) return;

    const ui::ProjectSnapshot snapshot = ui_test::snapshotAt(path.toStdString());
    QCOMPARE(snapshot.runs.size(), std::size_t{1});
    QCOMPARE(snapshot.runs.front().status, core::RunStatus::kCompleted);
    const nlohmann::json& summary = snapshot.summaries.front();
    QCOMPARE(summary["param_checksum"].size(), 2u);  // both daemons trained
    // 20 all-reduces behind 40 ms of emulated latency: the topology's, not the daemons' own.
    QVERIFY2(summary["wall_s"].get<double>() > 20 * 0.040, summary.dump().c_str());

    // The token is kept for this user, and nowhere in the project.
    QCOMPARE(ui::node_tokens::token(QString::fromStdString(cluster.address(0))), token);
    const QByteArray bytes = projectBytes(path);
    QVERIFY(bytes.size() > 0);
    QVERIFY(!bytes.contains(token.toUtf8()));
    QVERIFY(bytes.contains(QByteArray::fromStdString(cluster.address(0))));

    // In the keyring: a restarted window (nothing cached) runs with the token it reads back,
    // and no file under the keyring's home or the settings holds it in plain text.
    if (!keyring_->error().isEmpty()) QSKIP(qPrintable("no keyring: " + keyring_->error()));
    QCOMPARE(ui::NodeSecrets::instance().where(), ui::NodeSecrets::Where::kKeyring);
    ui::NodeSecrets::instance().reset();
    window.close();
    ui::MainWindow restarted;
    restarted.setQuietErrors(true);
    restarted.show();
    restarted.openProject(path);
    QSignalSpy reloaded(&restarted, &ui::MainWindow::projectLoaded);
    QVERIFY(reloaded.wait(20000));
    runTheExperiment(restarted);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(ui_test::snapshotAt(path.toStdString()).runs.size(), std::size_t{2});
    // The report of those runs (events, settings, the topology's nodes) is grepped with the rest.
    QVERIFY(restarted.exportReport(dir.filePath("report.html")));
    QVERIFY(QFileInfo(dir.filePath("report.html")).size() > 1000);
    QSettings().sync();
    for (const QString& where : {keyringHome_.path(), settingsDir_.path(), dir.path()}) {
      const QStringList holding = ui_test::filesHolding(where, token.toUtf8());
      QVERIFY2(holding.isEmpty(), qPrintable(holding.join(", ")));
    }
  }

  // Daemons serving mutual TLS: "Test connection" without the TLS fields says the nodes take
  // only TLS clients; with them (kept in this user's settings, never in the project) it
  // reaches them, and a run from the window completes over TLS.
  void runsOverMutualTlsFromTheWindow() {
    QTemporaryDir certs;
    QProcess gen;
    gen.start(QString::fromStdString(kNode), {"gen-certs", certs.path(), "--hosts", "127.0.0.1"});
    QVERIFY(gen.waitForFinished(30000) && gen.exitCode() == 0);
    const std::string dir = certs.path().toStdString();
    remote::LocalNodeOptions serving;
    serving.tls = {dir + "/node.pem", dir + "/node.key", dir + "/ca.pem"};
    remote::LocalCluster cluster(kNode, {serving, serving}, "tls-token");
    const ui::TlsPaths client{certs.filePath("client.pem"), certs.filePath("client.key"),
                              certs.filePath("ca.pem")};
    QTemporaryDir projectDir;
    const QString path = projectDir.filePath("p.dtlab");
    core::ProjectStore::create(path.toStdString());
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    window.openProject(path);
    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    QVERIFY(loaded.wait(20000));
    window.newTopology();
    ui::TopologyPage* page = window.topologyPage();
    QVERIFY(!page->tlsBox()->isVisibleTo(page));  // local nodes only: nothing to secure
    makeRemote(*page, cluster.addresses(), {"tls-token", "tls-token"});
    QVERIFY(page->tlsBox()->isVisibleTo(page));

    QSignalSpy tested(page, &ui::TopologyPage::connectionTested);
    page->testButton()->click();
    QVERIFY(tested.wait(30000));
    QCOMPARE(tested.first().first().toBool(), false);
    QVERIFY2(found(page->model(), 0).contains("it takes only TLS clients"),
             qPrintable(found(page->model(), 0)));

    page->setTls({client.cert, {}, {}});
    QVERIFY2(page->error().startsWith("TLS: give the client certificate"),
             qPrintable(page->error()));
    QVERIFY(!page->testButton()->isEnabled());
    page->setTls(client);
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    for (const std::string& address : cluster.addresses())
      QVERIFY(ui::node_tls::paths(QString::fromStdString(address)) == client);
    tested.clear();
    page->testButton()->click();
    QVERIFY(tested.wait(30000));
    QVERIFY2(tested.first().first().toBool(), qPrintable(found(page->model(), 0)));

    page->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().topologies.size(), std::size_t{1},
                              10000);
    const nlohmann::json saved = window.explorerModel()->snapshot().topologies.front().config;
    QVERIFY2(saved.dump().find("client.pem") == std::string::npos, saved.dump().c_str());
    core::ExperimentSpec spec = ui_test::smallSpec("tls pair", 20);
    spec.cluster = core::parseExperimentSpec({{"cluster", saved}}).cluster;
    {
      auto store = core::ProjectStore::open(path.toStdString());
      store->putEntity(core::EntityKind::kExperiment, spec.name, core::toJson(spec));
    }
    runTheExperiment(window);
    if (QTest::currentTestFailed()) return;
    QVERIFY(!projectBytes(path).contains("client.key"));
  }

 private:
  // Runs the window's selected-first experiment from its Run action; it must complete.
  static void runTheExperiment(ui::MainWindow& window) {
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().experiments.size(), std::size_t{1},
                              20000);
    window.explorerView()->setCurrentIndex(window.explorerModel()->find(
        "experiment", window.explorerModel()->snapshot().experiments.front().id));
    QVERIFY2(window.runAction()->isEnabled(), qPrintable(window.runAction()->toolTip()));
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    QSignalSpy problems(window.controller(), &ui::ExperimentController::problem);
    window.runAction()->trigger();
    QVERIFY(finished.wait(120000));
    QVERIFY2(problems.isEmpty(),
             problems.isEmpty() ? "" : qPrintable(problems.first().first().toString()));
    QCOMPARE(runFinished.size(), 1);
    QCOMPARE(runFinished.first().at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);
  }

  QTemporaryDir keyringHome_;
  std::unique_ptr<ui_test::KeyringSession> keyring_;
  QTemporaryDir settingsDir_;
};

QTEST_MAIN(TestTopologyRemote)
#include "test_topology_remote.moc"
