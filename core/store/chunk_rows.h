#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/store/chunk_codec.h"

namespace dtlab::core {

namespace sqlite {
class Db;
class Statement;
}  // namespace sqlite

// Writing chunk rows and run_metrics rows, shared by the point appender, the v1 -> v2
// migration and the truncation of a run that resumes.

// The INSERT a chunk row goes through; insertChunkRow binds it.
inline constexpr const char* kInsertChunkSql =
    "INSERT INTO chunks(series_id, count, min_step, max_step, min_wall_ms, max_wall_ms, "
    "min_value, min_value_step, min_value_wall_ms, max_value, max_value_step, "
    "max_value_wall_ms, data) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)";

// Packs `points` (1..kChunkCapacity, in step order) into one row of series `seriesId`
// through a statement prepared from kInsertChunkSql; `blob` is scratch space.
void insertChunkRow(sqlite::Statement& insert, int64_t seriesId,
                    std::span<const SeriesPoint> points, std::vector<unsigned char>& blob);

// What some points add to a run's metric summary (run_metrics) of one key.
struct MetricDelta {
  int64_t count = 0;
  int64_t lastStep = std::numeric_limits<int64_t>::min();
  double lastWallMs = 0.0;
  double lastValue = 0.0;
  double minValue = std::numeric_limits<double>::quiet_NaN();
  double maxValue = std::numeric_limits<double>::quiet_NaN();

  // Values as stored (float32); NaN counts but is never min or max.
  void add(std::span<const SeriesPoint> points);
};

// run_metrics rows to write: (run id, key) -> delta.
using MetricDeltas = std::map<std::pair<int64_t, std::string>, MetricDelta>;

// Inserts one run_metrics row per (run, key) with points (the rows must not exist yet).
void insertRunMetrics(sqlite::Db& db, const MetricDeltas& metrics);

}  // namespace dtlab::core
