#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics/metrics.h"
#include "core/store/series_query.h"
#include "core/store/sqlite_db.h"

namespace dtlab::core {

// The named JSON documents a project keeps: synthetic datasets, cluster topologies and
// experiment specs. Names are unique per kind.
enum class EntityKind { kDataset, kTopology, kExperiment };
const char* toString(EntityKind kind);  // "dataset", "topology", "experiment"

struct Entity {
  int64_t id = 0;
  std::string name;
  nlohmann::json config;
  int64_t createdMs = 0;  // epoch ms
  int64_t updatedMs = 0;
};

// One execution of an experiment: every variant run `repeats` times (core/spec/execution_plan.h).
// Its runs point to it; comparisons are made within an execution.
struct ExecutionStart {
  std::optional<int64_t> experimentId;
  int64_t repeats = 1;
  uint64_t seed = 0;    // the experiment's seed (repetition r's runs carry their own)
  nlohmann::json spec;  // the experiment's spec as executed (null: none)
};

struct ExecutionRecord {
  int64_t id = 0;
  std::optional<int64_t> experimentId;
  int64_t startedMs = 0;
  int64_t repeats = 1;
  uint64_t seed = 0;
  nlohmann::json spec;
};

// What a run is started with.
struct RunStart {
  std::optional<int64_t> experimentId;
  std::string name;
  std::string strategy;
  uint64_t seed = 0;
  nlohmann::json spec;                 // the exact spec the run used (null: none), kept even if the
                                       // experiment's spec is edited later
  std::optional<int64_t> executionId;  // none: a run outside an execution (dtlab-cli train)
  int64_t repetition = 0;              // 0-based, within its execution
};

struct RunRecord {
  int64_t id = 0;
  std::optional<int64_t> experimentId;
  std::string name;
  std::string strategy;
  uint64_t seed = 0;
  // Stored as its name; a name this build does not know (a newer file) reads as kUnknown.
  RunStatus status = RunStatus::kRunning;
  int64_t startedMs = 0;
  std::optional<int64_t> endedMs;
  std::string programVersion;
  std::string error;
  nlohmann::json spec;
  std::optional<int64_t> executionId;  // none for runs recorded before executions existed
  int64_t repetition = 0;
};

// Per run and metric key, maintained as points are committed (all workers of the run
// together), so listing runs never reads points. "last" is the point with the highest
// step; min/max ignore NaN (NaN when the key has only NaN values).
struct RunMetric {
  std::string key;
  int64_t count = 0;
  int64_t lastStep = 0;
  double lastWallMs = 0.0;
  double lastValue = 0.0;
  double minValue = 0.0;
  double maxValue = 0.0;
};

// A series is one metric key of one worker (node >= 0, worker >= 0), of one node
// (worker == kNoWorker: cpu_util, mem_bytes), or of the whole run (node == kNoNode:
// test_loss, test_accuracy).
inline constexpr int kNoNode = -1;
inline constexpr int kNoWorker = -1;

struct StoredCalibration {
  int64_t id = 0;
  int64_t createdMs = 0;
  nlohmann::json data;
};

// A kept checkpoint of a run (core/train/checkpoint.h); its bytes come from checkpointData.
struct CheckpointInfo {
  int64_t step = 0;
  double wallMs = 0.0;
  int64_t createdMs = 0;
  int64_t bytes = 0;
};

struct SeriesInfo {
  int64_t id = 0;
  int64_t runId = 0;
  int node = 0;
  int worker = 0;
  std::string key;
  int64_t count = 0;
  int64_t minStep = 0;
  int64_t maxStep = 0;
};

// One project file (*.dtlab). Every method may be called from any thread (calls on one
// ProjectStore are serialised; use a second ProjectStore, i.e. a second connection, to read
// beside a long query). Metric points are written through a PointAppender, which has its
// own connection and writer thread. Failures throw StoreError with a message naming the
// file and what is wrong.
class ProjectStore {
 public:
  // Creates a new project at `path` (refused if anything exists there). The file is built
  // under a temporary name and linked into place, so a crash never leaves a half-made
  // project behind.
  static std::unique_ptr<ProjectStore> create(const std::string& path,
                                              const std::string& name = "");
  // Opens an existing project, migrating an older schema. A file that is not SQLite, not a
  // DTLab project, damaged (truncated, failing the integrity check) or of a newer schema
  // is refused and left byte-for-byte unchanged.
  static std::unique_ptr<ProjectStore> open(const std::string& path, bool readOnly = false);
  // open() when the file exists, else create().
  static std::unique_ptr<ProjectStore> openOrCreate(const std::string& path, bool* created);

  ~ProjectStore();
  ProjectStore(const ProjectStore&) = delete;
  ProjectStore& operator=(const ProjectStore&) = delete;

  const std::string& path() const { return path_; }
  int schemaVersion();

  // Writes a consistent copy of the whole project (also while runs are being recorded into
  // it) to `path`: built under a temporary name beside it, then moved into place, so a
  // failure leaves no half-made file and, with `replace`, the old file is replaced only by a
  // complete copy. Refused when `path` is this project's own file, or exists and !replace.
  void saveCopyAs(const std::string& path, bool replace = false);

  // Project metadata: name, created_ms, created_with, and anything a UI wants to keep.
  std::map<std::string, std::string> metadata();
  void setMetadata(const std::string& key, const std::string& value);

  // Datasets, topologies, experiments.
  int64_t createEntity(EntityKind kind, const std::string& name, const nlohmann::json& config);
  // Creates, or replaces the config of the entity with that name; returns its id.
  int64_t putEntity(EntityKind kind, const std::string& name, const nlohmann::json& config);
  std::optional<Entity> entity(EntityKind kind, int64_t id);
  std::optional<Entity> entityByName(EntityKind kind, const std::string& name);
  std::vector<Entity> entities(EntityKind kind);
  void updateEntity(EntityKind kind, int64_t id, const std::string& name,
                    const nlohmann::json& config);
  void deleteEntity(EntityKind kind, int64_t id);

  // Executions, oldest first; an execution whose runs were all deleted is not listed.
  int64_t beginExecution(const ExecutionStart& start);
  std::optional<ExecutionRecord> execution(int64_t executionId);
  std::vector<ExecutionRecord> executions();

  // Run lifecycle: beginRun (status "running", started now, this process as its recorder)
  // ... finishRun (status from the summary, ended now, the summary stored as JSON). A run
  // whose recorder ended without finishing it reads as interrupted, and opening the project
  // for writing stores it so (core/store/recorder.h).
  int64_t beginRun(const RunStart& start);
  void finishRun(int64_t runId, const RunSummary& summary);
  // For runs that end without a summary (e.g. lost nodes): status and error only.
  void setRunStatus(int64_t runId, RunStatus status, const std::string& error = "");
  std::optional<RunRecord> run(int64_t runId);
  // run() that throws "no run N in P.dtlab" listing the ids there are.
  RunRecord requireRun(int64_t runId);
  std::vector<RunRecord> runs();
  // Deletes a run with its series, points, events and summary. A run still marked
  // running is refused unless `force` (its writer may be alive).
  void deleteRun(int64_t runId, bool force = false);
  std::optional<nlohmann::json> runSummary(int64_t runId);  // what finishRun stored
  std::vector<RunMetric> runMetrics(int64_t runId);

  // Events (the PointAppender also writes them, in order with the points).
  void addEvent(int64_t runId, const RunEvent& event);
  std::vector<RunEvent> events(int64_t runId);

  // A run's kept checkpoints, oldest first (PointAppender::appendCheckpoint writes them), and
  // the encoded bytes of one; checkpointData throws naming the steps there are.
  std::vector<CheckpointInfo> checkpoints(int64_t runId);
  std::vector<unsigned char> checkpointData(int64_t runId, int64_t step);
  // A parameter-server run's record, its chunks in the order recorded (PointAppender::
  // appendPsRecords; core/train/push_record.h decodes them); empty for any other run.
  std::vector<std::vector<unsigned char>> psRecords(int64_t runId);
  // The scale simulator's calibrations (core/sim/calibration.h, as JSON): stores one and
  // returns its id; the newest (nullopt: none yet); all of them.
  int64_t saveCalibration(const nlohmann::json& calibration);
  std::optional<StoredCalibration> latestCalibration();
  std::vector<StoredCalibration> calibrations();  // newest first
  // Makes the run ready to continue from its checkpoint of `step` (dtlab-cli resume), in one
  // transaction, and returns the checkpoint's bytes: refused while the run's recorder still
  // runs; its points after `step` dropped (the resumed run records them again) and its
  // run_metrics recomputed; its later checkpoints and its summary dropped; status running
  // with this process as its recorder. (The resumed run's first event says "resume".)
  std::vector<unsigned char> prepareResume(int64_t runId, int64_t step);

  // Series of a run (ordered by key, node, worker) and their points.
  std::vector<SeriesInfo> series(int64_t runId);
  std::optional<int64_t> findSeries(int64_t runId, int node, int worker, const std::string& key);
  SeriesData querySeries(const SeriesQuery& query);
  std::vector<SeriesPoint> readSeries(int64_t seriesId,
                                      std::optional<int64_t> fromStep = std::nullopt,
                                      std::optional<int64_t> toStep = std::nullopt);

 private:
  ProjectStore(std::string path, std::unique_ptr<sqlite::Db> db);
  // Stores every run whose recorder is gone as interrupted (status, end at its last point,
  // the reason as its error and an "interrupted" event); called by open() for writing.
  void storeInterruptedRuns();

  std::string path_;
  std::mutex mutex_;
  std::unique_ptr<sqlite::Db> db_;
};

// Why `run` has no checkpoint to resume from, for its user: its spec keeps none, its strategy
// keeps none, one was taken but not kept (the run's event says why: a node lost while sending
// it, a part refused), or it stopped before the first. Read from the run's spec and events.
std::string whyNoCheckpoint(ProjectStore& store, const RunRecord& run);

}  // namespace dtlab::core
