#include "core/store/project_store.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/common/config.h"
#include "core/spec/spec_json.h"
#include "core/store/checkpoint_parts.h"
#include "core/store/recorder.h"
#include "core/store/schema.h"

namespace dtlab::core {
namespace {

const char* tableOf(EntityKind kind) {
  switch (kind) {
    case EntityKind::kDataset:
      return "datasets";
    case EntityKind::kTopology:
      return "topologies";
    case EntityKind::kExperiment:
      return "experiments";
  }
  return "experiments";
}

// Builds "SELECT ... FROM <table> ..." for the entity tables; the table name comes from
// tableOf(), never from input.
std::string entitySql(EntityKind kind, const std::string& pattern) {
  std::string sql = pattern;
  const auto at = sql.find("%T");
  sql.replace(at, 2, tableOf(kind));
  return sql;
}

nlohmann::json parseStoredJson(const std::string& text, const std::string& what) {
  if (text.empty()) return nullptr;
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw StoreError(what + ": stored JSON does not parse: " + e.what());
  }
}

Entity readEntity(const sqlite::Statement& s, EntityKind kind) {
  Entity e;
  e.id = s.columnInt(0);
  e.name = s.columnText(1);
  e.config = parseStoredJson(s.columnText(2), std::string(toString(kind)) + " " + e.name);
  e.createdMs = s.columnInt(3);
  e.updatedMs = s.columnInt(4);
  return e;
}

// The last two: who records the run, and the wall time of its last point (ms after its start;
// what an interrupted run's end time is).
constexpr const char* kRunColumns =
    "id, experiment_id, name, strategy, seed, status, started_ms, ended_ms, program_version, "
    "error, spec, recorder, "
    "(SELECT MAX(last_wall_ms) FROM run_metrics WHERE run_metrics.run_id = runs.id), "
    "execution_id, repetition";

// Why a run is interrupted, for its error column and event.
std::string interruptionText(const std::string& recorder) {
  return "interrupted: the process recording it (" + describeRecorder(recorder) +
         ") ended without finishing it";
}

RunRecord readRun(const sqlite::Statement& s) {
  RunRecord r;
  r.id = s.columnInt(0);
  r.experimentId = s.columnOptionalInt(1);
  r.name = s.columnText(2);
  r.strategy = s.columnText(3);
  r.seed = std::bit_cast<uint64_t>(s.columnInt(4));
  r.status = readRunStatus(s.columnText(5));
  r.startedMs = s.columnInt(6);
  r.endedMs = s.columnOptionalInt(7);
  r.programVersion = s.columnText(8);
  r.error = s.columnText(9);
  r.spec = parseStoredJson(s.columnText(10), "run " + std::to_string(r.id));
  r.executionId = s.columnOptionalInt(13);
  r.repetition = s.columnOptionalInt(14).value_or(0);
  // A run left running by a process that is gone reads as interrupted, ended at its last
  // point, even where the file is only read (ProjectStore::open stores it so).
  if (r.status == RunStatus::kRunning && recorderState(s.columnText(11)) == RecorderState::kGone) {
    r.status = RunStatus::kInterrupted;
    r.endedMs = r.startedMs + static_cast<int64_t>(s.columnOptionalDouble(12).value_or(0.0));
    r.error = interruptionText(s.columnText(11));
  }
  return r;
}

// Turns SQLite's UNIQUE constraint failure into a message about names.
[[noreturn]] void rethrowEntityError(const StoreError& e, EntityKind kind,
                                     const std::string& name) {
  if (e.uniqueViolation())
    throw StoreError(
        std::string("a ") + toString(kind) + " named '" + name + "' already exists in the project",
        e.sqliteCode());
  throw e;
}

}  // namespace

const char* toString(EntityKind kind) {
  switch (kind) {
    case EntityKind::kDataset:
      return "dataset";
    case EntityKind::kTopology:
      return "topology";
    case EntityKind::kExperiment:
      return "experiment";
  }
  return "entity";
}

ProjectStore::ProjectStore(std::string path, std::unique_ptr<sqlite::Db> db)
    : path_(std::move(path)), db_(std::move(db)) {}

ProjectStore::~ProjectStore() = default;

std::unique_ptr<ProjectStore> ProjectStore::create(const std::string& path,
                                                   const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec)))
    throw StoreError(path + ": already exists; not overwritten (open it, or choose a new name)");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw StoreError(path + ": cannot create: no directory " + parent.string());
  const std::string temp = path + ".creating-" + std::to_string(::getpid());
  fs::remove(temp, ec);
  try {
    {
      sqlite::Db db(temp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
      db.exec("PRAGMA journal_mode = WAL");
      migrateToLatest(db);
      sqlite::Statement meta(db, "INSERT OR REPLACE INTO project_meta(key, value) VALUES (?, ?)");
      meta.bind(1, "name").bind(2, name.empty() ? fs::path(path).stem().string() : name).run();
    }  // closing the last connection checkpoints and removes the -wal file
    // link() fails when the name exists: nothing created meanwhile is overwritten.
    if (::link(temp.c_str(), path.c_str()) != 0) {
      const int error = errno;
      throw StoreError(path + ": cannot create: " + std::strerror(error));
    }
    fs::remove(temp, ec);
  } catch (...) {
    fs::remove(temp, ec);
    fs::remove(temp + "-wal", ec);
    fs::remove(temp + "-shm", ec);
    throw;
  }
  return open(path);
}

std::unique_ptr<ProjectStore> ProjectStore::open(const std::string& path, bool readOnly) {
  OpenDatabaseOptions options;
  options.readOnly = readOnly;
  std::unique_ptr<ProjectStore> store(new ProjectStore(path, openProjectDatabase(path, options)));
  if (!readOnly) store->storeInterruptedRuns();
  return store;
}

void ProjectStore::storeInterruptedRuns() {
  std::lock_guard lock(mutex_);
  // Runs whose recording process is gone, read from `db_` as it stands.
  const auto interrupted = [this] {
    std::vector<RunRecord> found;
    sqlite::Statement s(
        *db_,
        (std::string("SELECT ") + kRunColumns + " FROM runs WHERE status = 'running'").c_str());
    while (s.step()) {
      RunRecord r = readRun(s);
      if (r.status == RunStatus::kInterrupted) found.push_back(std::move(r));
    }
    return found;
  };
  // Most opens find none, and take no write lock for it.
  if (interrupted().empty()) return;
  // Looked at again under the write lock: a read outside it sees the file as it was when the
  // read began, and a recorder may have finished its run and exited since (it would read as
  // gone with its run still running). Under the lock nobody commits meanwhile.
  sqlite::Transaction transaction(*db_);
  const std::vector<RunRecord> found = interrupted();
  for (const RunRecord& r : found) {
    sqlite::Statement update(*db_,
                             "UPDATE runs SET status = ?, ended_ms = ?, error = ? WHERE id = ? AND "
                             "status = 'running'");
    update.bind(1, std::string(toString(r.status))).bind(2, r.endedMs.value_or(r.startedMs));
    update.bind(3, r.error).bind(4, r.id).run();
    if (db_->changes() != 1) continue;
    sqlite::Statement last(*db_, "SELECT MAX(last_step) FROM run_metrics WHERE run_id = ?");
    last.bind(1, r.id);
    const int64_t step = last.step() ? last.columnOptionalInt(0).value_or(0) : 0;
    sqlite::Statement event(*db_,
                            "INSERT INTO events(run_id, step, wall_ms, kind, detail) "
                            "VALUES (?, ?, ?, 'interrupted', ?)");
    event.bind(1, r.id).bind(2, step);
    event.bind(3, static_cast<double>(r.endedMs.value_or(r.startedMs) - r.startedMs));
    event.bind(4, r.error).run();
  }
  transaction.commit();
}

std::unique_ptr<ProjectStore> ProjectStore::openOrCreate(const std::string& path, bool* created) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(std::filesystem::symlink_status(path, ec));
  if (created != nullptr) *created = !exists;
  return exists ? open(path) : create(path);
}

int ProjectStore::schemaVersion() {
  std::lock_guard lock(mutex_);
  return static_cast<int>(db_->queryInt("PRAGMA user_version"));
}

void ProjectStore::saveCopyAs(const std::string& path, bool replace) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(path, ec));
  if (exists && fs::equivalent(path, path_, ec))
    throw StoreError(path + ": is this project's own file; choose another name");
  if (exists && !replace)
    throw StoreError(path + ": already exists; not overwritten (choose a new name)");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw StoreError(path + ": cannot save: no directory " + parent.string());
  const std::string temp = path + ".saving-" + std::to_string(::getpid());
  const auto removeTemp = [&temp] {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(temp + suffix, ignored);
  };
  removeTemp();
  try {
    {
      // One read transaction: the copy is the project as of one instant, however many
      // points a run is appending meanwhile.
      std::lock_guard lock(mutex_);
      sqlite::Statement vacuum(*db_, "VACUUM INTO ?");
      vacuum.bind(1, temp).run();
    }
    {
      sqlite::Db copy(temp, SQLITE_OPEN_READWRITE);
      copy.exec("PRAGMA journal_mode = WAL");  // as every project; VACUUM INTO writes rollback
    }                                          // closed: checkpointed, no -wal left
    if (replace) {
      // A stale WAL beside the old file would be applied to the new one: remove them first.
      fs::remove(path + "-wal", ec);
      fs::remove(path + "-shm", ec);
      fs::rename(temp, path);  // atomic: the old file until the new one is complete
    } else if (::link(temp.c_str(), path.c_str()) != 0) {  // never over a file made meanwhile
      const int error = errno;
      throw StoreError(path + ": cannot save: " + std::strerror(error));
    }
    removeTemp();
  } catch (const fs::filesystem_error& e) {
    removeTemp();
    throw StoreError(path + ": cannot save: " + e.code().message());
  } catch (...) {
    removeTemp();
    throw;
  }
}

std::map<std::string, std::string> ProjectStore::metadata() {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, "SELECT key, value FROM project_meta ORDER BY key");
  std::map<std::string, std::string> out;
  while (s.step()) out[s.columnText(0)] = s.columnText(1);
  return out;
}

void ProjectStore::setMetadata(const std::string& key, const std::string& value) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, "INSERT OR REPLACE INTO project_meta(key, value) VALUES (?, ?)");
  s.bind(1, key).bind(2, value).run();
}

int64_t ProjectStore::createEntity(EntityKind kind, const std::string& name,
                                   const nlohmann::json& config) {
  if (name.empty()) throw StoreError(std::string(toString(kind)) + ": the name is empty");
  std::lock_guard lock(mutex_);
  const int64_t now = epochMsNow();
  sqlite::Statement s(*db_, entitySql(kind,
                                      "INSERT INTO %T(name, config, created_ms, updated_ms) "
                                      "VALUES (?, ?, ?, ?)")
                                .c_str());
  try {
    s.bind(1, name).bind(2, config.dump()).bind(3, now).bind(4, now).run();
  } catch (const StoreError& e) {
    rethrowEntityError(e, kind, name);
  }
  return db_->lastInsertId();
}

int64_t ProjectStore::putEntity(EntityKind kind, const std::string& name,
                                const nlohmann::json& config) {
  if (name.empty()) throw StoreError(std::string(toString(kind)) + ": the name is empty");
  std::lock_guard lock(mutex_);
  const int64_t now = epochMsNow();
  sqlite::Transaction transaction(*db_);
  sqlite::Statement find(*db_, entitySql(kind, "SELECT id, config FROM %T WHERE name = ?").c_str());
  find.bind(1, name);
  int64_t id = 0;
  if (find.step()) {
    id = find.columnInt(0);
    const std::string text = config.dump();
    if (find.columnText(1) != text) {
      sqlite::Statement update(
          *db_, entitySql(kind, "UPDATE %T SET config = ?, updated_ms = ? WHERE id = ?").c_str());
      update.bind(1, text).bind(2, now).bind(3, id).run();
    }
  } else {
    sqlite::Statement insert(*db_, entitySql(kind,
                                             "INSERT INTO %T(name, config, created_ms, updated_ms) "
                                             "VALUES (?, ?, ?, ?)")
                                       .c_str());
    insert.bind(1, name).bind(2, config.dump()).bind(3, now).bind(4, now).run();
    id = db_->lastInsertId();
  }
  transaction.commit();
  return id;
}

std::optional<Entity> ProjectStore::entity(EntityKind kind, int64_t id) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(
      *db_, entitySql(kind, "SELECT id, name, config, created_ms, updated_ms FROM %T WHERE id = ?")
                .c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return readEntity(s, kind);
}

std::optional<Entity> ProjectStore::entityByName(EntityKind kind, const std::string& name) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(
      *db_,
      entitySql(kind, "SELECT id, name, config, created_ms, updated_ms FROM %T WHERE name = ?")
          .c_str());
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return readEntity(s, kind);
}

std::vector<Entity> ProjectStore::entities(EntityKind kind) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(
      *db_, entitySql(kind, "SELECT id, name, config, created_ms, updated_ms FROM %T ORDER BY id")
                .c_str());
  std::vector<Entity> out;
  while (s.step()) out.push_back(readEntity(s, kind));
  return out;
}

void ProjectStore::updateEntity(EntityKind kind, int64_t id, const std::string& name,
                                const nlohmann::json& config) {
  if (name.empty()) throw StoreError(std::string(toString(kind)) + ": the name is empty");
  std::lock_guard lock(mutex_);
  sqlite::Statement s(
      *db_,
      entitySql(kind, "UPDATE %T SET name = ?, config = ?, updated_ms = ? WHERE id = ?").c_str());
  try {
    s.bind(1, name).bind(2, config.dump()).bind(3, epochMsNow()).bind(4, id).run();
  } catch (const StoreError& e) {
    rethrowEntityError(e, kind, name);
  }
  if (db_->changes() == 0)
    throw StoreError(std::string("no ") + toString(kind) + " " + std::to_string(id) + " in " +
                     path_);
}

void ProjectStore::deleteEntity(EntityKind kind, int64_t id) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, entitySql(kind, "DELETE FROM %T WHERE id = ?").c_str());
  s.bind(1, id).run();
  if (db_->changes() == 0)
    throw StoreError(std::string("no ") + toString(kind) + " " + std::to_string(id) + " in " +
                     path_);
}

int64_t ProjectStore::beginExecution(const ExecutionStart& start) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "INSERT INTO executions(experiment_id, started_ms, repeats, seed, spec) "
                      "VALUES (?, ?, ?, ?, ?)");
  s.bind(1, start.experimentId).bind(2, epochMsNow()).bind(3, start.repeats);
  s.bind(4, std::bit_cast<int64_t>(start.seed));
  if (start.spec.is_null())
    s.bindNull(5);
  else
    s.bind(5, start.spec.dump());
  try {
    s.run();
  } catch (const StoreError& e) {
    if (e.foreignKeyViolation())
      throw StoreError(
          "no experiment " + std::to_string(start.experimentId.value_or(0)) + " in " + path_,
          e.sqliteCode());
    throw;
  }
  return db_->lastInsertId();
}

namespace {

constexpr const char* kExecutionColumns = "id, experiment_id, started_ms, repeats, seed, spec";

ExecutionRecord readExecution(const sqlite::Statement& s) {
  ExecutionRecord e;
  e.id = s.columnInt(0);
  e.experimentId = s.columnOptionalInt(1);
  e.startedMs = s.columnInt(2);
  e.repeats = s.columnInt(3);
  e.seed = std::bit_cast<uint64_t>(s.columnInt(4));
  e.spec = parseStoredJson(s.columnText(5), "execution " + std::to_string(e.id));
  return e;
}

}  // namespace

std::optional<ExecutionRecord> ProjectStore::execution(int64_t executionId) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(
      *db_, (std::string("SELECT ") + kExecutionColumns + " FROM executions WHERE id = ?").c_str());
  s.bind(1, executionId);
  if (!s.step()) return std::nullopt;
  return readExecution(s);
}

std::vector<ExecutionRecord> ProjectStore::executions() {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, (std::string("SELECT ") + kExecutionColumns +
                             " FROM executions WHERE EXISTS (SELECT 1 FROM runs WHERE "
                             "runs.execution_id = executions.id) ORDER BY id")
                                .c_str());
  std::vector<ExecutionRecord> out;
  while (s.step()) out.push_back(readExecution(s));
  return out;
}

int64_t ProjectStore::beginRun(const RunStart& start) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "INSERT INTO runs(experiment_id, name, strategy, seed, status, started_ms, "
                      "program_version, spec, recorder, execution_id, repetition) "
                      "VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)");
  s.bind(1, start.experimentId).bind(2, start.name).bind(3, start.strategy);
  s.bind(4, std::bit_cast<int64_t>(start.seed)).bind(5, epochMsNow());
  s.bind(6, "DTLab " DTLAB_VERSION);
  if (start.spec.is_null()) {
    s.bindNull(7);
  } else {
    s.bind(7, start.spec.dump());
  }
  s.bind(8, thisRecorder()).bind(9, start.executionId);
  if (start.executionId)
    s.bind(10, start.repetition);
  else
    s.bindNull(10);
  try {
    s.run();
  } catch (const StoreError& e) {
    if (e.foreignKeyViolation())
      throw StoreError("no experiment " + std::to_string(start.experimentId.value_or(0)) +
                           " or execution " + std::to_string(start.executionId.value_or(0)) +
                           " in " + path_,
                       e.sqliteCode());
    throw;
  }
  return db_->lastInsertId();
}

void ProjectStore::finishRun(int64_t runId, const RunSummary& summary) {
  requireRun(runId);
  std::lock_guard lock(mutex_);
  sqlite::Transaction transaction(*db_);
  sqlite::Statement update(*db_,
                           "UPDATE runs SET status = ?, ended_ms = ?, error = ? WHERE id = ?");
  update.bind(1, std::string(summary.status == RunStatus::kRunning ? "completed"
                                                                   : toString(summary.status)));
  update.bind(2, epochMsNow()).bind(3, summary.error).bind(4, runId).run();
  sqlite::Statement put(*db_,
                        "INSERT OR REPLACE INTO run_summaries(run_id, summary) VALUES (?, ?)");
  put.bind(1, runId).bind(2, toJson(summary).dump()).run();
  transaction.commit();
}

void ProjectStore::setRunStatus(int64_t runId, RunStatus status, const std::string& error) {
  requireRun(runId);
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "UPDATE runs SET status = ?, error = ?, ended_ms = CASE WHEN ? = 'running' "
                      "THEN NULL ELSE ? END WHERE id = ?");
  const std::string name = toString(status);
  s.bind(1, name).bind(2, error).bind(3, name).bind(4, epochMsNow()).bind(5, runId).run();
}

std::optional<RunRecord> ProjectStore::run(int64_t runId) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      (std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?").c_str());
  s.bind(1, runId);
  if (!s.step()) return std::nullopt;
  return readRun(s);
}

RunRecord ProjectStore::requireRun(int64_t runId) {
  if (std::optional<RunRecord> r = run(runId)) return *r;
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, "SELECT id FROM runs ORDER BY id");
  std::vector<int64_t> ids;
  while (s.step()) ids.push_back(s.columnInt(0));
  std::string has = "it has no runs";
  if (!ids.empty()) {
    has = "its runs are ";
    for (std::size_t i = 0; i < ids.size() && i < 12; ++i)
      has += (i > 0 ? ", " : "") + std::to_string(ids[i]);
    if (ids.size() > 12) has += ", ... " + std::to_string(ids.back());
  }
  throw StoreError("no run " + std::to_string(runId) + " in " + path_ + " (" + has + ")");
}

std::vector<RunRecord> ProjectStore::runs() {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      (std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id").c_str());
  std::vector<RunRecord> out;
  while (s.step()) out.push_back(readRun(s));
  return out;
}

void ProjectStore::deleteRun(int64_t runId, bool force) {
  const RunRecord r = requireRun(runId);
  if (r.status == RunStatus::kRunning && !force)
    throw StoreError("run " + std::to_string(runId) + " ('" + r.name +
                     "') is still marked running; if the process recording it is gone, "
                     "delete it with force (dtlab-cli: --force)");
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, "DELETE FROM runs WHERE id = ?");
  s.bind(1, runId).run();  // series, chunks, events, metrics and summary cascade
}

std::optional<nlohmann::json> ProjectStore::runSummary(int64_t runId) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, "SELECT summary FROM run_summaries WHERE run_id = ?");
  s.bind(1, runId);
  if (!s.step()) return std::nullopt;
  return parseStoredJson(s.columnText(0), "summary of run " + std::to_string(runId));
}

int64_t ProjectStore::saveCalibration(const nlohmann::json& calibration) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, "INSERT INTO calibrations(created_ms, data) VALUES (?, ?)");
  s.bind(1, epochMsNow()).bind(2, calibration.dump()).run();
  return db_->lastInsertId();
}

std::optional<StoredCalibration> ProjectStore::latestCalibration() {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "SELECT id, created_ms, data FROM calibrations ORDER BY id DESC LIMIT 1");
  if (!s.step()) return std::nullopt;
  const int64_t id = s.columnInt(0);
  return StoredCalibration{id, s.columnInt(1),
                           parseStoredJson(s.columnText(2), "calibration " + std::to_string(id))};
}

std::vector<StoredCalibration> ProjectStore::calibrations() {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, "SELECT id, created_ms, data FROM calibrations ORDER BY id DESC");
  std::vector<StoredCalibration> out;
  while (s.step()) {
    const int64_t id = s.columnInt(0);
    out.push_back({id, s.columnInt(1),
                   parseStoredJson(s.columnText(2), "calibration " + std::to_string(id))});
  }
  return out;
}

std::vector<RunMetric> ProjectStore::runMetrics(int64_t runId) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "SELECT key, count, last_step, last_wall_ms, last_value, min_value, "
                      "max_value FROM run_metrics WHERE run_id = ? ORDER BY key");
  s.bind(1, runId);
  std::vector<RunMetric> out;
  while (s.step()) {
    RunMetric m;
    m.key = s.columnText(0);
    m.count = s.columnInt(1);
    m.lastStep = s.columnInt(2);
    m.lastWallMs = s.columnDouble(3);
    m.lastValue = s.columnDouble(4);
    m.minValue = s.columnDouble(5);
    m.maxValue = s.columnDouble(6);
    out.push_back(std::move(m));
  }
  return out;
}

void ProjectStore::addEvent(int64_t runId, const RunEvent& event) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "INSERT INTO events(run_id, step, wall_ms, kind, detail, data) "
                      "VALUES (?, ?, ?, ?, ?, ?)");
  s.bind(1, runId).bind(2, event.step).bind(3, event.wallMs).bind(4, event.kind);
  s.bind(5, event.detail).bind(6, event.data);
  try {
    s.run();
  } catch (const StoreError& e) {
    if (e.foreignKeyViolation())
      throw StoreError("no run " + std::to_string(runId) + " in " + path_, e.sqliteCode());
    throw;
  }
}

std::vector<CheckpointInfo> ProjectStore::checkpoints(int64_t runId) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "SELECT step, wall_ms, created_ms, bytes FROM checkpoints "
                      "WHERE run_id = ? ORDER BY step");
  s.bind(1, runId);
  std::vector<CheckpointInfo> out;
  while (s.step())
    out.push_back({s.columnInt(0), s.columnDouble(1), s.columnInt(2), s.columnInt(3)});
  return out;
}

std::vector<std::vector<unsigned char>> ProjectStore::psRecords(int64_t runId) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_, "SELECT data FROM ps_records WHERE run_id = ? ORDER BY id");
  s.bind(1, runId);
  std::vector<std::vector<unsigned char>> out;
  while (s.step()) {
    const std::span<const unsigned char> blob = s.columnBlob(0);
    out.emplace_back(blob.begin(), blob.end());
  }
  return out;
}

std::vector<unsigned char> ProjectStore::checkpointData(int64_t runId, int64_t step) {
  std::optional<std::vector<unsigned char>> data;
  try {
    std::lock_guard lock(mutex_);
    data = readCheckpointParts(*db_, runId, step);
  } catch (const CheckpointDamaged& damaged) {
    // Offer the newest older one whose parts all verify.
    std::vector<CheckpointInfo> kept = checkpoints(runId);
    for (auto c = kept.rbegin(); c != kept.rend(); ++c) {
      if (c->step >= step) continue;
      try {
        std::lock_guard lock(mutex_);
        readCheckpointParts(*db_, runId, c->step);
      } catch (const CheckpointDamaged&) {
        continue;
      }
      throw CheckpointDamaged(std::string(damaged.what()) + "; the previous checkpoint, of step " +
                                  std::to_string(c->step) + ", is whole",
                              step, c->step);
    }
    throw CheckpointDamaged(std::string(damaged.what()) + "; no earlier checkpoint is whole", step,
                            std::nullopt);
  }
  if (data) return std::move(*data);
  std::string steps;
  for (const CheckpointInfo& c : checkpoints(runId))
    steps += (steps.empty() ? "" : ", ") + std::to_string(c.step);
  throw StoreError("run " + std::to_string(runId) + " has no checkpoint of step " +
                   std::to_string(step) +
                   (steps.empty() ? " (it has none)" : " (it has steps " + steps + ")"));
}

std::vector<RunEvent> ProjectStore::events(int64_t runId) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "SELECT step, wall_ms, kind, detail, data FROM events WHERE run_id = ? "
                      "ORDER BY id");
  s.bind(1, runId);
  std::vector<RunEvent> out;
  while (s.step())
    out.push_back(
        {s.columnInt(0), s.columnDouble(1), s.columnText(2), s.columnText(3), s.columnText(4)});
  return out;
}

std::vector<SeriesInfo> ProjectStore::series(int64_t runId) {
  std::lock_guard lock(mutex_);
  // Aggregates chunk rows, not points: a few rows per 4,096 points.
  sqlite::Statement s(*db_,
                      "SELECT s.id, s.run_id, s.node, s.worker, s.key, coalesce(sum(c.count), 0), "
                      "coalesce(min(c.min_step), 0), coalesce(max(c.max_step), 0) "
                      "FROM series s LEFT JOIN chunks c ON c.series_id = s.id "
                      "WHERE s.run_id = ? GROUP BY s.id ORDER BY s.key, s.node, s.worker");
  s.bind(1, runId);
  std::vector<SeriesInfo> out;
  while (s.step()) {
    SeriesInfo info;
    info.id = s.columnInt(0);
    info.runId = s.columnInt(1);
    info.node = static_cast<int>(s.columnInt(2));
    info.worker = static_cast<int>(s.columnInt(3));
    info.key = s.columnText(4);
    info.count = s.columnInt(5);
    info.minStep = s.columnInt(6);
    info.maxStep = s.columnInt(7);
    out.push_back(std::move(info));
  }
  return out;
}

std::optional<int64_t> ProjectStore::findSeries(int64_t runId, int node, int worker,
                                                const std::string& key) {
  std::lock_guard lock(mutex_);
  sqlite::Statement s(*db_,
                      "SELECT id FROM series WHERE run_id = ? AND key = ? AND node = ? AND "
                      "worker = ?");
  s.bind(1, runId).bind(2, key).bind(3, node).bind(4, worker);
  if (!s.step()) return std::nullopt;
  return s.columnInt(0);
}

SeriesData ProjectStore::querySeries(const SeriesQuery& query) {
  std::lock_guard lock(mutex_);
  // One read transaction, so the chunk list and the blobs come from the same snapshot
  // while the appender commits beside us.
  db_->exec("BEGIN");
  try {
    SeriesData data = dtlab::core::querySeries(*db_, query);
    db_->exec("COMMIT");
    return data;
  } catch (...) {
    sqlite3_exec(db_->handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<SeriesPoint> ProjectStore::readSeries(int64_t seriesId, std::optional<int64_t> fromStep,
                                                  std::optional<int64_t> toStep) {
  std::lock_guard lock(mutex_);
  db_->exec("BEGIN");
  try {
    std::vector<SeriesPoint> points = readSeriesPoints(*db_, seriesId, fromStep, toStep);
    db_->exec("COMMIT");
    return points;
  } catch (...) {
    sqlite3_exec(db_->handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::string whyNoCheckpoint(ProjectStore& store, const RunRecord& run) {
  const std::string which =
      "run " + std::to_string(run.id) + " ('" + run.name + "') has no checkpoint: ";
  const nlohmann::json training = run.spec.is_object()
                                      ? run.spec.value("training", nlohmann::json::object())
                                      : nlohmann::json{};
  const bool asked = training.is_object() && (training.value("checkpoint_every", 0.0) > 0.0 ||
                                              training.value("checkpoint_seconds", 0.0) > 0.0);
  if (!asked) return which + "its spec keeps none (training.checkpoint_every, checkpoint_seconds)";
  std::string notKept, keepsNone;
  for (const RunEvent& e : store.events(run.id)) {
    if (e.kind == kCheckpointNotKeptEvent) notKept = e.detail;
    if (e.kind == kNoCheckpointsEvent) keepsNone = e.detail;
  }
  if (!keepsNone.empty()) return which + keepsNone;
  if (!notKept.empty()) return which + "none was kept; the last that was not: " + notKept;
  return which + "it stopped before its first checkpoint was stored";
}

}  // namespace dtlab::core
