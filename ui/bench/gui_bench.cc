#include "ui/bench/gui_bench.h"

#include <qcustomplot.h>

#include <QtCore/QElapsedTimer>
#include <QtCore/QEventLoop>
#include <QtCore/QTemporaryDir>
#include <QtCore/QTimer>
#include <QtWidgets/QApplication>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/common/statistics.h"
#include "core/spec/spec_json.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "ui/charts/comparison_chart.h"
#include "ui/controller/experiment_controller.h"
#include "ui/main_window.h"
#include "ui/pages/run_page.h"

namespace dtlab::ui {
namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

// A loss-like curve with noise: what a training run records.
double curve(int64_t step, int run) {
  const double t = static_cast<double>(step);
  const uint64_t h = (static_cast<uint64_t>(step) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(run) << 32);
  const double noise = static_cast<double>((h >> 11) % 10000) / 10000.0 - 0.5;
  return 2.0 * std::exp(-t / 20000.0) + 0.1 + 0.05 * noise + 0.02 * run;
}

// Times `replot` K times after one untimed call; milliseconds.
template <typename Plot>
std::vector<double> timeReplots(Plot& plot, int reps) {
  plot.replot(QCustomPlot::rpImmediateRefresh);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    QElapsedTimer timer;
    timer.start();
    plot.replot(QCustomPlot::rpImmediateRefresh);
    ms.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
  }
  return ms;
}

// How late a 5 ms timer fires while the event loop runs for `seconds` (ms each time).
std::vector<double> eventLoopLateness(double seconds) {
  std::vector<double> late;
  QEventLoop loop;
  QTimer tick;
  tick.setTimerType(Qt::PreciseTimer);
  tick.setInterval(5);
  QElapsedTimer clock;
  clock.start();
  qint64 last = clock.nsecsElapsed();
  QObject::connect(&tick, &QTimer::timeout, &loop, [&] {
    const qint64 now = clock.nsecsElapsed();
    late.push_back(std::max(0.0, static_cast<double>(now - last) / 1e6 - 5.0));
    last = now;
    if (static_cast<double>(now) / 1e9 >= seconds) loop.quit();
  });
  tick.start();
  loop.exec();
  return late;
}

// A project at `path` with `runs` runs of `points` loss points each, written through the real
// appender; returns the runs' ids.
std::vector<int64_t> writeComparisonProject(const std::string& path, int runs, int64_t points) {
  std::vector<int64_t> runIds;
  auto store = core::ProjectStore::create(path, "bench");
  core::PointAppender appender(path);
  for (int r = 0; r < runs; ++r) {
    const int64_t id = store->beginRun(
        {std::nullopt, "run " + std::to_string(r), "bench", 1, nullptr, std::nullopt, 0});
    runIds.push_back(id);
    const core::SeriesHandle h = appender.series(id, 0, 0, "loss");
    std::vector<core::PointRecord> batch;
    batch.reserve(4096);
    for (int64_t s = 1; s <= points; ++s) {
      batch.push_back({h, static_cast<float>(curve(s, r)), s, static_cast<double>(s) * 2.0});
      if (batch.size() == 4096) {
        appender.append(batch);
        batch.clear();
      }
    }
    appender.append(batch);
  }
  appender.close();
  return runIds;
}

// The comparison of the runs' loss, read through the store as the compare page does; `ms`:
// how long the read took.
ComparisonData readLossComparison(const std::string& path, const std::vector<int64_t>& runIds,
                                  double& ms) {
  ComparisonRequest request;
  request.metric = "loss";
  request.runIds = runIds;
  QElapsedTimer readTimer;
  readTimer.start();
  ComparisonData data = readComparison(*core::ProjectStore::open(path, /*readOnly=*/true), request);
  ms = static_cast<double>(readTimer.nsecsElapsed()) / 1e6;
  return data;
}

// DTLab's comparison chart showing `data`; returns the replot times. `drawnPoints`: what the
// chart draws after downsampling.
std::vector<double> timeComparisonChart(ComparisonChart& chart, ComparisonData&& data, int reps,
                                        std::size_t& drawnPoints) {
  chart.resize(1200, 700);
  chart.setData(std::move(data));
  drawnPoints = 0;
  for (const auto& c : chart.curves()) drawnPoints += c.x.size();
  return timeReplots(chart, reps);
}

// The reference: a plain QCustomPlot with every raw point (QCustomPlot's own adaptive
// sampling of line plots is on by default); returns the replot times.
std::vector<double> timePlainPlot(QCustomPlot& plain, int runs, int64_t points, int reps) {
  plain.resize(1200, 700);
  for (int r = 0; r < runs; ++r) {
    QVector<double> x(points), y(points);
    for (int64_t s = 0; s < points; ++s) {
      x[s] = static_cast<double>(s + 1);
      y[s] = curve(s + 1, r);
    }
    plain.addGraph()->setData(x, y, true);
  }
  plain.rescaleAxes();
  return timeReplots(plain, reps);
}

// A project at `path` holding one experiment, "stream": a 4-node run that goes on for
// `streamSeconds` and half a minute more, evaluating often.
void writeStreamProject(const std::string& path, double streamSeconds) {
  auto store = core::ProjectStore::create(path);
  core::ExperimentSpec spec;
  spec.name = "stream";
  spec.dataset.trainSize = 20000;
  spec.dataset.features = 32;
  spec.model.hidden = {64, 64};
  spec.training.batchSize = 64;
  spec.training.epochs = 0;
  spec.training.maxSteps = 0;
  spec.training.maxSeconds = streamSeconds + 30.0;
  spec.training.evalInterval = 50;
  spec.cluster.localNodes = 4;
  store->putEntity(core::EntityKind::kExperiment, "stream", core::toJson(spec));
}

// Opens the project in the window and starts its experiment from the experiment page; returns
// once the run has reported progress and the run page has been on screen for a second.
void startStreamingRun(MainWindow& window, const std::string& path) {
  window.openProject(QString::fromStdString(path));
  {
    QEventLoop wait;
    QObject::connect(&window, &MainWindow::projectLoaded, &wait, &QEventLoop::quit);
    QTimer::singleShot(20000, &wait, &QEventLoop::quit);
    wait.exec();
  }
  window.showFirst("experiment");
  QEventLoop started;
  QObject::connect(window.controller(), &ExperimentController::progress, &started,
                   &QEventLoop::quit);
  QTimer::singleShot(60000, &started, &QEventLoop::quit);
  window.runAction()->trigger();
  started.exec();
  QTimer::singleShot(1000, &started, &QEventLoop::quit);  // the run page is on screen
  started.exec();
}

// Cancels the window's run and waits for it to finish.
void cancelRun(MainWindow& window) {
  window.controller()->cancel();
  QEventLoop done;
  QObject::connect(window.controller(), &ExperimentController::finished, &done, &QEventLoop::quit);
  QTimer::singleShot(15000, &done, &QEventLoop::quit);
  done.exec();
}

}  // namespace

GuiBenchResult runGuiBench(const GuiBenchOptions& options) {
  const int runs = options.runs;
  const int reps = options.reps;
  const int64_t points = options.points;
  const double streamSeconds = options.streamSeconds;
  QTemporaryDir dir;
  const std::string path = dir.filePath("bench.dtlab").toStdString();

  // 1. Replot: DTLab's comparison chart of `runs` runs of `points` points each, and a plain
  // QCustomPlot with the same raw points. Both stay alive while the event loop is measured.
  const std::vector<int64_t> runIds = writeComparisonProject(path, runs, points);
  double readMs = 0.0;
  ComparisonData data = readLossComparison(path, runIds, readMs);
  ComparisonChart chart;
  std::size_t drawnPoints = 0;
  const std::vector<double> dtlabMs =
      timeComparisonChart(chart, std::move(data), reps, drawnPoints);
  QCustomPlot plain;
  const std::vector<double> plainMs = timePlainPlot(plain, runs, points, reps);

  // 2. Event-loop latency: idle, then while a 4-node run from the window streams.
  MainWindow window;
  window.setQuietErrors(true);
  window.resize(1280, 800);
  window.show();
  const std::vector<double> idle = eventLoopLateness(std::min(3.0, streamSeconds));
  const std::string runPath = dir.filePath("stream.dtlab").toStdString();
  writeStreamProject(runPath, streamSeconds);
  startStreamingRun(window, runPath);
  const std::vector<double> streaming = eventLoopLateness(streamSeconds);
  int livePoints = 0;
  for (int g = 0; g < window.runPage()->chart()->graphCount(); ++g)
    livePoints += window.runPage()->chart()->graph(g)->data()->size();
  cancelRun(window);

  GuiBenchResult result;
  result.drawnPoints = drawnPoints;
  result.readMs = readMs;
  result.replotMsMedian = core::median(dtlabMs);
  result.referenceReplotMsMedian = core::median(plainMs);
  result.idleP50Ms = percentile(idle, 0.5);
  result.idleP99Ms = percentile(idle, 0.99);
  result.streamingP50Ms = percentile(streaming, 0.5);
  result.streamingP99Ms = percentile(streaming, 0.99);
  result.livePoints = livePoints;
  return result;
}

}  // namespace dtlab::ui
