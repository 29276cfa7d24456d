#include "core/store/series_query.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/store/sqlite_db.h"

namespace dtlab::core {
namespace {

// The planning columns of a chunk row (everything but the blob).
struct ChunkRow {
  int64_t id = 0;
  int64_t count = 0;
  double minX = 0.0;
  double maxX = 0.0;
  bool hasValue = false;
  SeriesPoint minPoint;
  SeriesPoint maxPoint;
};

constexpr const char* kChunksByStep =
    "SELECT id, count, min_step, max_step, min_value, min_value_step, min_value_wall_ms, "
    "max_value, max_value_step, max_value_wall_ms FROM chunks "
    "WHERE series_id = ?1 AND max_step >= ?2 AND min_step <= ?3 ORDER BY min_step, id";
constexpr const char* kChunksByWall =
    "SELECT id, count, min_wall_ms, max_wall_ms, min_value, min_value_step, min_value_wall_ms, "
    "max_value, max_value_step, max_value_wall_ms FROM chunks "
    "WHERE series_id = ?1 AND max_wall_ms >= ?2 AND min_wall_ms <= ?3 ORDER BY min_step, id";

std::vector<ChunkRow> chunkRows(sqlite::Db& db, int64_t seriesId, XAxis axis, double from,
                                double to) {
  sqlite::Statement s(db, axis == XAxis::kStep ? kChunksByStep : kChunksByWall);
  s.bind(1, seriesId).bind(2, from).bind(3, to);
  std::vector<ChunkRow> rows;
  while (s.step()) {
    ChunkRow r;
    r.id = s.columnInt(0);
    r.count = s.columnInt(1);
    r.minX = s.columnDouble(2);
    r.maxX = s.columnDouble(3);
    // What the writer stores (1..kChunkCapacity points, finite extents); anything else is a
    // damaged row, refused before its numbers reach the bucketing arithmetic.
    if (r.count < 1 || r.count > kChunkCapacity || !std::isfinite(r.minX) ||
        !std::isfinite(r.maxX) || r.minX > r.maxX)
      throw StoreError("damaged chunk row " + std::to_string(r.id) + " (" +
                       std::to_string(r.count) + " points, x from " + std::to_string(r.minX) +
                       " to " + std::to_string(r.maxX) + ")");
    r.hasValue = !s.isNull(4);
    if (r.hasValue) {
      r.minPoint = {s.columnInt(5), s.columnDouble(6), s.columnDouble(4)};
      r.maxPoint = {s.columnInt(8), s.columnDouble(9), s.columnDouble(7)};
    }
    rows.push_back(r);
  }
  return rows;
}

// Fetches chunk blobs by id; one prepared statement reused for every chunk.
class BlobReader {
 public:
  explicit BlobReader(sqlite::Db& db)
      : statement_(db, "SELECT count, data FROM chunks WHERE id = ?") {}
  // The view is valid until the next call.
  ChunkView read(int64_t chunkId) {
    statement_.reset();
    statement_.bind(1, chunkId);
    if (!statement_.step())
      throw StoreError("chunk " + std::to_string(chunkId) + " vanished while reading");
    return chunkView(statement_.columnBlob(1), statement_.columnInt(0));
  }

 private:
  sqlite::Statement statement_;
};

double xOf(const ChunkView& v, int64_t i, XAxis axis) {
  return axis == XAxis::kStep ? static_cast<double>(v.step(i)) : v.wallMs(i);
}

double xOf(const SeriesPoint& p, XAxis axis) {
  return axis == XAxis::kStep ? static_cast<double>(p.step) : p.wallMs;
}

std::vector<SeriesPoint> rawPoints(BlobReader& reader, const std::vector<ChunkRow>& rows,
                                   XAxis axis, double from, double to) {
  std::vector<SeriesPoint> points;
  for (const ChunkRow& row : rows) {
    const ChunkView v = reader.read(row.id);
    for (int64_t i = 0; i < v.size(); ++i) {
      const double x = xOf(v, i, axis);
      if (x >= from && x <= to) points.push_back(v.point(i));
    }
  }
  // Chunks come in first-step order and points in write order within them; a stable sort
  // puts them in x order without reordering equal x.
  std::stable_sort(
      points.begin(), points.end(),
      [axis](const SeriesPoint& a, const SeriesPoint& b) { return xOf(a, axis) < xOf(b, axis); });
  return points;
}

void mergeValue(SeriesBucket& b, const SeriesPoint& minPoint, const SeriesPoint& maxPoint) {
  if (!b.hasValue) {
    b.hasValue = true;
    b.min = minPoint;
    b.max = maxPoint;
    return;
  }
  if (minPoint.value < b.min.value) b.min = minPoint;
  if (maxPoint.value > b.max.value) b.max = maxPoint;
}

}  // namespace

SeriesData querySeries(sqlite::Db& db, const SeriesQuery& query) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double from = query.from.value_or(-kInf);
  const double to = query.to.value_or(kInf);
  SeriesData out;
  if (from > to) return out;
  const std::vector<ChunkRow> rows = chunkRows(db, query.seriesId, query.axis, from, to);
  if (rows.empty()) return out;

  // The covered range: what was asked, narrowed to the data where a side was left open.
  out.from = from;
  out.to = to;
  if (!query.from) {
    out.from = kInf;
    for (const ChunkRow& r : rows) out.from = std::min(out.from, r.minX);
  }
  if (!query.to) {
    out.to = -kInf;
    for (const ChunkRow& r : rows) out.to = std::max(out.to, r.maxX);
  }

  int64_t upperBound = 0;
  for (const ChunkRow& r : rows) upperBound += r.count;
  const int64_t n = query.buckets;
  BlobReader reader(db);
  if (n <= 0 || upperBound <= 2 * n) {
    out.points = rawPoints(reader, rows, query.axis, out.from, out.to);
    out.pointsInRange = static_cast<int64_t>(out.points.size());
    return out;
  }

  std::vector<SeriesBucket> buckets(static_cast<std::size_t>(n));
  const double width = (out.to - out.from) / static_cast<double>(n);
  const double scale = width > 0.0 ? 1.0 / width : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    buckets[i].from = out.from + width * static_cast<double>(i);
    buckets[i].to = i + 1 == n ? out.to : out.from + width * static_cast<double>(i + 1);
  }
  // Monotonic in x, so a chunk whose first and last x share a bucket lies entirely in it.
  // Clamped before the conversion: a point's own x (a damaged wall time) may be anything.
  auto bucketOf = [&](double x) -> int64_t {
    const double i = (x - out.from) * scale;
    if (!(i > 0.0)) return 0;  // also NaN
    return i >= static_cast<double>(n - 1) ? n - 1 : static_cast<int64_t>(i);
  };

  int64_t inRange = 0;
  for (const ChunkRow& row : rows) {
    if (row.minX >= out.from && row.maxX <= out.to && bucketOf(row.minX) == bucketOf(row.maxX)) {
      // The chunk's own min/max columns answer for the whole chunk: no blob read.
      SeriesBucket& b = buckets[static_cast<std::size_t>(bucketOf(row.minX))];
      b.count += row.count;
      inRange += row.count;
      if (row.hasValue) mergeValue(b, row.minPoint, row.maxPoint);
      continue;
    }
    const ChunkView v = reader.read(row.id);
    for (int64_t i = 0; i < v.size(); ++i) {
      const double x = xOf(v, i, query.axis);
      if (x < out.from || x > out.to) continue;
      SeriesBucket& b = buckets[static_cast<std::size_t>(bucketOf(x))];
      ++b.count;
      ++inRange;
      const float value = v.value(i);
      if (std::isnan(value)) continue;
      if (!b.hasValue) {
        b.hasValue = true;
        b.min = b.max = v.point(i);
      } else if (value < b.min.value) {
        b.min = v.point(i);
      } else if (value > b.max.value) {
        b.max = v.point(i);
      }
    }
  }
  out.pointsInRange = inRange;
  if (inRange <= 2 * n) {
    // The chunks overlapping the range's edges held most of the points: few are in range,
    // so the raw points are as small as the reduction and exact.
    out.points = rawPoints(reader, rows, query.axis, out.from, out.to);
    return out;
  }

  out.downsampled = true;
  for (SeriesBucket& b : buckets) {
    if (b.count == 0) continue;
    if (b.hasValue) {
      const bool minFirst = xOf(b.min, query.axis) <= xOf(b.max, query.axis);
      out.points.push_back(minFirst ? b.min : b.max);
      if (!(b.min == b.max)) out.points.push_back(minFirst ? b.max : b.min);
    }
    out.buckets.push_back(b);
  }
  return out;
}

std::vector<SeriesPoint> readSeriesPoints(sqlite::Db& db, int64_t seriesId,
                                          std::optional<int64_t> fromStep,
                                          std::optional<int64_t> toStep) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double from = fromStep ? static_cast<double>(*fromStep) : -kInf;
  const double to = toStep ? static_cast<double>(*toStep) : kInf;
  const std::vector<ChunkRow> rows = chunkRows(db, seriesId, XAxis::kStep, from, to);
  BlobReader reader(db);
  return rawPoints(reader, rows, XAxis::kStep, from, to);
}

}  // namespace dtlab::core
