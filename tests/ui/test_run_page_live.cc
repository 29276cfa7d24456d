// The run page while its run is executed from the window: the metric table grows from the live
// feed with the figures the store will give, the events are listed whole, the layout is
// remembered, and "Follow the running run" decides whether the next variant's run replaces
// the one on screen. Offscreen.
#include <QtTest/QAbstractItemModelTester>
#include <QtTest/QtTest>

#include <cmath>
#include <span>

#include <QtCore/QSettings>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtGui/QTextBlock>
#include <QtGui/QTextCursor>
#include <QtWidgets/QApplication>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QScrollBar>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTreeView>

#include "core/metrics/metric_table.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "ui/controller/experiment_controller.h"
#include "ui/controller/live_feed.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_snapshot.h"
#include "ui/models/run_metrics_model.h"
#include "ui/pages/run_page.h"

#include "tests/ui/ui_support.h"

using namespace dtlab;
using Model = ui::RunMetricsModel;

namespace {

constexpr int kWorkers = 2;
constexpr int kSteps = 40;

int rowOf(std::string_view name) {
  return static_cast<int>(core::findMetric(name) - core::kMetricTable.data());
}

// A run's points in the order the controller's feed carries them: at each step every
// worker-scope metric of worker 0, then of worker 1 (both at the same step: the store's
// "last" over all workers is the later of the two), every 5 steps each node's, every 10
// the run's test metrics. No value is a float exactly (the store keeps floats). The loss of
// worker w at step s is 2/s + 0.1 w + 0.01.
std::vector<ui::LivePoint> runPoints(qint64 runId) {
  std::vector<ui::LivePoint> out;
  const auto add = [&](int metric, int worker, int node, int step, double value) {
    ui::LivePoint p;
    p.runId = runId;
    p.metric = metric;
    p.worker = worker;
    p.node = node;
    p.step = step;
    p.wallMs = 12.5 * step + worker;
    p.value = value;
    out.push_back(p);
  };
  for (int step = 1; step <= kSteps; ++step) {
    for (int w = 0; w < kWorkers; ++w)
      for (const core::MetricInfo* m : core::metricsOf(core::MetricScope::kWorker)) {
        const int metric = static_cast<int>(m - core::kMetricTable.data());
        const double value = m->name == "loss"
                                 ? 2.0 / step + 0.1 * w + 0.01
                                 : (metric + 1) * (1.3 + 0.7 * std::sin(0.3 * step + w));
        add(metric, w, -1, step, value);
      }
    if (step % 5 == 0)
      for (int n = 0; n < kWorkers; ++n)
        add(rowOf("cpu_util"), -1, n, step, 0.1 + 0.013 * step * (n + 1));
    if (step % 10 == 0) {
      add(rowOf("test_loss"), -1, -1, step, 1.0 / step);
      add(rowOf("test_accuracy"), -1, -1, step, 0.5 + step / 97.0);
    }
  }
  return out;
}

// Records `points` as the coordinator's store sink does (each worker its own node), in one
// commit.
void store(const std::string& path, qint64 runId, std::span<const ui::LivePoint> points) {
  core::AppenderOptions options;
  options.commitInterval = std::chrono::hours(1);
  core::PointAppender appender(path, options);
  for (const ui::LivePoint& p : points) {
    const core::MetricInfo& m = core::kMetricTable[static_cast<std::size_t>(p.metric)];
    const int node = m.scope == core::MetricScope::kWorker ? p.worker
                     : m.scope == core::MetricScope::kNode ? p.node
                                                           : core::kNoNode;
    const int worker = m.scope == core::MetricScope::kWorker ? p.worker : core::kNoWorker;
    appender.append(appender.series(runId, node, worker, std::string(m.name)), p.step, p.wallMs,
                    p.value);
  }
  appender.close();
}

std::unique_ptr<ui::RunPage> shownPage(const ui::RunDetail& detail) {
  auto page = std::make_unique<ui::RunPage>();
  page->resize(1400, 900);
  page->show();
  page->showRun(detail);
  if (!QTest::qWaitForWindowExposed(page.get())) qWarning("the page was not exposed");
  return page;
}

// The live feed's points in the batches its 40 ms timer would take.
void feed(ui::RunPage& page, const std::vector<ui::LivePoint>& points, std::size_t batch = 37) {
  for (std::size_t i = 0; i < points.size(); i += batch)
    page.appendLive(std::vector<ui::LivePoint>(
        points.begin() + static_cast<long>(i),
        points.begin() + static_cast<long>(std::min(points.size(), i + batch))));
}

// Every cell of the table, as shown and as sorted.
QStringList cells(const QAbstractItemModel& m) {
  QStringList out;
  for (int r = 0; r < m.rowCount(); ++r)
    for (int c = 0; c < m.columnCount(); ++c)
      out << QString("%1/%2: %3 | %4")
                 .arg(r)
                 .arg(c)
                 .arg(m.index(r, c).data().toString(),
                      QString::number(m.index(r, c).data(Model::ValueRole).toDouble(), 'g', 17));
  return out;
}

int rowNamed(const QAbstractItemModel& m, const QString& key) {
  for (int r = 0; r < m.rowCount(); ++r)
    if (m.index(r, Model::kMetricColumn).data().toString() == key) return r;
  return -1;
}

double valueAt(const QAbstractItemModel& m, const QString& key, int column) {
  return m.index(rowNamed(m, key), column).data(Model::ValueRole).toDouble();
}

}  // namespace

class TestRunPageLive : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  int projects_ = 0;

  // A new project with one running run (no points yet); its id.
  std::pair<std::string, qint64> newRun() {
    const std::string path = dir_.filePath(QString("p%1.dtlab").arg(++projects_)).toStdString();
    auto s = core::ProjectStore::create(path);
    core::RunStart start;
    start.name = "live";
    start.strategy = "sync_allreduce";
    return {path, s->beginRun(start)};
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().remove("runPage");  // the layout's defaults, whatever an earlier run saved
  }

  // Points that arrive while the page shows the run fill its metric table, row by row as keys
  // appear, without a reset; and the rows are what the store gives once it has the same
  // points (the table the page shows when the run is read again at its end).
  void liveTableEqualsTheStoredOne() {
    const auto [path, runId] = newRun();
    const std::vector<ui::LivePoint> points = runPoints(runId);
    auto page = shownPage(ui_test::runDetailAt(path, runId));
    Model& live = *page->metricsModel();
    QCOMPARE(live.rowCount(), 0);
    QAbstractItemModelTester tester(&live, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy resets(&live, &QAbstractItemModel::modelReset);
    QSignalSpy inserted(&live, &QAbstractItemModel::rowsInserted);
    QSignalSpy changed(&live, &QAbstractItemModel::dataChanged);
    ui::LivePoint other = points.front();  // another run's point: not this table's
    other.runId = runId + 1;
    other.value = 1e9;
    page->appendLive({other});
    QCOMPARE(live.rowCount(), 0);

    feed(*page, points);
    const int keys = static_cast<int>(core::metricsOf(core::MetricScope::kWorker).size()) + 3;
    QCOMPARE(live.rowCount(), keys);
    QCOMPARE(inserted.size(), keys);  // one insert a key, never a reset
    QCOMPARE(resets.size(), 0);
    QVERIFY(changed.size() >= static_cast<int>(points.size() / 37));
    // In key order, as the store lists them.
    QCOMPARE(live.index(0, Model::kMetricColumn).data().toString(), QString("batch_share"));
    // The loss over both workers: 80 points, the last worker 1's at step 40, as floats.
    QCOMPARE(valueAt(live, "loss", Model::kPointsColumn), 2.0 * kSteps);
    QCOMPARE(valueAt(live, "loss", Model::kLastColumn),
             static_cast<double>(static_cast<float>(2.0 / kSteps + 0.1 + 0.01)));
    QCOMPARE(valueAt(live, "loss", Model::kMinColumn),
             static_cast<double>(static_cast<float>(2.0 / kSteps + 0.01)));
    QCOMPARE(valueAt(live, "loss", Model::kMaxColumn),
             static_cast<double>(static_cast<float>(2.0 + 0.1 + 0.01)));
    QCOMPARE(valueAt(live, "cpu_util", Model::kPointsColumn), 2.0 * kSteps / 5);
    QCOMPARE(valueAt(live, "test_accuracy", Model::kLastColumn),
             static_cast<double>(static_cast<float>(0.5 + kSteps / 97.0)));
    QCOMPARE(live.index(rowNamed(live, "loss"), Model::kLastColumn).data().toString(),
             QString("0.16"));

    store(path, runId, points);
    auto reread = shownPage(ui_test::runDetailAt(path, runId));
    QCOMPARE(cells(live), cells(*reread->metricsModel()));
  }

  // Shown while it runs, the page has the store's table so far; the feed may bring points
  // the store already had (up to the step each series had reached): each is counted once.
  void pointsTheStoreAlreadyHadCountOnce() {
    const auto [path, runId] = newRun();
    const std::vector<ui::LivePoint> points = runPoints(runId);
    // Cut between two steps: the store's "last" of a key that several workers report at the
    // same step is the one its commit wrote last, which a cut within a step may reorder.
    std::size_t half = points.size() / 2;
    while (points[half].step == points[half - 1].step) ++half;
    store(path, runId, std::span(points).first(half));
    auto page = shownPage(ui_test::runDetailAt(path, runId));
    QVERIFY(rowNamed(*page->metricsModel(), "loss") >= 0);
    QCOMPARE(valueAt(*page->metricsModel(), "test_accuracy", Model::kPointsColumn), 2.0);
    QSignalSpy resets(page->metricsModel(), &QAbstractItemModel::modelReset);
    feed(*page, points);  // from the first point on
    QCOMPARE(resets.size(), 0);
    store(path, runId, std::span(points).subspan(half));
    auto reread = shownPage(ui_test::runDetailAt(path, runId));
    QCOMPARE(valueAt(*page->metricsModel(), "loss", Model::kPointsColumn), 2.0 * kSteps);
    QCOMPARE(cells(*page->metricsModel()), cells(*reread->metricsModel()));
  }

  // Each event is one line, wrapped at the panel's width rather than cut off, with the whole
  // event in its tooltip; one that comes live joins the list, and so does its tooltip.
  void eventsAreListedWhole() {
    const std::string detail =
        "node 1 (127.0.0.1:7002) missed 3 heartbeats -> its shard of the batch moves to nodes 0 "
        "and 2; the all-reduce ring is rebuilt without it, and the run goes on from the last "
        "step every node had finished, losing the steps since (end of detail)";
    ui::RunDetail d;
    d.run.id = 7;
    d.run.name = "events";
    d.events = {{0, 10.0, "start", "rank 0/3 on cpu"}, {30, 4500.0, "node_lost", detail}};
    auto page = shownPage(d);
    QPlainTextEdit* events = page->eventsView();
    QCOMPARE(events->document()->blockCount(), 2);
    QCOMPARE(events->lineWrapMode(), QPlainTextEdit::WidgetWidth);
    const QTextBlock lost = events->document()->lastBlock();
    QVERIFY(lost.text().endsWith("node_lost   " + QString::fromStdString(detail)));
    QTRY_VERIFY2(lost.layout()->lineCount() > 1, "a long event wraps");
    // The panel shows every line of it: no horizontal scrolling.
    QVERIFY(!events->horizontalScrollBar()->isVisible() ||
            events->horizontalScrollBar()->maximum() == 0);

    QTextCursor at(lost);
    const QString tip = page->eventToolTip(events->cursorRect(at).center());
    QVERIFY2(tip.contains(QString::fromStdString(detail).toHtmlEscaped()), qPrintable(tip));
    QVERIFY(tip.contains("node_lost") && tip.contains("step 30"));
    QVERIFY(page->eventToolTip(
                    events->cursorRect(QTextCursor(events->document()->firstBlock())).center())
                .contains("rank 0/3 on cpu"));

    ui::LivePoint rebalance;
    rebalance.runId = 7;
    rebalance.metric = -1;
    rebalance.event = std::make_shared<const core::RunEvent>(
        core::RunEvent{45, 6000.0, "rebalance", "shares 0.5 0.5 -> 0.6 0.4"});
    page->appendLive({rebalance});
    QCOMPARE(events->document()->blockCount(), 3);
    QVERIFY(
        events->document()->lastBlock().text().endsWith("rebalance   shares 0.5 0.5 -> 0.6 0.4"));
    QVERIFY(page->eventToolTip(
                    events->cursorRect(QTextCursor(events->document()->lastBlock())).center())
                .contains("shares 0.5 0.5 -&gt; 0.6 0.4"));
    // Shown again (re-read while recorded) with more events: the list grows where the user
    // scrolled it to, rather than being replaced.
    d.events.push_back({45, 6000.0, "rebalance", "shares 0.5 0.5 -> 0.6 0.4"});
    for (int i = 0; i < 60; ++i) d.events.push_back({46 + i, 6100.0 + i, "rebalance", "again"});
    page->showRun(d);
    QCOMPARE(events->document()->blockCount(), 63);
    d.events.push_back({200, 9000.0, "finish", "completed"});
    QTRY_VERIFY(events->verticalScrollBar()->maximum() > 20);
    events->verticalScrollBar()->setValue(10);
    page->showRun(d);
    QCOMPARE(events->document()->blockCount(), 64);
    QCOMPARE(events->verticalScrollBar()->value(), 10);
    QVERIFY(events->document()->lastBlock().text().endsWith("finish      completed"));
  }

  // By default the events get a fair share of the page: a quarter of its height or more,
  // half the width of the lower half. Where the user puts the splitters, and the follow
  // toggle, outlive the page.
  void layoutAndFollowAreRemembered() {
    QSettings().remove("runPage");
    ui::RunDetail d;
    d.run.id = 1;
    QList<int> heights, widths;
    {
      auto page = shownPage(d);
      QVERIFY(page->followToggle()->isChecked());  // follows by default
      QVERIFY(page->followsRunningRun());
      heights = page->splitter()->sizes();
      QVERIFY2(heights[1] * 4 >= heights[0] + heights[1], "the lower half: a quarter or more");
      widths = page->lowerSplitter()->sizes();
      QVERIFY2(widths[1] * 5 >= (widths[0] + widths[1]) * 2, "the events: 40 % or more");
      page->lowerSplitter()->setSizes({widths[0] / 2, widths[1] + widths[0] - widths[0] / 2});
      page->splitter()->setSizes({heights[0] - 60, heights[1] + 60});
      widths = page->lowerSplitter()->sizes();
      heights = page->splitter()->sizes();
      page->followToggle()->click();
      QVERIFY(!page->followsRunningRun());
      page->saveLayout();
    }
    auto again = shownPage(d);
    QVERIFY(!again->followsRunningRun());
    QCOMPARE(again->lowerSplitter()->sizes(), widths);
    QCOMPARE(again->splitter()->sizes(), heights);
    QSettings().remove("runPage");
  }

  // When the next run of an experiment executed from the window starts (the controller's
  // runStarted, as ClusterController emits it for each variant), the window shows it, unless
  // the user turned "Follow the running run" off while looking at a run.
  void followDecidesWhetherTheNextRunIsShown() {
    QSettings().remove("runPage");
    const std::string path = dir_.filePath("follow.dtlab").toStdString();
    {
      auto s = core::ProjectStore::create(path);
      ui_test::recordRun(*s, ui_test::smallSpec("first", 10));
      ui_test::recordRun(*s, ui_test::smallSpec("second", 10));
    }
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.resize(1600, 1000);
    window.show();
    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    window.openProject(QString::fromStdString(path));
    QVERIFY(loaded.wait(20000));
    QSignalSpy shown(&window, &ui::MainWindow::runShown);
    window.selectRun(1);
    QVERIFY(shown.wait(20000));
    QCOMPARE(window.runPage()->runId(), 1);
    const auto selected = [&] {
      return window.explorerView()->currentIndex().data(ui::ExplorerModel::IdRole).toLongLong();
    };

    // Off: the reload the start causes leaves run 1 selected and on screen.
    window.runPage()->followToggle()->click();
    QVERIFY(!window.runPage()->followsRunningRun());
    QSignalSpy reset(window.explorerModel(), &QAbstractItemModel::modelReset);
    shown.clear();
    emit window.controller()->runStarted(2, "second");
    QVERIFY(reset.wait(20000));  // the snapshot read after the start has been applied
    QCOMPARE(selected(), 1);
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(window.runPage()));
    QCOMPARE(window.runPage()->runId(), 1);
    QVERIFY(shown.isEmpty());  // and the finished run on screen is not read again

    // On: the new run replaces it.
    window.runPage()->followToggle()->click();
    QVERIFY(window.runPage()->followsRunningRun());
    emit window.controller()->runStarted(2, "second");
    QVERIFY(shown.wait(20000));
    QCOMPARE(shown.last().first().toLongLong(), 2);
    QCOMPARE(selected(), 2);
    QCOMPARE(window.runPage()->runId(), 2);
    QSettings().remove("runPage");
  }
};

QTEST_MAIN(TestRunPageLive)
#include "test_run_page_live.moc"
