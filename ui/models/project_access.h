#pragma once
// The workbench's one way into a project file, beside the recorder of a run under way (the
// controller's): every page and model reads and writes the project through these calls, on the
// project's threads, and gets the result on the GUI thread, or the error whole
// (BackgroundError: a StoreError keeps its code). Reads run side by side, each on a read-only
// connection of its own; writes run one at a time, in the order they were asked for, so a later
// layout never lands before an earlier one. The GUI thread never opens the file, and waits on it
// only where an action must have its result at once (writeProjectNow, readProjectNow).
#include <QtCore/QObject>
#include <QtCore/QThreadPool>

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "core/store/project_store.h"
#include "ui/background.h"

namespace dtlab::ui {

class ProjectAccess {
 public:
  // The process's one access (the workbench has one window, and a test's pages share it).
  static ProjectAccess& instance();
  QThreadPool* readers() { return &readers_; }
  QThreadPool* writer() { return &writer_; }

 private:
  ProjectAccess();
  QThreadPool readers_;
  QThreadPool writer_;  // one thread
};

// Runs `work(core::ProjectStore&)` on the project at `path`, opened read-only (SQLite refuses
// its writes), and hands its T, or what it threw, to `done(const std::optional<T>&, const
// BackgroundError&)` on the GUI thread, unless `owner` is gone by then.
template <typename T, typename Work, typename Done>
void readProject(QObject* owner, std::string path, Work work, Done done) {
  runInBackground<T>(
      ProjectAccess::instance().readers(), owner,
      [path = std::move(path), work = std::move(work)]() -> T {
        const auto store = core::ProjectStore::open(path, /*readOnly=*/true);
        return work(*store);
      },
      std::move(done));
}

// The same with the project opened read-write: `work(core::ProjectStore&)`, after every write
// asked for before it.
template <typename T, typename Work, typename Done>
void writeProject(QObject* owner, std::string path, Work work, Done done) {
  runInBackground<T>(
      ProjectAccess::instance().writer(), owner,
      [path = std::move(path), work = std::move(work)]() -> T {
        const auto store = core::ProjectStore::open(path);
        return work(*store);
      },
      std::move(done));
}

namespace detail {
// Runs `work` on `pool` with the project open and waits for it; throws what it threw.
template <typename T, typename Work>
T onProjectNow(QThreadPool* pool, const std::string& path, bool readOnly, Work& work) {
  std::optional<T> value;
  std::exception_ptr thrown;
  QtConcurrent::run(pool, [&] {
    try {
      value = work(*core::ProjectStore::open(path, readOnly));
    } catch (...) {
      thrown = std::current_exception();
    }
  }).waitForFinished();
  if (thrown) std::rethrow_exception(thrown);
  return std::move(*value);
}
}  // namespace detail

// A write the GUI thread waits for, after every write asked for before it: for a window that is
// closing, which has no later moment to say that it failed. Throws what `work` threw.
template <typename T, typename Work>
T writeProjectNow(const std::string& path, Work work) {
  return detail::onProjectNow<T>(ProjectAccess::instance().writer(), path, false, work);
}

// A read the GUI thread waits for, under a busy cursor: an action whose result is a file written
// at once (File > Export Report). Throws what `work` threw.
template <typename T, typename Work>
T readProjectNow(const std::string& path, Work work) {
  return detail::onProjectNow<T>(ProjectAccess::instance().readers(), path, true, work);
}

// A write nobody waits for (a page going away keeps its last change); an error is dropped.
void writeProjectDetached(std::string path, std::function<void(core::ProjectStore&)> work);

}  // namespace dtlab::ui
