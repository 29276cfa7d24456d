#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <QtCore/QMetaType>

#include "core/store/project_store.h"

namespace dtlab::ui {

// What the explorer shows of a project, read in one go off the GUI thread and handed over
// as a value: the GUI never waits on SQLite.
struct ProjectSnapshot {
  std::string path;
  std::string name;  // the project's metadata name ("" if none)
  std::vector<core::Entity> datasets;
  std::vector<core::Entity> topologies;
  std::vector<core::Entity> experiments;
  std::vector<core::ExecutionRecord> executions;  // those with runs, oldest first
  std::vector<core::RunRecord> runs;
  // Per run id, in the order of `runs`: the stored summary (null while running).
  std::vector<nlohmann::json> summaries;
};

// Reads the snapshot from `store` (a page asks through readProject, ui/models/project_access.h,
// which opens it on the project's threads). Throws core::StoreError naming the file.
ProjectSnapshot readProjectSnapshot(core::ProjectStore& store);

// One run's detail for its page: metric aggregates, every series of the run (every metric of
// the metric table, of every worker, node and the run itself; at most `maxPoints` points each,
// reduced by the store to each interval's minimum and maximum when longer), events.
struct RunDetail {
  std::string path;  // the project it was read from
  core::RunRecord run;
  nlohmann::json summary;  // null while running
  std::vector<core::RunMetric> metrics;
  struct Curve {
    std::string key;
    int worker = -1;  // the worker of a worker-scope series, else -1
    int node = -1;    // the node of a node-scope series (or the worker's node), else -1
    std::vector<double> steps;
    std::vector<double> seconds;  // wall-clock time since the run started
    std::vector<double> values;
    bool downsampled = false;
  };
  std::vector<Curve> curves;  // in the store's order: by key, node, worker
  std::vector<core::RunEvent> events;
};
RunDetail readRunDetail(core::ProjectStore& store, int64_t runId, int64_t maxPoints = 2000);

}  // namespace dtlab::ui

Q_DECLARE_METATYPE(dtlab::ui::ProjectSnapshot)
Q_DECLARE_METATYPE(dtlab::ui::RunDetail)
