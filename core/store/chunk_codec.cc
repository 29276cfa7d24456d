#include "core/store/chunk_codec.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/store/sqlite_db.h"

namespace dtlab::core {

void encodeChunk(std::span<const SeriesPoint> points, std::vector<unsigned char>& out) {
  const std::size_t n = points.size();
  out.resize(n * kChunkBytesPerPoint);
  unsigned char* steps = out.data();
  unsigned char* walls = steps + 8 * n;
  unsigned char* values = walls + 8 * n;
  for (std::size_t i = 0; i < n; ++i) {
    const float value = static_cast<float>(points[i].value);
    std::memcpy(steps + 8 * i, &points[i].step, 8);
    std::memcpy(walls + 8 * i, &points[i].wallMs, 8);
    std::memcpy(values + 4 * i, &value, 4);
  }
}

ChunkStats chunkStats(std::span<const SeriesPoint> points) {
  ChunkStats s;
  s.count = static_cast<int64_t>(points.size());
  if (points.empty()) return s;
  s.minStep = s.maxStep = points[0].step;
  s.minWallMs = s.maxWallMs = points[0].wallMs;
  for (const SeriesPoint& p : points) {
    s.minStep = std::min(s.minStep, p.step);
    s.maxStep = std::max(s.maxStep, p.step);
    s.minWallMs = std::min(s.minWallMs, p.wallMs);
    s.maxWallMs = std::max(s.maxWallMs, p.wallMs);
    const SeriesPoint stored{p.step, p.wallMs, static_cast<double>(static_cast<float>(p.value))};
    if (std::isnan(stored.value)) continue;
    if (!s.hasValue) {
      s.hasValue = true;
      s.minPoint = s.maxPoint = stored;
      continue;
    }
    if (stored.value < s.minPoint.value) s.minPoint = stored;
    if (stored.value > s.maxPoint.value) s.maxPoint = stored;
  }
  return s;
}

ChunkView chunkView(std::span<const unsigned char> blob, int64_t count) {
  // Count first compared by division: count * kChunkBytesPerPoint can wrap around to the
  // blob's size for a huge count from a damaged row.
  if (count < 0 || static_cast<uint64_t>(count) != blob.size() / kChunkBytesPerPoint ||
      blob.size() % kChunkBytesPerPoint != 0)
    throw StoreError("damaged chunk: " + std::to_string(blob.size()) + " bytes for " +
                     std::to_string(count) + " points");
  return ChunkView(blob.data(), count);
}

void decodeChunk(std::span<const unsigned char> blob, int64_t count,
                 std::vector<SeriesPoint>& out) {
  const ChunkView view = chunkView(blob, count);
  out.reserve(out.size() + static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) out.push_back(view.point(i));
}

}  // namespace dtlab::core
