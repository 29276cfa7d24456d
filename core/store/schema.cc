#include "core/store/schema.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/config.h"
#include "core/store/checkpoint_parts.h"
#include "core/store/chunk_codec.h"
#include "core/store/chunk_rows.h"
#include "core/store/legacy_events.h"
#include "core/store/sqlite_db.h"

namespace dtlab::core {
namespace {

// Version 1: the first layout, one row per point. Kept verbatim: it is what a v1 file
// holds, and a new file is built by running every step from 0.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE project_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE datasets (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  config TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE TABLE topologies (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  config TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE TABLE experiments (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  config TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER REFERENCES experiments(id) ON DELETE SET NULL,
  name TEXT NOT NULL,
  strategy TEXT NOT NULL,
  seed INTEGER NOT NULL,
  status TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER,
  program_version TEXT NOT NULL,
  spec TEXT,
  error TEXT
);
CREATE INDEX runs_by_experiment ON runs(experiment_id);
CREATE TABLE series (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node INTEGER NOT NULL,
  worker INTEGER NOT NULL,
  key TEXT NOT NULL,
  UNIQUE (run_id, key, node, worker)
);
CREATE TABLE points (
  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  wall_ms REAL NOT NULL,
  value REAL,
  PRIMARY KEY (series_id, step)
) WITHOUT ROWID;
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  wall_ms REAL NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX events_by_run ON events(run_id, step);
CREATE TABLE run_summaries (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  summary TEXT NOT NULL
);
)sql";

// Version 2 additions. In `chunks` the blob is the last column: SQLite spills a record's
// tail to overflow pages, so the planning columns stay on the B-tree page and a query that
// only needs them never reads the blob. The (series_id, min_step) index serves range
// queries, series deletion (the foreign key cascade) and ordered reads.
constexpr const char* kSchemaV2Additions = R"sql(
CREATE TABLE chunks (
  id INTEGER PRIMARY KEY,
  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
  count INTEGER NOT NULL,
  min_step INTEGER NOT NULL,
  max_step INTEGER NOT NULL,
  min_wall_ms REAL NOT NULL,
  max_wall_ms REAL NOT NULL,
  min_value REAL,
  min_value_step INTEGER,
  min_value_wall_ms REAL,
  max_value REAL,
  max_value_step INTEGER,
  max_value_wall_ms REAL,
  data BLOB NOT NULL
);
CREATE INDEX chunks_by_series ON chunks(series_id, min_step);
CREATE TABLE run_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  count INTEGER NOT NULL,
  last_step INTEGER NOT NULL,
  last_wall_ms REAL NOT NULL,
  last_value REAL,
  min_value REAL,
  max_value REAL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
)sql";

void createV1(sqlite::Db& db) {
  db.exec(kSchemaV1);
  db.exec(("PRAGMA application_id = " + std::to_string(kProjectApplicationId)).c_str());
  sqlite::Statement meta(db, "INSERT INTO project_meta(key, value) VALUES (?, ?)");
  meta.bind(1, "created_ms").bind(2, std::to_string(epochMsNow())).run();
  meta.bind(1, "created_with").bind(2, "DTLab " DTLAB_VERSION).run();
}

// v1 -> v2: repack every series' points into chunks (in step order, which v1's primary
// key guarantees), compute run_metrics from them, and drop the old table.
void packPointsIntoChunks(sqlite::Db& db) {
  db.exec(kSchemaV2Additions);
  sqlite::Statement seriesList(db, "SELECT id, run_id, key FROM series ORDER BY id");
  sqlite::Statement points(
      db, "SELECT step, wall_ms, value FROM points WHERE series_id = ? ORDER BY step");
  sqlite::Statement insert(db, kInsertChunkSql);
  MetricDeltas metrics;
  std::vector<SeriesPoint> buffer;
  std::vector<unsigned char> blob;
  while (seriesList.step()) {
    const int64_t seriesId = seriesList.columnInt(0);
    MetricDelta& m = metrics[{seriesList.columnInt(1), seriesList.columnText(2)}];
    points.bind(1, seriesId);
    buffer.clear();
    while (points.step()) {
      const SeriesPoint p{points.columnInt(0), points.columnDouble(1), points.columnDouble(2)};
      m.add({&p, 1});
      buffer.push_back(p);
      if (buffer.size() == kChunkCapacity) {
        insertChunkRow(insert, seriesId, buffer, blob);
        buffer.clear();
      }
    }
    points.reset();
    if (!buffer.empty()) insertChunkRow(insert, seriesId, buffer, blob);
  }
  insertRunMetrics(db, metrics);
  db.exec("DROP TABLE points");
}

// v2 -> v3: who records each run (NULL for the runs begun before: recorderState() takes
// their recorder as gone).
void addRunRecorders(sqlite::Db& db) {
  db.exec("ALTER TABLE runs ADD COLUMN recorder TEXT");
}

// v3 -> v4: checkpoints, one row per kept checkpoint of a run (the encoded form of
// core/train/checkpoint.h), gone with their run.
void addCheckpoints(sqlite::Db& db) {
  db.exec(R"sql(
    CREATE TABLE checkpoints (
      run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      step INTEGER NOT NULL,
      wall_ms REAL NOT NULL,
      created_ms INTEGER NOT NULL,
      data BLOB NOT NULL,
      PRIMARY KEY (run_id, step)) WITHOUT ROWID;
  )sql");
}

// v4 -> v5: executions (one run of every variant of an experiment, `repeats` times) and each
// run's place in one. Runs recorded before have none: each compares alone, as they did.
void addExecutions(sqlite::Db& db) {
  db.exec(R"sql(
    CREATE TABLE executions (
      id INTEGER PRIMARY KEY,
      experiment_id INTEGER REFERENCES experiments(id) ON DELETE SET NULL,
      started_ms INTEGER NOT NULL,
      repeats INTEGER NOT NULL,
      seed INTEGER NOT NULL,
      spec TEXT);
    CREATE INDEX executions_by_experiment ON executions(experiment_id);
    ALTER TABLE runs ADD COLUMN execution_id INTEGER REFERENCES executions(id) ON DELETE SET NULL;
    ALTER TABLE runs ADD COLUMN repetition INTEGER;
    CREATE INDEX runs_by_execution ON runs(execution_id);
  )sql");
}

// v5 -> v6: the parameter-server record of a run (core/train/push_record.h: chunks of pushes and
// final replicas, in the order recorded), gone with the run; what `dtlab-cli replay` follows.
void addPsRecords(sqlite::Db& db) {
  db.exec(R"sql(
    CREATE TABLE ps_records (
      id INTEGER PRIMARY KEY,
      run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      data BLOB NOT NULL);
    CREATE INDEX ps_records_by_run ON ps_records(run_id, id);
  )sql");
}

// v6 -> v7: calibrations of the scale simulator (core/sim/calibration.h as JSON), newest last;
// `dtlab-cli predict` uses the newest.
void addCalibrations(sqlite::Db& db) {
  db.exec(R"sql(
    CREATE TABLE calibrations (
      id INTEGER PRIMARY KEY,
      created_ms INTEGER NOT NULL,
      data TEXT NOT NULL);
  )sql");
}

// v7 -> v8: checkpoints in parts (core/store/checkpoint_parts.h): each row keeps a manifest
// and its size, its bytes move to checkpoint_parts in checksummed parts, and the whole-blob
// column goes (one value may not exceed 1 GB, and damage was found only as a whole).
void splitCheckpoints(sqlite::Db& db) {
  db.exec(R"sql(
    ALTER TABLE checkpoints RENAME TO checkpoints_whole;
    CREATE TABLE checkpoints (
      run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      step INTEGER NOT NULL,
      wall_ms REAL NOT NULL,
      created_ms INTEGER NOT NULL,
      bytes INTEGER NOT NULL,
      manifest TEXT NOT NULL,
      PRIMARY KEY (run_id, step)) WITHOUT ROWID;
    CREATE TABLE checkpoint_parts (
      run_id INTEGER NOT NULL,
      step INTEGER NOT NULL,
      part INTEGER NOT NULL,
      checksum INTEGER NOT NULL,
      data BLOB NOT NULL,
      PRIMARY KEY (run_id, step, part),
      FOREIGN KEY (run_id, step) REFERENCES checkpoints(run_id, step) ON DELETE CASCADE);
  )sql");
  sqlite::Statement old(db,
                        "SELECT run_id, step, wall_ms, created_ms, data FROM checkpoints_whole");
  while (old.step()) {
    const std::span<const unsigned char> data = old.columnBlob(4);
    writeCheckpointParts(db, old.columnInt(0), old.columnInt(1), old.columnDouble(2),
                         old.columnInt(3), data);
  }
  old.reset();
  db.exec("DROP TABLE checkpoints_whole");
}

// v8 -> v9: events carry their facts (core/metrics/event_facts.h) beside their sentence; the
// events recorded before get them from their sentences (core/store/legacy_events.h), and failed
// runs whose error said a node was lost or the loss diverged get those stop reasons, so that
// nothing after this step reads a sentence.
void addEventFacts(sqlite::Db& db) {
  db.exec("ALTER TABLE events ADD COLUMN data TEXT NOT NULL DEFAULT ''");
  sqlite::Statement events(db,
                           "SELECT id, kind, detail FROM events WHERE kind IN "
                           "('node', 'strategy_switch', 'hybrid_phase', 'start')");
  sqlite::Statement update(db, "UPDATE events SET data = ? WHERE id = ?");
  while (events.step()) {
    const std::string kind = events.columnText(1);
    const std::string detail = events.columnText(2);
    std::string data;
    if (kind == kNodeEvent) {
      if (const auto f = legacyNodeFacts(detail)) data = eventData(*f);
    } else if (kind == kStartEvent) {
      if (const auto f = legacyCollectiveFacts(detail)) data = eventData(*f);
    } else if (const auto f = legacyPhaseFacts(kind, detail)) {
      data = eventData(*f);
    }
    if (!data.empty()) update.bind(1, data).bind(2, events.columnInt(0)).run();
  }
  events.reset();
  sqlite::Statement summaries(db, "SELECT run_id, summary FROM run_summaries");
  sqlite::Statement rewrite(db, "UPDATE run_summaries SET summary = ? WHERE run_id = ?");
  while (summaries.step()) {
    nlohmann::json s = nlohmann::json::parse(summaries.columnText(1), nullptr, false);
    // A summary that is not what a run stores (damaged, or edited) is left as it is.
    const auto text = [&s](const char* key) {
      const auto it = s.find(key);
      return it != s.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    if (!s.is_object() || text("status") != "failed" || text("stop_reason") != "error") continue;
    const std::string error = text("error");
    if (error.find("diverged") != std::string::npos)
      s["stop_reason"] = "diverged";
    else if (error.find(" lost") != std::string::npos)
      s["stop_reason"] = "node_lost";
    else
      continue;
    rewrite.bind(1, s.dump()).bind(2, summaries.columnInt(0)).run();
  }
  summaries.reset();
}

constexpr std::array<Migration, 9> kMigrations = {{
    {0, "create the project tables", &createV1},
    {1, "pack points into chunks; add run_metrics", &packPointsIntoChunks},
    {2, "add runs.recorder", &addRunRecorders},
    {3, "add checkpoints", &addCheckpoints},
    {4, "add executions", &addExecutions},
    {5, "add ps_records", &addPsRecords},
    {6, "add calibrations", &addCalibrations},
    {7, "store checkpoints in checksummed parts", &splitCheckpoints},
    {8, "give events their facts", &addEventFacts},
}};
static_assert(kMigrations.size() == kSchemaVersion, "one migration step per version");

// A file refused on purpose, as opposed to an SQLite error met while checking it.
class RefusedFile : public StoreError {
 public:
  using StoreError::StoreError;
};

// An SQLite URI for a file path: "file:" and the path with '%', '?' and '#' escaped.
std::string fileUri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static const char* hex = "0123456789ABCDEF";
      uri += '%';
      uri += hex[(static_cast<unsigned char>(c) >> 4) & 15];
      uri += hex[static_cast<unsigned char>(c) & 15];
    } else {
      uri += c;
    }
  }
  return uri;
}

uint32_t bigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Tables (other than SQLite's own) and their column names.
using TableColumns = std::map<std::string, std::vector<std::string>>;

TableColumns tableColumns(sqlite::Db& db) {
  TableColumns out;
  sqlite::Statement tables(db,
                           "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                           "'sqlite\\_%' ESCAPE '\\'");
  while (tables.step()) out[tables.columnText(0)];
  for (auto& [table, columns] : out) {
    sqlite::Statement info(db, "SELECT name FROM pragma_table_info(?)");
    info.bind(1, table);
    while (info.step()) columns.push_back(info.columnText(0));
  }
  return out;
}

// What a project of schema `version` holds, read off an empty database that the migration
// steps built in memory, so that the tables are written down once, in the steps.
const TableColumns& expectedTables(int version) {
  static std::mutex mutex;
  static std::map<int, TableColumns> built;
  const std::lock_guard lock(mutex);
  auto it = built.find(version);
  if (it == built.end()) {
    sqlite::Db memory(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY);
    for (int step = 0; step < version; ++step)
      kMigrations[static_cast<std::size_t>(step)].apply(memory);
    it = built.emplace(version, tableColumns(memory)).first;
  }
  return it->second;
}

// Empty when `db` has every table and column of schema `version` (more are allowed); else
// the first one missing, in words.
std::string missingSchemaPart(sqlite::Db& db, int version) {
  const TableColumns present = tableColumns(db);
  for (const auto& [table, columns] : expectedTables(version)) {
    const auto found = present.find(table);
    if (found == present.end()) return "no table " + table;
    for (const std::string& column : columns)
      if (std::find(found->second.begin(), found->second.end(), column) == found->second.end())
        return "table " + table + " has no column " + column;
  }
  return "";
}

}  // namespace

const Migration* migrationSteps(int* count) {
  *count = static_cast<int>(kMigrations.size());
  return kMigrations.data();
}

int64_t epochMsNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

FileHeader checkProjectFileHeader(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw StoreError(path + ": no such project file");
  if (!fs::is_regular_file(status)) throw StoreError(path + ": not a regular file");
  const auto size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) throw StoreError(path + ": cannot read its size: " + ec.message());
  const std::string refused = "; the file was not modified";
  if (size == 0) throw StoreError(path + ": empty file, not a DTLab project" + refused);
  // The header is read through SQLite's own file handle, never a plain open()/close():
  // closing any descriptor of a file drops every POSIX lock this process holds on it,
  // including the locks of SQLite connections open on it elsewhere in the process (a
  // writer thread), which is how SQLite databases get corrupted. SQLite's unix VFS
  // defers closing its descriptor while other connections hold locks. A read-only open
  // creates nothing beside the file and writes nothing.
  std::array<unsigned char, 100> h{};
  const int64_t got = std::min<int64_t>(size, static_cast<int64_t>(h.size()));
  {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
    std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
    sqlite3_file* file = nullptr;
    if (rc != SQLITE_OK ||
        sqlite3_file_control(raw, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
        file == nullptr || file->pMethods == nullptr)
      throw StoreError(path + ": cannot be read (permissions?)");
    const int read = file->pMethods->xRead(file, h.data(), static_cast<int>(got), 0);
    if (read != SQLITE_OK && read != SQLITE_IOERR_SHORT_READ)
      throw StoreError(path + ": cannot be read (I/O error " + std::to_string(read) + ")");
  }
  if (got < 16 || std::memcmp(h.data(), "SQLite format 3\0", 16) != 0)
    throw StoreError(path + ": not a DTLab project (not an SQLite database)" + refused);
  if (got < static_cast<int64_t>(h.size()))
    throw StoreError(path + ": damaged project file (truncated inside its header)" + refused);

  FileHeader header;
  const int rawPageSize = (h[16] << 8) | h[17];
  header.pageSize = rawPageSize == 1 ? 65536 : rawPageSize;
  if (header.pageSize < 512 || (header.pageSize & (header.pageSize - 1)) != 0)
    throw StoreError(path + ": damaged project file (invalid page size " +
                     std::to_string(rawPageSize) + ")" + refused);
  header.userVersion = static_cast<int>(bigEndian32(&h[60]));
  header.applicationId = static_cast<int32_t>(bigEndian32(&h[68]));
  // The header's page count is valid when its change counter equals version-valid-for.
  if (bigEndian32(&h[24]) == bigEndian32(&h[92])) header.pages = bigEndian32(&h[28]);

  // A hot WAL file may legitimately hold pages the main file does not have yet (a
  // checkpoint interrupted by a crash); SQLite reconciles the two, and the integrity check
  // after opening catches real damage. Without one, a file shorter than its header says
  // lost its tail.
  const bool hotWal = fs::exists(path + "-wal", ec) && fs::file_size(path + "-wal", ec) > 0;
  if (!hotWal) {
    const int64_t expected = header.pages * header.pageSize;
    if (header.pages > 0 ? size < expected : size % header.pageSize != 0)
      throw StoreError(path + ": damaged project file (truncated: " + std::to_string(size) +
                       " bytes, its header says " +
                       std::to_string(header.pages > 0 ? expected : size) + ")" + refused);
  }
  if (header.applicationId != kProjectApplicationId)
    throw StoreError(path + ": an SQLite database but not a DTLab project" + refused);
  if (header.userVersion > kSchemaVersion)
    throw StoreError(path + ": written by a newer DTLab (project schema version " +
                     std::to_string(header.userVersion) + "; this build reads versions up to " +
                     std::to_string(kSchemaVersion) + "). Update DTLab to open it" + refused);
  if (header.userVersion < 1)
    throw StoreError(path + ": damaged project file (no schema version)" + refused);
  return header;
}

std::unique_ptr<sqlite::Db> openProjectDatabase(const std::string& path,
                                                const OpenDatabaseOptions& options) {
  checkProjectFileHeader(path);
  const std::string refused = "; the file was not modified";
  // Everything up to the migration only reads. The header was checked above, but a WAL
  // file beside it may carry a newer header, so the same questions are asked again
  // through SQLite. Returns the schema version.
  auto checks = [&](sqlite::Db& db) {
    try {
      if (db.queryInt("PRAGMA application_id") != kProjectApplicationId)
        throw RefusedFile(path + ": an SQLite database but not a DTLab project" + refused);
      const int version = static_cast<int>(db.queryInt("PRAGMA user_version"));
      if (version > kSchemaVersion)
        throw RefusedFile(path + ": written by a newer DTLab (project schema version " +
                          std::to_string(version) + "; this build reads versions up to " +
                          std::to_string(kSchemaVersion) + "). Update DTLab to open it" + refused);
      // A file whose tables are not its version's (edited by hand, or damaged in its
      // schema) is refused here, before anything is written to it.
      const std::string missing = missingSchemaPart(db, version);
      if (!missing.empty())
        throw RefusedFile(path + ": damaged project file (" + missing + ")" + refused);
      if (options.verify) {
        sqlite::Statement check(db, "PRAGMA quick_check(1)");
        const std::string result = check.step() ? check.columnText(0) : "no result";
        if (result != "ok")
          throw RefusedFile(path + ": damaged project file (integrity check: " + result + ")" +
                            refused);
      }
      return version;
    } catch (const RefusedFile&) {
      throw;
    } catch (const StoreError& e) {
      // An SQLite error while only reading: SQLITE_NOTADB, SQLITE_CORRUPT and the like.
      throw RefusedFile(path + ": damaged project file (" + e.what() + ")" + refused);
    }
  };
  // A read-only connection to a WAL database creates -wal and -shm files beside it and,
  // unlike a read-write one, cannot remove them when it closes. With no WAL content the
  // main file is the whole database, so the checks read it as immutable, which creates
  // nothing; the real connection is opened only for a file that passed.
  std::error_code ec;
  const bool hotWal = std::filesystem::exists(path + "-wal", ec) &&
                      std::filesystem::file_size(path + "-wal", ec) > 0;
  const bool checkImmutable = options.readOnly && !hotWal;
  if (checkImmutable) {
    sqlite::Db snapshot(fileUri(path) + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                        path);
    checks(snapshot);
  }
  auto db = std::make_unique<sqlite::Db>(
      path, options.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
  const int version =
      checkImmutable ? static_cast<int>(db->queryInt("PRAGMA user_version")) : checks(*db);
  if (version < kSchemaVersion && options.readOnly)
    throw StoreError(path + ": project schema version " + std::to_string(version) +
                     " must be upgraded to " + std::to_string(kSchemaVersion) +
                     "; open it once read-write (e.g. dtlab-cli project show)");
  if (!options.readOnly) {
    // Migrated before the switch to WAL: a migration that fails rolls back and leaves a
    // file that was not in WAL mode byte-for-byte as it was.
    try {
      migrateToLatest(*db);
    } catch (const StoreError& e) {
      throw StoreError(path + ": " + e.what(), e.sqliteCode());
    }
    // WAL: readers never block the writer nor see "database is locked" from it, and a
    // killed writer loses at most its uncommitted transaction. synchronous=NORMAL keeps
    // every commit across a process crash; only a power loss can drop the last commits,
    // and never corrupts.
    const std::string mode = db->queryText("PRAGMA journal_mode = WAL");
    if (mode != "wal")
      throw StoreError(path + ": cannot switch to WAL journal mode (got '" + mode +
                       "'); is the file on a network file system?");
    db->exec("PRAGMA synchronous = NORMAL");
    // A checkpoint rewinds the WAL but leaves the file as large as the largest commit;
    // this bounds what a burst of big commits leaves on disk.
    db->exec("PRAGMA journal_size_limit = 67108864");
  }
  // Chart queries read blob pages repeatedly; a bigger page cache than SQLite's 2 MB
  // default keeps a zoomed series in memory.
  db->exec("PRAGMA cache_size = -32768");
  return db;
}

void migrateToLatest(sqlite::Db& db) {
  const int from = static_cast<int>(db.queryInt("PRAGMA user_version"));
  if (from >= kSchemaVersion) return;
  // Every step in one transaction: a step that fails leaves the file byte-for-byte as it was,
  // never half-way up at a version between (which a later build would take for a finished one).
  sqlite::Transaction transaction(db);
  for (int version = from; version < kSchemaVersion; ++version) {
    const Migration& step = kMigrations[static_cast<std::size_t>(version)];
    try {
      step.apply(db);
    } catch (const StoreError& e) {
      throw StoreError(std::string("upgrade from project schema version ") + std::to_string(from) +
                           " failed at step " + std::to_string(version) + " -> " +
                           std::to_string(version + 1) + " (" + step.description +
                           "); the file is unchanged: " + e.what(),
                       e.sqliteCode());
    }
  }
  db.exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
  transaction.commit();
}

}  // namespace dtlab::core
