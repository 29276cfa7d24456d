// ProjectStore::prepareResume: a run made ready to continue from one of its checkpoints.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "core/store/chunk_rows.h"
#include "core/store/project_store.h"
#include "core/store/recorder.h"
#include "core/store/schema.h"
#include "core/store/series_query.h"
#include "core/store/sqlite_db.h"
#include "core/train/checkpoint.h"

namespace dtlab::core {
namespace {

// Drops the points of the run's series after the checkpoint: a worker's after its own step
// there (Checkpoint::stepOf), the others' after its step. The rows holding any are replaced by
// rows of their points up to it. Returns the run's metric summary of what stays.
MetricDeltas truncateSeries(sqlite::Db& db, int64_t runId, const Checkpoint& checkpoint) {
  MetricDeltas metrics;
  sqlite::Statement seriesList(db, "SELECT id, key, worker FROM series WHERE run_id = ?");
  seriesList.bind(1, runId);
  struct Series {
    int64_t id;
    std::string key;
    int64_t lastStep;  // the last point that stays
  };
  std::vector<Series> series;
  while (seriesList.step()) {
    const int64_t worker = seriesList.columnInt(2);
    series.push_back(
        {seriesList.columnInt(0), seriesList.columnText(1),
         worker >= 0 ? checkpoint.stepOf(static_cast<std::size_t>(worker)) : checkpoint.step});
  }
  // The rows holding any point after `step`; their points up to `step` move to new rows.
  sqlite::Statement later(db,
                          "SELECT id, count, data FROM chunks WHERE series_id = ? AND max_step > ? "
                          "ORDER BY min_step, id");
  sqlite::Statement removeChunk(db, "DELETE FROM chunks WHERE id = ?");
  sqlite::Statement insert(db, kInsertChunkSql);
  std::vector<unsigned char> blob;
  for (const auto& [seriesId, key, step] : series) {
    std::vector<int64_t> rows;
    std::vector<SeriesPoint> points;
    later.bind(1, seriesId).bind(2, step);
    while (later.step()) {
      rows.push_back(later.columnInt(0));
      decodeChunk(later.columnBlob(2), later.columnInt(1), points);
    }
    later.reset();
    std::vector<SeriesPoint> stay;
    for (const SeriesPoint& p : points)
      if (p.step <= step) stay.push_back(p);
    for (int64_t id : rows) removeChunk.bind(1, id).run();
    for (std::size_t at = 0; at < stay.size(); at += kChunkCapacity) {
      const std::size_t n = std::min<std::size_t>(kChunkCapacity, stay.size() - at);
      insertChunkRow(insert, seriesId, std::span(stay).subspan(at, n), blob);
    }
    metrics[{runId, key}].add(readSeriesPoints(db, seriesId));
  }
  return metrics;
}

}  // namespace

std::vector<unsigned char> ProjectStore::prepareResume(int64_t runId, int64_t step) {
  const RunRecord run = requireRun(runId);
  std::vector<unsigned char> checkpoint = checkpointData(runId, step);
  std::lock_guard lock(mutex_);
  sqlite::Transaction transaction(*db_);
  {
    sqlite::Statement recorder(*db_, "SELECT status, recorder FROM runs WHERE id = ?");
    recorder.bind(1, runId);
    if (recorder.step() && recorder.columnText(0) == "running" && !recorder.isNull(1) &&
        recorderState(recorder.columnText(1)) != RecorderState::kGone)
      throw StoreError("run " + std::to_string(runId) + " ('" + run.name +
                       "') is still being recorded by " + describeRecorder(recorder.columnText(1)) +
                       "; cancel it before resuming it");
  }
  const MetricDeltas metrics = truncateSeries(*db_, runId, decodeCheckpoint(checkpoint));
  sqlite::Statement clearMetrics(*db_, "DELETE FROM run_metrics WHERE run_id = ?");
  clearMetrics.bind(1, runId).run();
  insertRunMetrics(*db_, metrics);
  sqlite::Statement later(*db_, "DELETE FROM checkpoints WHERE run_id = ? AND step > ?");
  later.bind(1, runId).bind(2, step).run();
  sqlite::Statement summary(*db_, "DELETE FROM run_summaries WHERE run_id = ?");
  summary.bind(1, runId).run();
  sqlite::Statement status(*db_,
                           "UPDATE runs SET status = 'running', ended_ms = NULL, error = '', "
                           "recorder = ? WHERE id = ?");
  status.bind(1, thisRecorder()).bind(2, runId).run();
  transaction.commit();
  return checkpoint;
}

}  // namespace dtlab::core
