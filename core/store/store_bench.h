#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace dtlab::core {

struct StoreBenchConfig {
  std::string directory;                // where the files go (empty: the system temp dir)
  int64_t ingestPoints = 4'000'000;     // points appended in the ingest measurement
  int workers = 8;                      // x 9 step metrics = the series they spread over
  int64_t queryPoints = 1'000'000;      // points in the queried series
  int buckets = 2000;                   // buckets of the downsampled query
  int repetitions = 7;                  // timed queries (after one untimed warm-up)
  bool reference = true;                // also measure one row per point, side by side
  int64_t referencePoints = 1'000'000;  // points in the reference measurements
};

struct StoreBenchResult {
  // Points committed per second through PointAppender into a real project file, from the
  // first append to the end of close() (everything committed).
  double ingestPointsPerS = 0.0;
  int64_t ingestPoints = 0;
  int64_t ingestCommits = 0;
  double ingestSeconds = 0.0;
  int64_t fileBytes = 0;  // the project file after ingest, every connection closed
  // Median latency of a downsampled query over the whole queryPoints series.
  double queryMs = 0.0;
  int64_t queryReturnedPoints = 0;
  // Result checks: points missing after ingest, and buckets whose min or max differ from a
  // brute-force reduction of the data that was written. Both should be 0.
  int64_t wrongIngest = 0;
  int64_t wrongBuckets = 0;
  // One row per point ((series, step) key, batched transactions), the layout the chunked
  // store replaces, and a GROUP BY downsampling query over it. 0 when not measured.
  double referenceIngestPointsPerS = 0.0;
  double referenceQueryMs = 0.0;
};

// Runs the store benchmark; `log` receives progress lines (may be empty).
StoreBenchResult benchStore(const StoreBenchConfig& config,
                            const std::function<void(const std::string&)>& log = {});

}  // namespace dtlab::core
