// The run page's dashboard, on a run recorded for real: two dtlab-node daemons on loopback
// driven by the GUI's own controller, its points read back from the project file and, as
// they were measured, from the controller's live feed. Offscreen.
#include <QtTest/QtTest>

#include <map>
#include <set>

#include <qcustomplot.h>

#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QApplication>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QPlainTextEdit>

#include "core/metrics/event_facts.h"
#include "core/metrics/metric_table.h"
#include "core/store/project_store.h"
#include "ui/charts/run_dashboard.h"
#include "ui/controller/cluster_controller.h"
#include "ui/controller/live_feed.h"
#include "ui/models/project_snapshot.h"
#include "ui/pages/run_page.h"

#include "tests/ui/ui_support.h"

using namespace dtlab;
using Dash = ui::RunDashboard;

namespace {

constexpr Dash::Chart kCharts[] = {Dash::kLossChart,     Dash::kThroughputChart,
                                   Dash::kStepTimeChart, Dash::kUtilisationChart,
                                   Dash::kScheduleChart, Dash::kChosenChart};

QString str(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// The series keys shown on a chart, e.g. {"loss, worker 0", "test_accuracy"}.
QSet<QString> seriesOn(const Dash& d, Dash::Chart chart) {
  QSet<QString> names;
  for (QCPGraph* g : d.graphs(chart)) names.insert(g->property("fullName").toString());
  return names;
}

int pointsOn(const Dash& d, Dash::Chart chart) {
  int n = 0;
  for (QCPGraph* g : d.graphs(chart)) n += g->data()->size();
  return n;
}

}  // namespace

class TestDashboard : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path_;
  qint64 runId_ = 0;
  std::vector<ui::LivePoint> live_;  // what the controller's feed carried during the run
  ui::RunDetail detail_;

  // A page showing the recorded run, shown at the size the README's picture has.
  std::unique_ptr<ui::RunPage> shownPage(const ui::RunDetail& detail) {
    auto page = std::make_unique<ui::RunPage>();
    page->resize(1400, 900);
    page->show();
    page->showRun(detail);
    return page;
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    path_ = dir_.filePath("dash.dtlab").toStdString();
    core::ExperimentSpec spec = ui_test::smallSpec("dash", 0);
    spec.training.maxSteps = 0;
    spec.training.maxSeconds = 2.5;  // long enough for a few node samples (every 500 ms)
    spec.training.evalInterval = 25;
    spec.training.checkpointEvery = 40;  // so that the checkpoints' own metrics are recorded
    spec.cluster.localNodes = 2;
    ui_test::createProjectWithExperiment(path_, spec, 2);

    // The run, executed as the window executes it: the controller starts two local daemons,
    // records into the project and feeds the live charts.
    ui::ClusterController controller;
    ui::RunRequest request;
    request.projectPath = QString::fromStdString(path_);
    request.spec = spec;
    request.spec.cluster.localNodes = 2;
    QObject::connect(controller.liveFeed(), &ui::LiveFeed::available, &controller, [&] {
      const std::vector<ui::LivePoint> points = controller.liveFeed()->take();
      live_.insert(live_.end(), points.begin(), points.end());
    });
    QSignalSpy finished(&controller, &ui::ExperimentController::finished);
    QSignalSpy runFinished(&controller, &ui::ExperimentController::runFinished);
    QVERIFY(controller.start(request));
    QVERIFY(finished.wait(120000));
    QCOMPARE(runFinished.size(), 1);
    QCOMPARE(runFinished.first().at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);
    runId_ = runFinished.first().at(0).toLongLong();
    const std::vector<ui::LivePoint> rest = controller.liveFeed()->take();
    live_.insert(live_.end(), rest.begin(), rest.end());
    {
      // Events the strategies and the coordinator record (none of them happen on two equal
      // local nodes by themselves), stored the way the coordinator stores them.
      auto store = core::ProjectStore::open(path_);
      store->addEvent(runId_, {20, 300.0, "rebalance", "shares 0.5 0.5 -> 0.6 0.4"});
      store->addEvent(runId_, {40, 600.0, "node_lost", "node 1 missed its heartbeat"});
      store->addEvent(runId_, {50, 750.0, "strategy_switch", "sync -> async at step 50",
                               core::eventData(core::PhaseFacts{.asynchronous = true})});
    }
    detail_ = ui_test::runDetailAt(path_, runId_);
  }

  // Every chart draws a series per worker (or node) of the recorded run, from the store.
  void everyChartHasASeriesPerWorkerAndNode() {
    auto page = shownPage(detail_);
    const Dash& d = *page->chart();
    QCOMPARE(seriesOn(d, Dash::kLossChart),
             (QSet<QString>{"loss, worker 0", "loss, worker 1", "test_loss", "test_accuracy"}));
    QCOMPARE(seriesOn(d, Dash::kThroughputChart),
             (QSet<QString>{"samples_per_s, worker 0", "samples_per_s, worker 1"}));
    QCOMPARE(seriesOn(d, Dash::kStepTimeChart),
             (QSet<QString>{"compute_ms, worker 0", "compute_ms, worker 1", "comm_ms, worker 0",
                            "comm_ms, worker 1", "wait_ms, worker 0", "wait_ms, worker 1",
                            "tail_ms, worker 0", "tail_ms, worker 1"}));
    QCOMPARE(seriesOn(d, Dash::kUtilisationChart),
             (QSet<QString>{"cpu_util, node 0", "cpu_util, node 1"}));
    // Each worker's share of the batch, and its staleness on the right axis (its own scale:
    // versions), with one legend entry per metric.
    QCOMPARE(seriesOn(d, Dash::kScheduleChart),
             (QSet<QString>{"batch_share, worker 0", "batch_share, worker 1", "staleness, worker 0",
                            "staleness, worker 1"}));
    for (QCPGraph* g : d.graphs(Dash::kScheduleChart))
      QCOMPARE(g->valueAxis()->axisType(),
               g->property("fullName").toString().startsWith("staleness") ? QCPAxis::atRight
                                                                          : QCPAxis::atLeft);
    QCOMPARE(d.legend(Dash::kScheduleChart)->itemCount(), 2);
    QCOMPARE(d.rect(Dash::kScheduleChart)->axis(QCPAxis::atRight)->label(),
             QString("staleness (versions)"));
    // Two equal workers: each has half of every batch.
    for (QCPGraph* g : d.graphs(Dash::kScheduleChart))
      if (g->property("fullName").toString().startsWith("batch_share"))
        QCOMPARE(g->data()->at(g->data()->size() - 1)->value, 0.5);
    for (Dash::Chart c : kCharts) {
      QVERIFY2(!d.graphs(c).isEmpty(), qPrintable(d.note(c)));
      for (QCPGraph* g : d.graphs(c))
        QVERIFY2(g->data()->size() > 0, qPrintable(g->property("fullName").toString()));
      QVERIFY(d.note(c).isEmpty());
    }
    // The loss curves hold every step the store kept (up to its downsampling bound).
    const int64_t steps = detail_.summary["steps"].get<int64_t>();
    QVERIFY(steps > 20);
    for (QCPGraph* g : d.graphs(Dash::kLossChart))
      if (g->property("fullName").toString().startsWith("loss"))
        QCOMPARE(g->data()->size(), static_cast<int>(std::min<int64_t>(steps, 2000)));
    // Units from the metric table on the axes.
    QCOMPARE(d.rect(Dash::kThroughputChart)->axis(QCPAxis::atLeft)->label(),
             QString("throughput (samples/s)"));
    QCOMPARE(d.rect(Dash::kStepTimeChart)->axis(QCPAxis::atLeft)->label(),
             QString("time per step (ms)"));
    QCOMPARE(d.rect(Dash::kLossChart)->axis(QCPAxis::atRight)->label(), QString("test_accuracy"));
    // The step-time legend has one entry per component, which hides it for every worker.
    QCOMPARE(d.legend(Dash::kStepTimeChart)->itemCount(), 4);
    QCOMPARE(d.legend(Dash::kThroughputChart)->itemCount(), 2);
  }

  // Each metric of the table can be chosen for the fifth chart: it draws the run's series of
  // it, with its unit, or says it was not recorded.
  void everyMetricOfTheTableCanBeChosen() {
    auto page = shownPage(detail_);
    const Dash& d = *page->chart();
    QComboBox* chooser = page->metricChooser();
    QCOMPARE(chooser->count(), static_cast<int>(core::kMetricTable.size()));
    std::map<std::string, int> seriesOf;
    for (const ui::RunDetail::Curve& c : detail_.curves) ++seriesOf[c.key];
    for (int i = 0; i < chooser->count(); ++i) {
      const core::MetricInfo& m = core::kMetricTable[static_cast<std::size_t>(i)];
      chooser->setCurrentIndex(i);
      emit chooser->activated(i);  // as a user's pick does
      QCOMPARE(d.chosenMetric(), std::string(m.name));
      const int expected = seriesOf[std::string(m.name)];
      if (m.name == core::metric::kDivergence || core::gpuOnly(m) || core::sequenceOnly(m)) {
        // Only asynchronous strategies measure divergence, only GPU workers the GPU's use and
        // memory, only runs on token sequences the perplexity; this synchronous CPU run on
        // vectors says so.
        QCOMPARE(expected, 0);
        QCOMPARE(d.graphs(Dash::kChosenChart).size(), 0);
        QVERIFY(d.note(Dash::kChosenChart).contains("not recorded"));
        continue;
      }
      QVERIFY2(expected > 0, m.name.data());  // a cluster run records every other metric
      QCOMPARE(d.graphs(Dash::kChosenChart).size(), expected);
      QVERIFY(d.note(Dash::kChosenChart).isEmpty());
      const QString label = d.rect(Dash::kChosenChart)->axis(QCPAxis::atLeft)->label();
      QVERIFY2(label.startsWith(str(m.name)), qPrintable(label));
      if (!m.unit.empty() && m.unit != "bytes")
        QVERIFY2(label.contains(str(m.unit)), qPrintable(label));
    }
    page->chooseMetric("test_accuracy");
    QVERIFY(d.rect(Dash::kChosenChart)->axis(QCPAxis::atLeft)->label() == QString("test_accuracy"));

    // A run trained in one process has no node samples: the chart says so.
    QTemporaryDir other;
    const std::string single = other.filePath("single.dtlab").toStdString();
    {
      auto store = core::ProjectStore::create(single);
      ui_test::recordRun(*store, ui_test::smallSpec("single", 20));
    }
    page->showRun(ui_test::runDetailAt(single, 1));
    page->chooseMetric("mem_bytes");
    QCOMPARE(d.graphs(Dash::kChosenChart).size(), 0);
    QCOMPARE(d.note(Dash::kChosenChart), QString("mem_bytes: not recorded in this run"));
    page->chooseMetric("staleness");
    QCOMPARE(d.graphs(Dash::kChosenChart).size(), 1);
    QVERIFY(d.note(Dash::kChosenChart).isEmpty());
    QCOMPARE(d.rect(Dash::kChosenChart)->axis(QCPAxis::atLeft)->label(),
             QString("staleness (versions)"));
  }

  // The points the controller fed during the run, appended live to a page that showed the
  // run as it started (no points yet), grow the chart of each metric by exactly them.
  void liveFeedOfEveryMetricGrowsTheRightChart() {
    std::set<int> kinds;
    QStringList events;
    for (const ui::LivePoint& p : live_)
      if (p.event != nullptr)
        events << QString::fromStdString(p.event->kind);
      else
        kinds.insert(p.metric);
    // Every row of the table travelled, but divergence, which a synchronous run does not measure,
    // the GPU's figures (a CPU run) and the perplexity (a run on vectors).
    QCOMPARE(kinds.size(), core::kMetricTable.size() - 4);
    for (const core::MetricInfo& m : core::kMetricTable)
      if (core::gpuOnly(m)) QVERIFY(!kinds.count(static_cast<int>(&m - core::kMetricTable.data())));
    // and the run's events: each node it ran on (as its daemon describes itself), how it came to
    // hold them, then its start and its end
    QVERIFY2(events.size() >= 4 && events.count("node") == events.size() - 3 &&
                 events.count("reservation") == 1,
             qPrintable(events.join(", ")));
    QCOMPARE(events.mid(events.size() - 2), (QStringList{"start", "finish"}));

    ui::RunDetail started;
    started.run = detail_.run;
    auto page = shownPage(started);
    const Dash& d = *page->chart();
    for (Dash::Chart c : kCharts) QCOMPARE(pointsOn(d, c), 0);
    page->chooseMetric("mem_bytes");
    // Points of another run are not drawn.
    ui::LivePoint stray =
        *std::find_if(live_.begin(), live_.end(), [](const ui::LivePoint& p) { return !p.event; });
    stray.runId = runId_ + 100;
    page->appendLive({stray});
    for (Dash::Chart c : kCharts) QCOMPARE(pointsOn(d, c), 0);

    // In batches, as the 40 ms timer hands them over.
    for (std::size_t i = 0; i < live_.size(); i += 500) {
      const std::size_t end = std::min(live_.size(), i + 500);
      page->appendLive(std::vector<ui::LivePoint>(live_.begin() + static_cast<long>(i),
                                                  live_.begin() + static_cast<long>(end)));
    }
    std::map<std::pair<int, int>, int> perSeries;  // (metric, worker or node) -> points fed
    std::map<std::string, int> perKey;
    for (const ui::LivePoint& p : live_) {
      if (p.event != nullptr) continue;
      const core::MetricInfo& m = core::kMetricTable[static_cast<std::size_t>(p.metric)];
      const int owner = m.scope == core::MetricScope::kWorker ? p.worker
                        : m.scope == core::MetricScope::kNode ? p.node
                                                              : -1;
      ++perSeries[{p.metric, owner}];
      ++perKey[std::string(m.name)];
    }
    // Each chart has a series for each worker / node that fed its metrics, with every point
    // fed, or (past the bound) between half the bound and the bound.
    const auto check = [&](Dash::Chart chart, std::set<std::string> keys) {
      int expected = 0;
      for (const auto& [series, n] : perSeries)
        expected += keys.count(
            std::string(core::kMetricTable[static_cast<std::size_t>(series.first)].name));
      QCOMPARE(d.graphs(chart).size(), expected);
      for (QCPGraph* g : d.graphs(chart)) {
        const int metric = g->property("metric").toInt();
        QVERIFY(keys.count(std::string(core::kMetricTable[static_cast<std::size_t>(metric)].name)));
        const int n = perSeries[{metric, g->property("owner").toInt()}];
        if (n < Dash::kMaxLivePoints)
          QCOMPARE(g->data()->size(), n);
        else
          QVERIFY(g->data()->size() >= Dash::kMaxLivePoints / 2 &&
                  g->data()->size() <= Dash::kMaxLivePoints);
      }
    };
    check(Dash::kLossChart, {"loss", "test_loss", "test_accuracy"});
    check(Dash::kThroughputChart, {"samples_per_s"});
    check(Dash::kStepTimeChart, {"compute_ms", "comm_ms", "wait_ms", "tail_ms"});
    check(Dash::kUtilisationChart, {"cpu_util"});
    check(Dash::kScheduleChart, {"batch_share", "staleness"});
    check(Dash::kChosenChart, {"mem_bytes"});
    if (QTest::currentTestFailed()) return;
    QVERIFY(perKey["cpu_util"] >= 2);  // both nodes sampled at least once
    QCOMPARE(seriesOn(d, Dash::kUtilisationChart),
             seriesOn(*shownPage(detail_)->chart(), Dash::kUtilisationChart));
    // An event that comes live (as the controller sends a node lost) is marked on every chart
    // and listed.
    for (Dash::Chart c : kCharts) QCOMPARE(d.eventMarkerCount(c), 0);  // start, finish: unmarked
    ui::LivePoint lost;
    lost.runId = runId_;
    lost.metric = -1;
    lost.event = std::make_shared<const core::RunEvent>(
        core::RunEvent{30, 450.0, "node_lost", "node 1 missed its heartbeat"});
    page->appendLive({lost});
    for (Dash::Chart c : kCharts) QCOMPARE(d.eventMarkerCount(c), 1);
    QVERIFY(page->findChild<QPlainTextEdit*>()->toPlainText().contains(
        "node_lost   node 1 missed its heartbeat"));
    // Drawn without antialiasing while points stream (cheaper replots), with it once they stop.
    QVERIFY(d.notAntialiasedElements().testFlag(QCP::aePlottables));
    QTRY_VERIFY_WITH_TIMEOUT(!d.notAntialiasedElements().testFlag(QCP::aePlottables), 3000);
    // Following the run: the x range ends at its last step.
    QCOMPARE(d.xRange().upper, static_cast<double>(detail_.summary["steps"].get<int64_t>()));

    // In-memory series are bounded: a series past the bound keeps one point of two, and its
    // spikes among them.
    auto fresh = shownPage(started);
    Dash& f = *fresh->chart();
    f.setSmoothing(0.0);
    ui::LivePoint p;
    p.runId = runId_;
    p.metric = 0;  // loss
    p.worker = 0;
    std::vector<ui::LivePoint> many;
    for (int i = 0; i < Dash::kMaxLivePoints + 1000; ++i) {
      p.step = i + 1;
      p.value = i == 1234 ? 100.0 : i == Dash::kMaxLivePoints + 501 ? 50.0 : 1.0;
      many.push_back(p);
    }
    QVERIFY(fresh->chartNote().isEmpty());
    fresh->appendLive(many);
    QCOMPARE(f.graphs(Dash::kLossChart).size(), 1);
    QCPGraph* loss = f.graphs(Dash::kLossChart).front();
    QVERIFY(loss->data()->size() <= Dash::kMaxLivePoints);
    QVERIFY(loss->data()->size() >= Dash::kMaxLivePoints / 2);
    QVERIFY(loss->data()->at(loss->data()->size() - 1)->key >
            Dash::kMaxLivePoints + 990);  // still the whole run
    QList<double> spikes;
    for (auto it = loss->data()->constBegin(); it != loss->data()->constEnd(); ++it)
      if (it->value > 1.0) spikes << it->value;
    QCOMPARE(spikes, (QList<double>{100.0, 50.0}));
    // A point thinned out still takes a view that follows the run to its step.
    const int drawn = loss->data()->size();
    p.step = Dash::kMaxLivePoints + 1001;
    p.value = 1.0;
    fresh->appendLive({p});
    QCOMPARE(loss->data()->size(), drawn);
    QCOMPARE(f.xRange().upper, static_cast<double>(p.step));
    QVERIFY(f.downsampled());
    QVERIFY2(fresh->chartNote().contains("reduced"), qPrintable(fresh->chartNote()));
  }

  // Steps, seconds since the start, or the time of day: the keys change, the points stay.
  void xAxisModesChangeTheKeys() {
    auto page = shownPage(detail_);
    const Dash& d = *page->chart();
    const ui::RunDetail::Curve* samples = nullptr;
    for (const ui::RunDetail::Curve& c : detail_.curves)
      if (c.key == "samples_per_s" && c.worker == 0) samples = &c;
    QVERIFY(samples != nullptr);
    const auto firstKey = [&] {
      for (QCPGraph* g : d.graphs(Dash::kThroughputChart))
        if (g->property("fullName").toString() == "samples_per_s, worker 0")
          return g->data()->at(0)->key;
      return -1.0;
    };
    QCOMPARE(firstKey(), samples->steps.front());
    QVERIFY(page->valuesAt(samples->steps[5], Dash::kThroughputChart)
                .startsWith(QString("step %1\n").arg(samples->steps[5])));

    page->setXAxis(ui::RunXAxis::kSeconds);
    QCOMPARE(d.xAxisMode(), ui::RunXAxis::kSeconds);
    QCOMPARE(firstKey(), samples->seconds.front());
    QVERIFY(firstKey() < 60.0);
    for (Dash::Chart c : kCharts)
      QCOMPARE(d.rect(c)->axis(QCPAxis::atBottom)->label(),
               QString("time since the run started (s)"));
    QVERIFY(page->valuesAt(samples->seconds[5], Dash::kThroughputChart)
                .contains(" s\nsamples_per_s, worker 0: "));

    page->setXAxis(ui::RunXAxis::kWallClock);
    const double start = static_cast<double>(detail_.run.startedMs) / 1000.0;
    QCOMPARE(firstKey(), start + samples->seconds.front());
    QVERIFY(firstKey() > 1.6e9);  // seconds since the epoch
    QVERIFY(d.rect(Dash::kLossChart)
                ->axis(QCPAxis::atBottom)
                ->ticker()
                .dynamicCast<QCPAxisTickerDateTime>() != nullptr);
    const QString at = page->valuesAt(firstKey() + 0.001, Dash::kThroughputChart);
    QVERIFY2(
        at.startsWith(QDateTime::fromMSecsSinceEpoch(detail_.run.startedMs +
                                                     std::llround(samples->seconds.front() * 1000))
                          .toString("hh:mm:ss")),
        qPrintable(at));
    // The run lasted about 2.5 s: its ticks fall on fractions of a second, and say so.
    QCOMPARE(d.rect(Dash::kLossChart)
                 ->axis(QCPAxis::atBottom)
                 ->ticker()
                 .dynamicCast<QCPAxisTickerDateTime>()
                 ->dateTimeFormat(),
             QString("hh:mm:ss.zzz"));
    // Every chart follows, the markers too.
    QVERIFY(d.xRange().lower > 1.6e9);
    for (Dash::Chart c : kCharts) QCOMPARE(d.rect(c)->axis(QCPAxis::atBottom)->range(), d.xRange());
  }

  // Smoothing changes the values drawn for each worker's steps, never the points, and leaves
  // node samples as measured.
  void smoothingChangesValuesNotPoints() {
    auto page = shownPage(detail_);
    Dash& d = *page->chart();
    const ui::RunDetail::Curve* samples = nullptr;
    for (const ui::RunDetail::Curve& c : detail_.curves)
      if (c.key == "samples_per_s" && c.worker == 0) samples = &c;
    QVERIFY(samples != nullptr);
    const auto graph = [&](Dash::Chart chart, const QString& name) -> QCPGraph* {
      for (QCPGraph* g : d.graphs(chart))
        if (g->property("fullName").toString() == name) return g;
      return nullptr;
    };
    d.setSmoothing(0.0);
    QCPGraph* raw = graph(Dash::kThroughputChart, "samples_per_s, worker 0");
    for (int i : {0, 5, 50}) QCOMPARE(raw->data()->at(i)->value, samples->values[i]);
    const double cpu = graph(Dash::kUtilisationChart, "cpu_util, node 0")->data()->at(3)->value;
    QVERIFY(!page->valuesAt(samples->steps[5], Dash::kThroughputChart).contains("smoothed"));

    d.setSmoothing(0.9);
    QCPGraph* smooth = graph(Dash::kThroughputChart, "samples_per_s, worker 0");
    QCOMPARE(smooth->data()->size(), static_cast<int>(samples->values.size()));
    QCOMPARE(smooth->data()->at(0)->value, samples->values[0]);  // debiased: starts on the data
    int differ = 0;
    for (int i = 1; i < smooth->data()->size(); ++i)
      differ += smooth->data()->at(i)->value != samples->values[static_cast<std::size_t>(i)];
    QVERIFY(differ > smooth->data()->size() / 2);
    QCOMPARE(graph(Dash::kUtilisationChart, "cpu_util, node 0")->data()->at(3)->value, cpu);
    QVERIFY(page->valuesAt(samples->steps[5], Dash::kThroughputChart).contains("(smoothed)"));
  }

  // A wheel turn or a drag on one chart moves every chart; a double click shows everything.
  void zoomingOneChartMovesTheOthers() {
    auto page = shownPage(detail_);
    QVERIFY(QTest::qWaitForWindowExposed(page.get()));
    Dash& d = *page->chart();
    d.replot();
    const QCPRange whole = d.xRange();
    QCPAxisRect* steps = d.rect(Dash::kStepTimeChart);
    const QPointF centre = steps->rect().center();
    QWheelEvent wheel(centre, d.mapToGlobal(centre), QPoint(), QPoint(0, 240), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(&d, &wheel);
    const QCPRange zoomed = steps->axis(QCPAxis::atBottom)->range();
    QVERIFY2(zoomed.size() < whole.size() * 0.8, qPrintable(QString::number(zoomed.size())));
    for (Dash::Chart c : kCharts) {
      QCOMPARE(d.rect(c)->axis(QCPAxis::atBottom)->range().lower, zoomed.lower);
      QCOMPARE(d.rect(c)->axis(QCPAxis::atBottom)->range().upper, zoomed.upper);
    }
    // A drag on the loss chart pans them all.
    QCPAxisRect* loss = d.rect(Dash::kLossChart);
    const QPoint from = loss->rect().center();
    QTest::mousePress(&d, Qt::LeftButton, Qt::NoModifier, from);
    QTest::mouseMove(&d, from + QPoint(60, 0));
    QTest::mouseRelease(&d, Qt::LeftButton, Qt::NoModifier, from + QPoint(60, 0));
    const QCPRange panned = loss->axis(QCPAxis::atBottom)->range();
    QVERIFY(panned.lower < zoomed.lower);
    QCOMPARE(d.rect(Dash::kUtilisationChart)->axis(QCPAxis::atBottom)->range().lower, panned.lower);
    QCOMPARE(d.rect(Dash::kChosenChart)->axis(QCPAxis::atBottom)->range().upper, panned.upper);
    // Live points no longer move a view the user chose.
    ui::LivePoint p;
    p.runId = detail_.run.id;
    p.metric = 0;
    p.worker = 0;
    p.step = 2 * detail_.summary["steps"].get<int64_t>();  // past the run's end, however long
    page->appendLive({p});
    QCOMPARE(d.xRange().upper, panned.upper);

    QTest::mouseDClick(&d, Qt::LeftButton, Qt::NoModifier,
                       d.rect(Dash::kChosenChart)->rect().center());
    for (Dash::Chart c : kCharts)
      QCOMPARE(d.rect(c)->axis(QCPAxis::atBottom)->range().upper,
               static_cast<double>(p.step));  // all, the new point too
  }

  // Events are lines on every chart, a style per kind, named on the loss and schedule charts.
  void eventMarkersOnEveryChart() {
    auto page = shownPage(detail_);
    const Dash& d = *page->chart();
    int shown = 0;
    for (const core::RunEvent& e : detail_.events) shown += !core::describesRun(e.kind);
    QCOMPARE(shown, 3);  // the rebalance, the node lost and the strategy switch (not node, start
                         // or finish, which say what the run is)
    for (Dash::Chart c : kCharts) QCOMPARE(d.eventMarkerCount(c), shown);
    // A switch says which way it went.
    const QStringList names{"rebalance", "node_lost", "\u2192 async"};
    QCOMPARE(d.eventLabels(Dash::kLossChart), names);
    QCOMPARE(d.eventLabels(Dash::kScheduleChart), names);
    QVERIFY(d.eventLabels(Dash::kThroughputChart).isEmpty());
    int visibleNames = 0;
    for (int i = 0; i < d.itemCount(); ++i)
      if (auto* text = qobject_cast<QCPItemText*>(d.item(i));
          text && text->visible() && names.contains(text->text()))
        ++visibleNames;
    QCOMPARE(visibleNames, 2 * shown);
    // A rebalance and a switch are told apart by their lines too.
    std::map<QString, QPen> pens;
    for (int i = 0; i < d.itemCount(); ++i)
      if (auto* line = qobject_cast<QCPItemStraightLine*>(d.item(i));
          line && !line->property("event").isNull())
        pens[line->property("event").toString()] = line->pen();
    QCOMPARE(pens.size(), std::size_t{3});
    QVERIFY(pens["rebalance"].style() != pens["strategy_switch"].style());
    QVERIFY(pens["rebalance"].color() != pens["strategy_switch"].color());
    // The label comes from the event's facts, whatever its sentence says.
    QCOMPARE(Dash::eventLabel({0, 0.0, "strategy_switch", "switched to async: ratio 1.1",
                               core::eventData(core::PhaseFacts{.asynchronous = false})}),
             QString("\u2192 sync"));
    QCOMPARE(Dash::eventLabel({0, 0.0, "strategy_switch", "sync -> async"}), QString("switch"));
    QCOMPARE(Dash::eventLabel({0, 0.0, "strategy_switch", "", "[1]"}), QString("switch"));
    // At the event's step, and at its time when the axis counts seconds.
    const auto markerKeys = [&](Dash::Chart c) {
      QList<double> keys;
      for (int i = 0; i < d.itemCount(); ++i)
        if (auto* line = qobject_cast<QCPItemStraightLine*>(d.item(i));
            line && !line->property("event").isNull() && line->clipAxisRect() == d.rect(c))
          keys << line->point1->coords().x();
      std::sort(keys.begin(), keys.end());
      return keys;
    };
    QCOMPARE(markerKeys(Dash::kThroughputChart), (QList<double>{20.0, 40.0, 50.0}));
    page->setXAxis(ui::RunXAxis::kSeconds);
    QCOMPARE(markerKeys(Dash::kUtilisationChart), (QList<double>{0.3, 0.6, 0.75}));
    for (Dash::Chart c : kCharts) QCOMPARE(d.eventMarkerCount(c), shown);
  }

  // Events at one place (one step, or the next) share one name; a recovery's line is not a
  // lost node's.
  void eventsAtOnePlaceShareAName() {
    ui::RunDetail detail = detail_;
    detail.events = {{30, 300.0, "node_lost", "node2 (127.0.0.1:7002) lost"},
                     {30, 900.0, "recovery", "restarted on 2 ranks"}};
    auto page = shownPage(detail);
    const Dash& d = *page->chart();
    QCOMPARE(d.eventMarkerCount(Dash::kLossChart), 2);
    QCOMPARE(d.eventLabels(Dash::kLossChart), QStringList{"node_lost, recovery"});
    std::map<QString, QPen> pens;
    for (int i = 0; i < d.itemCount(); ++i)
      if (auto* line = qobject_cast<QCPItemStraightLine*>(d.item(i));
          line && !line->property("event").isNull())
        pens[line->property("event").toString()] = line->pen();
    QVERIFY(pens["node_lost"].color() != pens["recovery"].color());
    // Apart in time, each has its own name.
    page->setXAxis(ui::RunXAxis::kSeconds);
    QCOMPARE(d.eventLabels(Dash::kLossChart), (QStringList{"node_lost", "recovery"}));
    // A step apart (a group that went on at the next step) is one place too; far apart is not.
    detail.events = {{30, 300.0, "node_lost", "node2 (127.0.0.1:7002) lost"},
                     {31, 310.0, "recovery", "the group went on with 3 workers"},
                     {80, 800.0, "rebalance", "shares 0.3 0.7"},
                     {100, 1000.0, "finish", "completed (max_steps)"}};
    page = shownPage(detail);
    QCOMPARE(page->chart()->eventLabels(Dash::kLossChart),
             (QStringList{"node_lost, recovery", "rebalance"}));
  }

  // The crosshair lists the visible series of the chart under the mouse; a legend click hides
  // a series, and the list leaves it out.
  void valuesAtListsVisibleSeriesAndOmitsHidden() {
    auto page = shownPage(detail_);
    QVERIFY(QTest::qWaitForWindowExposed(page.get()));
    Dash& d = *page->chart();
    d.replot();
    const double x = 10.0;
    QString values = page->valuesAt(x, Dash::kThroughputChart);
    QVERIFY2(values.startsWith("step 10\n"), qPrintable(values));
    QVERIFY2(values.contains("samples_per_s, worker 0: ") &&
                 values.contains("samples_per_s, worker 1: ") && values.contains(" samples/s"),
             qPrintable(values));
    QVERIFY(!values.contains("loss"));  // only the chart under the mouse

    // A click on worker 1's legend entry.
    QCPGraph* worker1 = nullptr;
    for (QCPGraph* g : d.graphs(Dash::kThroughputChart))
      if (g->property("fullName").toString() == "samples_per_s, worker 1") worker1 = g;
    QVERIFY(worker1 != nullptr);
    QCPPlottableLegendItem* entry = d.legend(Dash::kThroughputChart)->itemWithPlottable(worker1);
    QVERIFY(entry != nullptr);
    QTest::mouseClick(&d, Qt::LeftButton, Qt::NoModifier, entry->outerRect().center());
    QVERIFY(!worker1->visible());
    values = page->valuesAt(x, Dash::kThroughputChart);
    QVERIFY2(values.contains("samples_per_s, worker 0: ") && !values.contains("worker 1"),
             qPrintable(values));
    // Hidden stays hidden when the run is re-read (a run recorded by another process).
    page->showRun(ui_test::runDetailAt(path_, runId_));
    for (QCPGraph* g : d.graphs(Dash::kThroughputChart))
      QCOMPARE(g->visible(), g->property("fullName").toString() != "samples_per_s, worker 1");
    // The step-time legend hides a component for every worker.
    QCPGraph* comm = nullptr;
    for (QCPGraph* g : d.graphs(Dash::kStepTimeChart))
      if (g->property("fullName").toString() == "comm_ms, worker 0") comm = g;
    d.toggleSeries(comm);
    values = page->valuesAt(x, Dash::kStepTimeChart);
    QVERIFY2(values.contains("compute_ms, worker 1: ") && values.contains(" ms") &&
                 !values.contains("comm_ms"),
             qPrintable(values));
    // Every series hidden: nothing to list.
    for (QCPGraph* g : d.graphs(Dash::kThroughputChart))
      if (g->visible()) d.toggleSeries(g);
    QCOMPARE(page->valuesAt(x, Dash::kThroughputChart), QString());

    // The mouse over a chart shows that chart's values, and a line at the same x on all.
    d.replot();
    const QPoint over = d.rect(Dash::kLossChart)->rect().center();
    QTest::mouseMove(&d, over);
    QMouseEvent move(QEvent::MouseMove, QPointF(over), d.mapToGlobal(QPointF(over)), Qt::NoButton,
                     Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(&d, &move);
    int cursors = 0;
    QString shownText;
    for (int i = 0; i < d.itemCount(); ++i) {
      if (auto* line = qobject_cast<QCPItemStraightLine*>(d.item(i));
          line && line->visible() && line->layer()->name() == "overlay")
        ++cursors;
      if (auto* text = qobject_cast<QCPItemText*>(d.item(i));
          text && text->visible() && text->layer()->name() == "overlay")
        shownText += text->text();
    }
    QCOMPARE(cursors, Dash::kChartCount);
    QVERIFY2(shownText.contains("loss, worker 0: "), qPrintable(shownText));
  }
};

QTEST_MAIN(TestDashboard)
#include "test_dashboard.moc"
