#include "ui/models/project_snapshot.h"

#include <algorithm>
#include <cmath>

namespace dtlab::ui {

ProjectSnapshot readProjectSnapshot(core::ProjectStore& store) {
  ProjectSnapshot s;
  s.path = store.path();
  const auto meta = store.metadata();
  if (auto it = meta.find("name"); it != meta.end()) s.name = it->second;
  s.datasets = store.entities(core::EntityKind::kDataset);
  s.topologies = store.entities(core::EntityKind::kTopology);
  s.experiments = store.entities(core::EntityKind::kExperiment);
  s.executions = store.executions();
  s.runs = store.runs();
  for (const core::RunRecord& r : s.runs) {
    const std::optional<nlohmann::json> summary = store.runSummary(r.id);
    s.summaries.push_back(summary ? *summary : nlohmann::json(nullptr));
  }
  return s;
}

RunDetail readRunDetail(core::ProjectStore& store, int64_t runId, int64_t maxPoints) {
  RunDetail d;
  d.path = store.path();
  d.run = store.requireRun(runId);
  if (const auto summary = store.runSummary(runId)) d.summary = *summary;
  d.metrics = store.runMetrics(runId);
  d.events = store.events(runId);
  for (const core::SeriesInfo& s : store.series(runId)) {
    core::SeriesQuery query;
    query.seriesId = s.id;
    query.buckets = static_cast<int>(std::max<int64_t>(1, maxPoints / 2));
    const core::SeriesData data = store.querySeries(query);
    RunDetail::Curve curve;
    curve.key = s.key;
    curve.worker = s.worker;
    curve.node = s.node;
    curve.downsampled = data.downsampled;
    for (const core::SeriesPoint& p : data.points) {
      if (std::isnan(p.value)) continue;
      curve.steps.push_back(static_cast<double>(p.step));
      curve.seconds.push_back(p.wallMs / 1000.0);
      curve.values.push_back(p.value);
    }
    d.curves.push_back(std::move(curve));
  }
  return d;
}

}  // namespace dtlab::ui
