#pragma once

#include <QtConcurrent/QtConcurrentRun>
#include <QtCore/QFutureWatcher>
#include <QtCore/QObject>
#include <QtCore/QString>
#include <QtCore/QThreadPool>

#include <exception>
#include <optional>
#include <utility>

namespace dtlab::ui {

// What a background task threw, handed to the GUI thread whole: its message, and the exception
// itself, so that a page can ask what it was (a SpecError's field path, a StoreError) instead
// of taking the message apart. Empty when the task succeeded.
class BackgroundError {
 public:
  BackgroundError() = default;
  explicit BackgroundError(std::exception_ptr thrown) : thrown_(std::move(thrown)) {
    try {
      std::rethrow_exception(thrown_);
    } catch (const std::exception& e) {
      message_ = QString::fromUtf8(e.what());
    } catch (...) {
      message_ = QStringLiteral("unknown error");
    }
  }
  bool isEmpty() const { return !thrown_; }
  const QString& message() const { return message_; }
  operator QString() const { return message_; }  // for pages that show the message only
  // A copy of the exception when it is an E (or derives from it).
  template <typename E>
  std::optional<E> as() const {
    if (!thrown_) return std::nullopt;
    try {
      std::rethrow_exception(thrown_);
    } catch (const E& e) {
      return e;
    } catch (...) {
    }
    return std::nullopt;
  }

 private:
  std::exception_ptr thrown_;
  QString message_;
};

// Runs `work` on `pool` and hands its result (or what it threw) to `done` on the GUI thread,
// unless `owner` is gone by then. The GUI thread never waits. (A project's reads and writes go
// through ui/models/project_access.h, on the project's own threads.)
template <typename T, typename Work, typename Done>
void runInBackground(QThreadPool* pool, QObject* owner, Work work, Done done) {
  struct Outcome {
    std::optional<T> value;
    BackgroundError error;
  };
  auto* watcher = new QFutureWatcher<Outcome>(owner);
  QObject::connect(watcher, &QFutureWatcher<Outcome>::finished, owner, [watcher, done] {
    const Outcome outcome = watcher->result();
    watcher->deleteLater();
    done(outcome.value, outcome.error);
  });
  watcher->setFuture(QtConcurrent::run(pool, [work]() -> Outcome {
    try {
      return {work(), {}};
    } catch (...) {
      return {std::nullopt, BackgroundError(std::current_exception())};
    }
  }));
}

// The same on Qt's global thread pool.
template <typename T, typename Work, typename Done>
void runInBackground(QObject* owner, Work work, Done done) {
  runInBackground<T>(QThreadPool::globalInstance(), owner, std::move(work), std::move(done));
}

}  // namespace dtlab::ui
