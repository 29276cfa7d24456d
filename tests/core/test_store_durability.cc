// Crash safety and concurrency of the project store with real processes: a writer killed
// with SIGKILL leaves a file that opens, passes PRAGMA integrity_check and holds every
// batch it committed; readers (threads and another process) running beside the writer
// never see "database is locked" or any other error; a copy saved while a writer appends is
// a whole, consistent project; two processes recording at once both finish whole.
#include <QtTest/QtTest>

#include <cstdio>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <thread>

#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/sqlite_db.h"
#include "tests/sanitizers/sanitizers.h"

using namespace dtlab::core;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Not a multiple of the chunk capacity, so batches end inside chunks and the writer's
// open-chunk merging happens across kills.
constexpr int64_t kBatch = 997;

double valueOf(int64_t step, int series) {
  return std::sin(static_cast<double>(step) * 0.001) * (series + 1);
}

// Reads one int64 from fd, waiting at most timeoutMs; false on EOF or timeout.
bool readReport(int fd, int64_t* value, int timeoutMs) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeoutMs) <= 0) return false;
  return ::read(fd, value, sizeof(*value)) == static_cast<ssize_t>(sizeof(*value));
}

// The child: appends batches to two series for ever, reporting each batch once flush()
// returned (committed). Never returns.
[[noreturn]] void writeBatchesForever(const std::string& path, int64_t runId, int reportFd) {
  try {
    AppenderOptions options;
    options.commitInterval = std::chrono::milliseconds(3);  // timer commits mid-batch too
    PointAppender appender(path, options);
    const SeriesHandle a = appender.series(runId, 0, 0, "loss");
    const SeriesHandle b = appender.series(runId, 0, 1, "loss");
    for (int64_t batch = 0;; ++batch) {
      for (int64_t i = 0; i < kBatch; ++i) {
        const int64_t step = batch * kBatch + i;
        appender.append(a, step, static_cast<double>(step), valueOf(step, 0));
        appender.append(b, step, static_cast<double>(step), valueOf(step, 1));
      }
      if (batch % 5 == 4)
        appender.appendEvent(runId, {batch * kBatch, 0.0, "mark", std::to_string(batch)});
      appender.flush();
      const int64_t committed = batch + 1;
      if (::write(reportFd, &committed, sizeof(committed)) != sizeof(committed)) ::_exit(4);
    }
  } catch (...) {
    ::_exit(3);
  }
}

// Runs queries of every kind until the deadline; returns the first error (empty: none)
// and counts the reads. Also checks that what it sees never shrinks.
std::string readUntil(const std::string& path, int64_t runId, Clock::time_point deadline,
                      int64_t* reads) {
  try {
    std::unique_ptr<ProjectStore> store = ProjectStore::open(path);
    int64_t lastPoints = 0;
    for (int64_t i = 0; Clock::now() < deadline; ++i) {
      if (i % 50 == 49) store = ProjectStore::open(path);  // opening beside the writer too
      store->runs();
      store->metadata();
      store->events(runId);
      int64_t points = 0;
      for (const RunMetric& m : store->runMetrics(runId)) points += m.count;
      if (points < lastPoints) return "point count went down";
      lastPoints = points;
      const std::vector<SeriesInfo> series = store->series(runId);
      if (!series.empty()) {
        SeriesQuery q;
        q.seriesId = series[static_cast<std::size_t>(i) % series.size()].id;
        q.buckets = 200;
        const SeriesData data = store->querySeries(q);
        if (data.pointsInRange > 0 && data.points.empty()) return "empty query result";
        store->readSeries(series[0].id, std::max<int64_t>(0, series[0].maxStep - 5000));
      }
      ++*reads;
    }
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

class TestStoreDurability : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string file(const char* name) {
    return (fs::path(dir_.path().toStdString()) / name).string();
  }

 private slots:
  void sigkillKeepsEveryCommittedBatch() {
    const std::string path = file("killed.dtlab");
    ProjectStore::create(path);
    std::mt19937 rng(7);
    // Three rounds on the same file: each later writer starts on a file a killed one left.
    for (int round = 0; round < 3; ++round) {
      int64_t runId = 0;
      {
        auto store = ProjectStore::open(path);
        runId = store->beginRun({std::nullopt, "killed", "single", 1, nullptr, std::nullopt, 0});
      }  // no SQLite connection crosses fork()
      int fds[2];
      QVERIFY(::pipe(fds) == 0);
      const pid_t pid = ::fork();
      QVERIFY(pid >= 0);
      if (pid == 0) {
        ::close(fds[0]);
        writeBatchesForever(path, runId, fds[1]);
      }
      ::close(fds[1]);
      const int64_t killAfter = 20 + static_cast<int64_t>(rng() % 30);
      int64_t reported = 0;
      int64_t value = 0;
      while (reported < killAfter && readReport(fds[0], &value, 30000)) reported = value;
      QVERIFY2(reported >= killAfter, "the child stopped reporting batches");
      // Kill at an arbitrary moment within the next batches, mid-commit as likely as not.
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
      QVERIFY(::kill(pid, SIGKILL) == 0);
      int status = 0;
      QCOMPARE(::waitpid(pid, &status, 0), pid);
      QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
      while (readReport(fds[0], &value, 0)) reported = value;  // reports still in the pipe
      ::close(fds[0]);

      {
        sqlite::Db raw(path, SQLITE_OPEN_READWRITE);
        QCOMPARE(raw.queryText("PRAGMA integrity_check"), std::string("ok"));
      }
      auto store = ProjectStore::open(path);
      const int64_t minimum = reported * kBatch;
      int64_t total = 0;
      for (int s = 0; s < 2; ++s) {
        const std::vector<SeriesPoint> points =
            store->readSeries(*store->findSeries(runId, 0, s, "loss"));
        QVERIFY2(
            static_cast<int64_t>(points.size()) >= minimum,
            (std::to_string(points.size()) + " points, " + std::to_string(minimum) + " committed")
                .c_str());
        // Exactly a prefix of what was written: nothing lost, duplicated or torn.
        for (std::size_t i = 0; i < points.size(); ++i) {
          QCOMPARE(points[i].step, static_cast<int64_t>(i));
          QCOMPARE(points[i].value,
                   static_cast<double>(static_cast<float>(valueOf(points[i].step, s))));
        }
        total += static_cast<int64_t>(points.size());
      }
      // Metrics and events commit in the same transactions as the points.
      QCOMPARE(store->runMetrics(runId).at(0).count, total);
      QVERIFY(static_cast<int64_t>(store->events(runId).size()) >= reported / 5);
      QCOMPARE(store->requireRun(runId).status, RunStatus::kRunning);  // as left
    }
  }

  // Two processes record a run each into one project at the same time (two experiments run
  // from two terminals): neither sees an error, both runs are whole, the file is sound.
  void twoRecordersShareAProject() {
#if defined(DTLAB_TSAN)
    // The forked recorders start threads of their own (the appender's); TSan cannot follow
    // threads started in a child of a multi-threaded process (QtTest's watchdog runs here).
    QSKIP("ThreadSanitizer cannot follow threads started after fork; the other builds run it");
#endif
    const std::string path = file("shared.dtlab");
    ProjectStore::create(path);
    constexpr int kBatches = 30;
    std::vector<pid_t> children;
    for (int k = 0; k < 2; ++k) {
      const pid_t pid = ::fork();
      QVERIFY(pid >= 0);
      if (pid == 0) {
        try {
          int64_t runId = 0;
          {
            auto store = ProjectStore::open(path);
            runId = store->beginRun({std::nullopt, "writer " + std::to_string(k), "single",
                                     static_cast<uint64_t>(k), nullptr, std::nullopt, 0});
          }
          {
            AppenderOptions options;
            options.commitInterval = std::chrono::milliseconds(3);
            PointAppender appender(path, options);
            const SeriesHandle a = appender.series(runId, 0, 0, "loss");
            const SeriesHandle b = appender.series(runId, 0, 1, "loss");
            for (int64_t step = 0; step < kBatches * kBatch; ++step) {
              appender.append(a, step, static_cast<double>(step), valueOf(step, 0));
              appender.append(b, step, static_cast<double>(step), valueOf(step, 1));
              if (step % kBatch == 0) appender.appendEvent(runId, {step, 0.0, "mark", ""});
            }
            appender.flush();
          }
          RunSummary summary;
          summary.status = RunStatus::kCompleted;
          ProjectStore::open(path)->finishRun(runId, summary);
          ::_exit(0);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "recorder %d: %s\n", k, e.what());
          ::_exit(3);
        } catch (...) {
          ::_exit(3);
        }
      }
      children.push_back(pid);
    }
    for (const pid_t pid : children) {
      int status = 0;
      QCOMPARE(::waitpid(pid, &status, 0), pid);
      QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a recorder met an error");
    }
    {
      sqlite::Db raw(path, SQLITE_OPEN_READWRITE);
      QCOMPARE(raw.queryText("PRAGMA integrity_check"), std::string("ok"));
    }
    auto store = ProjectStore::open(path);
    const std::vector<RunRecord> runs = store->runs();
    QCOMPARE(runs.size(), std::size_t{2});
    for (const RunRecord& r : runs) {
      QCOMPARE(r.status, RunStatus::kCompleted);
      QCOMPARE(store->runMetrics(r.id).at(0).count, int64_t{2} * kBatches * kBatch);
      std::string kinds;
      for (const RunEvent& e : store->events(r.id))
        kinds += e.kind + "@" + std::to_string(e.step) + " ";
      QVERIFY2(static_cast<int>(store->events(r.id).size()) == kBatches, kinds.c_str());
      const std::vector<SeriesPoint> points =
          store->readSeries(*store->findSeries(r.id, 0, 1, "loss"));
      QCOMPARE(static_cast<int64_t>(points.size()), kBatches * kBatch);
      QCOMPARE(points.back().step, kBatches * kBatch - 1);
    }
  }

  void readersBesideWriterNeverSeeLocked() {
    const std::string path = file("concurrent.dtlab");
    int64_t runId = 0;
    {
      auto store = ProjectStore::create(path);
      runId = store->beginRun({std::nullopt, "busy", "single", 1, nullptr, std::nullopt, 0});
    }
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(2500);

    // A reader in another process, forked before this process starts any thread.
    int fds[2];
    QVERIFY(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    QVERIFY(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      int64_t reads = 0;
      const std::string error = readUntil(path, runId, deadline, &reads);
      const std::string report = error.empty() ? "ok " + std::to_string(reads) : error;
      if (::write(fds[1], report.data(), report.size()) < 0) ::_exit(2);
      ::_exit(error.empty() ? 0 : 1);
    }
    ::close(fds[1]);

    std::atomic<bool> writing{true};
    std::string writerError;
    std::thread writer([&] {
      try {
        AppenderOptions options;
        options.commitInterval = std::chrono::milliseconds(2);
        PointAppender appender(path, options);
        auto other = ProjectStore::open(path);  // metadata writes on a second connection
        std::vector<SeriesHandle> handles;
        for (int w = 0; w < 16; ++w) handles.push_back(appender.series(runId, 0, w, "loss"));
        for (int64_t step = 0; Clock::now() < deadline; ++step) {
          for (SeriesHandle h : handles)
            appender.append(h, step, step * 0.5, std::cos(step * 0.01));
          if (step % 500 == 0) appender.flush();
          if (step % 2000 == 0) {
            other->setMetadata("progress", std::to_string(step));
            other->addEvent(runId, {step, 0.0, "tick", ""});
          }
        }
        appender.close();
      } catch (const std::exception& e) {
        writerError = e.what();
      }
      writing = false;
    });
    std::vector<std::string> errors(2);
    std::vector<int64_t> reads(2, 0);
    std::vector<std::thread> readers;
    for (int r = 0; r < 2; ++r)
      readers.emplace_back([&, r] { errors[r] = readUntil(path, runId, deadline, &reads[r]); });
    for (std::thread& t : readers) t.join();
    writer.join();

    char buffer[512] = {};
    pollfd p{fds[0], POLLIN, 0};
    QVERIFY(::poll(&p, 1, 30000) == 1);
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer) - 1);
    ::close(fds[0]);
    int status = 0;
    QCOMPARE(::waitpid(pid, &status, 0), pid);
    const std::string childReport(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
    QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, childReport.c_str());
    QVERIFY2(writerError.empty(), writerError.c_str());
    for (int r = 0; r < 2; ++r) {
      QVERIFY2(errors[r].empty(), errors[r].c_str());
      QVERIFY(reads[r] > 10);  // they really ran beside the writer
    }
    auto store = ProjectStore::open(path);
    QVERIFY(store->runMetrics(runId).at(0).count > 16 * 1000);
    qInfo("reads: %lld and %lld (threads), %s (process)", static_cast<long long>(reads[0]),
          static_cast<long long>(reads[1]), childReport.c_str());
  }

  void saveCopyAsWhileWriterAppends() {
    const std::string path = file("original.dtlab");
    const std::string copyPath = file("copy.dtlab");
    int64_t runId = 0;
    {
      auto store = ProjectStore::create(path, "original");
      store->createEntity(EntityKind::kDataset, "blobs", {{"kind", "gaussian_blobs"}});
      runId = store->beginRun({std::nullopt, "busy", "single", 1, nullptr, std::nullopt, 0});
    }
    std::atomic<bool> stop{false};
    std::atomic<int64_t> committed{0};
    std::string writerError;
    std::thread writer([&] {
      try {
        AppenderOptions options;
        options.commitInterval = std::chrono::milliseconds(2);
        PointAppender appender(path, options);
        const SeriesHandle h = appender.series(runId, 0, 0, "loss");
        for (int64_t step = 0; !stop; ++step) {
          appender.append(h, step, step * 0.5, valueOf(step, 0));
          if (step % 1000 == 999) {
            appender.flush();
            committed = step + 1;
          }
        }
        appender.close();
      } catch (const std::exception& e) {
        writerError = e.what();
      }
    });
    while (committed < 20000 && writerError.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const int64_t before = committed;
    auto store = ProjectStore::open(path, /*readOnly=*/true);  // a reader may save a copy
    store->saveCopyAs(copyPath);
    stop = true;
    writer.join();
    QVERIFY2(writerError.empty(), writerError.c_str());

    QVERIFY(!fs::exists(copyPath + "-wal"));  // complete in the file itself
    {
      sqlite::Db raw(copyPath, SQLITE_OPEN_READONLY);
      QCOMPARE(raw.queryText("PRAGMA integrity_check"), std::string("ok"));
      QCOMPARE(raw.queryText("PRAGMA journal_mode"), std::string("wal"));  // as every project
    }
    for (const auto& entry : fs::directory_iterator(dir_.path().toStdString()))
      QVERIFY2(entry.path().string().find(".saving-") == std::string::npos,
               entry.path().c_str());  // no temporary left behind
    auto copy = ProjectStore::open(copyPath);
    QCOMPARE(copy->metadata().at("name"), std::string("original"));
    QCOMPARE(copy->entities(EntityKind::kDataset).size(), std::size_t{1});
    QCOMPARE(copy->requireRun(runId).name, std::string("busy"));
    // A prefix of what was written, at least what was committed before the copy began.
    const std::vector<SeriesPoint> points =
        copy->readSeries(*copy->findSeries(runId, 0, 0, "loss"));
    QVERIFY(static_cast<int64_t>(points.size()) >= before);
    for (std::size_t i = 0; i < points.size(); ++i)
      QCOMPARE(points[i].step, static_cast<int64_t>(i));
    // The original went on: it has more than the copy.
    auto original = ProjectStore::open(path);
    QVERIFY(original->readSeries(*original->findSeries(runId, 0, 0, "loss")).size() >
            points.size());

    // Refusals: the project's own file, an existing file without replace. Nothing changes.
    const auto sizeOf = [](const std::string& p) { return fs::file_size(p); };
    const auto copySize = sizeOf(copyPath);
    QVERIFY_THROWS_EXCEPTION(StoreError, original->saveCopyAs(path, /*replace=*/true));
    QVERIFY_THROWS_EXCEPTION(StoreError, original->saveCopyAs(copyPath));
    QCOMPARE(sizeOf(copyPath), copySize);
    QVERIFY_THROWS_EXCEPTION(StoreError, original->saveCopyAs(file("no/such/dir.dtlab")));
    // Replacing: the copy now holds the original's later points.
    original->setMetadata("name", "renamed");
    original->saveCopyAs(copyPath, /*replace=*/true);
    QCOMPARE(ProjectStore::open(copyPath)->metadata().at("name"), std::string("renamed"));
  }
};

QTEST_APPLESS_MAIN(TestStoreDurability)
#include "test_store_durability.moc"
