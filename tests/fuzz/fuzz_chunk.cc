// The point-chunk codec (core/store/chunk_codec.h) on a damaged row: the input is the row's
// point count (8 bytes, little-endian) and its blob. A count and blob that do not agree are
// refused with a StoreError; a blob that is accepted decodes to `count` points that encode
// back to the same bytes, and its stats agree with the points.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/store/chunk_codec.h"
#include "core/store/sqlite_db.h"
#include "tests/fuzz/fuzz_support.h"

using namespace dtlab::core;
using dtlab::fuzz::finding;

namespace {

void checkStats(std::span<const SeriesPoint> points, std::string_view input) {
  const ChunkStats stats = chunkStats(points);
  if (stats.count != static_cast<int64_t>(points.size())) finding("stats count", input);
  bool anyValue = false;
  for (const SeriesPoint& p : points) {
    if (p.step < stats.minStep || p.step > stats.maxStep)
      finding("a step outside the stats", input);
    if (std::isnan(p.value)) continue;
    anyValue = true;
    if (p.value < stats.minPoint.value || p.value > stats.maxPoint.value)
      finding("a value outside the stats' min and max", input);
  }
  if (anyValue != stats.hasValue) finding("stats hasValue disagrees with the values", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (size < 8) return 0;
  int64_t count = 0;
  std::memcpy(&count, data, 8);
  const std::span<const unsigned char> blob(data + 8, size - 8);
  const bool agrees = count >= 0 && blob.size() % kChunkBytesPerPoint == 0 &&
                      blob.size() / kChunkBytesPerPoint == static_cast<uint64_t>(count);
  std::vector<SeriesPoint> points;
  try {
    decodeChunk(blob, count, points);
  } catch (const StoreError& e) {
    dtlab::fuzz::requireUserMessage(e, input);
    if (agrees) finding(std::string("a whole chunk refused: ") + e.what(), input);
    return 0;
  }
  if (!agrees) finding("a chunk whose size does not match its count was read", input);
  if (points.size() != static_cast<std::size_t>(count)) finding("decoded point count", input);
  const ChunkView view = chunkView(blob, count);
  for (int64_t i = 0; i < count; ++i) {
    const SeriesPoint a = view.point(i);
    const SeriesPoint& b = points[static_cast<std::size_t>(i)];
    if (a.step != b.step || std::memcmp(&a.wallMs, &b.wallMs, 8) != 0 ||
        !(a.value == b.value || (std::isnan(a.value) && std::isnan(b.value))))
      finding("the view and the decoded points disagree", input);
  }
  if (points.empty()) return 0;
  // Decoded values are float32 already, so encoding writes the same bytes (NaNs stay NaN,
  // though their payload may change on the way through double).
  std::vector<unsigned char> again;
  encodeChunk(points, again);
  if (again.size() != blob.size()) finding("re-encoded size", input);
  const std::size_t valuesAt = 16 * points.size();
  if (std::memcmp(again.data(), blob.data(), valuesAt) != 0)
    finding("steps or times change when re-encoded", input);
  for (std::size_t i = 0; i < points.size(); ++i) {
    float was = 0, now = 0;
    std::memcpy(&was, blob.data() + valuesAt + 4 * i, 4);
    std::memcpy(&now, again.data() + valuesAt + 4 * i, 4);
    if (std::memcmp(&was, &now, 4) != 0 && !(std::isnan(was) && std::isnan(now)))
      finding("a value changes when re-encoded", input);
  }
  checkStats(points, input);
  return 0;
}
