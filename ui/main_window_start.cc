// MainWindow's start page actions: an example opened as a project of its own, and the guided
// tours that run one and land on its comparison or its prediction at scale. Part of
// main_window.cc's class, kept apart for size.
#include <chrono>
#include <utility>

#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QTimer>
#include <QtWidgets/QStackedWidget>
#include <QtWidgets/QStatusBar>

#include "core/common/check.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "ui/main_window.h"
#include "ui/models/project_access.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/predict_page.h"
#include "ui/pages/start_page.h"

namespace dtlab::ui {

void MainWindow::openExample(const QString& specPath) {
  // The example's own project in the user's documents: made from the spec the first time,
  // opened as it is after that (it is the user's now); the example itself is only read.
  const QString dir = exampleProjectsDir();
  const QString path = QDir(dir).filePath(QFileInfo(specPath).completeBaseName() + ".dtlab");
  if (QFileInfo::exists(path)) {
    openProject(path);
    statusBar()->showMessage(tr("Opened your copy of the example, %1").arg(path), 8000);
    return;
  }
  statusBar()->showMessage(tr("Making %1 from the example %2...").arg(path, specPath));
  runInBackground<qint64>(
      ProjectAccess::instance().writer(), this,
      [specPath, dir, path]() -> qint64 {
        const core::ExperimentSpec spec = core::loadExperimentSpec(specPath.toStdString());
        if (!QDir().mkpath(dir)) throw Error("cannot make the folder " + dir.toStdString());
        auto store = core::ProjectStore::create(path.toStdString(), spec.name);
        return store->putEntity(core::EntityKind::kExperiment, spec.name, core::toJson(spec));
      },
      [this, path, specPath](const std::optional<qint64>& experiment, const QString& error) {
        if (!experiment) {
          fail(tr("Cannot open the example %1: %2").arg(specPath, error));
          return;
        }
        openProject(path);
        pendingKind_ = "experiment";  // shown once the project is read
        pendingId_ = *experiment;
      });
}

void MainWindow::startTour(const QString& specPath, const QString& title) {
  tour_ = title;
  tourRunning_ = false;
  tourPredictAt_.clear();
  for (const Tour& t : tours())
    if (t.title == title) tourPredictAt_ = t.predictAt;
  openExample(specPath);
  // Once the example's experiment is on its page (the project read, the entry selected), run it.
  auto* started = new QTimer(this);
  started->setInterval(100);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  connect(started, &QTimer::timeout, this, [this, started, deadline] {
    // Stopped as well as deleted: a timeout already due must not start the run a second time
    // (the second start is refused while the first runs, and would end the tour).
    const auto done = [started] {
      started->stop();
      started->deleteLater();
    };
    if (tour_.isEmpty()) {
      done();
      return;
    }
    const bool ready = !path_.isEmpty() && pages_->currentWidget() == experimentPage_ &&
                       experimentPage_->error().isEmpty();
    if (!ready && std::chrono::steady_clock::now() < deadline) return;
    done();
    if (!ready) {
      fail(tr("The tour \"%1\" could not open its example").arg(tour_));
      tour_.clear();
      return;
    }
    statusBar()->showMessage(tr("Tour \"%1\": running the example on local nodes...").arg(tour_));
    const nlohmann::json spec = experimentPage_->spec();
    tourExperiment_ = spec.value("name", "");
    tourRunning_ = runSpec(QString::fromStdString(spec.dump()));
    if (!tourRunning_) tour_.clear();
  });
  started->start();
}

void MainWindow::landTour() {
  // The tour lands on the comparison of what it ran, or on its prediction at scale.
  tourRunning_ = false;
  const QString tour = std::exchange(tour_, QString());
  const std::vector<int> predictAt = std::exchange(tourPredictAt_, {});
  const std::string experiment = std::exchange(tourExperiment_, {});
  // The runs are in the project once it is read again.
  auto* once = new QObject(this);
  connect(this, &MainWindow::projectRead, once, [this, once, tour, predictAt, experiment] {
    once->deleteLater();
    if (predictAt.empty()) {
      showCompare();
      statusBar()->showMessage(tr("Tour \"%1\": the comparison of the runs it made").arg(tour),
                               15000);
      return;
    }
    predictPage_->setNodes(predictAt);
    showPredict(experiment, /*calibrate=*/true);
    statusBar()->showMessage(
        tr("Tour \"%1\": the simulator, calibrated from the runs it made, predicts each "
           "strategy at %2 to %3 nodes")
            .arg(tour)
            .arg(predictAt.front())
            .arg(predictAt.back()),
        15000);
  });
  reload();
}

}  // namespace dtlab::ui
