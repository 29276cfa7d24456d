#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace dtlab::core {

namespace sqlite {
class Db;
}

// Project file schema. The version lives in SQLite's `user_version` header field and the
// file type in `application_id`, so both can be read from the first 100 bytes without
// letting SQLite touch the file.
//
// Versions:
//   0  an empty file (nothing yet)
//   1  first layout: one row per metric point, points(series_id, step, wall_ms, value)
//   2  points packed in chunk rows (core/store/chunk_codec.h) and a per-run, per-key
//      metric summary table (run_metrics), so listing runs never scans points
//   3  runs.recorder: which process records a run (core/store/recorder.h), so a run whose
//      recorder is gone reads as interrupted
//   4  checkpoints: a run's newest checkpoints (core/train/checkpoint.h), to resume it from
//   5  executions: the runs of one execution of an experiment (every variant, `repeats`
//      times), and each run's execution and repetition
//   6  ps_records: a parameter-server run's record of pushes (core/train/push_record.h), for
//      `dtlab-cli replay`
//   7  calibrations: the scale simulator's (core/sim/calibration.h)
//   8  checkpoint_parts: checkpoints in checksummed parts under a manifest
//      (core/store/checkpoint_parts.h), no longer one blob each
//   9  events.data: each event's facts (core/metrics/event_facts.h), given to the events
//      recorded before from their sentences; stop reasons node_lost and diverged
inline constexpr int kSchemaVersion = 9;
inline constexpr int32_t kProjectApplicationId = 0x44544C42;  // "DTLB"

// One forward migration step: from version `from` to `from + 1`. Each step runs in its own
// transaction together with the user_version bump, so a crash mid-way leaves the file at
// the previous version, and opening it again resumes.
struct Migration {
  int from;
  const char* description;
  void (*apply)(sqlite::Db& db);
};

// The steps in order; steps()[i].from == i.
const Migration* migrationSteps(int* count);

// What the first 100 bytes of a file say, read without SQLite.
struct FileHeader {
  int userVersion = 0;
  int32_t applicationId = 0;
  int pageSize = 0;
  int64_t pages = 0;  // 0 when the header's page count is not valid
};

// Reads and checks the header of an existing project file: it must be an SQLite database
// (magic string, sane page size), not shorter than its header says (unless a WAL file
// beside it may hold the rest), a DTLab project (application_id), and of a schema version
// this build can read. Throws StoreError naming the file and the reason otherwise; the
// file is only read.
FileHeader checkProjectFileHeader(const std::string& path);

// Brings an open database from its user_version up to kSchemaVersion, one transaction per
// step. Throws StoreError naming the step that failed (the file stays at the last version
// that committed).
void migrateToLatest(sqlite::Db& db);

struct OpenDatabaseOptions {
  bool readOnly = false;
  // Run PRAGMA quick_check before accepting the file (O(file size); the first connection of
  // a process does it, further connections to a file already checked skip it).
  bool verify = true;
};

// Opens an existing project file: checks the header (checkProjectFileHeader), then, through
// SQLite, the application id, schema version and (verify) integrity, all before anything
// is written, so a refused file is left byte-for-byte as it was. Then switches the file to
// WAL mode and migrates it to kSchemaVersion (read-only: refuses a file that needs it).
std::unique_ptr<sqlite::Db> openProjectDatabase(const std::string& path,
                                                const OpenDatabaseOptions& options);

// Wall-clock milliseconds since the Unix epoch (run start/end, created/updated stamps).
int64_t epochMsNow();

}  // namespace dtlab::core
