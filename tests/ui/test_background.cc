// Work the GUI hands to Qt's thread pool (ui/background.h): its result, or what it threw with
// its type, reaches the GUI thread; nothing reaches an owner that is gone.
#include <QtTest/QtTest>

#include <memory>
#include <optional>

#include "core/spec/experiment_spec.h"
#include "core/store/sqlite_db.h"
#include "tests/support/wait.h"
#include "ui/background.h"

using namespace dtlab;

class TestBackground : public QObject {
  Q_OBJECT

 private slots:
  void theResultArrives() {
    QObject owner;
    std::optional<int> got;
    bool failed = true;
    bool called = false;
    ui::runInBackground<int>(
        &owner, [] { return 42; },
        [&](const std::optional<int>& value, const ui::BackgroundError& error) {
          got = value;
          failed = !error.isEmpty();
          called = true;
        });
    QTRY_VERIFY_WITH_TIMEOUT(called, 10000);
    QCOMPARE(got, std::optional<int>(42));
    QVERIFY(!failed);
  }

  // A spec error keeps its field path across the thread: a page marks the field by it rather
  // than by cutting the message apart. Pages that show only the message take it as a QString.
  void anErrorKeepsItsType() {
    QObject owner;
    std::optional<ui::BackgroundError> got;
    QString shown;
    ui::runInBackground<int>(
        &owner, []() -> int { throw core::SpecError("dataset.features", "must be >= 1, got 0"); },
        [&](const std::optional<int>& value, const ui::BackgroundError& error) {
          QVERIFY(!value);
          got = error;
        });
    ui::runInBackground<int>(
        &owner, []() -> int { throw core::StoreError("disk full"); },
        [&](const std::optional<int>&, const QString& error) { shown = error; });
    QTRY_VERIFY_WITH_TIMEOUT(got.has_value() && !shown.isEmpty(), 10000);
    QCOMPARE(got->message(), QString("dataset.features: must be >= 1, got 0"));
    const std::optional<core::SpecError> spec = got->as<core::SpecError>();
    QVERIFY(spec.has_value());
    QCOMPARE(spec->path(), std::string("dataset.features"));
    QCOMPARE(spec->reason(), std::string("must be >= 1, got 0"));
    QVERIFY(got->as<Error>().has_value());  // a SpecError is an Error too
    QVERIFY(!got->as<core::StoreError>().has_value());
    QCOMPARE(shown, QString("disk full"));
  }

  // The owner went away while the work ran: nothing is called on it.
  void aGoneOwnerHearsNothing() {
    bool called = false;
    std::atomic<bool> release{false};
    {
      auto owner = std::make_unique<QObject>();
      ui::runInBackground<int>(
          owner.get(),
          [&] {
            test::waitUntil([&] { return release.load(); }, std::chrono::seconds(10));
            return 1;
          },
          [&](const std::optional<int>&, const QString&) { called = true; });
    }
    release.store(true);
    QThreadPool::globalInstance()->waitForDone(10000);
    QCoreApplication::processEvents();
    QVERIFY(!called);
  }
};

QTEST_MAIN(TestBackground)
#include "test_background.moc"
