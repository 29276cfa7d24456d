#include "core/store/point_appender.h"

#include <cmath>
#include <limits>

#include "core/common/check.h"
#include "core/common/log.h"
#include "core/store/checkpoint_parts.h"
#include "core/store/chunk_codec.h"
#include "core/store/chunk_rows.h"
#include "core/store/schema.h"
#include "core/store/sqlite_db.h"

namespace dtlab::core {
namespace {

// The writer wakes to sort points into series when this many are queued (keeps the
// queue's memory moving between commits) ...
constexpr std::size_t kWakePoints = 1 << 16;
// ... and commits early when this many wait in series buffers (bounds memory under load).
constexpr int64_t kCommitPoints = 1 << 20;
// Open (partial) chunk rows a series may have before they are merged into one.
constexpr std::size_t kMaxOpenChunks = 32;

}  // namespace

class PointAppender::Writer {
 public:
  explicit Writer(const std::string& path)
      : db_(openProjectDatabase(path, OpenDatabaseOptions{false, false})),
        insertChunk_(*db_, kInsertChunkSql),
        readChunk_(*db_, "SELECT count, data FROM chunks WHERE id = ?"),
        deleteChunk_(*db_, "DELETE FROM chunks WHERE id = ?"),
        findRun_(*db_, "SELECT 1 FROM runs WHERE id = ?"),
        insertSeries_(*db_,
                      "INSERT INTO series(run_id, node, worker, key) VALUES (?, ?, ?, ?) "
                      "ON CONFLICT(run_id, key, node, worker) DO NOTHING"),
        findSeries_(*db_,
                    "SELECT id FROM series WHERE run_id = ? AND key = ? AND node = ? AND "
                    "worker = ?"),
        insertEvent_(*db_,
                     "INSERT INTO events(run_id, step, wall_ms, kind, detail, data) "
                     "VALUES (?, ?, ?, ?, ?, ?)"),
        insertPsRecords_(*db_, "INSERT INTO ps_records(run_id, data) VALUES (?, ?)"),
        pruneCheckpoints_(*db_,
                          "DELETE FROM checkpoints WHERE run_id = ?1 AND step NOT IN (SELECT step "
                          "FROM checkpoints WHERE run_id = ?1 ORDER BY step DESC LIMIT ?2)"),
        upsertMetric_(*db_,
                      "INSERT INTO run_metrics(run_id, key, count, last_step, last_wall_ms, "
                      "last_value, min_value, max_value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                      "ON CONFLICT(run_id, key) DO UPDATE SET "
                      "count = count + excluded.count, "
                      "last_wall_ms = CASE WHEN excluded.last_step >= last_step "
                      "  THEN excluded.last_wall_ms ELSE last_wall_ms END, "
                      "last_value = CASE WHEN excluded.last_step >= last_step "
                      "  THEN excluded.last_value ELSE last_value END, "
                      "last_step = max(last_step, excluded.last_step), "
                      "min_value = CASE WHEN min_value IS NULL THEN excluded.min_value "
                      "  WHEN excluded.min_value IS NULL THEN min_value "
                      "  ELSE min(min_value, excluded.min_value) END, "
                      "max_value = CASE WHEN max_value IS NULL THEN excluded.max_value "
                      "  WHEN excluded.max_value IS NULL THEN max_value "
                      "  ELSE max(max_value, excluded.max_value) END") {}

  std::size_t knownSeries() const { return series_.size(); }
  void addSeries(const SeriesKey& key) {
    SeriesState state;
    state.key = key;
    series_.push_back(std::move(state));
  }

  void add(const std::vector<PointRecord>& records) {
    for (const PointRecord& r : records) {
      SeriesState& s = series_[r.series];
      if (s.pending.empty()) touched_.push_back(r.series);
      s.pending.push_back({r.step, r.wallMs, static_cast<double>(r.value)});
    }
    pending_ += static_cast<int64_t>(records.size());
  }

  int64_t pendingPoints() const { return pending_; }

  // One transaction holding every pending point, the events and the run_metrics update.
  // Returns the points committed.
  int64_t commit(const std::vector<PendingEvent>& events,
                 const std::vector<CheckpointRecord>& checkpoints,
                 const std::vector<PendingRecords>& psRecords) {
    if (pending_ == 0 && events.empty() && checkpoints.empty() && psRecords.empty()) return 0;
    try {
      commitOnce(events, checkpoints, psRecords);
    } catch (const StoreError& e) {
      // The transaction rolled back. A run deleted while it was being recorded shows up
      // as a foreign key failure; name the run instead.
      if (e.foreignKeyViolation()) {
        for (SeriesHandle handle : touched_) requireRun(series_[handle].key.runId);
        for (const PendingEvent& event : events) requireRun(event.runId);
        for (const CheckpointRecord& c : checkpoints) requireRun(c.runId);
        for (const PendingRecords& r : psRecords) requireRun(r.runId);
      }
      throw;
    }
    const int64_t committed = pending_;
    pending_ = 0;
    touched_.clear();
    return committed;
  }

 private:
  void commitOnce(const std::vector<PendingEvent>& events,
                  const std::vector<CheckpointRecord>& checkpoints,
                  const std::vector<PendingRecords>& psRecords) {
    sqlite::Transaction transaction(*db_);
    MetricDeltas metrics;
    for (SeriesHandle handle : touched_) {
      SeriesState& s = series_[handle];
      ensureSeriesRow(s);
      metrics[{s.key.runId, s.key.key}].add(s.pending);
      writeSeries(s);
    }
    for (const PendingEvent& e : events) {
      requireRun(e.runId);
      insertEvent_.bind(1, e.runId).bind(2, e.event.step).bind(3, e.event.wallMs);
      insertEvent_.bind(4, e.event.kind).bind(5, e.event.detail).bind(6, e.event.data).run();
    }
    for (const CheckpointRecord& c : checkpoints) {
      requireRun(c.runId);
      writeCheckpointParts(*db_, c.runId, c.step, c.wallMs, epochMsNow(), *c.data);
      pruneCheckpoints_.bind(1, c.runId).bind(2, c.keep).run();
    }
    for (const PendingRecords& r : psRecords) {
      requireRun(r.runId);
      insertPsRecords_.bind(1, r.runId).bindBlob(2, r.chunk).run();
    }
    for (const auto& [key, m] : metrics) {
      upsertMetric_.bind(1, key.first).bind(2, key.second).bind(3, m.count).bind(4, m.lastStep);
      upsertMetric_.bind(5, m.lastWallMs).bind(6, m.lastValue);
      upsertMetric_.bind(7, m.minValue).bind(8, m.maxValue).run();
    }
    transaction.commit();
  }

  struct SeriesState {
    SeriesKey key;
    int64_t rowId = 0;  // 0 until the writer created or found the series row
    std::vector<SeriesPoint> pending;
    std::vector<int64_t> openChunks;  // partial chunk rows, oldest first
    int64_t openCount = 0;            // points in them
  };

  void requireRun(int64_t runId) {
    findRun_.bind(1, runId);
    const bool found = findRun_.step();
    findRun_.reset();
    if (!found)
      throw StoreError("points or events for run " + std::to_string(runId) + ", which is not in " +
                       db_->path() + " (deleted while it was recorded?)");
  }

  void ensureSeriesRow(SeriesState& s) {
    if (s.rowId != 0) return;
    requireRun(s.key.runId);
    insertSeries_.bind(1, s.key.runId).bind(2, s.key.node).bind(3, s.key.worker);
    insertSeries_.bind(4, s.key.key).run();
    findSeries_.bind(1, s.key.runId).bind(2, s.key.key).bind(3, s.key.node).bind(4, s.key.worker);
    if (!findSeries_.step()) throw StoreError("series row missing after insert");
    s.rowId = findSeries_.columnInt(0);
    findSeries_.reset();
  }

  int64_t insertChunk(int64_t seriesRow, std::span<const SeriesPoint> points) {
    insertChunkRow(insertChunk_, seriesRow, points, blob_);
    return db_->lastInsertId();
  }

  // Reads and deletes the series' open chunks; their points go in front of `points`.
  void takeOpenChunks(SeriesState& s, std::vector<SeriesPoint>& points) {
    merged_.clear();
    for (int64_t id : s.openChunks) {
      readChunk_.bind(1, id);
      if (!readChunk_.step())
        throw StoreError("open chunk " + std::to_string(id) + " vanished from " + db_->path());
      decodeChunk(readChunk_.columnBlob(1), readChunk_.columnInt(0), merged_);
      readChunk_.reset();
      deleteChunk_.bind(1, id).run();
    }
    merged_.insert(merged_.end(), points.begin(), points.end());
    points.swap(merged_);
    s.openChunks.clear();
    s.openCount = 0;
  }

  void writeSeries(SeriesState& s) {
    std::vector<SeriesPoint>& points = s.pending;
    if (!s.openChunks.empty() &&
        s.openCount + static_cast<int64_t>(points.size()) >= kChunkCapacity)
      takeOpenChunks(s, points);
    std::size_t offset = 0;
    if (s.openChunks.empty()) {
      while (points.size() - offset >= static_cast<std::size_t>(kChunkCapacity)) {
        insertChunk(s.rowId, std::span(points).subspan(offset, kChunkCapacity));
        offset += kChunkCapacity;
      }
    }
    const std::size_t rest = points.size() - offset;
    if (rest > 0) {
      s.openChunks.push_back(insertChunk(s.rowId, std::span(points).subspan(offset, rest)));
      s.openCount += static_cast<int64_t>(rest);
      if (s.openChunks.size() >= kMaxOpenChunks) {
        std::vector<SeriesPoint> none;
        takeOpenChunks(s, none);
        s.openChunks.push_back(insertChunk(s.rowId, none));
        s.openCount = static_cast<int64_t>(none.size());
      }
    }
    points.clear();
  }

  std::unique_ptr<sqlite::Db> db_;
  sqlite::Statement insertChunk_;
  sqlite::Statement readChunk_;
  sqlite::Statement deleteChunk_;
  sqlite::Statement findRun_;
  sqlite::Statement insertSeries_;
  sqlite::Statement findSeries_;
  sqlite::Statement insertEvent_;
  sqlite::Statement insertPsRecords_;
  sqlite::Statement pruneCheckpoints_;
  sqlite::Statement upsertMetric_;

  std::vector<SeriesState> series_;    // indexed by SeriesHandle
  std::vector<SeriesHandle> touched_;  // series with pending points
  int64_t pending_ = 0;
  std::vector<unsigned char> blob_;
  std::vector<SeriesPoint> merged_;
};

PointAppender::PointAppender(const std::string& projectPath, AppenderOptions options)
    : path_(projectPath),
      options_(options),
      writer_(std::make_unique<Writer>(projectPath)),
      thread_([this] { writerLoop(); }) {}

PointAppender::~PointAppender() {
  bool told = false;  // an earlier close() threw the error to its caller
  {
    std::lock_guard lock(mutex_);
    told = closeReported_;
  }
  try {
    close();
  } catch (...) {
    // Nobody has heard it otherwise: the log says what was not written. The committed data
    // is intact either way.
    if (!told) logCurrentException(LogLevel::kWarn, "closing the point writer of " + path_);
  }
}

SeriesHandle PointAppender::series(int64_t runId, int node, int worker, const std::string& key) {
  return series(SeriesKey{runId, node, worker, key});
}

SeriesHandle PointAppender::series(const SeriesKey& key) {
  std::lock_guard lock(mutex_);
  const auto [it, inserted] = handleIndex_.emplace(key, static_cast<SeriesHandle>(handles_.size()));
  if (inserted) handles_.push_back(key);
  return it->second;
}

void PointAppender::append(SeriesHandle series, int64_t step, double wallMs, double value) {
  const PointRecord record{series, static_cast<float>(value), step, wallMs};
  append(std::span(&record, 1));
}

void PointAppender::append(std::span<const PointRecord> points) {
  std::unique_lock lock(mutex_);
  if (closed_) throw StoreError(path_ + ": append after the point appender was closed");
  if (!error_.empty()) return;  // reported by flush()/close(); training goes on
  if (static_cast<int64_t>(queue_.size()) >= options_.maxQueuedPoints) {
    progress_.wait(lock, [&] {
      return static_cast<int64_t>(queue_.size()) < options_.maxQueuedPoints || !error_.empty();
    });
    if (!error_.empty()) return;
  }
  for (const PointRecord& p : points) {
    if (p.series >= handles_.size())
      throw StoreError("append: unknown series handle " + std::to_string(p.series));
  }
  const std::size_t before = queue_.size();
  queue_.insert(queue_.end(), points.begin(), points.end());
  if (before < kWakePoints && queue_.size() >= kWakePoints) wake_.notify_one();
}

void PointAppender::appendEvent(int64_t runId, const RunEvent& event) {
  std::lock_guard lock(mutex_);
  if (closed_) throw StoreError(path_ + ": append after the point appender was closed");
  if (!error_.empty()) return;
  events_.push_back({runId, event});
}

void PointAppender::appendPsRecords(int64_t runId, std::vector<unsigned char> chunk) {
  std::lock_guard lock(mutex_);
  if (closed_) throw StoreError(path_ + ": append after the point appender was closed");
  if (!error_.empty()) return;
  psRecords_.push_back({runId, std::move(chunk)});
}

void PointAppender::appendCheckpoint(CheckpointRecord record) {
  DTLAB_ENFORCE(record.data != nullptr, "a checkpoint record without bytes");
  std::lock_guard lock(mutex_);
  if (closed_) throw StoreError(path_ + ": append after the point appender was closed");
  if (!error_.empty()) return;
  checkpoints_.push_back(std::move(record));
  wake_.notify_one();  // a checkpoint is worth committing now
}

void PointAppender::flush() {
  std::unique_lock lock(mutex_);
  if (!error_.empty()) throw StoreError(error_);
  if (closed_) return;
  const uint64_t ticket = ++flushRequested_;
  wake_.notify_one();
  progress_.wait(lock, [&] { return flushDone_ >= ticket || !error_.empty(); });
  if (!error_.empty()) throw StoreError(error_);
}

void PointAppender::close() {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      closed_ = true;
      stop_ = true;
      wake_.notify_one();
    }
  }
  if (thread_.joinable()) thread_.join();
  writer_.reset();  // closes the writer's connection: a closed appender holds no file
  std::lock_guard lock(mutex_);
  if (!error_.empty()) {
    closeReported_ = true;
    throw StoreError(error_);
  }
}

int64_t PointAppender::committedPoints() const {
  std::lock_guard lock(mutex_);
  return committedPoints_;
}

int64_t PointAppender::commits() const {
  std::lock_guard lock(mutex_);
  return commits_;
}

void PointAppender::writerLoop() {
  using Clock = std::chrono::steady_clock;
  std::vector<PointRecord> batch;
  std::vector<PendingEvent> events;
  std::vector<CheckpointRecord> checkpoints;
  std::vector<PendingRecords> psRecords;
  uint64_t done = 0;
  Clock::time_point deadline = Clock::now() + options_.commitInterval;
  for (;;) {
    uint64_t target = 0;
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, deadline, [&] {
        return stop_ || flushRequested_ > done || queue_.size() >= kWakePoints ||
               !checkpoints_.empty();
      });
      batch.swap(queue_);
      events.insert(events.end(), std::make_move_iterator(events_.begin()),
                    std::make_move_iterator(events_.end()));
      events_.clear();
      checkpoints.insert(checkpoints.end(), std::make_move_iterator(checkpoints_.begin()),
                         std::make_move_iterator(checkpoints_.end()));
      checkpoints_.clear();
      psRecords.insert(psRecords.end(), std::make_move_iterator(psRecords_.begin()),
                       std::make_move_iterator(psRecords_.end()));
      psRecords_.clear();
      for (std::size_t h = writer_->knownSeries(); h < handles_.size(); ++h)
        writer_->addSeries(handles_[h]);
      target = flushRequested_;
      stopping = stop_;
    }
    progress_.notify_all();  // the queue has room again
    writer_->add(batch);
    batch.clear();
    const Clock::time_point now = Clock::now();
    const bool due = now >= deadline || target > done || stopping || !checkpoints.empty() ||
                     writer_->pendingPoints() >= kCommitPoints;
    if (!due) continue;
    std::string error;
    int64_t committed = 0;
    try {
      committed = writer_->commit(events, checkpoints, psRecords);
    } catch (const std::exception& e) {
      error = e.what();
    }
    const bool wrote =
        committed > 0 || !events.empty() || !checkpoints.empty() || !psRecords.empty();
    events.clear();
    checkpoints.clear();
    psRecords.clear();
    done = target;
    deadline = Clock::now() + options_.commitInterval;
    if (!error.empty()) error = path_ + ": recording stopped: " + error;
    {
      std::lock_guard lock(mutex_);
      committedPoints_ += committed;
      if (wrote && error.empty()) ++commits_;
      flushDone_ = done;
      if (!error.empty()) error_ = error;
    }
    progress_.notify_all();
    // After an error nothing more is written: what committed stays, the rest is reported.
    if (!error.empty() && options_.onFailure) options_.onFailure(error);
    if (stopping || !error.empty()) return;
  }
}

}  // namespace dtlab::core
