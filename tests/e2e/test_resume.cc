// dtlab-cli resume: a synchronous run whose coordinator was SIGKILLed at a random step (after a
// random number of checkpoints, from a printed seed) continues from its newest checkpoint on
// fresh local daemons, into the same run, and ends with the parameters of the same run left
// alone; its series have one point per step. Runs that cannot resume say why.
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <chrono>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/store/sqlite_db.h"
#include "tests/core/rank_threads.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;
using e2e::cli;
using e2e::kCli;

namespace {

nlohmann::json lastRun(const e2e::Outcome& o) {
  const QStringList lines = o.out.trimmed().split('\n');
  try {
    return nlohmann::json::parse(lines.last().toStdString()).at("runs").at(0);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Newest checkpoint step of run 1 in the project at `path` (0: none yet).
int64_t newestCheckpoint(const QString& path) {
  if (!QFile::exists(path)) return 0;
  try {
    auto store = core::ProjectStore::open(path.toStdString(), true);
    const auto kept = store->checkpoints(1);
    return kept.empty() ? 0 : kept.back().step;
  } catch (const std::exception&) {
    return 0;  // caught between the writer's steps
  }
}

// Runs the spec into `project` and SIGKILLs the coordinator once the checkpoint of `step` (or
// a later one) is stored. Returns what went wrong, or nothing.
QString runKilledAfterCheckpoint(const QString& specPath, const QString& project, int64_t step) {
  QProcess run;
  run.start(kCli, {"run", specPath, "--quiet", "--project", project});
  if (!run.waitForStarted()) return "dtlab-cli did not start";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (newestCheckpoint(project) < step && run.state() == QProcess::Running &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (run.state() != QProcess::Running) return "the run ended before it could be killed";
  run.kill();
  return run.waitForFinished(10000) ? QString() : "the killed run did not end";
}

}  // namespace

class TestResume : public QObject {
  Q_OBJECT
 private slots:
  // The same at two sizes: a small model, and one whose checkpoint (2.2 M parameters with their
  // momentum: 18 MB) is several times what one message carries, so every checkpoint and the
  // resume travel in parts.
  void killedSyncRunResumesToTheSameParameters_data() {
    QTest::addColumn<int>("hidden1");
    QTest::addColumn<int>("hidden2");
    QTest::addColumn<int64_t>("steps");
    QTest::addColumn<int>("kills");  // the kill lands after 25 x (1 .. kills) steps
    QTest::newRow("small") << 128 << 128 << int64_t{300} << 6;
    QTest::newRow("18 MB of state") << 2048 << 1024 << int64_t{150} << 4;
  }
  void killedSyncRunResumesToTheSameParameters() {
    QFETCH(int, hidden1);
    QFETCH(int, hidden2);
    QFETCH(int64_t, steps);
    QFETCH(int, kills);
    QTemporaryDir dir;
    core::ExperimentSpec spec = core::test::smallBlobsSpec(steps, 50);
    spec.name = "resume";
    spec.model.hidden = {hidden1, hidden2};  // slow enough that the kill lands mid-run
    spec.training.checkpointEvery = 25;
    spec.training.checkpointsKept = 3;
    spec.cluster.localNodes = 2;
    const QString specPath = e2e::writeSpec(dir, spec);

    const e2e::Outcome whole =
        cli({"run", specPath, "--quiet", "--project", dir.filePath("whole.dtlab")}, 120000);
    QVERIFY2(whole.exitCode == 0, qPrintable(whole.err));
    const nlohmann::json wholeRun = lastRun(whole);
    QCOMPARE(wholeRun.at("status"), nlohmann::json("completed"));
    {
      // None was dropped for its size or lost in the queue, and the newest is of the last step.
      auto store = core::ProjectStore::open(dir.filePath("whole.dtlab").toStdString(), true);
      const auto kept = store->checkpoints(1);
      QCOMPARE(kept.size(), std::size_t{3});
      QCOMPARE(kept.back().step, steps);
      for (const core::RunEvent& e : store->events(1))
        QVERIFY2(e.kind != core::kCheckpointNotKeptEvent, e.detail.c_str());
    }

    const unsigned seed = std::random_device{}();
    std::mt19937 rng(seed);
    const int64_t killAfter = 25 * std::uniform_int_distribution<int>(1, kills)(rng);
    qInfo("seed %u: the coordinator is killed once the checkpoint of step %lld is stored", seed,
          static_cast<long long>(killAfter));
    const QString cut = dir.filePath("cut.dtlab");
    const QString killed = runKilledAfterCheckpoint(specPath, cut, killAfter);
    QVERIFY2(killed.isEmpty(), qPrintable(killed));

    const e2e::Outcome resumed = cli({"resume", cut, "1", "--quiet"}, 120000);
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err));
    QVERIFY2(resumed.err.contains("from the checkpoint of step"), qPrintable(resumed.err));
    const nlohmann::json resumedRun = lastRun(resumed);
    QCOMPARE(resumedRun.at("status"), nlohmann::json("completed"));
    QCOMPARE(resumedRun.at("steps"), wholeRun.at("steps"));
    QCOMPARE(resumedRun.at("param_checksum"), wholeRun.at("param_checksum"));

    auto store = core::ProjectStore::open(cut.toStdString(), true);
    QCOMPARE(store->requireRun(1).status, core::RunStatus::kCompleted);
    bool resumeEvent = false;
    for (const core::RunEvent& e : store->events(1)) resumeEvent |= e.kind == "resume";
    QVERIFY(resumeEvent);
    for (const core::SeriesInfo& s : store->series(1)) {
      if (s.key != "loss") continue;
      const std::vector<core::SeriesPoint> points = store->readSeries(s.id);
      QCOMPARE(static_cast<int64_t>(points.size()), steps);
      for (std::size_t i = 0; i < points.size(); ++i)
        QCOMPARE(points[i].step, static_cast<int64_t>(i) + 1);
    }
    QVERIFY(store->checkpoints(1).size() <= 3);
  }

  // An asynchronous run continues from its server's checkpoint, each worker from its own
  // step: every worker's series goes on without a gap or a repeated step, and the run ends on
  // its budget of global batches.
  void killedAsyncRunResumesFromItsServersCheckpoint() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = core::test::smallBlobsSpec(400, 100);
    spec.name = "resume-async";
    spec.model.hidden = {128, 128};
    // Plain SGD: with momentum 0.9 at this rate, the gradients that arrive 20-40 pushes stale
    // on a loaded machine (three workers on two cores) make the run diverge now and then, a
    // property of asynchronous training that this test is not about.
    spec.optimizer.momentum = 0.0f;
    spec.training.checkpointEvery = 20;
    spec.cluster.localNodes = 3;
    spec.variants = {
        core::parseExperimentSpec({{"cluster", {{"local_nodes", 3}}},
                                   {"variants", {{{"strategy", "async_ps"}, {"ps_shards", 2}}}}})
            .variants[0]};
    const QString specPath = e2e::writeSpec(dir, spec);
    const QString cut = dir.filePath("cut.dtlab");
    const QString killed = runKilledAfterCheckpoint(specPath, cut, 60);
    QVERIFY2(killed.isEmpty(), qPrintable(killed));

    const e2e::Outcome resumed = cli({"resume", cut, "1", "--quiet"}, 120000);
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err));
    const nlohmann::json resumedRun = lastRun(resumed);
    QCOMPARE(resumedRun.at("status"), nlohmann::json("completed"));
    QVERIFY2(resumed.err.contains("from the checkpoint of step"), qPrintable(resumed.err));
    QCOMPARE(resumedRun.at("stop_reason"), nlohmann::json("max_steps"));
    QCOMPARE(resumedRun.at("steps"), nlohmann::json(400));

    auto store = core::ProjectStore::open(cut.toStdString(), true);
    QCOMPARE(store->requireRun(1).status, core::RunStatus::kCompleted);
    int losses = 0;
    for (const core::SeriesInfo& s : store->series(1)) {
      if (s.key != "loss") continue;
      ++losses;
      const std::vector<core::SeriesPoint> points = store->readSeries(s.id);
      QVERIFY(points.size() > 60);
      for (std::size_t i = 0; i < points.size(); ++i)
        QCOMPARE(points[i].step, static_cast<int64_t>(i) + 1);
    }
    QCOMPARE(losses, 3);
  }

  void runsThatCannotResumeSayWhy() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = core::test::smallBlobsSpec(20, 10);
    spec.cluster.localNodes = 1;
    const QString specPath = e2e::writeSpec(dir, spec);
    const QString project = dir.filePath("p.dtlab");
    QCOMPARE(cli({"run", specPath, "--quiet", "--project", project}).exitCode, 0);
    e2e::Outcome o = cli({"resume", project, "1"});
    QCOMPARE(o.exitCode, 1);
    QVERIFY2(o.err.contains("completed: nothing to resume"), qPrintable(o.err));
    {
      auto store = core::ProjectStore::open(project.toStdString());
      store->setRunStatus(1, core::RunStatus::kFailed, "test");
    }
    o = cli({"resume", project, "1"});
    QCOMPARE(o.exitCode, 1);
    QVERIFY2(o.err.contains("has no checkpoint"), qPrintable(o.err));
    o = cli({"resume", project, "9"});
    QVERIFY2(o.exitCode != 0 && o.err.contains("no run 9"), qPrintable(o.err));
    o = cli({"resume", project});
    QVERIFY2(o.exitCode == 2 && o.err.contains("expected P.dtlab and a RUN"), qPrintable(o.err));
  }

  // A checkpoint damaged on disk is named, part and bytes, and the command that resumes from
  // the newest whole one is printed; that command works, and the damaged one goes with the
  // steps after the resume point.
  void aDamagedCheckpointOffersThePreviousOne() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = core::test::smallBlobsSpec(20, 10);
    spec.training.checkpointEvery = 5;
    spec.training.checkpointsKept = 3;
    spec.cluster.localNodes = 1;
    const QString specPath = e2e::writeSpec(dir, spec);
    const QString project = dir.filePath("p.dtlab");
    QCOMPARE(cli({"run", specPath, "--quiet", "--project", project}).exitCode, 0);
    int64_t newest = 0, previous = 0;
    {
      auto store = core::ProjectStore::open(project.toStdString());
      const auto kept = store->checkpoints(1);
      QVERIFY(kept.size() >= 2);
      newest = kept.back().step;
      previous = kept[kept.size() - 2].step;
      store->setRunStatus(1, core::RunStatus::kFailed, "test");
    }
    {
      core::sqlite::Db db(project.toStdString(), SQLITE_OPEN_READWRITE);
      db.exec(("UPDATE checkpoint_parts SET data = zeroblob(length(data)) WHERE step = " +
               std::to_string(newest))
                  .c_str());
    }
    e2e::Outcome o = cli({"resume", project, "1"});
    QCOMPARE(o.exitCode, 1);
    QVERIFY2(o.err.contains("the checkpoint of step " + QString::number(newest) +
                            " of run 1 is damaged: part 1 of 1 (bytes 0-"),
             qPrintable(o.err));
    const QString offered =
        "dtlab-cli resume " + project + " 1 --step " + QString::number(previous);
    QVERIFY2(o.err.contains(offered), qPrintable(o.err));
    o = cli({"resume", project, "1", "--step", QString::number(previous), "--quiet"});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    auto store = core::ProjectStore::open(project.toStdString());
    QCOMPARE(store->requireRun(1).status, core::RunStatus::kCompleted);
    for (const core::CheckpointInfo& c : store->checkpoints(1))
      QVERIFY(store->checkpointData(1, c.step).size() == static_cast<std::size_t>(c.bytes));
  }
};

QTEST_GUILESS_MAIN(TestResume)
#include "test_resume.moc"
