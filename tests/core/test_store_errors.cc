// How the project store reports what goes wrong: SQLite's error codes on its errors, for
// callers to branch on, and the log line of a writer dropped without close().
#include <QtTest/QtTest>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/sqlite_db.h"

using namespace dtlab::core;
namespace fs = std::filesystem;

namespace {

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

class TestStoreErrors : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string file(const char* name) {
    return (fs::path(dir_.path().toStdString()) / name).string();
  }

 private slots:
  // Callers tell failures apart by SQLite's extended code, which every StoreError from a
  // SQLite call carries: a name taken, a missing parent row, a read-only connection.
  void storeErrorsCarrySqliteCodes() {
    const std::string path = file("codes.dtlab");
    auto store = ProjectStore::create(path);
    store->createEntity(EntityKind::kDataset, "taken", nlohmann::json::object());
    auto codeOf = [](auto&& f) -> std::optional<StoreError> {
      try {
        f();
      } catch (const StoreError& e) {
        return e;
      }
      return std::nullopt;
    };
    const auto taken = codeOf(
        [&] { store->createEntity(EntityKind::kDataset, "taken", nlohmann::json::object()); });
    QVERIFY(taken && taken->uniqueViolation() && !taken->foreignKeyViolation());
    QCOMPARE(taken->sqliteCode(), SQLITE_CONSTRAINT_UNIQUE);
    QVERIFY2(std::string(taken->what()).find("a dataset named 'taken' already exists") == 0,
             taken->what());
    const auto orphan = codeOf([&] {
      store->beginRun({int64_t{4242}, "orphan", "sync_allreduce", 1, nullptr, std::nullopt, 0});
    });
    QVERIFY(orphan && orphan->foreignKeyViolation());
    QVERIFY2(std::string(orphan->what()).find("no experiment 4242") == 0, orphan->what());
    store.reset();
    auto reader = ProjectStore::open(path, true);
    const auto readOnly = codeOf(
        [&] { reader->createEntity(EntityKind::kDataset, "new", nlohmann::json::object()); });
    QVERIFY(readOnly && readOnly->readOnly() && !readOnly->busy() && !readOnly->full());
    // The store's own refusals carry no SQLite code.
    const auto missing = codeOf([&] { reader->requireRun(7); });
    QVERIFY(missing && missing->sqliteCode() == 0);
  }

  // A destructor cannot throw what it meets: the appender dropped without close() logs the
  // writer's error on stderr instead of losing it.
  void droppedAppenderLogsItsError() {
    const std::string path = file("dropped.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t doomed =
        store->beginRun({std::nullopt, "doomed", "single", 1, nullptr, std::nullopt, 0});
    const std::string logPath = file("stderr.log");
    std::fflush(stderr);
    const int savedStderr = ::dup(STDERR_FILENO);
    const int logFd = ::open(logPath.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    QVERIFY(savedStderr >= 0 && logFd >= 0);
    ::dup2(logFd, STDERR_FILENO);
    {
      PointAppender appender(path);
      const SeriesHandle b = appender.series(doomed, 0, 0, "loss");
      appender.append(b, 1, 1.0, 1.0);
      appender.flush();
      store->deleteRun(doomed, true);
      appender.append(b, 2, 2.0, 2.0);
    }  // destroyed without close()
    std::fflush(stderr);
    ::dup2(savedStderr, STDERR_FILENO);
    ::close(savedStderr);
    ::close(logFd);
    const std::string logged = readBytes(logPath);
    QVERIFY2(logged.find("warn: closing the point writer of " + path + ": ") != std::string::npos,
             logged.c_str());
    QVERIFY2(logged.find("deleted while") != std::string::npos, logged.c_str());
  }
};

QTEST_APPLESS_MAIN(TestStoreErrors)
#include "test_store_errors.moc"
