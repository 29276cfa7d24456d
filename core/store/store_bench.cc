#include "core/store/store_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// A noisy, decaying loss-like curve: values a chart would show, not a constant that a
// compressor or an aggregate could shortcut.
float curve(int64_t i, uint64_t noise) {
  const double u = static_cast<double>(noise >> 11) * 0x1.0p-53;
  return static_cast<float>(2.0 * std::exp(-static_cast<double>(i) * 1e-6) + 0.1 * u);
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct TempDir {
  explicit TempDir(const std::string& parent) {
    const fs::path base = parent.empty() ? fs::temp_directory_path() : fs::path(parent);
    path = base / ("dtlab-bench-store-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

int64_t fileBytes(const fs::path& file) {
  std::error_code ec;
  int64_t bytes = 0;
  for (const char* suffix : {"", "-wal"}) {
    const auto size = fs::file_size(file.string() + suffix, ec);
    if (!ec) bytes += static_cast<int64_t>(size);
  }
  return bytes;
}

// Appends like StoreSink: per step, one point of every worker metric per worker in one call.
void measureIngest(const StoreBenchConfig& config, const fs::path& dir, StoreBenchResult& r) {
  const fs::path file = dir / "ingest.dtlab";
  auto store = ProjectStore::create(file.string());
  const int64_t runId = store->beginRun({std::nullopt, "bench", "bench", 1, nullptr});
  const auto rows = metricsOf(MetricScope::kWorker);
  const int keys = static_cast<int>(rows.size());
  const int64_t seriesCount = int64_t{config.workers} * keys;
  const int64_t steps = std::max<int64_t>(1, config.ingestPoints / seriesCount);

  PointAppender appender(file.string());
  std::vector<SeriesHandle> handles;
  for (int w = 0; w < config.workers; ++w)
    for (int k = 0; k < keys; ++k)
      handles.push_back(
          appender.series(runId, 0, w, std::string(rows[static_cast<std::size_t>(k)]->name)));
  std::vector<PointRecord> batch(static_cast<std::size_t>(keys));
  const Clock::time_point start = Clock::now();
  for (int64_t step = 1; step <= steps; ++step) {
    for (int w = 0; w < config.workers; ++w) {
      const double wallMs = static_cast<double>(step) * 1.5 + w * 0.01;
      for (int k = 0; k < keys; ++k) {
        const uint64_t noise = mix(static_cast<uint64_t>(step * seriesCount + w * keys + k));
        batch[static_cast<std::size_t>(k)] = {handles[static_cast<std::size_t>(w * keys + k)],
                                              curve(step, noise), step, wallMs};
      }
      appender.append(batch);
    }
  }
  appender.close();
  r.ingestSeconds = secondsSince(start);
  r.ingestPoints = steps * seriesCount;
  r.ingestCommits = appender.commits();
  r.ingestPointsPerS = static_cast<double>(r.ingestPoints) / r.ingestSeconds;
  int64_t stored = 0;
  for (const SeriesInfo& s : store->series(runId)) stored += s.count;
  r.wrongIngest = std::llabs(stored - r.ingestPoints) + (appender.committedPoints() - stored);
  store.reset();  // the last connection checkpoints and removes the WAL
  r.fileBytes = fileBytes(file);
}

void measureQuery(const StoreBenchConfig& config, const fs::path& dir, StoreBenchResult& r) {
  const fs::path file = dir / "query.dtlab";
  auto store = ProjectStore::create(file.string());
  const int64_t runId = store->beginRun({std::nullopt, "bench", "bench", 1, nullptr});
  std::vector<float> values(static_cast<std::size_t>(config.queryPoints));
  {
    PointAppender appender(file.string());
    const SeriesHandle h = appender.series(runId, 0, 0, metric::kLoss);
    std::vector<PointRecord> batch;
    for (int64_t i = 0; i < config.queryPoints; ++i) {
      values[static_cast<std::size_t>(i)] = curve(i, mix(static_cast<uint64_t>(i)));
      batch.push_back({h, values[static_cast<std::size_t>(i)], i, static_cast<double>(i) * 2.0});
      if (batch.size() == 8192) {
        appender.append(batch);
        batch.clear();
      }
    }
    appender.append(batch);
    appender.close();
  }
  const int64_t seriesId = *store->findSeries(runId, 0, 0, metric::kLoss);
  SeriesQuery query;
  query.seriesId = seriesId;
  query.buckets = config.buckets;

  SeriesData data = store->querySeries(query);  // warm-up, also checked below
  std::vector<double> times;
  for (int rep = 0; rep < config.repetitions; ++rep) {
    const Clock::time_point start = Clock::now();
    data = store->querySeries(query);
    times.push_back(secondsSince(start) * 1000.0);
  }
  r.queryMs = median(times);
  r.queryReturnedPoints = static_cast<int64_t>(data.points.size());

  // Brute-force reduction of what was written, bucketed the same way.
  const int64_t n = config.buckets;
  std::vector<float> lo(static_cast<std::size_t>(n), std::numeric_limits<float>::infinity());
  std::vector<float> hi(static_cast<std::size_t>(n), -std::numeric_limits<float>::infinity());
  const double from = 0.0;
  const double to = static_cast<double>(config.queryPoints - 1);
  // The same arithmetic as querySeries, so boundary points land in the same bucket.
  const double width = (to - from) / static_cast<double>(n);
  const double scale = width > 0.0 ? 1.0 / width : 0.0;
  for (int64_t i = 0; i < config.queryPoints; ++i) {
    const auto b = static_cast<std::size_t>(std::clamp<int64_t>(
        static_cast<int64_t>((static_cast<double>(i) - from) * scale), 0, n - 1));
    lo[b] = std::min(lo[b], values[static_cast<std::size_t>(i)]);
    hi[b] = std::max(hi[b], values[static_cast<std::size_t>(i)]);
  }
  int64_t wrong = data.downsampled ? 0 : n;
  for (const SeriesBucket& b : data.buckets) {
    const auto i = static_cast<std::size_t>(
        std::clamp<int64_t>(static_cast<int64_t>((b.from - from) * scale + 0.5), 0, n - 1));
    if (static_cast<float>(b.min.value) != lo[i] || static_cast<float>(b.max.value) != hi[i])
      ++wrong;
  }
  r.wrongBuckets = wrong + std::llabs(static_cast<int64_t>(data.buckets.size()) -
                                      std::min<int64_t>(n, config.queryPoints));
}

// One row per point, the layout a first version would use (and schema version 1 did).
void measureReference(const StoreBenchConfig& config, const fs::path& dir, StoreBenchResult& r) {
  const std::string file = (dir / "rows.sqlite").string();
  sqlite::Db db(file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA cache_size = -32768");
  db.exec(
      "CREATE TABLE points (series_id INTEGER NOT NULL, step INTEGER NOT NULL, wall_ms REAL NOT "
      "NULL, value REAL, PRIMARY KEY (series_id, step)) WITHOUT ROWID");
  const int64_t points = config.referencePoints;
  {
    sqlite::Statement insert(db, "INSERT INTO points VALUES (?, ?, ?, ?)");
    const Clock::time_point start = Clock::now();
    constexpr int64_t kBatch = 10000;
    for (int64_t i = 0; i < points; i += kBatch) {
      sqlite::Transaction t(db);
      for (int64_t j = i; j < std::min(points, i + kBatch); ++j) {
        insert.bind(1, int64_t{1}).bind(2, j).bind(3, static_cast<double>(j) * 2.0);
        insert.bind(4, static_cast<double>(curve(j, mix(static_cast<uint64_t>(j))))).run();
      }
      t.commit();
    }
    r.referenceIngestPointsPerS = static_cast<double>(points) / secondsSince(start);
  }
  sqlite::Statement query(db,
                          "SELECT CAST((step - ?1) * ?3 / (?2 - ?1 + 1) AS INTEGER) AS b, "
                          "min(value), max(value), count(*) FROM points "
                          "WHERE series_id = 1 AND step BETWEEN ?1 AND ?2 GROUP BY b");
  std::vector<double> times;
  const int reps = std::max(1, std::min(config.repetitions, 3));
  for (int rep = 0; rep <= reps; ++rep) {
    const Clock::time_point start = Clock::now();
    query.bind(1, int64_t{0}).bind(2, points - 1).bind(3, int64_t{config.buckets});
    int64_t rows = 0;
    while (query.step()) ++rows;
    query.reset();
    if (rep > 0) times.push_back(secondsSince(start) * 1000.0);  // rep 0 warms the cache
  }
  r.referenceQueryMs = median(times);
}

}  // namespace

StoreBenchResult benchStore(const StoreBenchConfig& config,
                            const std::function<void(const std::string&)>& log) {
  auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  TempDir dir(config.directory);
  StoreBenchResult r;
  say("ingest: " + std::to_string(config.ingestPoints) + " points over " +
      std::to_string(config.workers * 9) + " series into " + (dir.path / "ingest.dtlab").string());
  measureIngest(config, dir.path, r);
  say("query: a " + std::to_string(config.queryPoints) + "-point series, " +
      std::to_string(config.buckets) + " buckets");
  measureQuery(config, dir.path, r);
  if (config.reference) {
    say("reference: one row per point, " + std::to_string(config.referencePoints) + " points");
    measureReference(config, dir.path, r);
  }
  return r;
}

}  // namespace dtlab::core
