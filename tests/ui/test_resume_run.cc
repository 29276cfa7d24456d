// Run > Resume Run in the real window (offscreen): a recorded run that failed after keeping
// checkpoints continues from the newest on a fresh local daemon, into the same run, and ends
// with the parameters the run had when nothing stopped it. When the newest is damaged on
// disk, the window names the part and offers the older one, which resumes the same way.
#include <QtCore/QTemporaryDir>
#include <QtGui/QAction>
#include <QtTest/QtTest>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTreeView>

#include "core/store/project_store.h"
#include "core/store/sqlite_db.h"
#include "ui/controller/experiment_controller.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_snapshot.h"

#include "tests/ui/ui_support.h"

using namespace dtlab;

namespace {

// A run of 70 steps that kept its checkpoints of steps 40 and 60, then marked failed as if a
// node had died after step 60; `original` is how it ended with nothing stopping it.
struct FailedRun {
  int64_t id = 0;
  nlohmann::json original;
};
FailedRun recordFailedRun(core::ProjectStore& store) {
  core::ExperimentSpec spec = ui_test::smallSpec("resumable", 70);
  spec.training.checkpointEvery = 20;
  FailedRun run;
  run.id = ui_test::recordRun(store, spec);
  run.original = *store.runSummary(run.id);
  store.setRunStatus(run.id, core::RunStatus::kFailed, "node1 lost (test)");
  return run;
}

// Opens `path` in `window` (errors to its status bar) and waits until it has loaded.
bool openIn(ui::MainWindow& window, const QString& path) {
  window.setQuietErrors(true);
  window.show();
  window.openProject(path);
  QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
  return loaded.wait(20000);
}

}  // namespace

class TestResumeRun : public QObject {
  Q_OBJECT
 private slots:
  void resumesAFailedRunFromTheWindow() {
    QTemporaryDir dir;
    const QString path = dir.filePath("p.dtlab");
    FailedRun failed;
    int64_t completedId = 0;
    {
      auto store = core::ProjectStore::create(path.toStdString());
      failed = recordFailedRun(*store);
      QCOMPARE(store->checkpoints(failed.id).size(), std::size_t{2});
      completedId = ui_test::recordRun(*store, ui_test::smallSpec("plain", 10));
    }
    const int64_t runId = failed.id;
    const nlohmann::json& original = failed.original;

    ui::MainWindow window;
    QVERIFY(openIn(window, path));
    window.explorerView()->setCurrentIndex(window.explorerModel()->find("run", completedId));
    QVERIFY(!window.resumeAction()->isEnabled());  // it completed: nothing to resume
    window.explorerView()->setCurrentIndex(window.explorerModel()->find("run", runId));
    QVERIFY2(window.resumeAction()->isEnabled(), qPrintable(window.resumeAction()->toolTip()));

    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    QSignalSpy problems(window.controller(), &ui::ExperimentController::problem);
    window.resumeAction()->trigger();
    QVERIFY(finished.wait(120000));
    QVERIFY2(problems.isEmpty(),
             problems.isEmpty() ? "" : qPrintable(problems.first().first().toString()));
    QCOMPARE(runFinished.size(), 1);
    QCOMPARE(runFinished.first().at(0).toLongLong(), runId);  // the same run, not a new one
    QCOMPARE(runFinished.first().at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);

    auto store = core::ProjectStore::open(path.toStdString(), true);
    QCOMPARE(store->runs().size(), std::size_t{2});
    QCOMPARE(store->requireRun(runId).status, core::RunStatus::kCompleted);
    const nlohmann::json resumed = *store->runSummary(runId);
    QCOMPARE(resumed.at("steps"), original.at("steps"));
    QCOMPARE(resumed.at("param_checksum").at(0), original.at("param_checksum").at(0));
    bool marked = false;
    for (const core::RunEvent& e : store->events(runId)) marked |= e.kind == "resume";
    QVERIFY(marked);
  }

  void offersTheOlderCheckpointWhenTheNewestIsDamaged() {
    QTemporaryDir dir;
    const QString path = dir.filePath("p.dtlab");
    const FailedRun failed = recordFailedRun(*core::ProjectStore::create(path.toStdString()));
    const int64_t runId = failed.id;
    {
      core::sqlite::Db db(path.toStdString(), SQLITE_OPEN_READWRITE);
      db.exec("UPDATE checkpoint_parts SET data = zeroblob(length(data)) WHERE step = 60");
    }

    ui::MainWindow window;
    QVERIFY(openIn(window, path));
    window.explorerView()->setCurrentIndex(window.explorerModel()->find("run", runId));
    QVERIFY2(window.resumeAction()->isEnabled(), qPrintable(window.resumeAction()->toolTip()));

    QSignalSpy offered(&window, &ui::MainWindow::resumeOffered);
    QSignalSpy finished(window.controller(), &ui::ExperimentController::finished);
    QSignalSpy runFinished(window.controller(), &ui::ExperimentController::runFinished);
    window.resumeAction()->trigger();
    QVERIFY(offered.wait(60000));
    QCOMPARE(offered.first().at(0).toLongLong(), runId);
    QCOMPARE(offered.first().at(1).toLongLong(), qint64{40});
    const QString message = offered.first().at(2).toString();
    QVERIFY2(message.contains("the checkpoint of step 60") && message.contains("damaged") &&
                 message.contains("part 1 of 1"),
             qPrintable(message));
    QVERIFY(runFinished.isEmpty());  // nothing ran, the run is as it was
    QCOMPARE(window.statusBar()->currentMessage(), message);

    finished.clear();
    QVERIFY(window.resumeRun(runId, 40));
    QVERIFY(finished.wait(120000));
    QCOMPARE(runFinished.size(), 1);
    QCOMPARE(runFinished.first().at(1).value<core::RunStatus>(), core::RunStatus::kCompleted);
    auto store = core::ProjectStore::open(path.toStdString(), true);
    const nlohmann::json resumed = *store->runSummary(runId);
    QCOMPARE(resumed.at("steps"), failed.original.at("steps"));
    QCOMPARE(resumed.at("param_checksum").at(0), failed.original.at("param_checksum").at(0));
  }
};

QTEST_MAIN(TestResumeRun)
#include "test_resume_run.moc"
