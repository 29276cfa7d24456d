#include "core/store/store_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "core/common/statistics.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/series_query.h"
#include "core/store/sqlite_db.h"
#include "core/store/store_sink.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
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

// The ingest work both sides get: per step, one point of each worker-scope metric of the
// metric table per worker in one batch, as StoreSink appends them during a run. Series are numbered
// worker * keys + key.
struct IngestWork {
  explicit IngestWork(const StoreBenchConfig& config)
      : workers(config.workers),
        keys(static_cast<int>(metricsOf(MetricScope::kWorker).size())),
        steps(std::max<int64_t>(1, config.ingestPoints / (int64_t{config.workers} * keys))) {}
  int64_t seriesCount() const { return int64_t{workers} * keys; }
  int64_t points() const { return steps * seriesCount(); }
  double wallMs(int64_t step, int w) const { return static_cast<double>(step) * 1.5 + w * 0.01; }
  float value(int64_t step, int64_t series) const {
    return curve(step, mix(static_cast<uint64_t>(step * seriesCount() + series)));
  }

  int workers;
  int keys;
  int64_t steps;
};

// The queried series both sides store: point i at step i, wall-clock 2i ms.
float queryValue(int64_t i) {
  return curve(i, mix(static_cast<uint64_t>(i)));
}

// DTLab: PointAppender into a fresh project file. Returns the seconds from the first append
// to the end of close() (everything committed).
double ingestChunks(const IngestWork& work, const fs::path& file, StoreSideResult& r) {
  auto store = ProjectStore::create(file.string());
  const int64_t runId =
      store->beginRun({std::nullopt, "bench", "bench", 1, nullptr, std::nullopt, 0});
  PointAppender appender(file.string());
  std::vector<SeriesHandle> handles;
  for (int w = 0; w < work.workers; ++w)
    for (int k = 0; k < work.keys; ++k)
      handles.push_back(appender.series(
          runId, 0, w,
          std::string(metricsOf(MetricScope::kWorker)[static_cast<std::size_t>(k)]->name)));
  std::vector<PointRecord> batch(static_cast<std::size_t>(work.keys));
  const Clock::time_point start = Clock::now();
  for (int64_t step = 1; step <= work.steps; ++step) {
    for (int w = 0; w < work.workers; ++w) {
      const double wallMs = work.wallMs(step, w);
      for (int k = 0; k < work.keys; ++k) {
        const int64_t series = int64_t{w} * work.keys + k;
        batch[static_cast<std::size_t>(k)] = {handles[static_cast<std::size_t>(series)],
                                              work.value(step, series), step, wallMs};
      }
      appender.append(batch);
    }
  }
  appender.close();
  const double seconds = secondsSince(start);
  r.ingestCommits = appender.commits();
  const std::vector<SeriesInfo> series = store->series(runId);
  int64_t stored = 0;
  for (const SeriesInfo& s : series) {
    stored += s.count;
    r.wrongIngest += std::llabs(s.count - work.steps);
  }
  r.wrongIngest += (work.seriesCount() - static_cast<int64_t>(series.size())) * work.steps +
                   std::llabs(appender.committedPoints() - stored);
  store.reset();  // the last connection checkpoints and removes the WAL
  r.fileBytes = fileBytes(file);
  return seconds;
}

void openRowsFile(sqlite::Db& db) {
  // What the project store runs with (schema.cc), so only the layout differs.
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA cache_size = -32768");
  db.exec(
      "CREATE TABLE IF NOT EXISTS points (series_id INTEGER NOT NULL, step INTEGER NOT NULL, "
      "wall_ms REAL NOT NULL, value REAL, PRIMARY KEY (series_id, step)) WITHOUT ROWID");
}

// The reference: the same points as ingestChunks, one row each, inserted on the producing
// thread and committed on the appender's interval (so a crash loses as much on both sides).
double ingestRows(const IngestWork& work, const fs::path& file, StoreSideResult& r) {
  const std::chrono::milliseconds interval = AppenderOptions{}.commitInterval;
  int64_t commits = 0;
  double seconds = 0.0;
  {
    sqlite::Db db(file.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    openRowsFile(db);
    sqlite::Statement insert(db, "INSERT INTO points VALUES (?, ?, ?, ?)");
    const Clock::time_point start = Clock::now();
    Clock::time_point deadline = start + interval;
    db.exec("BEGIN IMMEDIATE");
    for (int64_t step = 1; step <= work.steps; ++step) {
      for (int w = 0; w < work.workers; ++w) {
        const double wallMs = work.wallMs(step, w);
        for (int k = 0; k < work.keys; ++k) {
          const int64_t series = int64_t{w} * work.keys + k;
          insert.bind(1, series + 1).bind(2, step).bind(3, wallMs);
          insert.bind(4, static_cast<double>(work.value(step, series))).run();
        }
        if (Clock::now() >= deadline) {
          db.exec("COMMIT");
          ++commits;
          db.exec("BEGIN IMMEDIATE");
          deadline = Clock::now() + interval;
        }
      }
    }
    db.exec("COMMIT");
    ++commits;
    seconds = secondsSince(start);
    sqlite::Statement counts(db, "SELECT series_id, count(*) FROM points GROUP BY series_id");
    int64_t seen = 0;
    while (counts.step()) {
      ++seen;
      r.wrongIngest += std::llabs(counts.columnInt(1) - work.steps);
    }
    r.wrongIngest += (work.seriesCount() - seen) * work.steps;
  }
  r.ingestCommits = commits;
  r.fileBytes = fileBytes(file);
  return seconds;
}

// Buckets of `data` whose count, min or max differ from a brute-force reduction of what was
// written (the same arithmetic as querySeries, so boundary points land in the same bucket).
int64_t wrongBuckets(const SeriesData& data, const std::vector<float>& values, int64_t n) {
  const auto points = static_cast<int64_t>(values.size());
  std::vector<float> lo(static_cast<std::size_t>(n), std::numeric_limits<float>::infinity());
  std::vector<float> hi(static_cast<std::size_t>(n), -std::numeric_limits<float>::infinity());
  std::vector<int64_t> count(static_cast<std::size_t>(n), 0);
  const double from = 0.0;
  const double to = static_cast<double>(points - 1);
  const double width = (to - from) / static_cast<double>(n);
  const double scale = width > 0.0 ? 1.0 / width : 0.0;
  for (int64_t i = 0; i < points; ++i) {
    const auto b = static_cast<std::size_t>(std::clamp<int64_t>(
        static_cast<int64_t>((static_cast<double>(i) - from) * scale), 0, n - 1));
    lo[b] = std::min(lo[b], values[static_cast<std::size_t>(i)]);
    hi[b] = std::max(hi[b], values[static_cast<std::size_t>(i)]);
    ++count[b];
  }
  int64_t wrong = data.downsampled ? 0 : n;
  for (const SeriesBucket& b : data.buckets) {
    const auto i = static_cast<std::size_t>(
        std::clamp<int64_t>(static_cast<int64_t>((b.from - from) * scale + 0.5), 0, n - 1));
    if (static_cast<float>(b.min.value) != lo[i] || static_cast<float>(b.max.value) != hi[i] ||
        b.count != count[i])
      ++wrong;
  }
  return wrong + std::llabs(static_cast<int64_t>(data.buckets.size()) - std::min(n, points));
}

// The reference's query over one row per point: the extent from the key, then one range scan
// reduced in the same buckets as querySeries, keeping each bucket's min and max point.
SeriesData queryRows(sqlite::Db& db, int64_t seriesId, int64_t n) {
  SeriesData out;
  sqlite::Statement extent(db,
                           "SELECT min(step), max(step), count(*) FROM points WHERE series_id = ?");
  extent.bind(1, seriesId);
  if (!extent.step() || extent.columnInt(2) == 0) return out;
  out.from = static_cast<double>(extent.columnInt(0));
  out.to = static_cast<double>(extent.columnInt(1));
  std::vector<SeriesBucket> buckets(static_cast<std::size_t>(n));
  const double width = (out.to - out.from) / static_cast<double>(n);
  const double scale = width > 0.0 ? 1.0 / width : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    buckets[i].from = out.from + width * static_cast<double>(i);
    buckets[i].to = i + 1 == n ? out.to : out.from + width * static_cast<double>(i + 1);
  }
  sqlite::Statement scan(db,
                         "SELECT step, wall_ms, value FROM points WHERE series_id = ? "
                         "ORDER BY step");
  scan.bind(1, seriesId);
  while (scan.step()) {
    const SeriesPoint p{scan.columnInt(0), scan.columnDouble(1), scan.columnDouble(2)};
    const auto i = std::clamp<int64_t>(
        static_cast<int64_t>((static_cast<double>(p.step) - out.from) * scale), 0, n - 1);
    SeriesBucket& b = buckets[static_cast<std::size_t>(i)];
    ++b.count;
    ++out.pointsInRange;
    if (std::isnan(p.value)) continue;
    if (!b.hasValue) {
      b.hasValue = true;
      b.min = b.max = p;
    } else if (p.value < b.min.value) {
      b.min = p;
    } else if (p.value > b.max.value) {
      b.max = p;
    }
  }
  out.downsampled = true;
  for (SeriesBucket& b : buckets) {
    if (b.count == 0) continue;
    if (b.hasValue) {
      const bool minFirst = b.min.step <= b.max.step;
      out.points.push_back(minFirst ? b.min : b.max);
      if (!(b.min == b.max)) out.points.push_back(minFirst ? b.max : b.min);
    }
    out.buckets.push_back(b);
  }
  return out;
}

}  // namespace

StoreBenchResult benchStore(const StoreBenchConfig& config,
                            const std::function<void(const std::string&)>& log) {
  auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  TempDir dir(config.directory);
  StoreBenchResult result;
  StoreSideResult& chunks = result.chunks;
  std::optional<StoreSideResult> rows;
  if (config.reference) rows.emplace();

  const IngestWork work(config);
  say("ingest: " + std::to_string(work.points()) + " points over " +
      std::to_string(work.seriesCount()) + " series, " + std::to_string(config.ingestRepetitions) +
      " repetitions per side, each into a fresh file in " + dir.path.string());
  std::vector<double> chunkSeconds, rowSeconds;
  for (int rep = 0; rep < config.ingestRepetitions; ++rep) {
    // Alternate which side goes first, so neither always finds the disk cache the other left.
    for (int k = 0; k < 2; ++k) {
      const bool chunkTurn = (rep + k) % 2 == 0;
      if (!chunkTurn && !rows) continue;
      const fs::path file =
          dir.path / ((chunkTurn ? "ingest-" : "rows-") + std::to_string(rep) + ".sqlite");
      if (chunkTurn)
        chunkSeconds.push_back(ingestChunks(work, file, chunks));
      else
        rowSeconds.push_back(ingestRows(work, file, *rows));
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(file.string() + suffix, ec);
    }
  }
  auto ingestFigures = [&](StoreSideResult& side, const std::vector<double>& seconds) {
    side.ingestPoints = work.points();
    side.ingestSeconds = median(seconds);
    side.ingestPointsPerS = static_cast<double>(work.points()) / side.ingestSeconds;
  };
  ingestFigures(chunks, chunkSeconds);
  if (rows) ingestFigures(*rows, rowSeconds);

  say("query: a " + std::to_string(config.queryPoints) + "-point series, " +
      std::to_string(config.buckets) + " buckets, " + std::to_string(config.repetitions) +
      " repetitions per side");
  std::vector<float> values(static_cast<std::size_t>(config.queryPoints));
  for (int64_t i = 0; i < config.queryPoints; ++i)
    values[static_cast<std::size_t>(i)] = queryValue(i);

  const fs::path chunkFile = dir.path / "query.dtlab";
  auto store = ProjectStore::create(chunkFile.string());
  const int64_t runId =
      store->beginRun({std::nullopt, "bench", "bench", 1, nullptr, std::nullopt, 0});
  {
    PointAppender appender(chunkFile.string());
    const SeriesHandle h = appender.series(runId, 0, 0, metric::kLoss);
    std::vector<PointRecord> batch;
    for (int64_t i = 0; i < config.queryPoints; ++i) {
      batch.push_back({h, values[static_cast<std::size_t>(i)], i, static_cast<double>(i) * 2.0});
      if (batch.size() == 8192) {
        appender.append(batch);
        batch.clear();
      }
    }
    appender.append(batch);
    appender.close();
  }
  SeriesQuery query;
  query.seriesId = *store->findSeries(runId, 0, 0, metric::kLoss);
  query.buckets = config.buckets;

  std::unique_ptr<sqlite::Db> rowsDb;
  constexpr int64_t kRowsSeries = 1;
  if (rows) {
    rowsDb = std::make_unique<sqlite::Db>((dir.path / "query-rows.sqlite").string(),
                                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    openRowsFile(*rowsDb);
    sqlite::Transaction t(*rowsDb);
    sqlite::Statement insert(*rowsDb, "INSERT INTO points VALUES (?, ?, ?, ?)");
    for (int64_t i = 0; i < config.queryPoints; ++i) {
      insert.bind(1, kRowsSeries).bind(2, i).bind(3, static_cast<double>(i) * 2.0);
      insert.bind(4, static_cast<double>(values[static_cast<std::size_t>(i)])).run();
    }
    t.commit();
  }

  // One untimed warm-up of each side (also checked), then interleaved timed repetitions.
  SeriesData chunkData = store->querySeries(query);
  SeriesData rowData;
  if (rows) rowData = queryRows(*rowsDb, kRowsSeries, config.buckets);
  std::vector<double> chunkMs, rowMs;
  for (int rep = 0; rep < config.repetitions; ++rep) {
    for (int k = 0; k < 2; ++k) {
      const bool chunkTurn = (rep + k) % 2 == 0;
      if (!chunkTurn && !rows) continue;
      const Clock::time_point start = Clock::now();
      if (chunkTurn)
        chunkData = store->querySeries(query);
      else
        rowData = queryRows(*rowsDb, kRowsSeries, config.buckets);
      (chunkTurn ? chunkMs : rowMs).push_back(secondsSince(start) * 1000.0);
    }
  }
  chunks.queryMs = median(chunkMs);
  chunks.queryReturnedPoints = static_cast<int64_t>(chunkData.points.size());
  chunks.wrongBuckets = wrongBuckets(chunkData, values, config.buckets);
  if (rows) {
    rows->queryMs = median(rowMs);
    rows->queryReturnedPoints = static_cast<int64_t>(rowData.points.size());
    rows->wrongBuckets = wrongBuckets(rowData, values, config.buckets);
  }
  result.rows = rows;
  return result;
}

}  // namespace dtlab::core
