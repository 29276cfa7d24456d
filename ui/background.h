#pragma once

#include <QtConcurrent/QtConcurrentRun>
#include <QtCore/QFutureWatcher>
#include <QtCore/QObject>
#include <QtCore/QString>

#include <exception>
#include <optional>

namespace dtlab::ui {

// Runs `work` on Qt's thread pool and hands its result (or the message of what it threw) to
// `done` on the GUI thread, unless `owner` is gone by then. The GUI thread never waits.
template <typename T, typename Work, typename Done>
void runInBackground(QObject* owner, Work work, Done done) {
  struct Outcome {
    std::optional<T> value;
    QString error;
  };
  auto* watcher = new QFutureWatcher<Outcome>(owner);
  QObject::connect(watcher, &QFutureWatcher<Outcome>::finished, owner, [watcher, done] {
    const Outcome outcome = watcher->result();
    watcher->deleteLater();
    done(outcome.value, outcome.error);
  });
  watcher->setFuture(QtConcurrent::run([work]() -> Outcome {
    try {
      return {work(), {}};
    } catch (const std::exception& e) {
      return {std::nullopt, QString::fromUtf8(e.what())};
    }
  }));
}

}  // namespace dtlab::ui
