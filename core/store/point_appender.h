#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/metrics/metrics.h"

namespace dtlab::core {

// A series as the appender names it before the store has an id for it.
struct SeriesKey {
  int64_t runId = 0;
  int node = 0;
  int worker = 0;
  std::string key;

  auto operator<=>(const SeriesKey&) const = default;
};

// Small integer naming a SeriesKey inside one PointAppender.
using SeriesHandle = uint32_t;

struct PointRecord {
  SeriesHandle series = 0;
  float value = 0.0f;  // what the store keeps (float32)
  int64_t step = 0;
  double wallMs = 0.0;
};

struct AppenderOptions {
  // How long a point may wait in memory before it is committed. Each commit is one
  // transaction; what committed survives a crash of this process.
  std::chrono::milliseconds commitInterval{200};
  // Producers block in append() while this many points wait for the writer (memory
  // bound if the disk cannot keep up).
  int64_t maxQueuedPoints = 4'000'000;
  // Called once, on the writer thread, when the writer fails (with the error that flush()
  // and close() report), so that whoever records can stop what it records at once.
  std::function<void(const std::string& error)> onFailure;
};

// A checkpoint as the store keeps it (ProjectStore::checkpoints).
struct CheckpointRecord {
  int64_t runId = 0;
  int64_t step = 0;
  double wallMs = 0.0;
  // encodeCheckpoint's bytes, shared with whoever else holds them (never null)
  std::shared_ptr<const std::vector<unsigned char>> data;
  int64_t keep = 2;  // the newest this many of the run's stay
};

// The write path for metric points and events: any number of producer threads append
// (a mutex-guarded vector push, no I/O), and one writer thread, with its own connection
// to the project file, packs points into chunk rows and commits them in batches, one
// transaction per commit interval (or sooner under load, or on flush()).
//
// Chunk assembly: a series receiving fewer than a chunk's worth of points per commit
// gets small "open" chunk rows, which the writer merges into one full chunk (inside a
// commit, so readers never see a point twice or miss one) once they add up to a full
// one, or, to bound their number, after 32 of them. So each point is written about twice at
// most for slow series and once for fast ones.
//
// Errors in the writer (disk full, a run deleted while recording) stop it; they are
// reported by flush() and close(), never by append(), which runs on training threads.
class PointAppender {
 public:
  explicit PointAppender(const std::string& projectPath, AppenderOptions options = {});
  // Commits what is queued and stops the writer; errors are swallowed here, so call
  // close() to see them.
  ~PointAppender();
  PointAppender(const PointAppender&) = delete;
  PointAppender& operator=(const PointAppender&) = delete;

  // The handle of a series, registered on first use (no I/O; the writer creates the row).
  SeriesHandle series(int64_t runId, int node, int worker, const std::string& key);
  SeriesHandle series(const SeriesKey& key);

  void append(SeriesHandle series, int64_t step, double wallMs, double value);
  void append(std::span<const PointRecord> points);  // one lock for many points
  void appendEvent(int64_t runId, const RunEvent& event);
  // A checkpoint of a run (its encoded bytes), committed with the points appended before it;
  // the same transaction drops the run's checkpoints beyond the newest `keep`.
  void appendCheckpoint(CheckpointRecord record);
  // A chunk of a run's parameter-server record (core/train/push_record.h: encodePsRecords),
  // kept whole, in the order appended (ProjectStore::psRecords).
  void appendPsRecords(int64_t runId, std::vector<unsigned char> chunk);

  // Blocks until everything appended before the call is committed. Throws StoreError if
  // the writer failed.
  void flush();
  // flush(), then stops the writer. Later appends throw. Idempotent.
  void close();

  int64_t committedPoints() const;
  int64_t commits() const;

 private:
  struct PendingEvent {
    int64_t runId;
    RunEvent event;
  };
  struct PendingRecords {
    int64_t runId;
    std::vector<unsigned char> chunk;
  };
  class Writer;  // the writer thread's state: connection, statements, chunk assembly

  void writerLoop();

  std::string path_;
  AppenderOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;      // the writer waits here
  std::condition_variable progress_;  // flush() and throttled producers wait here
  std::vector<PointRecord> queue_;
  std::vector<PendingEvent> events_;
  std::vector<CheckpointRecord> checkpoints_;
  std::vector<PendingRecords> psRecords_;
  std::vector<SeriesKey> handles_;
  std::map<SeriesKey, SeriesHandle> handleIndex_;
  uint64_t flushRequested_ = 0;
  uint64_t flushDone_ = 0;
  bool stop_ = false;
  bool closed_ = false;
  std::string error_;
  bool closeReported_ = false;  // a close() threw error_ to its caller
  int64_t committedPoints_ = 0;
  int64_t commits_ = 0;

  std::unique_ptr<Writer> writer_;
  std::thread thread_;
};

}  // namespace dtlab::core
