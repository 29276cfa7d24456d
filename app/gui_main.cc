// dtlab: the desktop workbench. Thin: parses arguments, opens the window, renders one page to
// a PNG and exits (--screenshot, for README pictures and tests), or writes a comparison chart
// without a window and exits (--chart ... --export).
#include <QtCore/QCommandLineParser>
#include <QtCore/QDir>
#include <QtCore/QEventLoop>
#include <QtCore/QFileInfo>
#include <QtCore/QTimer>
#include <QtWidgets/QApplication>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTextBrowser>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "app/gui_bench.h"
#include "core/common/config.h"
#include "core/store/project_store.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/comparison_chart.h"
#include "ui/help/user_guide.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/node_secrets.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/dataset_page.h"
#include "ui/pages/execution_statistics.h"
#include "ui/pages/predict_page.h"
#include "ui/pages/run_page.h"
#include "ui/pages/start_page.h"

namespace {

using dtlab::ui::ChartX;
using dtlab::ui::ComparisonRequest;
using dtlab::ui::MemberReduction;

// Waits (running the event loop) until `signal` of `sender` fires; false after `ms` or when
// `failure` of `failedSender` fires first.
template <typename Sender, typename Signal, typename FailedSender, typename Failure>
bool waitFor(const Sender* sender, Signal signal, const FailedSender* failedSender, Failure failure,
             int ms) {
  QEventLoop loop;
  bool fired = false;
  QObject::connect(sender, signal, &loop, [&] {
    fired = true;
    loop.quit();
  });
  QObject::connect(failedSender, failure, &loop, [&] { loop.quit(); });
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
  return fired;
}

// Waits for one emission of a signal (QSignalSpy is Qt Test's; this is the app's own).
class QSignalSpyLike {
 public:
  template <typename Sender, typename Signal>
  QSignalSpyLike(Sender* sender, Signal signal) {
    QObject::connect(sender, signal, &loop_, [this] {
      fired_ = true;
      loop_.quit();
    });
  }
  bool wait(int ms) {
    if (fired_) return true;
    QTimer::singleShot(ms, &loop_, &QEventLoop::quit);
    loop_.exec();
    return fired_;
  }

 private:
  QEventLoop loop_;
  bool fired_ = false;
};

template <typename Signal>
bool waitFor(const dtlab::ui::MainWindow* window, Signal signal, int ms) {
  return waitFor(window, signal, window, &dtlab::ui::MainWindow::loadFailed, ms);
}

// Bad input: the message and exit status 2.
int fail(const QString& message) {
  std::fprintf(stderr, "dtlab: %s\n", qPrintable(message));
  return 2;
}

std::optional<QSize> parseSize(const QString& text, QSize minimum) {
  const QStringList wh = text.split('x');
  bool w = false, h = false;
  if (wh.size() != 2) return std::nullopt;
  const QSize size(wh[0].toInt(&w), wh[1].toInt(&h));
  if (!w || !h || size.width() < minimum.width() || size.height() < minimum.height())
    return std::nullopt;
  return size;
}

// The comparison the --chart options ask for; run ids are checked against the project later.
struct ChartChoice {
  ComparisonRequest request;
  double smoothing = 0.0;
  bool runsGiven = false;
};

std::optional<QString> parseChartChoice(const QCommandLineParser& parser, ChartChoice& choice) {
  if (parser.isSet("chart")) {
    const QString metric = parser.value("chart");
    if (dtlab::core::findMetric(metric.toStdString()) == nullptr)
      return QString("--chart: unknown metric '%1' (metrics: %2)")
          .arg(metric, QString::fromStdString(dtlab::ui::metricNames()));
    choice.request.metric = metric.toStdString();
  } else {
    choice.request.metric = dtlab::core::metric::kLoss;
  }
  if (parser.isSet("runs")) {
    choice.runsGiven = true;
    for (const QString& part : parser.value("runs").split(',')) {
      bool ok = false;
      const qint64 id = part.trimmed().toLongLong(&ok);
      if (!ok || id <= 0)
        return QString("--runs: expected run numbers separated by commas, got '%1'")
            .arg(parser.value("runs"));
      choice.request.runIds.push_back(id);
    }
  }
  const std::optional<ChartX> x = dtlab::ui::parseChartX(parser.value("x").toStdString());
  if (!x) return QString("--x: expected step or wall, got '%1'").arg(parser.value("x"));
  choice.request.x = *x;
  const QString workers = parser.value("workers");
  if (workers != "mean" && workers != "0")
    return QString("--workers: expected mean or 0, got '%1'").arg(workers);
  choice.request.reduction = workers == "mean" ? MemberReduction::kMean : MemberReduction::kFirst;
  bool ok = false;
  choice.smoothing = parser.value("smooth").toDouble(&ok);
  if (!ok || !(choice.smoothing >= 0.0 && choice.smoothing < 1.0))
    return QString("--smooth: expected a weight in [0, 1), got '%1'").arg(parser.value("smooth"));
  return std::nullopt;
}

// Every run of the project when --runs was not given; an unknown run is an error naming those
// there are.
std::optional<QString> resolveRuns(const dtlab::ui::ProjectSnapshot& snapshot, const QString& path,
                                   ChartChoice& choice) {
  QStringList known;
  for (const auto& run : snapshot.runs) known << QString::number(run.id);
  if (!choice.runsGiven) {
    for (const auto& run : snapshot.runs) choice.request.runIds.push_back(run.id);
    if (snapshot.runs.empty()) return QString("%1 has no runs to compare").arg(path);
    return std::nullopt;
  }
  for (const int64_t id : choice.request.runIds)
    if (!known.contains(QString::number(id)))
      return QString("--runs: no run %1 in %2 (runs: %3)")
          .arg(id)
          .arg(path, known.isEmpty() ? QString("none") : known.join(", "));
  return std::nullopt;
}

// --chart ... --export FILE: the chart drawn and written as the GUI's Export buttons do.
int exportChartAndExit(const QString& project, ChartChoice choice, QSize size, int dpi,
                       const QString& out) {
  dtlab::ui::ComparisonData data;
  try {
    // An export from the command line, which exits when done, reads the project directly (the
    // window reads it through ui/models/project_access.h).
    const auto store = dtlab::core::ProjectStore::open(project.toStdString(), /*readOnly=*/true);
    const dtlab::ui::ProjectSnapshot snapshot = dtlab::ui::readProjectSnapshot(*store);
    if (const auto error = resolveRuns(snapshot, project, choice)) return fail(*error);
    data = dtlab::ui::readComparison(*store, choice.request);
  } catch (const std::exception& e) {
    return fail(QString("could not read %1: %2").arg(project, QString::fromUtf8(e.what())));
  }
  dtlab::ui::ComparisonChart chart;
  chart.resize(size);
  chart.setSmoothing(choice.smoothing);
  chart.setData(std::move(data));
  try {
    dtlab::ui::exportChart(chart, out, {size, dpi});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtlab: %s\n", e.what());
    return 1;
  }
  std::printf("dtlab: wrote %s\n", qPrintable(out));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // An export needs no screen: draw offscreen unless a platform was chosen.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--export") == 0 || std::strncmp(argv[i], "--export=", 9) == 0)
      if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");

  QApplication app(argc, argv);
  // The benchmark has flags of its own (see app/gui_bench.h).
  if (QCoreApplication::arguments().contains("--bench")) {
    QApplication::setOrganizationName("DTLab");
    QApplication::setApplicationName("dtlab-bench");
    return dtlab::app::runGuiBench(QCoreApplication::arguments().mid(1));
  }
  QApplication::setOrganizationName("DTLab");
  QApplication::setApplicationName("dtlab");
  QApplication::setApplicationVersion(DTLAB_VERSION);
  // Tokens an earlier version kept in the settings file move to the keyring.
  dtlab::ui::NodeSecrets::instance().migrateSettings();

  QCommandLineParser parser;
  parser.setApplicationDescription(
      "DTLab: distributed training experiments on synthetic data.\n\n"
      "  dtlab P.dtlab --chart METRIC [--runs R1,R2,...] [--x step|wall] [--smooth F]\n"
      "        [--workers mean|0] [--size WxH] [--dpi N] --export out.png|svg|pdf|csv\n"
      "writes a comparison chart without opening a window (every run when --runs is not "
      "given).\n\n"
      "  dtlab --bench [--runs R] [--points N] [--reps K] [--stream-seconds S] [--json]\n"
      "measures the comparison chart's replot beside a plain QCustomPlot, and the event loop's "
      "latency while a 4-node run streams into the window.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("project", "a project file (*.dtlab) to open", "[P.dtlab]");
  const QCommandLineOption page(
      "page",
      "the page to show: explorer, dashboard (a run's; 'run' says the same), dataset, topology, "
      "experiment, compare, predict (the most recent experiment at scale, or --experiment's) or "
      "guide (Help > User Guide; with --screenshot, its window)",
      "page", "explorer");
  const QCommandLineOption run("run", "the run to show (its number; default: the latest)", "RUN");
  const QCommandLineOption screenshot("screenshot", "render the page to a PNG and exit", "out.png");
  const QCommandLineOption size("size",
                                "window size for --screenshot (1280x800), chart size for "
                                "--export (1200x700)",
                                "WxH");
  const QCommandLineOption chart("chart", "the metric to compare (a name of the metric table)",
                                 "METRIC");
  const QCommandLineOption runs("runs", "the runs to compare", "R1,R2,...");
  const QCommandLineOption x("x", "the chart's x-axis: step or wall (seconds)", "step|wall",
                             "step");
  const QCommandLineOption smooth("smooth", "smoothing weight in [0, 1), 0: none", "F", "0");
  const QCommandLineOption workers(
      "workers", "per-worker (per-node) metrics: mean over workers at each step, or worker 0",
      "mean|0", "mean");
  const QCommandLineOption dpi("dpi",
                               "PNG export: dots per inch (the image has size x DPI / 96 "
                               "pixels)",
                               "N", "96");
  const QCommandLineOption exportTo("export", "write the --chart to a file and exit",
                                    "out.png|svg|pdf|csv");
  const QCommandLineOption experimentName(
      "experiment", "--page predict: the experiment to predict (default: the most recent)", "NAME");
  const QCommandLineOption tab("tab",
                               "--page compare: the tab shown above the charts (runs, statistics, "
                               "seed, the measured seed table of the execution compared, or "
                               "yardstick, the scale simulator beside each run)",
                               "runs|statistics|seed|yardstick");
  const QCommandLineOption example(
      "example",
      "open the example NAME (NAME.json of the examples) as the start page does: as a project of "
      "its own in the user's documents, its experiment selected",
      "NAME");
  const QCommandLineOption replay(
      "replay",
      "a run's page: replay the run from its record to global step STEP, as the charts' \"Replay "
      "to here\" does (async_ps, ssp, hybrid); with --screenshot, the replay's window",
      "STEP");
  parser.addOptions({page, run, screenshot, size, chart, runs, x, smooth, workers, dpi, exportTo,
                     tab, experimentName, example, replay});
  parser.process(app);

  const QStringList positional = parser.positionalArguments();
  if (positional.size() > 1) return fail("expected at most one project file");
  const QString pageName = parser.value(page);
  const QStringList pages = {"explorer",   "dashboard", "run",     "dataset", "topology",
                             "experiment", "compare",   "predict", "guide"};
  if (!pages.contains(pageName))
    return fail(
        QString("--page: '%1' is not available (pages: %2)").arg(pageName, pages.join(", ")));
  const bool dashboard = pageName == "dashboard" || pageName == "run";
  if ((dashboard || pageName == "dataset" || pageName == "topology" || pageName == "experiment" ||
       pageName == "predict") &&
      positional.isEmpty())
    return fail(QString("--page %1 needs a project file").arg(pageName));
  bool runOk = true;
  qint64 runId = parser.isSet(run) ? parser.value(run).toLongLong(&runOk) : -1;
  if (!runOk || (parser.isSet(run) && runId <= 0))
    return fail(QString("--run: expected a run number, got '%1'").arg(parser.value(run)));
  const QStringList tabs = {"runs", "statistics", "seed", "yardstick"};
  if (parser.isSet(tab) && (pageName != "compare" || !tabs.contains(parser.value(tab))))
    return fail(QString("--tab: expected runs, statistics, seed or yardstick with --page compare, "
                        "got '%1'")
                    .arg(parser.value(tab)));
  if (pageName == "compare" && runId > 0)
    return fail("--run shows one run's page; --page compare takes --runs R1,R2,...");
  if (runId > 0 && positional.isEmpty()) return fail("--run needs a project file");
  bool replayOk = true;
  const qint64 replayStep = parser.isSet(replay) ? parser.value(replay).toLongLong(&replayOk) : -1;
  if (!replayOk || (parser.isSet(replay) && replayStep < 0))
    return fail(
        QString("--replay: expected a step (0 or more), got '%1'").arg(parser.value(replay)));
  if (parser.isSet(replay) && !dashboard) return fail("--replay goes with --page run");

  const bool exporting = parser.isSet(exportTo);
  const bool comparing = exporting || pageName == "compare";
  for (const QCommandLineOption* o : {&chart, &runs, &x, &smooth, &workers})
    if (parser.isSet(*o) && !comparing)
      return fail(
          QString("--%1 goes with --export FILE or --page compare").arg(o->names().first()));
  if (parser.isSet(dpi) && !exporting) return fail("--dpi goes with --export FILE");
  ChartChoice choice;
  if (comparing)
    if (const auto error = parseChartChoice(parser, choice)) return fail(*error);

  if (exporting) {
    if (parser.isSet(screenshot)) return fail("--export and --screenshot: choose one");
    if (!parser.isSet(chart)) return fail("--export needs --chart METRIC");
    if (positional.isEmpty()) return fail("--export needs a project file");
    const QString out = parser.value(exportTo);
    if (!dtlab::ui::chartFormatOf(out))
      return fail(QString("--export: '%1' is not a chart file (use %2)")
                      .arg(out, dtlab::ui::kChartExtensions));
    const std::optional<QSize> chartSize =
        parseSize(parser.isSet(size) ? parser.value(size) : "1200x700", QSize(100, 100));
    if (!chartSize || chartSize->width() > 20000 || chartSize->height() > 20000)
      return fail(
          QString("--size: expected WxH (100 to 20000 a side), got '%1'").arg(parser.value(size)));
    bool dpiOk = false;
    const int dots = parser.value(dpi).toInt(&dpiOk);
    if (!dpiOk || dots < 48 || dots > 1200)
      return fail(QString("--dpi: expected 48 to 1200, got '%1'").arg(parser.value(dpi)));
    return exportChartAndExit(positional.first(), choice, *chartSize, dots, out);
  }

  dtlab::ui::MainWindow window;
  const bool capture = parser.isSet(screenshot);
  window.setQuietErrors(capture);
  if (capture) {
    const std::optional<QSize> windowSize =
        parseSize(parser.isSet(size) ? parser.value(size) : "1280x800", QSize(200, 150));
    if (!windowSize)
      return fail(
          QString("--size: expected WxH (at least 200x150), got '%1'").arg(parser.value(size)));
    window.resize(*windowSize);
  }
  window.show();
  // The compare page and a run's page choose from the project: they wait for it, as a
  // screenshot does.
  if (parser.isSet(experimentName) && pageName != "predict")
    return fail("--experiment goes with --page predict");
  const bool waitForProject =
      capture || pageName == "compare" || pageName == "predict" || dashboard || runId > 0;
  if (parser.isSet(example)) {
    if (!positional.isEmpty()) return fail("--example opens a project of its own: give no file");
    const QString spec = QDir(dtlab::ui::examplesDir()).filePath(parser.value(example) + ".json");
    if (dtlab::ui::examplesDir().isEmpty() || !QFileInfo(spec).isFile())
      return fail(QString("--example: no example '%1' (in %2)")
                      .arg(parser.value(example), dtlab::ui::examplesDir()));
    window.openExample(spec);
    if (!waitFor(&window, &dtlab::ui::MainWindow::projectLoaded, 30000))
      return fail(QString("could not open the example %1: %2")
                      .arg(spec, window.statusBar()->currentMessage()));
    QApplication::processEvents();
  }
  if (pageName == "guide") {
    dtlab::ui::UserGuide* guide = window.showUserGuide();
    if (guide->browser()->toPlainText().startsWith("No documentation here"))
      return fail(
          "Help > User Guide found no documentation (looked in $DTLAB_DOCS, "
          "share/doc/dtlab beside the program and the source tree's docs/)");
    if (capture) {
      QApplication::processEvents();
      const QString out = parser.value(screenshot);
      if (!guide->grab().save(out, "PNG")) return fail(QString("cannot write %1").arg(out));
      std::printf("dtlab: wrote %s (%s)\n", qPrintable(out),
                  qPrintable(dtlab::ui::documentationDir()));
      return 0;
    }
  }
  if (!positional.isEmpty()) {
    window.openProject(positional.first());
    if (waitForProject && !waitFor(&window, &dtlab::ui::MainWindow::projectLoaded, 30000) &&
        capture)
      return fail(QString("could not open %1: %2")
                      .arg(positional.first(), window.statusBar()->currentMessage()));
  }
  if (dashboard && runId < 0 && !positional.isEmpty()) {
    const auto& runs = window.explorerModel()->snapshot().runs;
    if (runs.empty()) return fail(QString("%1 has no runs to show").arg(positional.first()));
    runId = std::max_element(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
              return a.id < b.id;
            })->id;
  }
  if (runId > 0) {
    window.selectRun(runId);
    if (capture && !waitFor(&window, &dtlab::ui::MainWindow::runShown, 30000))
      return fail(window.statusBar()->currentMessage());
  }
  if (replayStep >= 0) {
    dtlab::ui::RunPage* runPage = window.runPage();
    // The window says "Replaying..." first, then the replay's report (or why it failed).
    QEventLoop loop;
    QObject::connect(runPage, &dtlab::ui::RunPage::replayShown, &loop, [&loop](const QString& t) {
      if (!t.startsWith("Replaying")) loop.quit();
    });
    QTimer::singleShot(60000, &loop, &QEventLoop::quit);
    runPage->replayTo(replayStep);
    loop.exec();
    if (runPage->replayText().startsWith("Replaying"))
      return fail("the replay did not finish in 60 s");
    if (runPage->replayText().startsWith(QString("The replay to step")))
      return fail(runPage->replayText());
    if (capture) {
      QApplication::processEvents();
      const QString out = parser.value(screenshot);
      if (!runPage->replayDialog()->grab().save(out, "PNG"))
        return fail(QString("cannot write %1").arg(out));
      std::printf("dtlab: wrote %s\n", qPrintable(out));
      return 0;
    }
  }
  if (pageName == "dataset") {
    // The project's first dataset, or a new one in the editor.
    QSignalSpyLike previewed(window.datasetPage(), &dtlab::ui::DatasetPage::previewShown);
    window.showFirst("dataset");
    if (capture && !previewed.wait(30000)) return fail("the dataset preview did not finish");
  }
  if (pageName == "topology" || pageName == "experiment") {
    window.showFirst(pageName);
    QApplication::processEvents();
  }
  if (pageName == "compare") {
    const dtlab::ui::ProjectSnapshot& snapshot = window.explorerModel()->snapshot();
    if (choice.runsGiven && !snapshot.path.empty())
      if (const auto error = resolveRuns(snapshot, positional.first(), choice)) return fail(*error);
    window.showCompare();
    dtlab::ui::ComparePage* compare = window.comparePage();
    if (choice.runsGiven) compare->setChosenRuns(choice.request.runIds);
    compare->setMetric(QString::fromStdString(choice.request.metric));
    compare->setXAxis(choice.request.x);
    compare->setReduction(choice.request.reduction);
    if (parser.isSet(smooth)) compare->setSmoothing(choice.smoothing);
    if (parser.isSet(tab)) compare->tabs()->setCurrentIndex(tabs.indexOf(parser.value(tab)));
    if (capture && !waitFor(compare, &dtlab::ui::ComparePage::chartShown, compare,
                            &dtlab::ui::ComparePage::failed, 30000))
      return fail(window.statusBar()->currentMessage());
    // An execution's statistics and seed table are read in the background too.
    if (capture && !compare->statistics()->upToDate()) {
      QSignalSpyLike statisticsShown(compare->statistics(), &dtlab::ui::ExecutionStatistics::shown);
      if (!compare->statistics()->upToDate()) statisticsShown.wait(30000);
    }
  }
  if (pageName == "predict") {
    dtlab::ui::PredictPage* predict = window.predictPage();
    QSignalSpyLike shown(predict, &dtlab::ui::PredictPage::shown);
    window.showPredict(parser.value(experimentName).toStdString());
    if (capture && !shown.wait(60000)) return fail(window.statusBar()->currentMessage());
  }
  if (!capture) {
    const QString notice = dtlab::ui::NodeSecrets::instance().takeNotice();
    if (!notice.isEmpty()) window.statusBar()->showMessage(notice, 30000);
    return app.exec();
  }

  QApplication::processEvents();
  const QString out = parser.value(screenshot);
  if (!window.grab().save(out, "PNG")) return fail(QString("cannot write %1").arg(out));
  std::printf("dtlab: wrote %s\n", qPrintable(out));
  return 0;
}
