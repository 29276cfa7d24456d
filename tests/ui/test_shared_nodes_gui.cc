// The workbench on nodes someone else is using: the GUI's controller runs an experiment on two
// daemons while a dtlab-cli run holds them. It waits in their queues, says for whom, and both
// complete every variant. Offscreen, real daemons.
#include <QtGui/QAction>
#include <QtTest/QtTest>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTreeView>

#include <chrono>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "remote/cluster/local_cluster.h"
#include "tests/e2e/e2e_support.h"
#include "tests/ui/ui_support.h"
#include "ui/controller/cluster_controller.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/pages/topology_page.h"

using namespace dtlab;

namespace {

using e2e::kCli;
using e2e::kNode;

core::ExperimentSpec timedSpec(const std::string& name, const std::vector<std::string>& strategies,
                               double seconds) {
  core::ExperimentSpec spec = ui_test::smallSpec(name, 0);
  spec.training.maxSteps = 0;
  spec.training.maxSeconds = seconds;
  spec.cluster.localNodes = 2;
  spec.variants.clear();
  for (const std::string& s : strategies) {
    core::VariantConfig v;
    v.strategy = s;
    v.name = s;
    spec.variants.push_back(v);
  }
  return spec;
}

void writeSpec(const QString& path, const core::ExperimentSpec& spec) {
  QFile out(path);
  if (out.open(QIODevice::WriteOnly))
    out.write(QByteArray::fromStdString(core::toJson(spec).dump()));
}

}  // namespace

class TestSharedNodesGui : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // The topology page's "Wait for busy nodes" is cluster.wait_seconds: written only when it is
  // not the default, and offered only for remote nodes (local ones are started for each run).
  void theTopologyPageKeepsTheWait() {
    ui::TopologyPage page;
    auto* wait = page.findChild<QSpinBox*>("wait_seconds");
    QVERIFY(wait != nullptr);
    page.edit(1, "local", {{"local_nodes", 2}});
    QVERIFY(!wait->isEnabled());
    QCOMPARE(wait->value(), 600);
    QVERIFY(!page.cluster().contains("wait_seconds"));
    page.edit(2, "shared", {{"nodes", {{{"address", "127.0.0.1:7001"}}}}, {"wait_seconds", 30}});
    QVERIFY(wait->isEnabled());
    QCOMPARE(wait->value(), 30);
    QCOMPARE(page.cluster().value("wait_seconds", -1), 30);
    wait->setValue(0);
    QCOMPARE(page.cluster().value("wait_seconds", -1), 0);
    wait->setValue(600);
    QVERIFY(!page.cluster().contains("wait_seconds"));
  }

  void theWorkbenchWaitsForNodesACommandLineRunHolds() {
    remote::LocalCluster cluster(kNode, std::vector<remote::LocalNodeOptions>(2));
    QStringList addresses;
    for (const std::string& a : cluster.addresses()) addresses << QString::fromStdString(a);
    QTemporaryDir dir;

    // The other user's run: three variants of two seconds each, from the command line.
    const QString cliSpec = dir.filePath("cli.json");
    writeSpec(cliSpec, timedSpec("from_cli", {"sync_allreduce", "local_sgd", "async_ps"}, 2.0));
    const QString cliProject = dir.filePath("cli.dtlab");
    QStringList args{"run", cliSpec, "--project", cliProject, "--quiet"};
    for (const QString& a : addresses) args << "--node" << a;
    QProcess cli;
    cli.start(kCli, args);
    QVERIFY(e2e::waitForStepPoint(cliProject, std::chrono::seconds(60)));

    // The workbench's run on the same nodes.
    const std::string project = dir.filePath("gui.dtlab").toStdString();
    const core::ExperimentSpec spec = timedSpec("from_gui", {"sync_allreduce", "ssp"}, 0.5);
    ui_test::createProjectWithExperiment(project, spec, 2);
    ui::ClusterController controller;
    ui::RunRequest request;
    request.projectPath = QString::fromStdString(project);
    request.spec = spec;
    request.nodes = addresses;
    QSignalSpy waiting(&controller, &ui::ExperimentController::waiting);
    QSignalSpy finished(&controller, &ui::ExperimentController::finished);
    QSignalSpy runFinished(&controller, &ui::ExperimentController::runFinished);
    QSignalSpy problems(&controller, &ui::ExperimentController::problem);
    QVERIFY(controller.start(request));
    QVERIFY(finished.wait(180000));
    QVERIFY(cli.state() == QProcess::NotRunning || cli.waitForFinished(180000));

    QVERIFY2(problems.isEmpty(),
             problems.isEmpty() ? "" : qPrintable(problems.first().first().toString()));
    QCOMPARE(runFinished.size(), 2);
    for (const QList<QVariant>& run : runFinished)
      QCOMPARE(run.at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);
    QStringList said;
    for (const QList<QVariant>& w : waiting) said << w.first().toString();
    QVERIFY2(!said.isEmpty() && said.first().startsWith("waiting for node0 (busy with ") &&
                 said.first().contains("'s run 'from_cli/"),
             qPrintable(said.join(" | ")));
    QVERIFY2(said.contains(QString()), qPrintable(said.join(" | ")));  // then it had them

    const QString cliErr = QString::fromUtf8(cli.readAllStandardError());
    QVERIFY2(cli.exitCode() == 0, qPrintable(cliErr));
    auto cliStore = core::ProjectStore::open(cliProject.toStdString(), true);
    int completed = 0;
    for (const core::RunRecord& run : cliStore->runs())
      completed += run.status == core::RunStatus::kCompleted ? 1 : 0;
    QCOMPARE(completed, 3);
  }

  // The window says what its run waits for, in the status bar, until the nodes are free.
  void theWindowSaysWhatItsRunWaitsFor() {
    remote::LocalCluster cluster(kNode, std::vector<remote::LocalNodeOptions>(2));
    QTemporaryDir dir;
    const QString cliSpec = dir.filePath("cli.json");
    writeSpec(cliSpec, timedSpec("from_cli", {"sync_allreduce"}, 8.0));
    const QString cliProject = dir.filePath("cli.dtlab");
    QStringList args{"run", cliSpec, "--project", cliProject, "--quiet"};
    for (const std::string& a : cluster.addresses()) args << "--node" << QString::fromStdString(a);
    QProcess cli;
    cli.start(kCli, args);
    QVERIFY(e2e::waitForStepPoint(cliProject, std::chrono::seconds(60)));

    // An experiment whose topology names the daemons.
    core::ExperimentSpec spec = timedSpec("from_window", {"sync_allreduce"}, 0.5);
    spec.cluster.nodes.clear();
    for (const std::string& a : cluster.addresses()) {
      core::NodeConfig node;
      node.address = a;
      spec.cluster.nodes.push_back(node);
    }
    const QString path = dir.filePath("window.dtlab");
    ui_test::createProjectWithExperiment(path.toStdString(), spec, 2);
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.resize(1300, 800);
    window.show();
    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    window.openProject(path);
    QVERIFY(loaded.wait(20000));
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().experiments.size(), std::size_t{1},
                              20000);
    window.explorerView()->setCurrentIndex(window.explorerModel()->find(
        "experiment", window.explorerModel()->snapshot().experiments.front().id));
    QVERIFY2(window.runAction()->isEnabled(), qPrintable(window.runAction()->toolTip()));
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    window.runAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(
        window.statusBar()->currentMessage().contains("is waiting for node0 (busy with "), 30000);
    QVERIFY2(window.statusBar()->currentMessage().contains(
                 "'s run 'from_cli/sync_allreduce', position 1 of 1)"),
             qPrintable(window.statusBar()->currentMessage()));
    if (const QString shot = qEnvironmentVariable("DTLAB_SCREENSHOT_DIR"); !shot.isEmpty())
      window.grab().save(shot + "/waiting_for_nodes.png");
    QVERIFY(finished.wait(120000));
    QCOMPARE(runFinished.size(), 1);
    QCOMPARE(runFinished.first().at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);
    QVERIFY(cli.state() == QProcess::NotRunning || cli.waitForFinished(60000));
    QCOMPARE(cli.exitCode(), 0);
  }
};

QTEST_MAIN(TestSharedNodesGui)
#include "test_shared_nodes_gui.moc"
