// Run > Resume Run in the real window (offscreen): a recorded run that failed after keeping
// checkpoints continues from the newest on a fresh local daemon, into the same run, and ends
// with the parameters the run had when nothing stopped it.
#include <QtCore/QTemporaryDir>
#include <QtGui/QAction>
#include <QtTest/QtTest>
#include <QtWidgets/QTreeView>

#include "core/store/project_store.h"
#include "ui/controller/experiment_controller.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_snapshot.h"

#include "tests/ui/ui_support.h"

using namespace dtlab;

class TestResumeRun : public QObject {
  Q_OBJECT
 private slots:
  void resumesAFailedRunFromTheWindow() {
    QTemporaryDir dir;
    const QString path = dir.filePath("p.dtlab");
    core::ExperimentSpec spec = ui_test::smallSpec("resumable", 70);
    spec.training.checkpointEvery = 20;  // kept: steps 40 and 60
    int64_t runId = 0;
    nlohmann::json original;
    int64_t completedId = 0;
    {
      auto store = core::ProjectStore::create(path.toStdString());
      runId = ui_test::recordRun(*store, spec);
      original = *store->runSummary(runId);
      QCOMPARE(store->checkpoints(runId).size(), std::size_t{2});
      // As if a node had died after step 60.
      store->setRunStatus(runId, core::RunStatus::kFailed, "node1 lost (test)");
      completedId = ui_test::recordRun(*store, ui_test::smallSpec("plain", 10));
    }

    ui::MainWindow window;
    window.setQuietErrors(true);
    window.show();
    window.openProject(path);
    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    QVERIFY(loaded.wait(20000));
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
};

QTEST_MAIN(TestResumeRun)
#include "test_resume_run.moc"
