// The workbench's models and window, driven for real under QT_QPA_PLATFORM=offscreen, on
// project files recorded by real training runs.
#include <QtTest/QAbstractItemModelTester>
#include <QtTest/QtTest>

#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include <qcustomplot.h>

#include <QtCore/QProcess>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtGui/QAction>
#include <QtWidgets/QApplication>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QTableView>
#include <QtWidgets/QTreeView>

#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/train/local_trainer.h"
#include "ui/charts/comparison_chart.h"
#include "ui/controller/experiment_controller.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_snapshot.h"
#include "ui/models/run_metrics_model.h"
#include "ui/models/topology_model.h"
#include "ui/models/variants_model.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/dataset_page.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/run_page.h"
#include "ui/pages/topology_page.h"

#include "tests/ui/ui_support.h"

using namespace dtlab;

namespace {

using ui_test::recordRun;
using ui_test::smallSpec;

// A project with a dataset, a topology and two recorded runs.
std::string makeProject(const QTemporaryDir& dir) {
  const std::string path = dir.filePath("p.dtlab").toStdString();
  auto store = core::ProjectStore::create(path, "gui test");
  store->putEntity(core::EntityKind::kDataset, "blobs",
                   {{"kind", "gaussian_blobs"}, {"train_size", 2048}, {"test_size", 256}});
  store->putEntity(core::EntityKind::kTopology, "two nodes", {{"local_nodes", 2}});
  recordRun(*store, smallSpec("first", 30));
  recordRun(*store, smallSpec("second", 20));
  return path;
}

// dtlab as a child process, drawing offscreen like this test.
void prepareGui(QProcess& gui) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  gui.setProcessEnvironment(env);
}

// The run page's curve of that name ("loss, worker 0") on its loss chart.
QCPGraph* namedGraph(const ui::RunDashboard& chart, const QString& name) {
  for (QCPGraph* g : chart.graphs(ui::RunDashboard::kLossChart))
    if (g->property("fullName").toString() == name) return g;
  return nullptr;
}

template <typename Signal>
bool waitFor(ui::MainWindow& w, Signal signal, int ms = 20000) {
  QSignalSpy spy(&w, signal);
  return spy.wait(ms);
}

// Opens the project in `window` and selects its first experiment.
bool openAndSelectExperiment(ui::MainWindow& window, const std::string& path) {
  window.setQuietErrors(true);
  window.openProject(QString::fromStdString(path));
  QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
  if (!loaded.wait(20000)) return false;
  window.explorerView()->setCurrentIndex(window.explorerModel()->find("experiment", 1));
  return true;
}

}  // namespace

class TestGui : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void explorerModelShowsTheProject() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::ExplorerModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSnapshot(ui_test::snapshotAt(path));
    QCOMPARE(model.rowCount(), ui::ExplorerModel::kGroupCount);
    const QModelIndex runs = model.index(static_cast<int>(ui::ExplorerModel::Group::kRuns), 0);
    QCOMPARE(runs.data().toString(), QString("Runs (2)"));
    QCOMPARE(model.rowCount(runs), 2);
    const QModelIndex first = model.index(0, ui::ExplorerModel::kNameColumn, runs);
    QCOMPARE(first.data().toString(), QString("#1 first"));
    QCOMPARE(first.data(ui::ExplorerModel::KindRole).toString(), QString("run"));
    QCOMPARE(first.data(ui::ExplorerModel::StatusRole).toString(), QString("completed"));
    const QString detail = model.index(0, ui::ExplorerModel::kDetailColumn, runs).data().toString();
    QVERIFY2(detail.startsWith("single, completed, accuracy 0."), qPrintable(detail));
    QCOMPARE(model.parent(first), runs);
    const QModelIndex datasets =
        model.index(static_cast<int>(ui::ExplorerModel::Group::kDatasets), 0);
    QCOMPARE(model.index(0, ui::ExplorerModel::kDetailColumn, datasets).data().toString(),
             QString("gaussian_blobs, 2048 train / 256 test"));
    QCOMPARE(model.find("run", 2).data().toString(), QString("#2 second"));
    QVERIFY(!model.find("run", 99).isValid());
    // A new snapshot (a run appeared) resets the model cleanly.
    ui::ProjectSnapshot fewer = ui_test::snapshotAt(path);
    fewer.runs.pop_back();
    fewer.summaries.pop_back();
    model.setSnapshot(fewer);
    QCOMPARE(model.rowCount(runs), 1);
  }

  void runMetricsModelListsEveryMetricWithItsUnit() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::RunMetricsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const ui::RunDetail detail = ui_test::runDetailAt(path, 1);
    model.setMetrics(detail.metrics);
    QVERIFY(model.rowCount() >= 9);  // the worker metrics and the run's test metrics
    bool sawStepMs = false;
    for (int row = 0; row < model.rowCount(); ++row) {
      if (model.index(row, ui::RunMetricsModel::kMetricColumn).data().toString() != "step_ms")
        continue;
      sawStepMs = true;
      QCOMPARE(model.index(row, ui::RunMetricsModel::kUnitColumn).data().toString(), QString("ms"));
      QCOMPARE(model.index(row, ui::RunMetricsModel::kScopeColumn).data().toString(),
               QString("worker"));
      QCOMPARE(model.index(row, ui::RunMetricsModel::kPointsColumn).data().toString(),
               QString("30"));
      QVERIFY(model.index(row, ui::RunMetricsModel::kLastColumn)
                  .data(ui::RunMetricsModel::ValueRole)
                  .toDouble() > 0.0);
    }
    QVERIFY(sawStepMs);
  }

  // The window opens a project, shows a run's page with its curves and an entity's JSON,
  // and picks up a run that another writer records while it is open.
  void windowShowsRunsAndFollowsTheFile() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    window.openProject(QString::fromStdString(path));
    QVERIFY(waitFor(window, &ui::MainWindow::projectLoaded));
    QCOMPARE(window.explorerModel()->snapshot().runs.size(), std::size_t{2});

    window.selectRun(1);
    QVERIFY(waitFor(window, &ui::MainWindow::runShown));
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.runPage()));
    QCOMPARE(window.runPage()->headline(), QString("Run #1: first"));
    ui::RunDashboard* chart = window.runPage()->chart();
    // The worker's loss, the test loss and the test accuracy.
    QCOMPARE(chart->graphs(ui::RunDashboard::kLossChart).size(), 3);
    QCOMPARE(namedGraph(*chart, "loss, worker 0")->data()->size(), 30);
    // Evaluations at steps 10, 20, 30.
    QCOMPARE(namedGraph(*chart, "test_accuracy")->data()->size(), 3);

    window.explorerView()->setCurrentIndex(window.explorerModel()->find("dataset", 1));
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.datasetPage()));
    QCOMPARE(window.datasetPage()->name(), QString("blobs"));
    window.explorerView()->setCurrentIndex(window.explorerModel()->find(
        "topology", window.explorerModel()->snapshot().topologies.front().id));
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.topologyPage()));
    QCOMPARE(window.topologyPage()->name(), QString("two nodes"));
    QCOMPARE(window.topologyPage()->model()->rowCount(), 2);
    // An experiment shows its stored spec.
    window.explorerView()->setCurrentIndex(window.explorerModel()->find(
        "experiment", window.explorerModel()->snapshot().experiments.front().id));
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.experimentPage()));
    QCOMPARE(window.experimentPage()->spec()["name"], nlohmann::json("first"));

    // Another process records a run: the window sees it without being asked.
    {
      auto writer = core::ProjectStore::open(path);
      recordRun(*writer, smallSpec("third", 10));
    }
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().runs.size(), std::size_t{3},
                              10000);
    QVERIFY(window.explorerModel()->find("run", 3).isValid());
  }

  // Run an experiment stored in the project from the window: both variants run on real
  // local daemons, are recorded, listed and shown; the Run action says why it is disabled.
  void runsAnExperimentOnALocalClusterFromTheWindow() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    {
      auto store = core::ProjectStore::create(path);
      core::ExperimentSpec spec = smallSpec("pair", 20);
      spec.cluster.localNodes = 2;
      spec.variants = {core::VariantConfig{"a"}, core::VariantConfig{"b"}};
      store->putEntity(core::EntityKind::kExperiment, "pair", core::toJson(spec));
    }
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    window.openProject(QString::fromStdString(path));
    QVERIFY(waitFor(window, &ui::MainWindow::projectLoaded));
    QVERIFY(!window.runAction()->isEnabled());
    QVERIFY2(window.runAction()->toolTip().contains("Select an experiment"),
             qPrintable(window.runAction()->toolTip()));

    window.explorerView()->setCurrentIndex(window.explorerModel()->find("experiment", 1));
    QVERIFY2(window.runAction()->isEnabled(), qPrintable(window.runAction()->toolTip()));
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    window.runAction()->trigger();
    QVERIFY(!window.runAction()->isEnabled());  // busy
    QVERIFY(window.cancelAction()->isEnabled());
    QVERIFY(finished.wait(120000));
    QCOMPARE(runFinished.size(), 2);
    for (const QList<QVariant>& r : runFinished)
      QCOMPARE(r.at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);
    // Both runs are listed, and the last one is on screen.
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().runs.size(), std::size_t{2},
                              10000);
    QTRY_COMPARE_WITH_TIMEOUT(window.runPage()->headline(), QString("Run #2: pair/b"), 10000);
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.runPage()));
    QVERIFY(!window.cancelAction()->isEnabled());
  }

  void cancelStopsARunStartedFromTheWindow() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    ui_test::createProjectWithExperiment(path, smallSpec("endless", 100000000));
    ui::MainWindow window;
    QVERIFY(openAndSelectExperiment(window, path));
    QSignalSpy started(window.controller(), &ui::ExperimentController::runStarted);
    QSignalSpy progress(window.controller(), &ui::ExperimentController::progress);
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    window.runAction()->trigger();
    QVERIFY(started.wait(30000));
    QTRY_VERIFY_WITH_TIMEOUT(progress.size() > 0, 30000);  // steps are being taken
    // The run is on screen and its chart grows from the live feed, not from re-reads.
    QTRY_COMPARE_WITH_TIMEOUT(window.runPage()->runId(), qint64{1}, 10000);
    const auto points = [&] {
      int n = 0;
      for (int g = 0; g < window.runPage()->chart()->graphCount(); ++g)
        n += window.runPage()->chart()->graph(g)->data()->size();
      return n;
    };
    const int before = points();
    QTRY_VERIFY_WITH_TIMEOUT(points() > before + 20, 10000);
    window.cancelAction()->trigger();
    QVERIFY(finished.wait(10000));
    QCOMPARE(runFinished.size(), 1);
    QCOMPARE(runFinished.first().at(1).value<core::RunStatus>(), core::RunStatus::kCancelled);
    auto store = core::ProjectStore::open(path, true);
    QCOMPARE(store->requireRun(1).status, core::RunStatus::kCancelled);
  }

  // The dataset editor previews the real generated data, shows the spec's own error next to
  // the form (blocking Save with that reason), previews the shards of a skewed partition, and
  // saves into the project.
  void datasetEditorPreviewsValidatesAndSaves() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    core::ProjectStore::create(path);
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.openProject(QString::fromStdString(path));
    QVERIFY(waitFor(window, &ui::MainWindow::projectLoaded));
    ui::DatasetPage* page = window.datasetPage();
    QSignalSpy previewed(page, &ui::DatasetPage::previewShown);
    window.newDataset();
    QVERIFY(previewed.wait(20000));
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(page));
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    QCOMPARE(page->scatter()->graphCount(), 10);  // one per class
    int points = 0;
    for (int g = 0; g < page->scatter()->graphCount(); ++g)
      points += page->scatter()->graph(g)->data()->size();
    QCOMPARE(points, 1500);  // the first 1500 test samples
    QCOMPARE(page->histogram()->plottableCount(), 10);
    QCOMPARE(page->preview().shardClassCounts.size(), std::size_t{4});  // 4 workers
    // IID shards: every class within a few percent of equal in every shard.
    for (const auto& shard : page->preview().shardClassCounts)
      for (int64_t c : shard) QVERIFY2(c > 400 && c < 600, qPrintable(QString::number(c)));

    // An invalid value: the spec's message, and Save blocked with it.
    previewed.clear();
    page->findChild<QSpinBox*>("classes")->setValue(1);
    QVERIFY(previewed.wait(20000));
    QVERIFY2(page->error().contains("dataset.classes"), qPrintable(page->error()));
    QVERIFY(!page->saveButton()->isEnabled());
    QCOMPARE(page->saveButton()->toolTip(), page->error());

    // A skewed partition shows in the shard histogram.
    previewed.clear();
    page->findChild<QSpinBox*>("classes")->setValue(10);
    page->findChild<QComboBox*>("partition")->setCurrentText("dirichlet");
    QVERIFY(previewed.wait(20000));
    int64_t smallest = INT64_MAX, largest = 0;
    for (const auto& shard : page->preview().shardClassCounts)
      for (int64_t c : shard) {
        smallest = std::min(smallest, c);
        largest = std::max(largest, c);
      }
    QVERIFY2(largest > 4 * (smallest + 1),
             qPrintable(QString("%1..%2").arg(smallest).arg(largest)));

    // Shapes: sample images; two spirals: two classes on the plane.
    previewed.clear();
    page->findChild<QComboBox*>("kind")->setCurrentText("shapes");
    QVERIFY(previewed.wait(20000));
    QCOMPARE(page->preview().images.size(), std::size_t{12});
    previewed.clear();
    page->findChild<QComboBox*>("kind")->setCurrentText("two_spirals");
    QVERIFY(previewed.wait(20000));
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    QCOMPARE(page->scatter()->graphCount(), 2);

    page->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().datasets.size(), std::size_t{1},
                              10000);
    const core::Entity saved = window.explorerModel()->snapshot().datasets.front();
    QCOMPARE(saved.name, std::string("dataset 1"));
    QCOMPARE(saved.config["kind"], nlohmann::json("two_spirals"));
  }

  // A node lost mid-run: the run fails naming it, the window tells the user, the event is
  // on the run's page, and the window takes the next run.
  void lostNodeShowsAsAnEventAndAMessage() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    ui_test::createProjectWithExperiment(path, smallSpec("endless", 100000000));
    ui::MainWindow window;
    QVERIFY(openAndSelectExperiment(window, path));
    QSignalSpy progress(window.controller(), &ui::ExperimentController::progress);
    QSignalSpy problem(window.controller(), &ui::ExperimentController::problem);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    window.runAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(progress.size() > 0, 30000);
    // The controller's daemons are this process's dtlab-node children: kill the second.
    std::vector<pid_t> daemons;
    for (const QString& entry : QDir("/proc").entryList(QDir::Dirs)) {
      QFile stat("/proc/" + entry + "/stat");
      if (!stat.open(QIODevice::ReadOnly)) continue;
      const QByteArray text = stat.readAll();
      const int close = text.lastIndexOf(')');
      if (close < 0 || !text.left(close).contains("dtlab-node")) continue;
      const QList<QByteArray> fields = text.mid(close + 2).split(' ');
      if (fields.size() > 1 && fields[1].toInt() == ::getpid()) daemons.push_back(entry.toInt());
    }
    QCOMPARE(daemons.size(), std::size_t{2});
    std::sort(daemons.begin(), daemons.end());
    ::kill(daemons[1], SIGKILL);
    QVERIFY(finished.wait(15000));
    QCOMPARE(runFinished.size(), 1);
    QCOMPARE(runFinished.first().at(1).value<core::RunStatus>(), core::RunStatus::kFailed);
    QVERIFY(problem.size() >= 1);
    QVERIFY2(problem.first().first().toString().contains("lost"),
             qPrintable(problem.first().first().toString()));
    // The run's page shows the node_lost event; the window is free for the next run.
    QTRY_COMPARE_WITH_TIMEOUT(window.runPage()->headline(),
                              QString("Run #1: endless/sync_allreduce"), 10000);
    auto store = core::ProjectStore::open(path, true);
    const auto events = store->events(1);
    QVERIFY(std::any_of(events.begin(), events.end(),
                        [](const core::RunEvent& e) { return e.kind == "node_lost"; }));
    window.explorerView()->setCurrentIndex(window.explorerModel()->find("experiment", 1));
    QVERIFY2(window.runAction()->isEnabled(), qPrintable(window.runAction()->toolTip()));
  }

  // The topology editor: per-node settings checked by the spec (its message, Save blocked),
  // "Test connection" starts the daemons for real and shows what each answers, Save stores it.
  void topologyEditorValidatesTestsAndSaves() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    core::ProjectStore::create(path);
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.openProject(QString::fromStdString(path));
    QVERIFY(waitFor(window, &ui::MainWindow::projectLoaded));
    window.newTopology();
    ui::TopologyPage* page = window.topologyPage();
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(page));
    ui::TopologyModel* model = page->model();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model->rowCount(), 2);
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));

    QVERIFY(model->setData(model->index(1, ui::TopologyModel::kSpeedColumn), 0.0));
    QVERIFY2(page->error().contains("cluster.nodes[1].speed"), qPrintable(page->error()));
    QVERIFY(!page->saveButton()->isEnabled());
    QCOMPARE(page->saveButton()->toolTip(), page->error());
    QVERIFY(model->setData(model->index(1, ui::TopologyModel::kSpeedColumn), 0.5));
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    // Node 2 slows down mid-run and pauses at random: typed as text, checked by the spec.
    const QModelIndex schedule = model->index(1, ui::TopologyModel::kScheduleColumn);
    const QModelIndex straggler = model->index(1, ui::TopologyModel::kStragglerColumn);
    QVERIFY(model->setData(schedule, "100:0.25, 50:1"));
    QVERIFY2(page->error().startsWith("cluster.nodes[1].speed_schedule[1].at_step"),
             qPrintable(page->error()));
    QVERIFY(model->setData(schedule, "50:1, 100:0.25"));
    QVERIFY(model->setData(straggler, "half"));
    QVERIFY2(page->error().startsWith("cluster.nodes[1].straggler"), qPrintable(page->error()));
    QVERIFY(model->setData(straggler, "0.05:200"));
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    QCOMPARE(schedule.data(Qt::EditRole).toString(), QString("50:1, 100:0.25"));
    QCOMPARE(schedule.data().toString(), QString("step 50 \u2192 1, step 100 \u2192 0.25"));
    QCOMPARE(straggler.data(Qt::EditRole).toString(), QString("0.05:200"));
    QCOMPARE(straggler.data().toString(), QString("5% \u00d7 200 ms"));
    page->addNodes(1);
    QCOMPARE(model->rowCount(), 3);

    QSignalSpy tested(page, &ui::TopologyPage::connectionTested);
    page->testButton()->click();
    QVERIFY(tested.wait(30000));
    QCOMPARE(tested.first().first().toBool(), true);
    for (int row = 0; row < 3; ++row) {
      const QString found = model->index(row, ui::TopologyModel::kFoundColumn).data().toString();
      QVERIFY2(found.startsWith("dtlab-node") && found.contains("idle"), qPrintable(found));
    }
    QVERIFY(
        model->index(1, ui::TopologyModel::kFoundColumn).data().toString().contains("speed 0.5"));

    page->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().topologies.size(), std::size_t{1},
                              10000);
    const nlohmann::json saved = window.explorerModel()->snapshot().topologies.front().config;
    QCOMPARE(saved["local_nodes"], nlohmann::json(3));
    QCOMPARE(saved["nodes"][1]["speed"], nlohmann::json(0.5));
    QCOMPARE(saved["nodes"][1]["speed_schedule"][1],
             (nlohmann::json{{"at_step", 100}, {"speed", 0.25}}));
    QCOMPARE(saved["nodes"][1]["straggler"],
             (nlohmann::json{{"probability", 0.05}, {"pause_ms", 200}}));
    QVERIFY(!saved["nodes"][0].contains("speed_schedule"));
  }

  // The experiment editor: an invalid value shows the spec's message next to its field and
  // blocks Save and Run with it; a fixed form saves and runs from the page.
  void experimentEditorShowsErrorsBesideTheFieldAndRuns() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    {
      auto store = core::ProjectStore::create(path);
      store->putEntity(core::EntityKind::kDataset, "small blobs",
                       {{"kind", "gaussian_blobs"},
                        {"train_size", 2048},
                        {"test_size", 256},
                        {"classes", 3},
                        {"features", 8}});
      store->putEntity(core::EntityKind::kTopology, "pair", {{"local_nodes", 2}});
    }
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.openProject(QString::fromStdString(path));
    QVERIFY(waitFor(window, &ui::MainWindow::projectLoaded));
    window.newExperiment();
    ui::ExperimentPage* page = window.experimentPage();
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(page));
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    QAbstractItemModelTester tester(page->variants(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);

    // A negative learning rate: the message beside the learning rate, Save and Run blocked.
    static_cast<QDoubleSpinBox*>(page->field("optimizer.lr"))->setValue(-1.0);
    QVERIFY2(page->error().startsWith("optimizer.lr:"), qPrintable(page->error()));
    QCOMPARE(page->errorField(), QString("optimizer.lr"));
    QVERIFY(!page->saveButton()->isEnabled());
    QCOMPARE(page->runButton()->toolTip(), page->error());
    QVERIFY(!window.runAction()->isEnabled());
    QVERIFY2(window.runAction()->toolTip().contains("optimizer.lr"),
             qPrintable(window.runAction()->toolTip()));
    static_cast<QDoubleSpinBox*>(page->field("optimizer.lr"))->setValue(0.05);
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));

    // Two variants with one name: the message goes to the variants table.
    page->variants()->addVariant();
    const QVariant firstName =
        page->variants()->data(page->variants()->index(0, ui::VariantsModel::kNameColumn));
    page->variants()->setData(page->variants()->index(1, ui::VariantsModel::kNameColumn),
                              firstName);
    QVERIFY2(page->error().contains("variants"), qPrintable(page->error()));
    QCOMPARE(page->errorField(), QString("variants"));
    page->variants()->setData(page->variants()->index(1, ui::VariantsModel::kNameColumn), "again");
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));

    // The second variant schedules by measured speed, picked from the spec's partitions in a
    // combo box; its rebalance period becomes editable, and goes when the partition does.
    ui::VariantsModel* variants = page->variants();
    const QModelIndex partition = variants->index(1, variants->columnOf("partition"));
    const QModelIndex every = variants->index(1, variants->columnOf("rebalance_every"));
    QCOMPARE(partition.data(ui::VariantsModel::ChoicesRole).toStringList(),
             QStringList({"equal", "speed_proportional"}));
    QVERIFY(!(variants->flags(every) & Qt::ItemIsEditable));
    auto* view = page->findChild<QTableView*>();
    view->edit(partition);
    auto* box = view->viewport()->findChild<QComboBox*>();
    QVERIFY(box != nullptr);
    box->setCurrentText("speed_proportional");
    QTest::keyClick(box, Qt::Key_Return);  // commits (queued), as a user's Enter does
    QTRY_COMPARE_WITH_TIMEOUT(page->spec()["variants"][1]["partition"],
                              nlohmann::json("speed_proportional"), 5000);
    QVERIFY(variants->flags(every) & Qt::ItemIsEditable);
    QCOMPARE(every.data().toInt(), 20);  // the spec's default
    QVERIFY(variants->setData(every, 5));
    QCOMPARE(page->spec()["variants"][1]["rebalance_every"], nlohmann::json(5));
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    QVERIFY(variants->setData(partition, "equal"));
    QVERIFY(!page->spec()["variants"][1].contains("rebalance_every"));
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    // A baseline on the first node only; more nodes than the cluster has is the spec's error.
    const QModelIndex nodes = variants->index(1, ui::VariantsModel::kNodesColumn);
    QCOMPARE(nodes.data().toString(), QString("all"));
    QVERIFY(variants->setData(nodes, "1"));
    QCOMPARE(page->spec()["variants"][1]["nodes"], nlohmann::json(1));
    QVERIFY(variants->setData(nodes, "9"));
    QVERIFY2(page->error().startsWith("variants[1].nodes: at most the cluster's"),
             qPrintable(page->error()));
    QVERIFY(variants->setData(nodes, "all"));
    QVERIFY(!page->spec()["variants"][1].contains("nodes"));
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));

    // The project's dataset and topology, a short run; save, then run from the page.
    static_cast<QComboBox*>(page->field("dataset"))->setCurrentText("small blobs");
    static_cast<QComboBox*>(page->field("cluster"))->setCurrentText("pair");
    static_cast<QSpinBox*>(page->field("training.max_steps"))->setValue(20);
    static_cast<QSpinBox*>(page->field("training.batch_size"))->setValue(32);
    QVERIFY2(page->error().isEmpty(), qPrintable(page->error()));
    QCOMPARE(page->spec()["dataset"]["train_size"], nlohmann::json(2048));
    page->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().experiments.size(), std::size_t{1},
                              10000);
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    QVERIFY2(page->runButton()->isEnabled(), qPrintable(page->runButton()->toolTip()));
    page->runButton()->click();
    QVERIFY(finished.wait(120000));
    QCOMPARE(runFinished.size(), 2);  // both variants
    for (const QList<QVariant>& r : runFinished)
      QCOMPARE(r.at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);
  }

  // The whole session a researcher has, through the real widgets and real daemons: a new
  // project, a dataset and a 2-node topology, an experiment with two variants run on local
  // daemons with points arriving live, a second run cancelled, the comparison exported as
  // PNG, SVG and PDF, and the runs found again after reopening the project.
  void wholeSessionFromNewProjectToExportedComparison() {
    QTemporaryDir dir;
    const QString path = dir.filePath("session.dtlab");
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    QVERIFY(window.newProject(path));
    QVERIFY(waitFor(window, &ui::MainWindow::projectLoaded));

    // A dataset and a topology, saved into the project.
    QSignalSpy previewed(window.datasetPage(), &ui::DatasetPage::previewShown);
    window.newDataset();
    QVERIFY(previewed.wait(20000));
    window.datasetPage()->findChild<QSpinBox*>("train_size")->setValue(4096);
    window.datasetPage()->findChild<QSpinBox*>("classes")->setValue(4);
    window.datasetPage()->findChild<QSpinBox*>("features")->setValue(8);
    QVERIFY(previewed.wait(20000));
    window.datasetPage()->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().datasets.size(), std::size_t{1},
                              10000);
    window.newTopology();
    QCOMPARE(window.topologyPage()->model()->rowCount(), 2);
    window.topologyPage()->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().topologies.size(), std::size_t{1},
                              10000);

    // An experiment over them with two variants; run it.
    window.newExperiment();
    ui::ExperimentPage* experiment = window.experimentPage();
    static_cast<QComboBox*>(experiment->field("dataset"))->setCurrentText("dataset 1");
    static_cast<QComboBox*>(experiment->field("cluster"))->setCurrentText("topology 1");
    static_cast<QSpinBox*>(experiment->field("training.batch_size"))->setValue(64);
    static_cast<QSpinBox*>(experiment->field("training.max_steps"))->setValue(60);
    static_cast<QSpinBox*>(experiment->field("training.eval_interval"))->setValue(20);
    experiment->variants()->addVariant();
    QVERIFY2(experiment->error().isEmpty(), qPrintable(experiment->error()));
    experiment->saveButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().experiments.size(), std::size_t{1},
                              10000);
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    QSignalSpy started(window.controller(), &ui::ExperimentController::runStarted);
    experiment->runButton()->click();
    QVERIFY(finished.wait(120000));
    QCOMPARE(runFinished.size(), 2);
    for (const QList<QVariant>& r : runFinished)
      QCOMPARE(r.at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);

    // A second, endless run: points arrive on its page live, then it is cancelled.
    static_cast<QSpinBox*>(experiment->field("training.max_steps"))->setValue(0);
    static_cast<QSpinBox*>(experiment->field("training.epochs"))->setValue(100000);
    experiment->variants()->removeVariant(1);
    QVERIFY2(experiment->error().isEmpty(), qPrintable(experiment->error()));
    started.clear();
    runFinished.clear();
    experiment->runButton()->click();
    QVERIFY(started.wait(30000));
    const qint64 endless = started.first().first().toLongLong();
    QTRY_COMPARE_WITH_TIMEOUT(window.runPage()->runId(), endless, 10000);
    const auto points = [&] {
      int n = 0;
      for (int g = 0; g < window.runPage()->chart()->graphCount(); ++g)
        n += window.runPage()->chart()->graph(g)->data()->size();
      return n;
    };
    const int before = points();
    QTRY_VERIFY_WITH_TIMEOUT(points() > before + 20, 15000);
    window.cancelAction()->trigger();
    QVERIFY(finished.wait(15000));
    QCOMPARE(runFinished.last().at(1).value<core::RunStatus>(), core::RunStatus::kCancelled);

    // The comparison of the three runs, exported three ways.
    window.showCompare();
    QSignalSpy shown(window.comparePage(), &ui::ComparePage::chartShown);
    window.comparePage()->setChosenRuns({1, 2, 3});
    QVERIFY(shown.wait(20000));
    QVERIFY(window.comparePage()->chart()->graphCount() >= 3);  // one curve per run at least
    const QString png = dir.filePath("cmp.png"), svg = dir.filePath("cmp.svg"),
                  pdf = dir.filePath("cmp.pdf");
    window.comparePage()->exportChartTo(png);
    window.comparePage()->exportChartTo(svg);
    window.comparePage()->exportChartTo(pdf);
    const auto head = [](const QString& file, int n) {
      QFile f(file);
      return f.open(QIODevice::ReadOnly) ? f.read(n) : QByteArray();
    };
    QCOMPARE(head(png, 8), QByteArray("\x89PNG\r\n\x1a\n", 8));
    QVERIFY(head(svg, 400).contains("<svg"));
    QCOMPARE(head(pdf, 5), QByteArray("%PDF-"));
    QFile pdfFile(pdf);
    QVERIFY(pdfFile.open(QIODevice::ReadOnly));
    const QByteArray pdfBytes = pdfFile.readAll();
    QVERIFY(pdfBytes.size() > 2000);
    // One page object ("/Type /Page" not followed by "s", which is the page tree).
    static const QRegularExpression pageObject(R"(/Type\s*/Page(?![s\w]))");
    int pages = 0;
    for (auto it = pageObject.globalMatch(QString::fromLatin1(pdfBytes)); it.hasNext(); it.next())
      ++pages;
    QCOMPARE(pages, 1);

    // Reopened, the project has everything.
    ui::MainWindow again;
    again.setQuietErrors(true);
    again.openProject(path);
    QVERIFY(waitFor(again, &ui::MainWindow::projectLoaded));
    const ui::ProjectSnapshot& s = again.explorerModel()->snapshot();
    QCOMPARE(s.runs.size(), std::size_t{3});
    QCOMPARE(s.runs[0].status, core::RunStatus::kCompleted);
    QCOMPARE(s.runs[1].status, core::RunStatus::kCompleted);
    QCOMPARE(s.runs[2].status, core::RunStatus::kCancelled);
    QCOMPARE(s.datasets.size(), std::size_t{1});
    QCOMPARE(s.topologies.size(), std::size_t{1});
  }

  // The run page: events marked where they happened, steps or wall time on the x-axis, a
  // legend click hides a series, and the crosshair lists every visible series' value.
  void runPageMarksEventsSwitchesAxesAndHidesSeries() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    {
      auto store = core::ProjectStore::open(path);
      store->addEvent(1, {15, 40.0, "rebalance", "shares 0.5 0.5 -> 0.6 0.4"});
    }
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.openProject(QString::fromStdString(path));
    QVERIFY(waitFor(window, &ui::MainWindow::projectLoaded));
    window.selectRun(1);
    QVERIFY(waitFor(window, &ui::MainWindow::runShown));
    ui::RunPage* page = window.runPage();
    ui::RunDashboard* chart = page->chart();
    QCPGraph* worker0 = namedGraph(*chart, "loss, worker 0");
    QCPGraph* accuracy = namedGraph(*chart, "test_accuracy");
    // The event's line on every chart, and its name on the first.
    QCOMPARE(chart->eventMarkerCount(ui::RunDashboard::kLossChart), 1);
    QCOMPARE(chart->eventMarkerCount(ui::RunDashboard::kThroughputChart), 1);
    QCOMPARE(chart->rect(ui::RunDashboard::kLossChart)->axis(QCPAxis::atBottom)->label(),
             QString("step"));
    QCOMPARE(worker0->data()->at(0)->key, 1.0);  // step 1
    QVERIFY(page->valuesAt(10.0).contains("loss, worker 0: "));
    QVERIFY(page->valuesAt(10.0).startsWith("step 10"));

    page->setXAxis(ui::RunXAxis::kSeconds);
    QCOMPARE(chart->rect(ui::RunDashboard::kLossChart)->axis(QCPAxis::atBottom)->label(),
             QString("time since the run started (s)"));
    worker0 = namedGraph(*chart, "loss, worker 0");  // drawn anew
    accuracy = namedGraph(*chart, "test_accuracy");
    QCOMPARE(chart->graphs(ui::RunDashboard::kLossChart).size(), 3);
    QCOMPARE(worker0->data()->size(), 30);
    QVERIFY(worker0->data()->at(0)->key < 60.0);  // seconds, not steps
    QCOMPARE(chart->eventMarkerCount(ui::RunDashboard::kLossChart), 1);

    int index = 0;
    while (chart->graph(index) != worker0) ++index;
    page->toggleSeries(index);
    QVERIFY(!worker0->visible());
    const QString values = page->valuesAt(accuracy->data()->at(2)->key);
    QVERIFY2(!values.contains("loss, worker 0") && values.contains("test_accuracy"),
             qPrintable(values));
    page->toggleSeries(index);
    QVERIFY(worker0->visible());
  }

  void damagedFileIsReportedAndNothingChanges() {
    QTemporaryDir dir;
    const QString path = dir.filePath("broken.dtlab");
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("this is not a DTLab project");
    file.close();
    ui::MainWindow window;
    window.setQuietErrors(true);
    QSignalSpy failed(&window, &ui::MainWindow::loadFailed);
    window.openProject(path);
    QVERIFY(failed.wait(10000));
    QVERIFY2(failed.first().first().toString().contains("broken.dtlab"),
             qPrintable(failed.first().first().toString()));
    QFile again(path);
    QVERIFY(again.open(QIODevice::ReadOnly));
    QCOMPARE(again.readAll(), QByteArray("this is not a DTLab project"));
  }

  // `dtlab P --page run --run 1 --screenshot out.png` renders the page to a PNG and exits.
  void screenshotModeWritesAPng() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    const QString out = dir.filePath("run.png");
    QProcess gui;
    prepareGui(gui);
    gui.start(DTLAB_BINARY_DIR "/app/dtlab",
              {QString::fromStdString(path), "--page", "run", "--run", "1", "--screenshot", out,
               "--size", "1000x700"});
    QVERIFY(gui.waitForFinished(60000));
    QVERIFY2(gui.exitCode() == 0, gui.readAllStandardError().constData());
    QImage image(out);
    QCOMPARE(image.size(), QSize(1000, 700));
    QFile png(out);
    QVERIFY(png.open(QIODevice::ReadOnly));
    QCOMPARE(png.read(8), QByteArray("\x89PNG\r\n\x1a\n", 8));

    // The dashboard without --run: the latest run's page.
    const QString latest = dir.filePath("latest.png");
    QProcess dashboard;
    prepareGui(dashboard);
    dashboard.start(DTLAB_BINARY_DIR "/app/dtlab",
                    {QString::fromStdString(path), "--page", "dashboard", "--screenshot", latest,
                     "--size", "1000x700"});
    QVERIFY(dashboard.waitForFinished(60000));
    QVERIFY2(dashboard.exitCode() == 0, dashboard.readAllStandardError().constData());
    QCOMPARE(QImage(latest).size(), QSize(1000, 700));

    QProcess bad;
    prepareGui(bad);
    bad.start(DTLAB_BINARY_DIR "/app/dtlab",
              {QString::fromStdString(path), "--page", "charts", "--screenshot", out});
    QVERIFY(bad.waitForFinished(30000));
    QCOMPARE(bad.exitCode(), 2);
    QVERIFY(bad.readAllStandardError().contains(
        "--page: 'charts' is not available (pages: explorer, dashboard, run, dataset, topology, "
        "experiment, compare, predict, guide)"));

    // A dashboard of a project without runs says so.
    const std::string empty = dir.filePath("empty.dtlab").toStdString();
    core::ProjectStore::create(empty);
    QProcess none;
    prepareGui(none);
    none.start(DTLAB_BINARY_DIR "/app/dtlab",
               {QString::fromStdString(empty), "--page", "dashboard", "--screenshot", out});
    QVERIFY(none.waitForFinished(30000));
    QCOMPARE(none.exitCode(), 2);
    QVERIFY(none.readAllStandardError().contains("empty.dtlab has no runs to show"));
  }
};

QTEST_MAIN(TestGui)
#include "test_gui.moc"
