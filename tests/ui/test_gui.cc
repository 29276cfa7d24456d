// The workbench's models and window, driven for real under QT_QPA_PLATFORM=offscreen, on
// project files recorded by real training runs.
#include <QtTest/QAbstractItemModelTester>
#include <QtTest/QtTest>

#include <qcustomplot.h>

#include <QtCore/QProcess>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QApplication>
#include <QtWidgets/QTreeView>

#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/train/local_trainer.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_snapshot.h"
#include "ui/models/run_metrics_model.h"
#include "ui/pages/entity_page.h"
#include "ui/pages/run_page.h"

using namespace dtlab;

namespace {

core::ExperimentSpec smallSpec(const std::string& name, int64_t steps) {
  core::ExperimentSpec spec;
  spec.name = name;
  spec.seed = 4;
  spec.dataset.trainSize = 2048;
  spec.dataset.testSize = 256;
  spec.dataset.features = 8;
  spec.dataset.classes = 3;
  spec.model.hidden = {16};
  spec.training.batchSize = 32;
  spec.training.epochs = 0;
  spec.training.maxSteps = steps;
  spec.training.evalInterval = 10;
  return spec;
}

// Trains `spec` in this process and records it in the project, as `dtlab-cli train
// --project` does.
int64_t recordRun(core::ProjectStore& store, const core::ExperimentSpec& spec) {
  core::RunRecording recording(store, spec, "single");
  const core::RunSummary summary = core::trainLocal(spec, {}, &recording.sink());
  recording.finish(summary);
  return recording.runId();
}

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

template <typename Signal>
bool waitFor(ui::MainWindow& w, Signal signal, int ms = 20000) {
  QSignalSpy spy(&w, signal);
  return spy.wait(ms);
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
    model.setSnapshot(ui::readProjectSnapshot(path));
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
    ui::ProjectSnapshot fewer = ui::readProjectSnapshot(path);
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
    const ui::RunDetail detail = ui::readRunDetail(path, 1);
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
    QCustomPlot* chart = window.runPage()->chart();
    QCOMPARE(chart->graphCount(), 2);  // the worker's loss and the test accuracy
    QCOMPARE(chart->graph(0)->data()->size(), 30);
    QCOMPARE(chart->graph(1)->data()->size(), 3);  // evaluations at steps 10, 20, 30

    const QModelIndex dataset = window.explorerModel()->find("dataset", 1);
    window.explorerView()->setCurrentIndex(dataset);
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.entityPage()));
    QVERIFY(window.entityPage()->text().contains("\"kind\": \"gaussian_blobs\""));

    // Another process records a run: the window sees it without being asked.
    {
      auto writer = core::ProjectStore::open(path);
      recordRun(*writer, smallSpec("third", 10));
    }
    QTRY_COMPARE_WITH_TIMEOUT(window.explorerModel()->snapshot().runs.size(), std::size_t{3},
                              10000);
    QVERIFY(window.explorerModel()->find("run", 3).isValid());
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

    QProcess bad;
    prepareGui(bad);
    bad.start(DTLAB_BINARY_DIR "/app/dtlab",
              {QString::fromStdString(path), "--page", "dashboard", "--screenshot", out});
    QVERIFY(bad.waitForFinished(30000));
    QCOMPARE(bad.exitCode(), 2);
    QVERIFY(bad.readAllStandardError().contains(
        "--page: 'dashboard' is not available (pages: explorer, run, compare)"));
  }
};

QTEST_MAIN(TestGui)
#include "test_gui.moc"
