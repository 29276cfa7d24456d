// Executions in the workbench: the explorer lists them under their experiment, the compare
// page opens on the latest one (its runs chosen, a band per variant, its statistics), another
// is chosen from the explorer or the page, checking runs by hand leaves it, the layout keeps
// it, the experiment page edits how many times a variant runs, and File > Export Report writes
// the report of the execution in view.
#include <QtTest/QAbstractItemModelTester>
#include <QtTest/QtTest>

#include <QtWidgets/QComboBox>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTreeView>

#include "core/analysis/comparison_statistics.h"
#include "tests/ui/ui_support.h"
#include "ui/charts/comparison_chart.h"
#include "ui/charts/comparison_panel.h"
#include "ui/main_window.h"
#include "ui/models/compare_layout.h"
#include "ui/models/explorer_model.h"
#include "ui/models/run_comparison_model.h"
#include "ui/models/statistics_table_model.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/execution_statistics.h"
#include "ui/pages/experiment_page.h"

using namespace dtlab;

namespace {

core::ExperimentSpec twoVariants(int64_t repeats) {
  core::ExperimentSpec spec = ui_test::smallSpec("modes", 30);
  spec.repeats = repeats;
  core::VariantConfig a;
  a.name = "first";
  core::VariantConfig b;
  b.name = "second";
  spec.variants = {a, b};
  return spec;
}

}  // namespace

class TestExecutionsGui : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string path_;
  int64_t older_ = 0;
  int64_t latest_ = 0;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    path_ = dir_.filePath("p.dtlab").toStdString();
    auto store = core::ProjectStore::create(path_);
    older_ = ui_test::recordExecution(*store, twoVariants(1));
    latest_ = ui_test::recordExecution(*store, twoVariants(3));
  }

  void explorerListsExecutionsUnderTheirExperiment() {
    ui::ExplorerModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSnapshot(ui_test::snapshotAt(path_));
    const QModelIndex experiments =
        model.index(static_cast<int>(ui::ExplorerModel::Group::kExperiments), 0);
    QCOMPARE(model.rowCount(experiments), 1);
    const QModelIndex experiment = model.index(0, 0, experiments);
    QCOMPARE(model.rowCount(experiment), 2);
    const QModelIndex newest = model.index(0, 0, experiment);
    QCOMPARE(newest.data(ui::ExplorerModel::KindRole).toString(), QString("execution"));
    QCOMPARE(newest.data(ui::ExplorerModel::IdRole).toLongLong(), latest_);
    QCOMPARE(model.parent(newest), experiment);
    const QString detail =
        model.index(0, ui::ExplorerModel::kDetailColumn, experiment).data().toString();
    QVERIFY2(detail.contains("2 variants x 3, 6 runs: 6 completed"), qPrintable(detail));
    QCOMPARE(model.find("execution", older_), model.index(1, 0, experiment));
    QVERIFY(!model.find("execution", 99).isValid());
    // Runs and other groups have no children.
    const QModelIndex runs = model.index(static_cast<int>(ui::ExplorerModel::Group::kRuns), 0);
    QCOMPARE(model.rowCount(model.index(0, 0, runs)), 0);
  }

  void comparePageOpensOnTheLatestExecution() {
    ui::ComparePage page;
    page.resize(1400, 1000);
    QSignalSpy shown(&page, &ui::ComparePage::chartShown);
    QSignalSpy statistics(page.statistics(), &ui::ExecutionStatistics::shown);
    page.setSnapshot(ui_test::snapshotAt(path_));
    QVERIFY(shown.wait(20000));
    QCOMPARE(page.execution(), std::optional<int64_t>(latest_));
    QCOMPARE(page.runsModel()->chosen().size(), std::size_t{6});
    const ui::ComparisonRequest request = page.request();
    QCOMPARE(request.groups.size(), std::size_t{2});
    QCOMPARE(request.groups[0].label, std::string("first"));
    QCOMPARE(request.groups[0].runIds.size(), std::size_t{3});
    QCOMPARE(page.chart()->bands().size(), std::size_t{2});

    if (statistics.isEmpty()) QVERIFY(statistics.wait(20000));
    const QString heading = page.statistics()->heading()->text();
    QVERIFY2(heading.contains("2 variants x 3 repetitions"), qPrintable(heading));
    QCOMPARE(page.statistics()->variants()->rowCount(), 2);
    QCOMPARE(page.statistics()->variants()->index(0, 0).data().toString(), QString("first"));
    QCOMPARE(page.statistics()->variants()->index(0, 3).data().toString(), QString("3/3"));
    // The ratios of the second against the first: time to target, samples/s, utilisation
    // where measured.
    QVERIFY(page.statistics()->ratios()->rowCount() >= 1);
    QCOMPARE(page.statistics()->ratios()->index(0, 1).data().toString(), QString("first"));
    QVERIFY(page.tabs()->tabText(1).contains(QString::number(latest_)));
    // The seed table: a column per variant after the aspect and measure, a row per measure.
    QCOMPARE(page.tabs()->count(), 4);  // runs, statistics, seed table, yardstick
    // No calibration in this project: the yardstick says how to make one.
    QCOMPARE(page.statistics()->yardstick()->rowCount(), 0);
    QCOMPARE(page.statistics()->seed()->columnCount(), 4);
    QCOMPARE(page.statistics()->seed()->rowCount(), 9);
    QVERIFY(!page.statistics()->seed()->index(3, 2).data(Qt::ToolTipRole).toString().isEmpty());

    // The layout keeps the execution.
    QCOMPARE(page.compareLayout().execution, std::optional<int64_t>(latest_));
    QStringList problems;
    const ui::CompareLayout back =
        ui::parseCompareLayout(ui::compareLayoutToJson(page.compareLayout()), problems);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join("; ")));
    QCOMPARE(back.execution, std::optional<int64_t>(latest_));

    // Without bands: one curve per run.
    page.setBands(false);
    QVERIFY(page.request().groups.empty());
    page.setBands(true);

    // The older execution, then runs checked by hand: no execution, no groups.
    QVERIFY(page.showExecution(older_));
    QCOMPARE(page.runsModel()->chosen().size(), std::size_t{2});
    QVERIFY(!page.showExecution(int64_t{99}));
    QCOMPARE(page.execution(), std::optional<int64_t>(older_));
    std::vector<int64_t> byHand = page.runsModel()->chosen();
    byHand.pop_back();
    page.setChosenRuns(byHand);
    QCOMPARE(page.execution(), std::nullopt);
    QVERIFY(page.request().groups.empty());
    QCOMPARE(page.executionChoice()->currentIndex(), page.executionChoice()->count() - 1);
    QCOMPARE(page.statistics()->variants()->rowCount(), 0);
  }

  // A run of the execution shown that ends (here: one more, recorded by another process's
  // connection) is in its statistics at the next snapshot; new points alone read nothing again.
  void statisticsFollowTheExecutionsRuns() {
    ui::ComparePage page;
    QSignalSpy restored(&page, &ui::ComparePage::layoutRestored);
    QSignalSpy statistics(page.statistics(), &ui::ExecutionStatistics::shown);
    page.setSnapshot(ui_test::snapshotAt(path_));
    // The layout the test before left in the project (runs checked by hand), then the latest
    // execution again.
    QVERIFY(restored.wait(20000));
    page.showExecution(std::nullopt);
    statistics.clear();
    QVERIFY(page.showExecution(latest_));
    QVERIFY(statistics.wait(20000));
    QCOMPARE(page.statistics()->variants()->index(0, 3).data().toString(), QString("3/3"));
    statistics.clear();
    page.setSnapshot(ui_test::snapshotAt(path_));  // nothing changed: no read begun
    QVERIFY(page.statistics()->upToDate());
    {
      auto store = core::ProjectStore::open(path_);
      core::ExperimentSpec spec = twoVariants(3);
      spec.seed = core::repetitionSeed(spec.seed, 3);
      core::RunRecording recording(*store, spec, "single", "modes/first",
                                   core::ExecutionSlot{latest_, 3});
      core::RunSummary summary = core::trainLocal(spec, {}, &recording.sink());
      summary.name = "first";
      recording.finish(summary);
    }
    page.setSnapshot(ui_test::snapshotAt(path_));
    QVERIFY(statistics.wait(20000));
    QCOMPARE(page.statistics()->variants()->index(0, 3).data().toString(), QString("4/4"));
    QCOMPARE(page.runsModel()->chosen().size(), std::size_t{7});
  }

  void experimentPageEditsRepeats() {
    ui::ExperimentPage page;
    page.edit(-1, core::toJson(twoVariants(1)), {}, {});
    auto* repeats = qobject_cast<QSpinBox*>(page.field("repeats"));
    QVERIFY(repeats != nullptr);
    QCOMPARE(repeats->value(), 1);
    QCOMPARE(page.runButton()->text(), QString("Run"));
    repeats->setValue(5);
    QCOMPARE(page.spec()["repeats"].get<int64_t>(), int64_t{5});
    QCOMPARE(page.runButton()->text(), QString("Run 5 times"));
    QVERIFY(page.error().isEmpty());
    page.edit(-1, core::toJson(twoVariants(4)), {}, {});
    QCOMPARE(repeats->value(), 4);
  }

  // File > Export Report writes the report of the execution in view: the one selected in the
  // explorer (on the compare page), else the selected experiment's latest; a file name it
  // cannot write as is refused, saying which names it can.
  void exportReportOfTheExecutionInView() {
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.resize(1400, 900);
    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    window.openProject(QString::fromStdString(path_));
    QVERIFY(loaded.wait(20000));
    window.explorerView()->setCurrentIndex(window.explorerModel()->find("execution", older_));
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.comparePage()));
    QCOMPARE(window.reportTarget().second, std::optional<int64_t>(older_));
    const QString html = dir_.filePath("older.html");
    QVERIFY(window.exportReport(html));
    QFile file(html);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(file.readAll());
    QVERIFY2(text.contains(QString("execution %1: 2 variants, 2 runs").arg(older_)),
             qPrintable(text.left(2000)));
    QVERIFY(text.contains("<svg"));

    // The experiment selected: its latest execution, as PDF.
    const QModelIndex experiment = window.explorerModel()->find("experiment", 1);
    QVERIFY(experiment.isValid());
    window.explorerView()->setCurrentIndex(experiment);
    QCOMPARE(window.reportTarget().first, std::optional<std::string>("modes"));
    QCOMPARE(window.reportTarget().second, std::nullopt);
    const QString pdf = dir_.filePath("latest.pdf");
    QVERIFY(window.exportReport(pdf));
    QFile written(pdf);
    QVERIFY(written.open(QIODevice::ReadOnly));
    QVERIFY(written.read(5) == "%PDF-");

    QVERIFY(!window.exportReport(dir_.filePath("report.txt")));
    QVERIFY2(window.statusBar()->currentMessage().contains(".html or .pdf"),
             qPrintable(window.statusBar()->currentMessage()));
    QVERIFY(!QFile::exists(dir_.filePath("report.txt")));
  }
};

QTEST_MAIN(TestExecutionsGui)
#include "test_executions_gui.moc"
