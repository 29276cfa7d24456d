#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace dtlab::core {

// Both sides get the same work: the same points of the same series in the same order for
// ingest, committed on the same interval, and the same downsampling query over the same
// series. Their repetitions are interleaved and the medians reported.
struct StoreBenchConfig {
  std::string directory;             // where the files go (empty: the system temp dir)
  int64_t ingestPoints = 2'000'000;  // points appended in one ingest repetition
  int workers = 8;                   // x 9 step metrics = the series they spread over
  int ingestRepetitions = 3;         // each into a fresh file
  int64_t queryPoints = 1'000'000;   // points in the queried series
  int buckets = 2000;                // buckets of the downsampled query
  int repetitions = 7;               // timed queries (after one untimed warm-up)
  bool reference = true;             // also measure one row per point, side by side
};

// One implementation's figures.
struct StoreSideResult {
  // Points committed per second into a real file, from the first append until everything
  // is committed; the median over ingest repetitions.
  double ingestPointsPerS = 0.0;
  double ingestSeconds = 0.0;  // of the median repetition
  int64_t ingestPoints = 0;
  int64_t ingestCommits = 0;  // transactions of the last repetition
  int64_t fileBytes = 0;      // the file after ingest, every connection closed
  // Median latency of the downsampled query over the whole queryPoints series.
  double queryMs = 0.0;
  int64_t queryReturnedPoints = 0;
  // Result checks, both 0 on a correct run: points missing (or extra) after ingest, over
  // every repetition, and buckets whose count, min or max differ from a brute-force
  // reduction of the data that was written.
  int64_t wrongIngest = 0;
  int64_t wrongBuckets = 0;
};

struct StoreBenchResult {
  // DTLab: chunk rows through PointAppender, queries through ProjectStore::querySeries.
  StoreSideResult chunks;
  // One row per point ((series, step) key), the layout the chunked store replaces, fed the
  // same points and committed on the same interval from the producing thread; the query is a
  // range scan reduced to the same buckets. Absent when not measured.
  std::optional<StoreSideResult> rows;
};

// Runs the store benchmark; `log` receives progress lines (may be empty).
StoreBenchResult benchStore(const StoreBenchConfig& config,
                            const std::function<void(const std::string&)>& log = {});

}  // namespace dtlab::core
