#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace dtlab::core {

// One stored metric point. `value` is kept as float32 on disk (charts need ~7 significant
// digits, and 4 bytes a point matter at millions of points); what comes back from the
// store is exactly the float32 value widened to double.
struct SeriesPoint {
  int64_t step = 0;
  double wallMs = 0.0;  // since the run started
  double value = 0.0;

  bool operator==(const SeriesPoint&) const = default;
};

// Points are stored in chunk rows of up to kChunkCapacity points of one series rather than
// one row per point. Measured on this class of machine: one row per point with a
// (series, step) key ingests ~350k points/s and a GROUP BY downsampling query costs ~1 ms
// per 1,000 points; with chunks, ingest is a few B-tree inserts per 4,096 points, and a
// query reads a few hundred rows per million points, skipping the blob entirely when a
// chunk falls inside one bucket (its min/max columns answer). 4,096 points are an 80 KB
// blob: large enough that row overhead vanishes, small enough that a range query decodes
// little beyond its edges.
inline constexpr int kChunkCapacity = 4096;

// Bytes per point in a chunk blob: int64 step, float64 wall ms, float32 value.
inline constexpr int kChunkBytesPerPoint = 8 + 8 + 4;

// The blob layout is columnar: all steps, then all wall-clock times, then all values, each
// little-endian, so a reader touching only steps and values reads two dense arrays.
static_assert(std::endian::native == std::endian::little,
              "chunk blobs are little-endian; add byte swapping for this platform");

// Read-only view of one encoded chunk. Loads go through memcpy because SQLite gives no
// alignment guarantee for blob memory.
class ChunkView {
 public:
  ChunkView(const unsigned char* data, int64_t count) : data_(data), count_(count) {}
  int64_t size() const { return count_; }
  int64_t step(int64_t i) const { return load<int64_t>(data_ + 8 * i); }
  double wallMs(int64_t i) const { return load<double>(data_ + 8 * count_ + 8 * i); }
  float value(int64_t i) const { return load<float>(data_ + 16 * count_ + 4 * i); }
  SeriesPoint point(int64_t i) const { return {step(i), wallMs(i), value(i)}; }

 private:
  template <typename T>
  static T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  const unsigned char* data_;
  int64_t count_;
};

// What a chunk row stores beside its blob, so queries can plan (and often answer) without
// decoding: step and wall-clock extents, and the points holding the minimum and maximum
// value (NaN values are stored but never chosen as min/max; hasValue is false when every
// value is NaN).
struct ChunkStats {
  int64_t count = 0;
  int64_t minStep = 0;
  int64_t maxStep = 0;
  double minWallMs = 0.0;
  double maxWallMs = 0.0;
  bool hasValue = false;
  SeriesPoint minPoint;
  SeriesPoint maxPoint;
};

// Rounds values to float32 (what is stored) and packs. points.size() in [1, capacity].
void encodeChunk(std::span<const SeriesPoint> points, std::vector<unsigned char>& out);
// Stats of points as they will be stored (values rounded to float32).
ChunkStats chunkStats(std::span<const SeriesPoint> points);
// Appends the decoded points of a blob holding `count` points; throws StoreError when the
// blob's size does not match (a damaged row).
void decodeChunk(std::span<const unsigned char> blob, int64_t count, std::vector<SeriesPoint>& out);
// The view over a blob after the same size check.
ChunkView chunkView(std::span<const unsigned char> blob, int64_t count);

}  // namespace dtlab::core
