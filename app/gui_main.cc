// dtlab: the desktop workbench. Thin: parses arguments, opens the window, or renders one
// page to a PNG and exits (--screenshot, for README pictures and tests).
#include <QtCore/QCommandLineParser>
#include <QtCore/QEventLoop>
#include <QtCore/QTimer>
#include <QtWidgets/QApplication>
#include <QtWidgets/QStatusBar>

#include <cstdio>

#include "core/common/config.h"
#include "ui/main_window.h"
#include "ui/pages/dataset_page.h"

namespace {

// Waits (running the event loop) until `signal` of `sender` fires; false after `ms`.
template <typename Signal>
bool waitFor(const dtlab::ui::MainWindow* sender, Signal signal, int ms) {
  QEventLoop loop;
  bool fired = false;
  QObject::connect(sender, signal, &loop, [&] {
    fired = true;
    loop.quit();
  });
  QObject::connect(sender, &dtlab::ui::MainWindow::loadFailed, &loop, [&] { loop.quit(); });
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

int fail(const QString& message) {
  std::fprintf(stderr, "dtlab: %s\n", qPrintable(message));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("DTLab");
  QApplication::setApplicationName("dtlab");
  QApplication::setApplicationVersion(DTLAB_VERSION);

  QCommandLineParser parser;
  parser.setApplicationDescription("DTLab: distributed training experiments on synthetic data.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("project", "a project file (*.dtlab) to open", "[P.dtlab]");
  const QCommandLineOption page("page", "the page to show: explorer, run, dataset, topology or experiment",
                                "page", "explorer");
  const QCommandLineOption run("run", "the run to show (its number)", "RUN");
  const QCommandLineOption screenshot("screenshot", "render the page to a PNG and exit", "out.png");
  const QCommandLineOption size("size", "window size for --screenshot", "WxH", "1280x800");
  parser.addOptions({page, run, screenshot, size});
  parser.process(app);

  const QStringList positional = parser.positionalArguments();
  if (positional.size() > 1) return fail("expected at most one project file");
  const QString pageName = parser.value(page);
  const QStringList pages = {"explorer", "run", "dataset", "topology", "experiment"};
  if (!pages.contains(pageName))
    return fail(
        QString("--page: '%1' is not available (pages: %2)").arg(pageName, pages.join(", ")));
  if ((pageName == "dataset" || pageName == "topology" || pageName == "experiment") &&
      positional.isEmpty())
    return fail(QString("--page %1 needs a project file").arg(pageName));
  bool runOk = true;
  const qint64 runId = parser.isSet(run) ? parser.value(run).toLongLong(&runOk) : -1;
  if (!runOk || (parser.isSet(run) && runId <= 0))
    return fail(QString("--run: expected a run number, got '%1'").arg(parser.value(run)));
  if (pageName == "run" && runId < 0) return fail("--page run needs --run RUN");
  if (runId > 0 && positional.isEmpty()) return fail("--run needs a project file");

  dtlab::ui::MainWindow window;
  const bool capture = parser.isSet(screenshot);
  window.setQuietErrors(capture);
  if (capture) {
    const QStringList wh = parser.value(size).split('x');
    bool w = false, h = false;
    if (wh.size() != 2 || wh[0].toInt(&w) < 200 || wh[1].toInt(&h) < 150 || !w || !h)
      return fail(
          QString("--size: expected WxH (at least 200x150), got '%1'").arg(parser.value(size)));
    window.resize(wh[0].toInt(), wh[1].toInt());
  }
  window.show();
  if (!positional.isEmpty()) {
    window.openProject(positional.first());
    if (capture && !waitFor(&window, &dtlab::ui::MainWindow::projectLoaded, 30000))
      return fail(QString("could not open %1: %2")
                      .arg(positional.first(), window.statusBar()->currentMessage()));
  }
  if (runId > 0) {
    window.selectRun(runId);
    if (capture && !waitFor(&window, &dtlab::ui::MainWindow::runShown, 30000))
      return fail(window.statusBar()->currentMessage());
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
  if (!capture) return app.exec();

  QApplication::processEvents();
  const QString out = parser.value(screenshot);
  if (!window.grab().save(out, "PNG")) return fail(QString("cannot write %1").arg(out));
  std::printf("dtlab: wrote %s\n", qPrintable(out));
  return 0;
}
