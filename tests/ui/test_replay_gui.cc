// "Replay to here" on the run page (issue 23): a right click on a chart of an asynchronous run
// offers it, replays the run from the project's record in the background and shows the update
// applied at that step (worker, staleness, test loss before and after), the pushes in flight
// and the weights, which agree with `dtlab-cli replay --until`. A synchronous run's menu says
// why it has no replay. Real runs of real daemons (dtlab-cli run), the real page, offscreen.
#include <QtTest/QtTest>

#include <QtCore/QFile>
#include <QtCore/QProcess>
#include <QtCore/QRegularExpression>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QDialog>
#include <QtWidgets/QMenu>

#include <nlohmann/json.hpp>

#include "core/store/project_store.h"
#include "tests/ui/ui_support.h"
#include "ui/models/project_snapshot.h"
#include "ui/pages/run_page.h"

using namespace dtlab;

namespace {

struct Outcome {
  int exitCode = -1;
  QString out;
  QString err;
};

Outcome runCli(const QStringList& args) {
  QProcess cli;
  cli.start(DTLAB_BINARY_DIR "/app/dtlab-cli", args);
  if (!cli.waitForFinished(180000)) return {-1, {}, "dtlab-cli did not finish"};
  return {cli.exitCode(), QString::fromUtf8(cli.readAllStandardOutput()),
          QString::fromUtf8(cli.readAllStandardError())};
}

// The action of `menu` whose text starts with `prefix`, or null.
QAction* actionStarting(QMenu* menu, const QString& prefix) {
  for (QAction* a : menu->actions())
    if (a->text().startsWith(prefix)) return a;
  return nullptr;
}

// The middle of a chart, in the dashboard's coordinates.
QPoint middleOf(ui::RunDashboard* chart, ui::RunDashboard::Chart which) {
  return chart->rect(which)->rect().center();
}

}  // namespace

class TestReplayGui : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  QString project_;
  int64_t asyncRun_ = -1;
  int64_t syncRun_ = -1;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    project_ = dir_.filePath("replay.dtlab");
    const nlohmann::json spec = {
        {"name", "replay"},
        {"seed", 5},
        {"dataset",
         {{"kind", "gaussian_blobs"},
          {"train_size", 4096},
          {"test_size", 512},
          {"features", 16},
          {"classes", 4}}},
        {"model", {{"hidden", {32}}}},
        {"training", {{"batch_size", 64}, {"epochs", 0}, {"max_steps", 40}, {"eval_interval", 5}}},
        {"cluster",
         {{"local_nodes", 3},
          {"nodes",
           {{{"speed", 1.0}},
            {{"speed", 1.0}},
            {{"speed", 1.0}, {"straggler", {{"probability", 0.3}, {"pause_ms", 20}}}}}}}},
        {"variants",
         {{{"name", "async"}, {"strategy", "async_ps"}},
          {{"name", "sync"}, {"strategy", "sync_allreduce"}}}}};
    const QString specPath = dir_.filePath("replay.json");
    QFile file(specPath);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray::fromStdString(spec.dump()));
    file.close();
    const Outcome run = runCli({"run", specPath, "--quiet", "--project", project_});
    QVERIFY2(run.exitCode == 0, qPrintable(run.err));
    auto store = core::ProjectStore::open(project_.toStdString(), /*readOnly=*/true);
    for (const core::RunRecord& r : store->runs()) {
      if (r.name == "replay/async") asyncRun_ = r.id;
      if (r.name == "replay/sync") syncRun_ = r.id;
    }
    QVERIFY(asyncRun_ > 0 && syncRun_ > 0);
  }

  // The menu on a chart of the asynchronous run replays to the step under the mouse; what the
  // page shows is the CLI's replay of the same step.
  void replayToHereShowsTheUpdateThere() {
    ui::RunPage page;
    page.resize(1400, 900);
    page.show();
    page.showRun(ui_test::runDetailAt(project_.toStdString(), asyncRun_));
    ui::RunDashboard* chart = page.chart();
    chart->replot();
    const QPoint at = middleOf(chart, ui::RunDashboard::kLossChart);
    // On the step axis a fast worker's own steps run past the run's 40 global steps: the
    // replay goes to the step under the mouse, or to the run's last.
    const int64_t step =
        std::min<int64_t>(40, chart->stepAt(chart->rect(ui::RunDashboard::kLossChart)
                                                ->axis(QCPAxis::atBottom)
                                                ->pixelToCoord(at.x())));
    QVERIFY2(step > 0, qPrintable(QString::number(step)));
    QMenu* menu = chart->contextMenuAt(at);
    QAction* replay = actionStarting(menu, "Replay to here");
    QVERIFY(replay != nullptr);
    QCOMPARE(replay->text(), QString("Replay to here (step %1)").arg(step));
    QVERIFY(replay->isEnabled());
    QSignalSpy shown(&page, &ui::RunPage::replayShown);
    replay->trigger();
    menu->close();
    // First "replaying...", then the report.
    QTRY_VERIFY_WITH_TIMEOUT(page.replayText().contains("pushes in flight"), 60000);
    QVERIFY(shown.count() >= 2);
    const QString text = page.replayText();
    QVERIFY2(text.contains(QString("replayed to global step %1").arg(step)), qPrintable(text));
    QVERIFY2(QRegularExpression("The update applied there: worker \\d's push \\d+, computed from "
                                "versions [\\d,]+ and applied at [\\d,]+ \\(staleness \\d+\\)")
                 .match(text)
                 .hasMatch(),
             qPrintable(text));
    QVERIFY2(QRegularExpression("Test loss before it \\d+\\.\\d+, after it \\d+\\.\\d+ \\(test "
                                "accuracy")
                 .match(text)
                 .hasMatch(),
             qPrintable(text));
    QVERIFY(page.replayDialog() != nullptr && page.replayDialog()->isVisible());
    QVERIFY(page.replayDialog()->windowTitle().contains(QString("to step %1").arg(step)));

    // The CLI's replay to the same step: the same server, the same update.
    const Outcome cli =
        runCli({"replay", project_, QString::number(asyncRun_), "--until", QString::number(step)});
    QVERIFY2(cli.exitCode == 0, qPrintable(cli.out + cli.err));
    const QStringList lines = cli.out.trimmed().split('\n');
    const nlohmann::json j = nlohmann::json::parse(lines.last().toStdString())["replay"];
    QVERIFY2(text.contains(QString::fromStdString(j["checksum"].get<std::string>())),
             qPrintable(text));
    QVERIFY(!j["update"].is_null());
    QVERIFY2(text.contains(QString("worker %1's push %2,")
                               .arg(j["update"]["worker"].get<int>())
                               .arg(j["update"]["push"].get<int64_t>())),
             qPrintable(text));
    QVERIFY2(text.contains(QString("%1 pushes in flight").arg(j["pending"].size())),
             qPrintable(text));

    // The weights: every parameter, as --weights writes them.
    const QString weights = dir_.filePath("at_step.f32");
    QVERIFY(page.saveReplayWeights(weights));
    const QString cliWeights = dir_.filePath("cli.f32");
    QCOMPARE(runCli({"replay", project_, QString::number(asyncRun_), "--until",
                     QString::number(step), "--weights", cliWeights})
                 .exitCode,
             0);
    QFile a(weights), b(cliWeights);
    QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
    const QByteArray ours = a.readAll();
    QCOMPARE(ours.size(), qsizetype{(16 * 32 + 32 + 32 * 4 + 4) * 4});
    QCOMPARE(ours, b.readAll());

    if (qEnvironmentVariableIsSet("DTLAB_SCREENSHOT_DIR")) {
      page.grab().save(qEnvironmentVariable("DTLAB_SCREENSHOT_DIR") + "/replay_page.png");
      page.replayDialog()->grab().save(qEnvironmentVariable("DTLAB_SCREENSHOT_DIR") +
                                       "/replay_dialog.png");
    }
  }

  // A synchronous run has nothing to replay: the entry is there, disabled, saying why.
  void synchronousRunSaysWhyNot() {
    ui::RunPage page;
    page.resize(1400, 900);
    page.show();
    page.showRun(ui_test::runDetailAt(project_.toStdString(), syncRun_));
    page.chart()->replot();
    QMenu* menu = page.chart()->contextMenuAt(middleOf(page.chart(), ui::RunDashboard::kLossChart));
    QAction* replay = actionStarting(menu, "Replay to here");
    QVERIFY(replay != nullptr);
    QVERIFY(!replay->isEnabled());
    QVERIFY2(replay->toolTip().contains("sync_allreduce runs are not replayed from a record"),
             qPrintable(replay->toolTip()));
    QVERIFY(actionStarting(menu, "Show the whole run") != nullptr);
    menu->close();
    QVERIFY(page.replayDialog() == nullptr);
  }
};

QTEST_MAIN(TestReplayGui)
#include "test_replay_gui.moc"
