#include "core/store/chunk_rows.h"

#include <algorithm>
#include <cmath>

#include "core/store/sqlite_db.h"

namespace dtlab::core {

void insertChunkRow(sqlite::Statement& insert, int64_t seriesId,
                    std::span<const SeriesPoint> points, std::vector<unsigned char>& blob) {
  const ChunkStats s = chunkStats(points);
  encodeChunk(points, blob);
  insert.bind(1, seriesId).bind(2, s.count).bind(3, s.minStep).bind(4, s.maxStep);
  insert.bind(5, s.minWallMs).bind(6, s.maxWallMs);
  if (s.hasValue) {
    insert.bind(7, s.minPoint.value).bind(8, s.minPoint.step).bind(9, s.minPoint.wallMs);
    insert.bind(10, s.maxPoint.value).bind(11, s.maxPoint.step).bind(12, s.maxPoint.wallMs);
  } else {
    for (int column = 7; column <= 12; ++column) insert.bindNull(column);
  }
  insert.bindBlob(13, blob);
  insert.run();
}

void insertRunMetrics(sqlite::Db& db, const MetricDeltas& metrics) {
  sqlite::Statement metric(db,
                           "INSERT INTO run_metrics(run_id, key, count, last_step, last_wall_ms, "
                           "last_value, min_value, max_value) VALUES (?,?,?,?,?,?,?,?)");
  for (const auto& [key, m] : metrics) {
    if (m.count == 0) continue;
    metric.bind(1, key.first).bind(2, key.second).bind(3, m.count).bind(4, m.lastStep);
    metric.bind(5, m.lastWallMs).bind(6, m.lastValue).bind(7, m.minValue).bind(8, m.maxValue);
    metric.run();
  }
}

void MetricDelta::add(std::span<const SeriesPoint> points) {
  for (const SeriesPoint& p : points) {
    const double stored = static_cast<float>(p.value);
    ++count;
    if (p.step >= lastStep) {
      lastStep = p.step;
      lastWallMs = p.wallMs;
      lastValue = stored;
    }
    if (std::isnan(stored)) continue;
    minValue = std::isnan(minValue) ? stored : std::min(minValue, stored);
    maxValue = std::isnan(maxValue) ? stored : std::max(maxValue, stored);
  }
}

}  // namespace dtlab::core
