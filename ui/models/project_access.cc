#include "ui/models/project_access.h"

#include <algorithm>
#include <exception>

namespace dtlab::ui {

ProjectAccess& ProjectAccess::instance() {
  static ProjectAccess access;
  return access;
}

ProjectAccess::ProjectAccess() {
  // Reads are SQLite queries and the analysis over them: as many as the cores, at least two, so
  // that a long one (a comparison's statistics) does not hold up the explorer's snapshot.
  readers_.setMaxThreadCount(std::max(2, QThread::idealThreadCount()));
  writer_.setMaxThreadCount(1);
  writer_.setExpiryTimeout(-1);  // one thread for the life of the process: writes in order
}

void writeProjectDetached(std::string path, std::function<void(core::ProjectStore&)> work) {
  ProjectAccess::instance().writer()->start([path = std::move(path), work = std::move(work)] {
    try {
      work(*core::ProjectStore::open(path));
    } catch (const std::exception&) {
      // Whoever asked is gone: there is no one left to tell.
    }
  });
}

}  // namespace dtlab::ui
