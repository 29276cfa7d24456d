// The project opener (core/store) on a damaged or foreign file: the input is the whole file.
// Opening read-only either refuses with a StoreError naming the file or gives a store whose
// every read (metadata, entities, runs, summaries, comparison rows, events, series, chart
// queries, CSV and trace export) returns or throws a StoreError; never another exception,
// a crash or a sanitizer report. Opening for writing either refuses and leaves the file
// byte-for-byte as it was, or migrates it, after which it opens again.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "core/analysis/comparison.h"
#include "core/metrics/metrics.h"
#include "core/store/csv_export.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/schema.h"
#include "core/store/sqlite_db.h"
#include "core/store/trace_export.h"
#include "core/train/checkpoint.h"
#include "tests/fuzz/fuzz_support.h"

using namespace dtlab::core;
namespace fs = std::filesystem;
using dtlab::fuzz::finding;
using dtlab::fuzz::requireUserMessage;

namespace {

// One directory per process, in memory where the machine has /dev/shm, removed at exit (a
// run that crashes leaves it for the finding's reproduction).
const fs::path& workDir() {
  // Never destroyed, so that the exit handler still has it.
  static const fs::path* dir = [] {
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    auto* d = new fs::path(base / ("dtlab-fuzz-project-" + std::to_string(::getpid())));
    fs::create_directories(*d);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(workDir(), ignored);
    });
    return d;
  }();
  return *dir;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void placeFile(const fs::path& path, std::string_view bytes) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix);
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs `read`; a StoreError (or a CheckpointError for a damaged checkpoint) is an answer,
// anything else escapes to the fuzzer.
template <typename F>
void answer(F&& read, std::string_view input) {
  try {
    read();
  } catch (const StoreError& e) {
    requireUserMessage(e, input);
  } catch (const CheckpointError& e) {
    requireUserMessage(e, input);
  }
}

void readEverything(ProjectStore& store, std::string_view input) {
  answer([&] { store.metadata(); }, input);
  for (EntityKind kind : {EntityKind::kDataset, EntityKind::kTopology, EntityKind::kExperiment})
    answer([&] { store.entities(kind); }, input);
  std::vector<RunRecord> runs;
  answer([&] { runs = store.runs(); }, input);
  if (runs.size() > 4) runs.resize(4);
  for (const RunRecord& run : runs) {
    answer([&] { comparisonRow(run, store.runSummary(run.id), "experiment"); }, input);
    answer([&] { store.runMetrics(run.id); }, input);
    answer([&] { store.events(run.id); }, input);
    answer(
        [&] {
          for (const CheckpointInfo& c : store.checkpoints(run.id))
            decodeCheckpoint(store.checkpointData(run.id, c.step));
        },
        input);
    std::vector<SeriesInfo> series;
    answer([&] { series = store.series(run.id); }, input);
    if (series.size() > 6) series.resize(6);
    for (const SeriesInfo& s : series) {
      SeriesQuery query;
      query.seriesId = s.id;
      answer([&] { store.querySeries(query); }, input);
      query.axis = XAxis::kWallMs;
      query.buckets = 8;
      answer([&] { store.querySeries(query); }, input);
      answer([&] { store.readSeries(s.id, s.minStep, s.maxStep); }, input);
    }
    answer(
        [&] {
          std::ostringstream out;
          writeSeriesCsv(store, run.id, out);
        },
        input);
    answer([&] { chromeTrace(store, run.id); }, input);
  }
  answer(
      [&] {
        std::ostringstream out;
        writeRunsCsv(store, out);
      },
      input);
}

// The seeds (tests/fuzz/corpus/project): small files of each kind the opener meets, written
// again by DTLAB_FUZZ_WRITE_SEEDS=DIR fuzz_project when the schema changes. Each is compacted
// to 512-byte pages, so that the fuzzer's edits land on tables rather than on empty space.
void compact(const fs::path& path) {
  sqlite::Db db(path.string(), SQLITE_OPEN_READWRITE);
  db.exec("PRAGMA journal_mode = DELETE");
  db.exec("PRAGMA page_size = 512");
  db.exec("VACUUM");
}

void writeRecordedProject(const fs::path& path) {
  {
    auto store = ProjectStore::create(path.string(), "fuzz seed");
    store->putEntity(EntityKind::kDataset, "blobs", {{"kind", "gaussian_blobs"}});
    store->putEntity(EntityKind::kTopology, "two", {{"nodes", 2}});
    const int64_t experiment = store->putEntity(EntityKind::kExperiment, "exp", {{"name", "exp"}});
    RunStart start;
    start.experimentId = experiment;
    start.name = "exp/sync";
    start.strategy = "sync_allreduce";
    start.seed = 7;
    const int64_t run = store->beginRun(start);
    {
      PointAppender appender(path.string());
      for (int worker = 0; worker < 2; ++worker) {
        const SeriesHandle loss = appender.series(run, 0, worker, "loss");
        for (int64_t step = 1; step <= 40; ++step)
          appender.append(loss, step, 10.0 * step, 2.0 / static_cast<double>(step + worker));
      }
      const SeriesHandle accuracy = appender.series(run, kNoNode, kNoWorker, "test_accuracy");
      for (int64_t step = 10; step <= 40; step += 10)
        appender.append(accuracy, step, 10.0 * step, step / 50.0);
      appender.appendEvent(run, {.step = 20, .wallMs = 200.0, .kind = "note", .detail = "seed"});
      Checkpoint checkpoint;
      checkpoint.step = 40;
      checkpoint.strategy = "sync_allreduce";
      checkpoint.optimizer = "sgd";
      checkpoint.params = {0.5f, -1.0f, 2.0f};
      checkpoint.optimizerState = {{0.1f, 0.2f, 0.3f}};
      checkpoint.strategyState = {{"shares", {2, 2}}};
      appender.appendCheckpoint(
          {run, 40, 400.0,
           std::make_shared<const std::vector<unsigned char>>(encodeCheckpoint(checkpoint)), 2});
      appender.close();
    }
    RunSummary summary;
    summary.name = "exp/sync";
    summary.strategy = "sync_allreduce";
    summary.status = RunStatus::kCompleted;
    summary.steps = 40;
    summary.finalTestAccuracy = 0.8;
    store->finishRun(run, summary);
    store->setMetadata("ui.compare_layout", R"({"version":1,"charts":[{"metric":"loss"}]})");
  }
  compact(path);
}

// A project as the first schema left it: the v1 tables with one run, its points one per row.
void writeVersion1Project(const fs::path& path) {
  {
    sqlite::Db db(path.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    int count = 0;
    migrationSteps(&count)[0].apply(db);
    db.exec(R"sql(
      INSERT OR REPLACE INTO project_meta VALUES ('name', 'v1'), ('created_ms', '1700000000000');
      INSERT INTO runs VALUES (1, NULL, 'old', 'async_ps', 3, 'completed', 1700000000000,
        1700000100000, 'DTLab 0.0.9', '{"name":"exp"}', '');
      INSERT INTO series VALUES (1, 1, 0, 0, 'loss'), (2, 1, -1, -1, 'test_accuracy');
      INSERT INTO points VALUES (1, 1, 1.5, 0.9), (1, 2, 3.0, 0.8), (1, 3, 4.5, NULL),
        (2, 2, 3.0, 0.5);
      INSERT INTO events VALUES (1, 1, 0, 0.5, 'start', 'v1');
      INSERT INTO run_summaries VALUES (1, '{"status":"completed","steps":3}');
    )sql");
    db.exec(("PRAGMA application_id = " + std::to_string(kProjectApplicationId)).c_str());
    db.exec("PRAGMA user_version = 1");
  }
  compact(path);
}

void writeSeeds(const fs::path& dir) {
  fs::create_directories(dir);
  for (const char* name : {"empty.dtlab", "recorded.dtlab", "v1.dtlab", "foreign.sqlite"})
    fs::remove(dir / name);
  ProjectStore::create((dir / "empty.dtlab").string()).reset();
  compact(dir / "empty.dtlab");
  writeRecordedProject(dir / "recorded.dtlab");
  writeVersion1Project(dir / "v1.dtlab");
  {
    sqlite::Db db((dir / "foreign.sqlite").string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes VALUES (1, "
        "'x')");
  }
  compact(dir / "foreign.sqlite");
  std::ofstream(dir / "text.txt") << "not a database\n";
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  return dtlab::fuzz::writeSeedsIfAsked(writeSeeds);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const fs::path path = workDir() / "p.dtlab";

  placeFile(path, input);
  try {
    std::unique_ptr<ProjectStore> store = ProjectStore::open(path.string(), /*readOnly=*/true);
    readEverything(*store, input);
  } catch (const StoreError& e) {
    requireUserMessage(e, input);
    if (std::string(e.what()).find(path.string()) == std::string::npos)
      finding(std::string("a refusal that does not name the file: ") + e.what(), input);
  }

  placeFile(path, input);
  try {
    ProjectStore::open(path.string(), /*readOnly=*/false).reset();
  } catch (const StoreError& e) {
    requireUserMessage(e, input);
    if (readFile(path) != input) finding("a refused project file was modified", input);
    return 0;
  }
  // Opened for writing (and migrated): it opens again, for reading.
  try {
    ProjectStore::open(path.string(), /*readOnly=*/true).reset();
  } catch (const StoreError& e) {
    finding(std::string("a project opened for writing does not open again: ") + e.what(), input);
  }
  return 0;
}
