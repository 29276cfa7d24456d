// The comparison view and its exports, driven for real under QT_QPA_PLATFORM=offscreen on
// project files recorded by real training runs (one process, and two ranks as threads over
// real Gloo collectives), plus series written through the store's own appender where a
// closed-form expectation is needed.
#include <QtTest/QAbstractItemModelTester>
#include <QtTest/QtTest>

#include <qcustomplot.h>

#include <gloo/rendezvous/hash_store.h>

#include <QtCore/QProcess>
#include <QtCore/QRegularExpression>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtGui/QAction>
#include <QtWidgets/QApplication>
#include <QtWidgets/QMenuBar>

#include <cmath>
#include <memory>
#include <thread>

#include "core/comm/gloo_communicator.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/train/local_trainer.h"
#include "core/train/strategy.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/comparison_chart.h"
#include "ui/charts/comparison_data.h"
#include "ui/charts/smoothing.h"
#include "ui/main_window.h"
#include "ui/models/project_snapshot.h"
#include "ui/models/run_comparison_model.h"
#include "ui/pages/compare_page.h"

#include "tests/ui/ui_support.h"

using namespace dtlab;

namespace {

using ui_test::recordRun;
using ui_test::smallSpec;

// Trains `spec` with synchronous all-reduce on `world` ranks (threads, real Gloo collectives)
// and records every rank's metrics, each rank its own node as on local daemons.
int64_t recordSyncRun(core::ProjectStore& store, const core::ExperimentSpec& spec, int world) {
  core::RunRecording recording(store, spec, "sync_allreduce");
  gloo::rendezvous::HashStore rendezvous;
  std::vector<core::WorkerResult> results(static_cast<std::size_t>(world));
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < world; ++rank) {
    ranks.emplace_back([&, rank] {
      core::WorkerJob job;
      job.spec = spec;
      job.rank = rank;
      job.world = world;
      auto comm = std::make_unique<core::GlooCommunicator>(rendezvous, rank, world);
      results[static_cast<std::size_t>(rank)] =
          core::runWorker(job, comm.get(), &recording.sink(), nullptr);
    });
  }
  for (std::thread& t : ranks) t.join();
  core::RunSummary summary;
  summary.name = spec.name;
  summary.strategy = "sync_allreduce";
  summary.status = results[0].status;
  summary.stopReason = results[0].stopReason;
  summary.steps = results[0].steps;
  summary.wallS = results[0].wallS;
  summary.finalTestAccuracy = results[0].finalTestAccuracy;
  for (const core::WorkerResult& r : results) {
    summary.samples += r.samples;
    summary.paramChecksum.push_back(r.paramChecksum);
    summary.peakMemBytes.push_back(r.peakMemBytes);
  }
  recording.finish(summary);
  return recording.runId();
}

// Runs 1 (30 steps) and 2 (20 steps) trained in this process, run 3 (25 steps) on 2 ranks.
std::string makeProject(const QTemporaryDir& dir) {
  const std::string path = dir.filePath("p.dtlab").toStdString();
  auto store = core::ProjectStore::create(path, "compare test");
  recordRun(*store, smallSpec("first", 30));
  recordRun(*store, smallSpec("second", 20));
  recordSyncRun(*store, smallSpec("pair", 25), 2);
  return path;
}

// A run whose loss series are written directly: worker 0 has value = step at steps 1..n,
// worker 1 value = 3 x step at the same steps except `missing`, so the mean is known in
// closed form.
int64_t recordArithmeticRun(const std::string& path, int64_t n, int64_t missing) {
  auto store = core::ProjectStore::open(path);
  core::RunStart start;
  start.name = "arithmetic";
  start.strategy = "async_ps";
  const int64_t runId = store->beginRun(start);
  {
    core::PointAppender appender(path);
    const core::SeriesHandle w0 = appender.series(runId, 0, 0, "loss");
    const core::SeriesHandle w1 = appender.series(runId, 1, 1, "loss");
    for (int64_t step = 1; step <= n; ++step) {
      appender.append(w0, step, 10.0 * step, static_cast<double>(step));
      if (step != missing) appender.append(w1, step, 10.0 * step + 5.0, 3.0 * step);
    }
    appender.close();
  }
  core::RunSummary summary;
  summary.name = "arithmetic";
  summary.strategy = "async_ps";
  summary.status = core::RunStatus::kCompleted;
  summary.steps = n;
  store->finishRun(runId, summary);
  return runId;
}

ui::ComparisonRequest request(const std::string& metric, std::vector<int64_t> runs,
                              ui::ChartX x = ui::ChartX::kStep) {
  ui::ComparisonRequest r;
  r.metric = metric;
  r.runIds = std::move(runs);
  r.x = x;
  return r;
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Page objects of a PDF: "/Type /Page" not followed by "s" (that is the page tree).
int pdfPageCount(const QByteArray& pdf) {
  static const QRegularExpression page(R"(/Type\s*/Page(?![s\w]))");
  int count = 0;
  for (auto it = page.globalMatch(QString::fromLatin1(pdf)); it.hasNext(); it.next()) ++count;
  return count;
}

// Legend entries (itemCount() counts the cells of the legend's grid, empty ones too).
int legendEntries(const ui::ComparisonChart& chart) {
  int n = 0;
  for (int i = 0; i < chart.legend->itemCount(); ++i) n += chart.legend->item(i) != nullptr;
  return n;
}

int totalPoints(const ui::ComparisonChart& chart) {
  int n = 0;
  for (const auto& c : chart.curves()) n += static_cast<int>(c.x.size());
  return n;
}

struct Outcome {
  int exitCode = -1;
  QString out;
  QString err;
};

// dtlab as a user runs it; --export needs no display (it picks the offscreen platform).
Outcome runDtlab(const QStringList& args) {
  QProcess gui;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove("QT_QPA_PLATFORM");
  if (!args.contains("--export")) env.insert("QT_QPA_PLATFORM", "offscreen");
  gui.setProcessEnvironment(env);
  gui.start(DTLAB_BINARY_DIR "/app/dtlab", args);
  if (!gui.waitForFinished(60000)) return {-1, {}, "dtlab did not finish"};
  return {gui.exitCode(), QString::fromUtf8(gui.readAllStandardOutput()),
          QString::fromUtf8(gui.readAllStandardError())};
}

}  // namespace

class TestCompare : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void smoothingIsDebiasedEma() {
    const std::vector<double> raw = {4.0, 2.0, 6.0, 1.0, 3.0};
    const std::vector<double> s = ui::smoothEma(raw, 0.6);
    QCOMPARE(s.size(), raw.size());
    QCOMPARE(s[0], raw[0]);  // debiased: not pulled towards zero
    // By hand: m1 = 0.4*4 = 1.6, m2 = 0.6*1.6 + 0.4*2 = 1.76, debiased by 1 - 0.6^2 = 0.64.
    QVERIFY(std::fabs(s[1] - 1.76 / 0.64) < 1e-12);
    for (std::size_t i = 1; i < s.size(); ++i) QVERIFY(s[i] != raw[i]);
    const std::vector<double> constant(50, 0.731);
    for (const double v : ui::smoothEma(constant, 0.95)) QCOMPARE(v, 0.731);
    QCOMPARE(ui::smoothEma(raw, 0.0), raw);
    // NaN passes through without feeding the average.
    const std::vector<double> gap = ui::smoothEma(std::vector<double>{1.0, std::nan(""), 3.0}, 0.5);
    QVERIFY(std::isnan(gap[1]));
    QVERIFY(std::fabs(gap[2] - (0.5 * 0.5 * 1.0 + 0.5 * 3.0) / 0.75) < 1e-12);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, ui::smoothEma(raw, 1.0));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, ui::smoothEma(raw, -0.1));
  }

  void comparisonModelListsRunsFromTheirSummaries() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::RunComparisonModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy chosen(&model, &ui::RunComparisonModel::chosenChanged);
    model.setSnapshot(ui_test::snapshotAt(path));
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), int(ui::RunComparisonModel::kColumnCount));
    using M = ui::RunComparisonModel;
    QCOMPARE(model.index(0, M::kRunColumn).data().toString(), QString("#1 first"));
    QCOMPARE(model.index(2, M::kStrategyColumn).data().toString(), QString("sync_allreduce"));
    // Not in an experiment, and stopped by the step limit (core::comparisonOutcome's words).
    QCOMPARE(model.index(2, M::kOutcomeColumn).data().toString(), QString("step limit"));
    QCOMPARE(model.index(0, M::kStepsColumn).data().toString(), QString("30"));
    QCOMPARE(model.index(1, M::kStepsColumn).data(M::ValueRole).toLongLong(), 20);
    QVERIFY(model.index(0, M::kSamplesPerSColumn).data(M::ValueRole).toDouble() > 0.0);
    const double accuracy = model.index(0, M::kAccuracyColumn).data(M::ValueRole).toDouble();
    QVERIFY(accuracy > 0.3 && accuracy <= 1.0);
    QCOMPARE(model.index(0, M::kTimeToTargetColumn).data().toString(), QString("none set"));
    QVERIFY(!model.index(0, M::kTimeToTargetColumn).data(M::ValueRole).isValid());
    QVERIFY(model.index(0, M::kUtilizationColumn).data(M::ValueRole).toDouble() > 0.0);
    QVERIFY(model.index(0, M::kPeakMemoryColumn).data(M::ValueRole).toLongLong() > 1 << 20);
    // A run's colour follows its id (Okabe-Ito: blue, orange, bluish green for runs 1-3).
    QCOMPARE(model.index(0, M::kRunColumn).data(Qt::DecorationRole).value<QColor>(),
             QColor(0, 114, 178));
    QCOMPARE(model.index(1, M::kRunColumn).data(Qt::DecorationRole).value<QColor>(),
             QColor(230, 159, 0));
    QCOMPARE(model.index(2, M::kRunColumn).data(Qt::DecorationRole).value<QColor>(),
             QColor(0, 158, 115));

    // Checking a box chooses the run; the choice survives a new snapshot of the project.
    QVERIFY(model.chosen().empty());
    QVERIFY(model.setData(model.index(0, M::kRunColumn), Qt::Checked, Qt::CheckStateRole));
    QVERIFY(model.setData(model.index(2, M::kRunColumn), Qt::Checked, Qt::CheckStateRole));
    QCOMPARE(chosen.count(), 2);
    QCOMPARE(model.chosen(), (std::vector<int64_t>{1, 3}));
    QCOMPARE(model.index(1, M::kRunColumn).data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    {
      auto store = core::ProjectStore::open(path);
      recordRun(*store, smallSpec("fourth", 5));
    }
    model.setSnapshot(ui_test::snapshotAt(path));
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(model.chosen(), (std::vector<int64_t>{1, 3}));

    // Exports: the chosen runs only.
    const QStringList csv = model.toCsv().trimmed().split('\n');
    QCOMPARE(csv.size(), 3);
    QCOMPARE(csv[0],
             QString("run,name,strategy,steps,mean_staleness,max_staleness,"
                     "mean_divergence,time_to_target_s,samples_per_s,mean_utilization,"
                     "mean_wait_fraction,bytes_per_sample,compression_ratio,compress_ms_per_step,"
                     "peak_mem_bytes,"
                     "final_test_accuracy,recoveries,outcome"));
    QVERIFY2(csv[1].startsWith("1,first,single,30,0,0,,"), qPrintable(csv[1]));
    QVERIFY2(csv[2].startsWith("3,pair,sync_allreduce,25,"), qPrintable(csv[2]));
    QVERIFY2(csv[2].endsWith(",step limit"), qPrintable(csv[2]));
    QCOMPARE(csv[1].split(',').size(), M::kColumnCount + 1);  // the run's id and name are two
    QCOMPARE(csv[1].split(',')[7], QString());                // no time to target: empty, not 0
    const QStringList md = model.toMarkdown().trimmed().split('\n');
    QCOMPARE(md.size(), 4);
    QVERIFY2(md[0].startsWith("| Run | Strategy | Steps | Mean staleness |"), qPrintable(md[0]));
    QVERIFY2(QRegularExpression(R"(^\|( :?-{3,}:? \|)+$)").match(md[1]).hasMatch(),
             qPrintable(md[1]));
    QCOMPARE(md[1].count('|'), M::kColumnCount + 1);  // one column a cell, and the closing bar
    QVERIFY(md[2].startsWith("| #1 first | single | 30 |"));
  }

  // One curve per chosen run with every recorded point, labelled with the metric's unit and
  // what was done with the workers' series.
  void chartOverlaysOneCurvePerRun() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::ComparisonChart chart;
    chart.setData(ui_test::comparisonAt(path, request("loss", {1, 2, 3})));
    QCOMPARE(chart.graphCount(), 3);
    QCOMPARE(chart.curves().size(), std::size_t{3});
    QCOMPARE(chart.curves()[0].graph->data()->size(), 30);
    QCOMPARE(chart.curves()[1].graph->data()->size(), 20);
    QCOMPARE(chart.curves()[2].graph->data()->size(), 25);  // the mean of 2 workers per step
    QCOMPARE(legendEntries(chart), 3);
    QVERIFY2(chart.curves()[2].label.contains("#3 pair") &&
                 chart.curves()[2].label.contains("2 workers"),
             qPrintable(chart.curves()[2].label));
    QCOMPARE(chart.xAxis->label(), QString("step"));
    QCOMPARE(chart.yAxis->label(), QString("loss\nmean over workers at each step"));
    QVERIFY(chart.title().startsWith("loss: "));
    QVERIFY(chart.note().isEmpty());
    // Each curve in its run's colour, the one the table shows (runs 1-3).
    QCOMPARE(chart.curves()[0].graph->pen().color(), QColor(0, 114, 178));
    QCOMPARE(chart.curves()[1].graph->pen().color(), QColor(230, 159, 0));
    QCOMPARE(chart.curves()[2].graph->pen().color(), QColor(0, 158, 115));

    // Smoothed: the smoothed curve in the legend, the raw one faint behind it.
    chart.setSmoothing(0.8);
    QCOMPARE(chart.graphCount(), 6);
    QCOMPARE(legendEntries(chart), 3);
    for (const auto& c : chart.curves()) {
      QVERIFY(c.rawGraph != nullptr && c.graph != c.rawGraph);
      QCOMPARE(c.graph->data()->size(), c.rawGraph->data()->size());
      QCOMPARE(c.smoothed.front(), c.values.front());
      QVERIFY(c.rawGraph->pen().color().alpha() < 128);
    }
    QVERIFY(chart.note().contains("weight 0.80"));

    // Units: ms on the axis; bytes drawn as MiB; wall time in seconds.
    chart.setSmoothing(0.0);
    chart.setData(
        ui_test::comparisonAt(path, request("step_ms", {1, 3}, ui::ChartX::kWallSeconds)));
    QCOMPARE(chart.yAxis->label(), QString("step_ms (ms)\nmean over workers at each step"));
    QCOMPARE(chart.xAxis->label(), QString("wall time (s)"));
    QCOMPARE(chart.curves()[1].graph->pen().color(), QColor(0, 158, 115));  // run 3's still
    const auto snapshot = ui_test::snapshotAt(path);
    const double wallS = snapshot.summaries[0]["wall_s"].get<double>();
    const auto& x = chart.curves()[0].x;
    QVERIFY(std::is_sorted(x.begin(), x.end()));
    QVERIFY2(x.back() > 0.0 && x.back() <= wallS + 0.5,
             qPrintable(QString("%1 vs %2").arg(x.back()).arg(wallS)));

    // A run-scope metric is the run's own series: one point per evaluation.
    chart.setData(ui_test::comparisonAt(path, request("test_accuracy", {1, 2})));
    QCOMPARE(chart.yAxis->label(), QString("test_accuracy"));
    QCOMPARE(chart.curves()[0].graph->data()->size(), 3);  // steps 10, 20, 30
    QCOMPARE(chart.curves()[1].graph->data()->size(), 2);

    // A metric a run did not record says so.
    chart.setData(ui_test::comparisonAt(path, request("gpu_util", {1})));
    QVERIFY2(chart.note().contains("No gpu_util points in #1"), qPrintable(chart.note()));
    QVERIFY(chart.curves()[0].label.contains("no points"));

    QVERIFY_THROWS_EXCEPTION(dtlab::Error, ui_test::comparisonAt(path, request("lossy", {1})));
    QVERIFY_THROWS_EXCEPTION(core::StoreError, ui_test::comparisonAt(path, request("loss", {9})));
  }

  // The mean over workers is the mean of the points each step, checked against the stored
  // series of a real 2-rank run and in closed form; "worker 0" is worker 0's series as stored.
  void workerSeriesAreAveragedPerStep() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    auto store = core::ProjectStore::open(path, true);
    const auto w0 = store->readSeries(*store->findSeries(3, 0, 0, "loss"));
    const auto w1 = store->readSeries(*store->findSeries(3, 1, 1, "loss"));
    QCOMPARE(w0.size(), std::size_t{25});
    QCOMPARE(w1.size(), std::size_t{25});
    const ui::ComparisonData mean = ui_test::comparisonAt(path, request("loss", {3}));
    const ui::ComparisonSeries& s = mean.series[0];
    QCOMPARE(s.members, 2);
    QCOMPARE(s.values.size(), std::size_t{25});
    bool differ = false;
    for (std::size_t i = 0; i < 25; ++i) {
      QCOMPARE(s.x[i], static_cast<double>(w0[i].step));
      QCOMPARE(s.values[i], (w0[i].value + w1[i].value) / 2.0);
      differ = differ || w0[i].value != w1[i].value;  // ranks see different slices
    }
    QVERIFY(differ);
    ui::ComparisonRequest first = request("loss", {3});
    first.reduction = ui::MemberReduction::kFirst;
    const ui::ComparisonSeries f = ui_test::comparisonAt(path, first).series[0];
    QCOMPARE(f.members, 1);
    for (std::size_t i = 0; i < 25; ++i) QCOMPARE(f.values[i], w0[i].value);

    // Closed form, with a step worker 1 never reported (it counts only worker 0's point), and
    // in wall time the step's point sits at the later of the two workers' times.
    const int64_t run = recordArithmeticRun(path, 40, 7);
    const ui::ComparisonSeries a = ui_test::comparisonAt(path, request("loss", {run})).series[0];
    QCOMPARE(a.values.size(), std::size_t{40});
    for (int64_t step = 1; step <= 40; ++step)
      QCOMPARE(a.values[static_cast<std::size_t>(step - 1)],
               step == 7 ? 7.0 : 2.0 * static_cast<double>(step));
    const ui::ComparisonSeries aw =
        ui_test::comparisonAt(path, request("loss", {run}, ui::ChartX::kWallSeconds)).series[0];
    QCOMPARE(aw.x[0], 0.015);
    QCOMPARE(aw.x[6], 0.070);  // step 7: worker 0 alone, at 70 ms

    // Downsampled: each bucket's mean minimum and mean maximum, both even here (2 x step),
    // from the first step's mean to the last's.
    ui::ComparisonRequest few = request("loss", {run});
    few.buckets = 5;
    const ui::ComparisonSeries d = ui_test::comparisonAt(path, few).series[0];
    QVERIFY(d.downsampled);
    QVERIFY(d.values.size() <= 10 && d.values.size() >= 5);
    QCOMPARE(d.values.front(), 2.0);
    QCOMPARE(d.values.back(), 80.0);
    QVERIFY(std::is_sorted(d.x.begin(), d.x.end()));
  }

  void downsampledChartsSaySo() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::ComparisonRequest r = request("loss", {1, 2});
    r.buckets = 5;  // 30 and 20 points are more than 2 x 5: the store reduces both
    ui::ComparisonChart chart;
    chart.setData(ui_test::comparisonAt(path, r));
    QVERIFY(chart.data().series[0].downsampled);
    QVERIFY(chart.curves()[0].graph->data()->size() <= 10);
    QVERIFY2(chart.note().contains("Downsampled by the store: #1, #2"), qPrintable(chart.note()));
    r.buckets = 1000;
    chart.setData(ui_test::comparisonAt(path, r));
    QVERIFY(chart.note().isEmpty());
  }

  void chartExportsEveryFormat() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::ComparisonChart chart;
    chart.setSmoothing(0.6);
    // Four runs: the legend's grid has empty cells at some widths (three columns, two rows).
    {
      auto store = core::ProjectStore::open(path);
      recordRun(*store, smallSpec("fourth", 5));
    }
    chart.setData(ui_test::comparisonAt(path, request("loss", {1, 2, 3, 4})));
    for (const int width : {300, 900, 1200, 2400}) {
      chart.fitLegend(width);
      ui::exportChart(chart, dir.filePath(QString("w%1.svg").arg(width)), {QSize(width, 500), 96});
    }

    const QString png = dir.filePath("chart.png");
    ui::exportChart(chart, png, {QSize(600, 400), 192});
    const QByteArray pngBytes = readAll(png);
    QCOMPARE(pngBytes.left(8), QByteArray("\x89PNG\r\n\x1a\n", 8));
    QVERIFY(pngBytes.size() > 10000);
    const QImage image(png);
    QCOMPARE(image.size(), QSize(1200, 800));  // 600x400 at 192 / 96
    QCOMPARE(qRound(image.dotsPerMeterX() * 0.0254), 192);

    const QString svg = dir.filePath("chart.svg");
    ui::exportChart(chart, svg, {QSize(800, 500), 96});
    const QByteArray svgBytes = readAll(svg);
    QVERIFY(svgBytes.startsWith("<?xml"));
    QVERIFY(svgBytes.contains("<svg"));
    QVERIFY(svgBytes.contains("viewBox=\"0 0 800 500\""));
    QVERIFY(svgBytes.contains("#1 first"));  // the legend, as text
    QVERIFY(svgBytes.size() > 10000);

    const QString pdf = dir.filePath("chart.pdf");
    ui::exportChart(chart, pdf, {QSize(800, 500), 96});
    const QByteArray pdfBytes = readAll(pdf);
    QVERIFY(pdfBytes.startsWith("%PDF"));
    QVERIFY(pdfBytes.size() > 10000);
    QCOMPARE(pdfPageCount(pdfBytes), 1);
    QVERIFY(pdfBytes.contains("/FontFile"));  // fonts embedded

    const QString csv = dir.filePath("chart.csv");
    ui::exportChart(chart, csv, {});
    const QStringList rows = QString::fromUtf8(readAll(csv)).trimmed().split('\n');
    QCOMPARE(rows[0], QString("run,name,step,loss,loss_smoothed"));
    QCOMPARE(rows.size(), 1 + totalPoints(chart));
    QCOMPARE(rows.size(), 1 + 30 + 20 + 25 + 5);
    const QStringList first = rows[1].split(',');
    QCOMPARE(first.size(), 5);
    QCOMPARE(first[0], QString("1"));
    QCOMPARE(first[2], QString("1"));
    QCOMPARE(first[3], first[4]);  // the first smoothed point is the first raw point
    QVERIFY(rows.last().startsWith("4,fourth,5,"));
    chart.setSmoothing(0.0);
    QCOMPARE(ui::chartCsv(chart).section('\n', 0, 0), QString("run,name,step,loss"));

    QVERIFY_THROWS_EXCEPTION(ui::ExportError,
                             ui::exportChart(chart, dir.filePath("chart.jpg"), {}));
    QVERIFY_THROWS_EXCEPTION(ui::ExportError,
                             ui::exportChart(chart, dir.filePath("c.png"), {QSize(10, 10), 96}));
    QVERIFY_THROWS_EXCEPTION(
        ui::ExportError, ui::exportChart(chart, dir.filePath("c.png"), {QSize(600, 400), 5000}));
    QVERIFY_THROWS_EXCEPTION(ui::ExportError,
                             ui::exportChart(chart, dir.filePath("missing/dir/c.csv"), {}));
  }

  // The page in the window: View > Compare runs (Ctrl+K), the latest runs chosen, curves that
  // follow the check boxes and the controls, and the table's exports.
  void comparePageFollowsItsControls() {
    QTemporaryDir dir;
    const std::string path = makeProject(dir);
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    window.openProject(QString::fromStdString(path));
    QVERIFY(QSignalSpy(&window, &ui::MainWindow::projectLoaded).wait(20000));

    QAction* action = nullptr;
    for (QAction* a : window.menuBar()->findChildren<QAction*>())
      if (a->text().remove('&') == "Compare runs") action = a;
    QVERIFY(action != nullptr);
    QCOMPARE(action->shortcut(), QKeySequence("Ctrl+K"));
    ui::ComparePage* page = window.comparePage();
    QSignalSpy shown(page, &ui::ComparePage::chartShown);
    action->trigger();
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(page));
    QVERIFY(shown.wait(20000));
    QCOMPARE(page->runsModel()->chosen(), (std::vector<int64_t>{1, 2, 3}));
    QCOMPARE(page->chart()->curves().size(), std::size_t{3});
    QCOMPARE(page->chart()->curves()[0].graph->data()->size(), 30);

    // Unchecking a run takes its curve away.
    using M = ui::RunComparisonModel;
    page->runsModel()->setData(page->runsModel()->index(1, M::kRunColumn), Qt::Unchecked,
                               Qt::CheckStateRole);
    QVERIFY(shown.wait(20000));
    QCOMPARE(page->chart()->curves().size(), std::size_t{2});
    QCOMPARE(page->chart()->curves()[1].runId, int64_t{3});

    page->setMetric("test_accuracy");
    page->setXAxis(ui::ChartX::kWallSeconds);
    QVERIFY(shown.wait(20000));
    QCOMPARE(page->chart()->yAxis->label(), QString("test_accuracy"));
    QCOMPARE(page->chart()->xAxis->label(), QString("wall time (s)"));
    QCOMPARE(page->request().runIds, (std::vector<int64_t>{1, 3}));

    // A run recorded meanwhile appears in the table; the choice stays.
    {
      auto store = core::ProjectStore::open(path);
      recordRun(*store, smallSpec("fourth", 5));
    }
    QTRY_COMPARE_WITH_TIMEOUT(page->runsModel()->rowCount(), 4, 10000);
    QCOMPARE(page->runsModel()->chosen(), (std::vector<int64_t>{1, 3}));
    QCOMPARE(window.currentPage(), static_cast<QWidget*>(page));

    // What the Export buttons write once a name is chosen.
    page->setExportOptions({QSize(500, 300), 96});
    page->exportChartTo(dir.filePath("page.png"));
    QCOMPARE(QImage(dir.filePath("page.png")).size(), QSize(500, 300));
    page->exportTableTo(dir.filePath("runs.md"));
    QVERIFY(readAll(dir.filePath("runs.md")).contains("| #3 pair | sync_allreduce |"));
    page->exportTableTo(dir.filePath("runs.csv"));
    QCOMPARE(readAll(dir.filePath("runs.csv")).count('\n'), 3);
    QVERIFY_THROWS_EXCEPTION(ui::ExportError, page->exportTableTo(dir.filePath("runs.txt")));
    page->setChosenRuns({});
    QVERIFY(shown.wait(20000));
    QCOMPARE(page->chart()->title(), QString("No runs chosen"));
    QVERIFY_THROWS_EXCEPTION(ui::ExportError, page->exportTableTo(dir.filePath("none.csv")));

    // Choosing a run in the explorer leaves the page.
    window.selectRun(1);
    QVERIFY(QSignalSpy(&window, &ui::MainWindow::runShown).wait(20000));
    QVERIFY(window.currentPage() != static_cast<QWidget*>(page));
  }

  // `dtlab P --chart M --runs ... --export F` writes what the Export buttons write, without a
  // display; bad input is refused with the reason and exit status 2.
  void commandLineExportsCharts() {
    QTemporaryDir dir;
    const QString path = QString::fromStdString(makeProject(dir));
    const QString svg = dir.filePath("loss.svg");
    Outcome o =
        runDtlab({path, "--chart", "loss", "--runs", "1,3", "--smooth", "0.6", "--export", svg});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    QVERIFY(o.out.contains("wrote " + svg));
    QVERIFY(readAll(svg).contains("<svg"));

    const QString png = dir.filePath("acc.png");
    o = runDtlab({path, "--chart", "test_accuracy", "--x", "wall", "--size", "500x300", "--dpi",
                  "192", "--export", png});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    QCOMPARE(QImage(png).size(), QSize(1000, 600));

    const QString pdf = dir.filePath("step.pdf");
    o = runDtlab({path, "--chart", "step_ms", "--workers", "0", "--export", pdf});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    QCOMPARE(pdfPageCount(readAll(pdf)), 1);

    const QString csv = dir.filePath("loss.csv");
    o = runDtlab({path, "--chart", "loss", "--runs", "2", "--export", csv});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const QStringList rows = QString::fromUtf8(readAll(csv)).trimmed().split('\n');
    QCOMPARE(rows.size(), 1 + 20);
    QCOMPARE(rows[0], QString("run,name,step,loss"));

    const struct {
      QStringList args;
      QString error;
    } bad[] = {
        {{"--chart", "lossy", "--export", csv},
         "--chart: unknown metric 'lossy' (metrics: loss, samples_per_s, step_ms"},
        {{"--chart", "loss", "--runs", "1,9", "--export", csv}, "--runs: no run 9 in"},
        {{"--chart", "loss", "--runs", "1,x", "--export", csv},
         "--runs: expected run numbers separated by commas"},
        {{"--chart", "loss", "--export", dir.filePath("out.jpg")},
         "is not a chart file (use .png, .svg, .pdf or .csv)"},
        {{"--chart", "loss", "--smooth", "1", "--export", csv},
         "--smooth: expected a weight in [0, 1), got '1'"},
        {{"--chart", "loss", "--smooth", "-0.2", "--export", csv}, "--smooth: expected a weight"},
        {{"--chart", "loss", "--smooth", "much", "--export", csv}, "--smooth: expected a weight"},
        {{"--chart", "loss", "--x", "time", "--export", csv}, "--x: expected step or wall"},
        {{"--chart", "loss", "--workers", "all", "--export", csv}, "--workers: expected mean or 0"},
        {{"--chart", "loss", "--size", "50x50", "--export", csv}, "--size: expected WxH"},
        {{"--export", csv}, "--export needs --chart METRIC"},
        {{"--chart", "loss"}, "--chart goes with --export FILE or --page compare"},
    };
    for (const auto& b : bad) {
      o = runDtlab(QStringList{path} + b.args);
      QVERIFY2(o.exitCode == 2, qPrintable(b.args.join(' ') + ": " + o.err));
      QVERIFY2(o.err.contains(b.error), qPrintable(o.err));
    }
    o = runDtlab({path, "--chart", "loss", "--runs", "1,9", "--export", csv});
    QVERIFY2(o.err.contains("(runs: 1, 2, 3)"), qPrintable(o.err));
    QVERIFY(!QFile::exists(dir.filePath("out.jpg")));
  }

  // `dtlab P --page compare --screenshot out.png` shows the page with its chart drawn.
  void screenshotOfTheComparePage() {
    QTemporaryDir dir;
    const QString path = QString::fromStdString(makeProject(dir));
    const QString out = dir.filePath("compare.png");
    Outcome o = runDtlab({path, "--page", "compare", "--chart", "step_ms", "--runs", "1,3",
                          "--screenshot", out, "--size", "1100x750"});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    QCOMPARE(QImage(out).size(), QSize(1100, 750));
    o = runDtlab({path, "--page", "compare", "--runs", "7", "--screenshot", out});
    QCOMPARE(o.exitCode, 2);
    QVERIFY2(o.err.contains("--runs: no run 7"), qPrintable(o.err));
  }
};

QTEST_MAIN(TestCompare)
#include "test_compare.moc"
