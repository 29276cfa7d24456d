// A run left "running" by a recording process that is gone reads as interrupted, ended at its
// last point, in any open of the project, and opening it for writing stores it so with an
// "interrupted" event; a run whose recorder lives, or runs on another machine, stays running.
// The recorder is a real child process, killed with SIGKILL.
#include <QtTest/QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/sqlite_db.h"

using namespace dtlab::core;
namespace fs = std::filesystem;

namespace {

// The child: begins a run, commits points up to step 119 (wall 10 ms a step), reports the
// run's id, then waits to be killed. Never returns.
[[noreturn]] void recordThenWait(const std::string& path, int reportFd) {
  try {
    int64_t runId = 0;
    {
      auto store = ProjectStore::open(path);
      runId =
          store->beginRun({std::nullopt, "doomed", "sync_allreduce", 1, nullptr, std::nullopt, 0});
    }
    PointAppender appender(path);
    const SeriesHandle loss = appender.series(runId, 0, 0, "loss");
    for (int64_t step = 0; step < 120; ++step)
      appender.append(loss, step, static_cast<double>(step) * 10.0, 1.0 / (step + 1));
    appender.flush();
    if (::write(reportFd, &runId, sizeof runId) != sizeof runId) ::_exit(4);
    for (;;) ::pause();
  } catch (...) {
    ::_exit(3);
  }
}

std::string storedStatus(const std::string& path, int64_t runId) {
  sqlite::Db db(path, SQLITE_OPEN_READONLY);
  return db.queryText(("SELECT status FROM runs WHERE id = " + std::to_string(runId)).c_str());
}

void setRecorder(const std::string& path, int64_t runId, const char* recorder) {
  sqlite::Db db(path, SQLITE_OPEN_READWRITE);
  sqlite::Statement s(db, "UPDATE runs SET recorder = ? WHERE id = ?");
  if (recorder == nullptr)
    s.bindNull(1);
  else
    s.bind(1, std::string(recorder));
  s.bind(2, runId).run();
}

}  // namespace

class TestStoreInterrupted : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string file(const char* name) {
    return (fs::path(dir_.path().toStdString()) / name).string();
  }

 private slots:
  void aKilledRecordersRunIsInterrupted() {
    const std::string path = file("killed.dtlab");
    ProjectStore::create(path);
    int report[2];
    QVERIFY(::pipe(report) == 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(report[0]);
      recordThenWait(path, report[1]);
    }
    ::close(report[1]);
    int64_t runId = 0;
    QVERIFY(::read(report[0], &runId, sizeof runId) == sizeof runId);
    ::close(report[0]);

    // While its recorder lives, the run is running, whoever opens the project.
    QCOMPARE(ProjectStore::open(path, true)->requireRun(runId).status, RunStatus::kRunning);
    QCOMPARE(ProjectStore::open(path)->requireRun(runId).status, RunStatus::kRunning);
    QCOMPARE(storedStatus(path, runId), std::string("running"));

    ::kill(child, SIGKILL);
    int status = 0;
    QCOMPARE(::waitpid(child, &status, 0), child);

    // Read only: shown as interrupted, ended at its last point; nothing written.
    {
      const RunRecord r = ProjectStore::open(path, true)->requireRun(runId);
      QCOMPARE(r.status, RunStatus::kInterrupted);
      QCOMPARE(*r.endedMs, r.startedMs + 1190);
      QVERIFY2(r.error.find("pid " + std::to_string(child)) != std::string::npos, r.error.c_str());
    }
    QCOMPARE(storedStatus(path, runId), std::string("running"));

    // Opened for writing: stored so, with an event at its last step; no longer refused for
    // deletion as a running run.
    auto store = ProjectStore::open(path);
    QCOMPARE(storedStatus(path, runId), std::string("interrupted"));
    const RunRecord r = store->requireRun(runId);
    QCOMPARE(r.status, RunStatus::kInterrupted);
    QCOMPARE(*r.endedMs, r.startedMs + 1190);
    const std::vector<RunEvent> events = store->events(runId);
    QVERIFY(!events.empty());
    QCOMPARE(events.back().kind, std::string("interrupted"));
    QCOMPARE(events.back().step, int64_t{119});
    QCOMPARE(events.back().detail, r.error);
    QCOMPARE(store->runMetrics(runId).at(0).count, int64_t{120});  // every point kept
    store->deleteRun(runId);
    QVERIFY(!store->run(runId).has_value());
  }

  void aLiveOrForeignRecorderKeepsItsRunRunning() {
    const std::string path = file("foreign.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t mine =
        store->beginRun({std::nullopt, "mine", "sync_allreduce", 1, nullptr, std::nullopt, 0});
    const int64_t foreign =
        store->beginRun({std::nullopt, "foreign", "sync_allreduce", 1, nullptr, std::nullopt, 0});
    const int64_t old =
        store->beginRun({std::nullopt, "old", "sync_allreduce", 1, nullptr, std::nullopt, 0});
    store.reset();
    // Recorded on another machine (a project on a shared disk): nothing here can tell.
    setRecorder(path, foreign, R"({"host": "elsewhere", "boot": "x", "pid": 1, "start": "1"})");
    // Begun by a DTLab that stored no recorder: taken as gone.
    setRecorder(path, old, nullptr);
    store = ProjectStore::open(path);
    QCOMPARE(store->requireRun(mine).status, RunStatus::kRunning);
    QCOMPARE(store->requireRun(foreign).status, RunStatus::kRunning);
    const RunRecord r = store->requireRun(old);
    QCOMPARE(r.status, RunStatus::kInterrupted);
    QCOMPARE(*r.endedMs, r.startedMs);  // no point: it ended where it began
    QVERIFY2(r.error.find("an earlier DTLab") != std::string::npos, r.error.c_str());
    QCOMPARE(storedStatus(path, old), std::string("interrupted"));
  }
};

QTEST_GUILESS_MAIN(TestStoreInterrupted)
#include "test_store_interrupted.moc"
