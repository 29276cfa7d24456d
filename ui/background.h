#pragma once

#include <exception>
#include <optional>

#include <QtConcurrent/QtConcurrentRun>
#include <QtCore/QFutureWatcher>
#include <QtCore/QObject>
#include <QtCore/QString>

namespace dtlab::ui {

// Runs `read` on the thread pool and hands its result (or its error) to `done` on the GUI
// thread, unless `owner` is gone by then: store reads never block the GUI thread, and what
// crosses back is a value.
template <typename T, typename Read, typename Done>
void readInBackground(QObject* owner, Read read, Done done) {
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
  watcher->setFuture(QtConcurrent::run([read]() -> Outcome {
    try {
      return {read(), {}};
    } catch (const std::exception& e) {
      return {std::nullopt, QString::fromUtf8(e.what())};
    }
  }));
}

}  // namespace dtlab::ui
