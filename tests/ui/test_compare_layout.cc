// The comparison view as the user leaves it: several charts, the chosen runs, splitters and
// the table's sort kept in the project file and restored from it; the measured strategy
// table's columns, sorting (unknowns last) and copying; and a project of hundreds of runs.
// Driven for real under QT_QPA_PLATFORM=offscreen on real project files.
#include <QtTest/QAbstractItemModelTester>
#include <QtTest/QtTest>

#include <qcustomplot.h>

#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtGui/QAction>
#include <QtGui/QClipboard>
#include <QtGui/QGuiApplication>
#include <QtWidgets/QApplication>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSlider>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTableView>

#include <optional>

#include "core/store/project_store.h"
#include "ui/charts/comparison_chart.h"
#include "ui/charts/comparison_panel.h"
#include "ui/main_window.h"
#include "ui/models/compare_layout.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_snapshot.h"
#include "ui/models/run_comparison_model.h"
#include "ui/pages/compare_page.h"

#include "tests/ui/ui_support.h"

using namespace dtlab;
using M = ui::RunComparisonModel;

namespace {

using ui_test::recordRun;
using ui_test::smallSpec;

// Runs 1 (30 steps), 2 (20) and 3 (25), trained in this process.
std::string makeProject(const QTemporaryDir& dir) {
  const std::string path = dir.filePath("p.dtlab").toStdString();
  auto store = core::ProjectStore::create(path, "layout test");
  recordRun(*store, smallSpec("first", 30));
  recordRun(*store, smallSpec("second", 20));
  recordRun(*store, smallSpec("third", 25));
  return path;
}

// A finished run written straight into the store (no training): only its summary.
int64_t storedRun(core::ProjectStore& store, const std::string& name, double samplesPerS,
                  std::optional<double> timeToTarget) {
  core::RunStart start;
  start.name = name;
  start.strategy = "sync_allreduce";
  const int64_t id = store.beginRun(start);
  core::RunSummary summary;
  summary.name = name;
  summary.strategy = "sync_allreduce";
  summary.status = core::RunStatus::kCompleted;
  summary.steps = 100;
  summary.samplesPerS = samplesPerS;
  summary.timeToTargetS = timeToTarget;
  store.finishRun(id, summary);
  return id;
}

std::optional<std::string> storedLayout(const std::string& path) {
  const auto metadata = core::ProjectStore::open(path, true)->metadata();
  const auto it = metadata.find(ui::kCompareLayoutKey);
  return it == metadata.end() ? std::nullopt : std::optional<std::string>(it->second);
}

// The runs in the order the sorted table shows them.
std::vector<int64_t> shownOrder(const QAbstractItemModel& model) {
  std::vector<int64_t> ids;
  for (int row = 0; row < model.rowCount(); ++row)
    ids.push_back(model.index(row, 0).data(M::IdRole).toLongLong());
  return ids;
}

// A page on `path`, shown at a fixed size, its saved layout restored and its charts drawn.
std::unique_ptr<ui::ComparePage> openPage(const std::string& path) {
  auto page = std::make_unique<ui::ComparePage>();
  page->resize(1200, 900);
  page->show();
  QSignalSpy restored(page.get(), &ui::ComparePage::layoutRestored);
  QSignalSpy shown(page.get(), &ui::ComparePage::chartShown);
  page->setSnapshot(ui_test::snapshotAt(path));
  if (!restored.wait(20000)) return nullptr;
  if (shown.isEmpty() && !shown.wait(20000)) return nullptr;
  return page;
}

ui::ChartSettings settings(const char* metric, ui::ChartX x, ui::MemberReduction reduction,
                           double smoothing) {
  ui::ChartSettings s;
  s.metric = metric;
  s.x = x;
  s.reduction = reduction;
  s.smoothing = smoothing;
  return s;
}

}  // namespace

class TestCompareLayout : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // The JSON of the metadata key: what is written reads back the same; what cannot be read
  // gives the default, and each field it does not know is named.
  void layoutJsonReadsWhatItWritesAndSkipsTheRest() {
    ui::CompareLayout layout;
    layout.charts = {
        settings("loss", ui::ChartX::kStep, ui::MemberReduction::kMean, 0.3),
        settings("test_accuracy", ui::ChartX::kWallSeconds, ui::MemberReduction::kFirst, 0.0)};
    layout.current = 1;
    layout.runs = std::vector<int64_t>{2, 5};
    layout.splitter = {200, 500};
    layout.chartSplitter = {250, 250};
    layout.sortColumn = "samples_per_s";
    layout.sortDescending = true;
    QStringList problems;
    QCOMPARE(ui::parseCompareLayout(ui::compareLayoutToJson(layout), problems), layout);
    QVERIFY(problems.isEmpty());

    for (const char* garbage : {"", "{not json", "[1, 2]", "42", "null"}) {
      problems.clear();
      QCOMPARE(ui::parseCompareLayout(garbage, problems), ui::CompareLayout{});
      QCOMPARE(problems.size(), 1);
      QVERIFY2(problems[0].contains("not a JSON object"), qPrintable(problems[0]));
    }

    problems.clear();
    const ui::CompareLayout partly = ui::parseCompareLayout(
        R"({"version": 1, "wobble": 3, "runs": "all", "current": 7,
            "charts": [{"metric": "lossy"}, {"metric": "step_ms", "colour": "red",
                        "smoothing": 1.5, "x": "wall"}],
            "sort": {"column": "steps", "order": "sideways"}})",
        problems);
    QCOMPARE(partly.charts.size(), std::size_t{1});  // the unknown metric's chart is left out
    QCOMPARE(partly.charts[0].metric, std::string("step_ms"));
    QCOMPARE(partly.charts[0].x, ui::ChartX::kWallSeconds);
    QCOMPARE(partly.charts[0].smoothing, ui::ChartSettings{}.smoothing);
    QCOMPARE(partly.current, 0);
    QVERIFY(!partly.runs);
    QVERIFY(partly.sortColumn.empty());
    const QString all = problems.join('\n');
    for (const char* named : {"wobble", "'runs'", "lossy", "colour", "smoothing", "'sort'"})
      QVERIFY2(all.contains(named), qPrintable(all));
  }

  // Three charts with different metrics, x-axes, reductions and smoothing, a choice of runs,
  // splitter sizes and a sort: written to the project file once the changes pause, and found
  // again by a fresh page on the same file.
  void layoutSurvivesReopeningTheProject() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    QVERIFY(!storedLayout(path));
    ui::CompareLayout expected;
    {
      auto page = openPage(path);
      QVERIFY(page);
      QCOMPARE(page->chartCount(), 1);  // no saved layout: one chart of the latest runs
      QCOMPARE(page->runsModel()->chosen(), (std::vector<int64_t>{1, 2, 3}));
      QSignalSpy saved(page.get(), &ui::ComparePage::layoutSaved);

      page->panel(0)->setSettings(
          settings("loss", ui::ChartX::kStep, ui::MemberReduction::kFirst, 0.25));
      QCOMPARE(page->addChart(settings("test_accuracy", ui::ChartX::kWallSeconds,
                                       ui::MemberReduction::kMean, 0.0)),
               1);
      QCOMPARE(page->addChart(), 2);  // the next metric not shown yet
      QCOMPARE(page->panel(2)->settings().metric, std::string("samples_per_s"));
      page->panel(2)->setSettings(
          settings("step_ms", ui::ChartX::kStep, ui::MemberReduction::kMean, 0.9));
      page->setChosenRuns({1, 3});
      page->runsView()->sortByColumn(M::kSamplesPerSColumn, Qt::DescendingOrder);
      page->splitter()->setSizes({260, 560});
      page->chartSplitter()->setSizes({150, 220, 150});
      page->setCurrentChart(1);
      QVERIFY(saved.wait(10000));
      // Everything was one write: it is done, and no other is scheduled.
      QVERIFY(!page->layoutWritePending());
      QCOMPARE(saved.count(), 1);
      expected = page->compareLayout();
      QCOMPARE(expected.charts.size(), std::size_t{3});
      QCOMPARE(expected.runs, (std::optional<std::vector<int64_t>>{{1, 3}}));
      QCOMPARE(expected.sortColumn, std::string("samples_per_s"));
      QVERIFY(expected.sortDescending);
      QCOMPARE(expected.current, 1);
      QCOMPARE(expected.splitter.size(), std::size_t{2});
      QCOMPARE(expected.chartSplitter.size(), std::size_t{3});

      // The file holds what the page shows.
      const std::optional<std::string> stored = storedLayout(path);
      QVERIFY(stored);
      QStringList problems;
      QCOMPARE(ui::parseCompareLayout(*stored, problems), expected);
      QVERIFY(problems.isEmpty());
    }

    auto again = openPage(path);
    QVERIFY(again);
    QCOMPARE(again->chartCount(), 3);
    QCOMPARE(again->panel(0)->settings(),
             settings("loss", ui::ChartX::kStep, ui::MemberReduction::kFirst, 0.25));
    QCOMPARE(again->panel(1)->settings(),
             settings("test_accuracy", ui::ChartX::kWallSeconds, ui::MemberReduction::kMean, 0.0));
    QCOMPARE(again->panel(2)->settings(),
             settings("step_ms", ui::ChartX::kStep, ui::MemberReduction::kMean, 0.9));
    QCOMPARE(again->runsModel()->chosen(), (std::vector<int64_t>{1, 3}));
    QCOMPARE(again->currentChart(), 1);
    QCOMPARE(again->runsView()->horizontalHeader()->sortIndicatorSection(),
             int(M::kSamplesPerSColumn));
    QCOMPARE(again->runsView()->horizontalHeader()->sortIndicatorOrder(), Qt::DescendingOrder);
    QCOMPARE(again->compareLayout(), expected);  // splitter sizes included
    // Each chart draws its own metric of the chosen runs.
    QCOMPARE(again->panel(1)->chart()->yAxis->label(), QString("test_accuracy"));
    QCOMPARE(again->panel(1)->chart()->xAxis->label(), QString("wall time (s)"));
    QCOMPARE(again->panel(2)->chart()->curves().size(), std::size_t{2});
    QCOMPARE(again->panel(2)->chart()->curves()[1].runId, int64_t{3});
    QVERIFY(again->panel(2)->chart()->note().contains("weight 0.90"));
    QCOMPARE(again->chart(), again->panel(1)->chart());

    // Removing a chart is saved too.
    QSignalSpy saved(again.get(), &ui::ComparePage::layoutSaved);
    again->removeChart(0);
    QCOMPARE(again->chartCount(), 2);
    QVERIFY(saved.wait(10000));
    QStringList problems;
    QCOMPARE(ui::parseCompareLayout(*storedLayout(path), problems).charts.size(), std::size_t{2});

    // Up to eight charts; the last one cannot be removed.
    QPushButton* add = nullptr;
    for (QPushButton* b : again->findChildren<QPushButton*>())
      if (b->text() == "Add chart") add = b;
    QVERIFY(add != nullptr);
    while (again->chartCount() < 8) {
      QVERIFY(add->isEnabled());
      add->click();
    }
    QVERIFY(!add->isEnabled());
    QVERIFY2(again->minimumSizeHint().height() < 900,  // they scroll, the page stays small
             qPrintable(QString::number(again->minimumSizeHint().height())));
    QCOMPARE(again->addChart(), -1);
    QCOMPARE(again->chartCount(), 8);
    while (again->chartCount() > 1) again->removeChart(again->chartCount() - 1);
    again->removeChart(0);
    QCOMPARE(again->chartCount(), 1);
    QVERIFY(add->isEnabled());
  }

  // In the window, which re-reads the file when it changes: the page's own write comes back
  // as a snapshot, and neither re-writes nor resets the layout. A slider drag is one write.
  void ownWritesDoNotLoopThroughTheWindow() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    window.openProject(QString::fromStdString(path));
    QVERIFY(QSignalSpy(&window, &ui::MainWindow::projectLoaded).wait(20000));
    ui::ComparePage* page = window.comparePage();
    QSignalSpy restored(page, &ui::ComparePage::layoutRestored);
    window.showCompare();
    QVERIFY(restored.wait(20000));

    QSignalSpy saved(page, &ui::ComparePage::layoutSaved);
    QSignalSpy shown(page, &ui::ComparePage::chartShown);
    page->addChart(settings("test_accuracy", ui::ChartX::kStep, ui::MemberReduction::kMean, 0.0));
    auto* slider = page->panel(1)->findChild<QSlider*>();
    QVERIFY(slider != nullptr);
    for (int step = 0; step < 100; ++step) slider->setValue(step);  // a drag
    QVERIFY(saved.wait(10000));
    const ui::CompareLayout written = page->compareLayout();
    QCOMPARE(written.charts[1].smoothing, 0.99);
    // The window notices the file changed (it polls every second) and hands the page a new
    // snapshot (right after the explorer's), which re-reads the charts: nothing more is
    // written, nothing is reset.
    int shownBeforeSnapshot = -1;
    const QMetaObject::Connection reread =
        connect(window.explorerModel(), &QAbstractItemModel::modelReset, page,
                [&] { shownBeforeSnapshot = static_cast<int>(shown.count()); });
    QTRY_VERIFY_WITH_TIMEOUT(shownBeforeSnapshot >= 0 && shown.count() > shownBeforeSnapshot,
                             10000);
    disconnect(reread);
    QVERIFY(!page->layoutWritePending());
    QCOMPARE(saved.count(), 1);
    QCOMPARE(page->compareLayout(), written);
    QCOMPARE(page->chartCount(), 2);

    // A second window on the file finds the charts.
    ui::MainWindow second;
    second.setQuietErrors(true);
    second.show();
    second.openProject(QString::fromStdString(path));
    QVERIFY(QSignalSpy(&second, &ui::MainWindow::projectLoaded).wait(20000));
    QSignalSpy restoredAgain(second.comparePage(), &ui::ComparePage::layoutRestored);
    second.showCompare();
    QVERIFY(restoredAgain.wait(20000));
    QCOMPARE(second.comparePage()->chartCount(), 2);
    QCOMPARE(second.comparePage()->panel(1)->settings().metric, std::string("test_accuracy"));
  }

  // What the command line asks while the saved layout is being read (--page compare --chart
  // ...) wins over it, but only what changes something: the command line passes the default
  // metric whether or not --chart was given. Asking does not write the project.
  void askedWhileRestoringWinsOverTheSavedLayout() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::CompareLayout saved;
    saved.charts = {settings("test_accuracy", ui::ChartX::kStep, ui::MemberReduction::kMean, 0.0),
                    settings("step_ms", ui::ChartX::kStep, ui::MemberReduction::kMean, 0.5)};
    saved.runs = std::vector<int64_t>{2};
    core::ProjectStore::open(path)->setMetadata(ui::kCompareLayoutKey,
                                                ui::compareLayoutToJson(saved));
    ui::ComparePage page;
    QSignalSpy restored(&page, &ui::ComparePage::layoutRestored);
    QSignalSpy written(&page, &ui::ComparePage::layoutSaved);
    QSignalSpy shown(&page, &ui::ComparePage::chartShown);
    page.setSnapshot(ui_test::snapshotAt(path));
    page.setChosenRuns({1, 3});
    page.setMetric("loss");  // the default: changes nothing, the saved metric stays
    page.setXAxis(ui::ChartX::kWallSeconds);
    page.setReduction(ui::MemberReduction::kMean);
    QVERIFY(restored.wait(20000));
    QCOMPARE(page.chartCount(), 2);
    QCOMPARE(page.panel(0)->settings(),
             settings("test_accuracy", ui::ChartX::kWallSeconds, ui::MemberReduction::kMean, 0.0));
    QCOMPARE(page.panel(1)->settings(), saved.charts[1]);
    QCOMPARE(page.runsModel()->chosen(), (std::vector<int64_t>{1, 3}));
    if (shown.isEmpty()) QVERIFY(shown.wait(20000));
    QCOMPARE(page.chart()->curves().size(), std::size_t{2});
    QCOMPARE(page.chart()->xAxis->label(), QString("wall time (s)"));
    QVERIFY(!page.layoutWritePending());  // nothing written, nothing scheduled
    QVERIFY(written.isEmpty());
    QCOMPARE(storedLayout(path), std::optional<std::string>(ui::compareLayoutToJson(saved)));
  }

  // A chart too short for a two-line y-axis label (several charts on a small screen) says what
  // was done with the workers' series in its title instead.
  void shortChartsMoveTheLabelsSecondLineIntoTheTitle() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::ComparisonRequest r;
    r.metric = "loss";
    r.runIds = {1, 2};
    ui::ComparisonChart chart;
    chart.setData(ui_test::comparisonAt(path, r));
    chart.resize(800, 500);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QCOMPARE(chart.yAxis->label(), QString("loss\nmean over workers at each step"));
    QVERIFY(!chart.title().contains("mean over workers"));
    chart.resize(800, 250);
    QTRY_COMPARE(chart.yAxis->label(), QString("loss"));
    QVERIFY2(chart.title().endsWith("(mean over workers at each step)"), qPrintable(chart.title()));
    chart.setSmoothing(0.5);  // a redraw keeps it
    QCOMPARE(chart.yAxis->label(), QString("loss"));
    // An export is laid out for its own size (as `dtlab --chart ... --export` draws it), and
    // the chart on screen stays as it was.
    const QString svg = dir.filePath("tall.svg");
    ui::exportChart(chart, svg, {QSize(800, 500), 96});
    QFile file(svg);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray drawn = file.readAll();
    QVERIFY(drawn.contains("mean over workers at each step"));
    QVERIFY(!drawn.contains("(mean over workers at each step)"));
    QCOMPARE(chart.yAxis->label(), QString("loss"));
    QVERIFY(chart.title().endsWith("(mean over workers at each step)"));
    chart.resize(800, 500);
    QTRY_COMPARE(chart.yAxis->label(), QString("loss\nmean over workers at each step"));
  }

  // Garbage in the key: the project opens, the page starts as a project without a layout and
  // says why; the key is left as it was until the user changes the layout.
  void garbageLayoutGivesTheDefaultAndAMessage() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    core::ProjectStore::open(path)->setMetadata(ui::kCompareLayoutKey, "{\"charts\": [oops");
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    window.openProject(QString::fromStdString(path));
    QVERIFY(QSignalSpy(&window, &ui::MainWindow::projectLoaded).wait(20000));
    ui::ComparePage* page = window.comparePage();
    QSignalSpy notice(page, &ui::ComparePage::notice);
    QSignalSpy failed(page, &ui::ComparePage::failed);
    QSignalSpy shown(page, &ui::ComparePage::chartShown);
    window.showCompare();
    QVERIFY(shown.wait(20000));
    QCOMPARE(notice.count(), 1);
    const QString message = notice[0][0].toString();
    QVERIFY2(message.contains("ui.compare_layout") && message.contains("not a JSON object"),
             qPrintable(message));
    QVERIFY(failed.isEmpty());
    QCOMPARE(page->chartCount(), 1);
    QCOMPARE(page->request().metric, std::string("loss"));
    QCOMPARE(page->runsModel()->chosen(), (std::vector<int64_t>{1, 2, 3}));
    QCOMPARE(page->chart()->curves().size(), std::size_t{3});
    QCOMPARE(storedLayout(path), std::optional<std::string>("{\"charts\": [oops"));

    // Unknown fields: what is known is restored, the rest named.
    core::ProjectStore::open(path)->setMetadata(
        ui::kCompareLayoutKey,
        R"({"charts": [{"metric": "test_accuracy", "colour": "red"}], "wobble": 1})");
    auto fresh = std::make_unique<ui::ComparePage>();
    QSignalSpy freshNotice(fresh.get(), &ui::ComparePage::notice);
    QSignalSpy restored(fresh.get(), &ui::ComparePage::layoutRestored);
    fresh->setSnapshot(ui_test::snapshotAt(path));
    QVERIFY(restored.wait(20000));
    QCOMPARE(fresh->chartCount(), 1);
    QCOMPARE(fresh->request().metric, std::string("test_accuracy"));
    QCOMPARE(freshNotice.count(), 1);
    QVERIFY(freshNotice[0][0].toString().contains("'colour'"));
    QVERIFY(freshNotice[0][0].toString().contains("'wobble'"));
  }

  // The measured strategy table: every column sorts, numbers as numbers, runs without a
  // figure last in either order; staleness and communication show "–" with a reason when a
  // run did not record them.
  void tableSortsEveryColumnWithUnknownsLast() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.dtlab").toStdString();
    {
      auto store = core::ProjectStore::create(path);
      storedRun(*store, "slow", 90.0, 12.5);            // 1
      storedRun(*store, "fast", 1000.0, std::nullopt);  // 2: target not reached
      storedRun(*store, "middle", 450.5, 3.0);          // 3
      storedRun(*store, "tenfold", 9.0, 40.0);          // 4: 9 < 90 as numbers, not as text
      core::RunStart running;
      running.name = "running";
      running.strategy = "async_ps";
      store->beginRun(running);  // 5: no summary yet
    }
    M model;
    ui::RunComparisonSortModel sorted;
    sorted.setSourceModel(&model);
    QAbstractItemModelTester t1(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t2(&sorted, QAbstractItemModelTester::FailureReportingMode::QtTest);
    // Summaries written before the staleness and communication figures existed lack them.
    ui::ProjectSnapshot older = ui_test::snapshotAt(path);
    for (nlohmann::json& summary : older.summaries)
      for (const char* key : {"mean_staleness", "max_staleness", "bytes_per_sample"})
        if (summary.is_object()) summary.erase(key);
    model.setSnapshot(older);
    QCOMPARE(sorted.rowCount(), 5);

    sorted.sort(M::kSamplesPerSColumn, Qt::AscendingOrder);
    QCOMPARE(shownOrder(sorted), (std::vector<int64_t>{4, 1, 3, 2, 5}));
    sorted.sort(M::kSamplesPerSColumn, Qt::DescendingOrder);
    QCOMPARE(shownOrder(sorted), (std::vector<int64_t>{2, 3, 1, 4, 5}));
    sorted.sort(M::kTimeToTargetColumn, Qt::AscendingOrder);
    QCOMPARE(shownOrder(sorted), (std::vector<int64_t>{3, 1, 4, 2, 5}));
    sorted.sort(M::kTimeToTargetColumn, Qt::DescendingOrder);
    QCOMPARE(shownOrder(sorted), (std::vector<int64_t>{4, 1, 3, 2, 5}));
    sorted.sort(M::kRunColumn, Qt::DescendingOrder);
    QCOMPARE(shownOrder(sorted), (std::vector<int64_t>{5, 4, 3, 2, 1}));
    sorted.sort(M::kOutcomeColumn, Qt::DescendingOrder);
    QCOMPARE(shownOrder(sorted).front(), int64_t{5});  // "running" after "completed"'s words
    // Every column sorts without upsetting the tester, unknowns last both ways.
    for (int column = 0; column < M::kColumnCount; ++column) {
      for (const Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
        sorted.sort(column, order);
        bool unknownSeen = false;
        for (int row = 0; row < sorted.rowCount(); ++row) {
          const bool unknown = !sorted.index(row, column).data(M::SortRole).isValid();
          QVERIFY2(unknown || !unknownSeen, qPrintable(QString("column %1").arg(column)));
          unknownSeen = unknownSeen || unknown;
        }
      }
    }

    // Staleness and communication per sample: not in these summaries.
    const QModelIndex stale = model.index(0, M::kMeanStalenessColumn);
    QCOMPARE(stale.data().toString(), QString("\u2013"));
    QVERIFY(!stale.data(M::ValueRole).isValid());
    QVERIFY2(stale.data(Qt::ToolTipRole).toString().contains("did not record"),
             qPrintable(stale.data(Qt::ToolTipRole).toString()));
    QVERIFY(model.index(0, M::kBytesPerSampleColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains("bytes_per_sample"));
    QVERIFY(
        model.index(4, M::kStepsColumn).data(Qt::ToolTipRole).toString().contains("no summary"));
    QCOMPARE(model.headerData(M::kMaxStalenessColumn, Qt::Horizontal).toString(),
             QString("Stale.\nmax"));

    // When a summary has them, they are shown and sort as numbers.
    ui::ProjectSnapshot snapshot = older;
    snapshot.summaries[0]["mean_staleness"] = 1.5;
    snapshot.summaries[0]["max_staleness"] = 4;
    snapshot.summaries[0]["bytes_per_sample"] = 2048.0;
    snapshot.summaries[2]["bytes_per_sample"] = 512.0;
    model.setSnapshot(snapshot);
    QCOMPARE(model.index(0, M::kMeanStalenessColumn).data().toString(), QString("1.50"));
    QCOMPARE(model.index(0, M::kMaxStalenessColumn).data().toString(), QString("4"));
    QCOMPARE(model.index(0, M::kBytesPerSampleColumn).data().toString(), QString("2048"));
    sorted.sort(M::kBytesPerSampleColumn, Qt::AscendingOrder);
    QCOMPARE(shownOrder(sorted).front(), int64_t{3});
    QCOMPARE(shownOrder(sorted)[1], int64_t{1});
    model.setChosen({1});
    // Staleness, then divergence (none in a synchronous summary: empty), then the rest.
    QVERIFY2(model.toCsv().contains(",100,1.5,4,,12.5,"), qPrintable(model.toCsv()));
    QVERIFY(model.toCsv().contains(",2048,"));
  }

  // Ctrl+C in the table (and the context menu's Copy) puts the selected rows, in the table's
  // order, with a header line, as tab-separated text on the clipboard.
  void copyPutsTheSelectedRowsOnTheClipboard() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    auto page = openPage(path);
    QVERIFY(page);
    QTableView* view = page->runsView();
    // Two clicks on the Steps header: descending, 30, 25, 20 steps: runs 1, 3, 2. The title
    // says so (Qt's own indicator stays hidden: it would widen every column).
    QHeaderView* header = view->horizontalHeader();
    const QPoint steps(header->sectionViewportPosition(M::kStepsColumn) + 8, header->height() / 2);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, steps);
    QCOMPARE(page->sortedRuns()->sortColumn(), int(M::kStepsColumn));
    QCOMPARE(page->sortedRuns()->sortOrder(), Qt::AscendingOrder);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, steps);
    QCOMPARE(page->sortedRuns()->sortOrder(), Qt::DescendingOrder);
    QCOMPARE(shownOrder(*page->sortedRuns()), (std::vector<int64_t>{1, 3, 2}));
    QCOMPARE(page->sortedRuns()->headerData(M::kStepsColumn, Qt::Horizontal).toString(),
             QString("Steps \u25bc"));
    QVERIFY(!header->isSortIndicatorShown());
    view->selectionModel()->select(page->sortedRuns()->index(0, 0),
                                   QItemSelectionModel::Select | QItemSelectionModel::Rows);
    view->selectionModel()->select(page->sortedRuns()->index(2, 0),
                                   QItemSelectionModel::Select | QItemSelectionModel::Rows);
    QGuiApplication::clipboard()->clear();
    QAction* copy = nullptr;
    for (QAction* a : view->actions())
      if (a->shortcut() == QKeySequence(QKeySequence::Copy)) copy = a;
    QVERIFY(copy != nullptr);  // in the context menu too (Qt::ActionsContextMenu)
    QCOMPARE(view->contextMenuPolicy(), Qt::ActionsContextMenu);
    copy->trigger();
    const QStringList lines = QGuiApplication::clipboard()->text().split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    const QStringList titles = lines[0].split('\t');
    QCOMPARE(titles.size(), int(M::kColumnCount));
    QCOMPARE(titles[0], QString("Run"));
    QCOMPARE(titles[M::kSamplesPerSColumn], QString("Samples/s"));
    QCOMPARE(titles[M::kMeanStalenessColumn], QString("Mean staleness"));
    const QStringList first = lines[1].split('\t');
    QCOMPARE(first.size(), int(M::kColumnCount));
    QCOMPARE(first[0], QString("#1 first"));
    QCOMPARE(first[M::kStepsColumn], QString("30"));
    QCOMPARE(first[M::kTimeToTargetColumn], QString("none set"));
    QCOMPARE(first[M::kMeanStalenessColumn], QString("0.00"));  // synchronous: never stale
    QCOMPARE(first[M::kAccuracyColumn],
             page->runsModel()->index(0, M::kAccuracyColumn).data().toString());
    QVERIFY(lines[2].startsWith("#2 second\tsingle\t20\t"));

    // By the keyboard, too.
    QGuiApplication::clipboard()->clear();
    view->selectionModel()->clearSelection();
    view->selectionModel()->select(page->sortedRuns()->index(1, 0),
                                   QItemSelectionModel::Select | QItemSelectionModel::Rows);
    page->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(page.get()));
    view->setFocus();
    QTest::keySequence(view, QKeySequence::Copy);
    QTRY_VERIFY(QGuiApplication::clipboard()->text().contains("\n#3 third\t"));
  }

  // Hundreds of runs stored cheaply: all listed, sortable, the latest few chosen, and only the
  // chosen ones become curves.
  void hundredsOfRunsOnlyChosenOnesAreDrawn() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("many.dtlab").toStdString();
    {
      auto store = core::ProjectStore::create(path);
      for (int i = 1; i <= 300; ++i)
        storedRun(*store, "run" + std::to_string(i), 10.0 * ((i * 37) % 300),
                  i % 3 == 0 ? std::nullopt : std::optional<double>(i));
    }
    QElapsedTimer clock;
    clock.start();
    auto page = openPage(path);
    QVERIFY(page);
    QAbstractItemModelTester t1(page->runsModel(),
                                QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t2(page->sortedRuns(),
                                QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(page->runsModel()->rowCount(), 300);
    std::vector<int64_t> latest;
    for (int64_t id = 293; id <= 300; ++id) latest.push_back(id);
    QCOMPARE(page->runsModel()->chosen(), latest);
    QCOMPARE(page->chart()->curves().size(), latest.size());
    page->setSmoothing(0.0);
    QCOMPARE(page->chart()->graphCount(), 8);

    page->setChosenRuns({5, 150, 299});
    QSignalSpy shown(page.get(), &ui::ComparePage::chartShown);
    QVERIFY(shown.wait(20000));
    QCOMPARE(page->chart()->graphCount(), 3);
    QCOMPARE(page->chart()->curves()[1].runId, int64_t{150});

    page->runsView()->sortByColumn(M::kTimeToTargetColumn, Qt::DescendingOrder);
    const std::vector<int64_t> order = shownOrder(*page->sortedRuns());
    QCOMPARE(order.size(), std::size_t{300});
    QCOMPARE(order.front(), int64_t{299});
    QCOMPARE(order[199] % 3, int64_t{1});  // the last of the 200 with a time
    QCOMPARE(order[200] % 3, int64_t{0});  // then the 100 without
    QVERIFY2(clock.elapsed() < 10000, qPrintable(QString::number(clock.elapsed())));
  }
};

QTEST_MAIN(TestCompareLayout)
#include "test_compare_layout.moc"
