#include "remote/node/job_buffer.h"

#include <algorithm>

#include "core/train/checkpoint.h"
#include "remote/common/metric_wire.h"
#include "remote/node/process_usage.h"

namespace dtlab::remote {

namespace {

void toProto(const core::RunEvent& e, proto::Event& out) {
  out.set_step(e.step);
  out.set_wall_ms(e.wallMs);
  out.set_kind(e.kind);
  out.set_detail(e.detail);
  out.set_data(e.data);
}

}  // namespace

void toProto(const core::WorkerResult& r, proto::JobResult& out) {
  out.set_status(core::toString(r.status));
  out.set_stop_reason(core::toString(r.stopReason));
  out.set_failure_origin(core::toString(r.origin));
  out.set_peak_mem_bytes(r.peakMemBytes);
  out.set_error(r.error);
  out.set_steps(r.steps);
  out.set_samples(r.samples);
  out.set_wall_s(r.wallS);
  out.set_compute_ms_total(r.computeMsTotal);
  out.set_step_ms_total(r.stepMsTotal);
  out.set_wait_ms_total(r.waitMsTotal);
  const core::ExchangeTotals& x = r.exchange;
  out.set_exchange_steps(x.steps);
  out.set_staleness_sum(x.stalenessSum);
  out.set_max_staleness(x.maxStaleness);
  for (int64_t count : x.stalenessHistogram) out.add_staleness_histogram(count);
  out.set_bytes_sent_total(x.bytesSent);
  out.set_bytes_received_total(x.bytesReceived);
  out.set_divergence_sum(x.divergenceSum);
  out.set_divergence_steps(x.divergenceSteps);
  out.set_compress_dense_bytes(x.compressDenseBytes);
  out.set_compress_payload_bytes(x.compressPayloadBytes);
  out.set_compress_seconds(x.compressSeconds);
  out.set_param_checksum(r.paramChecksum);
  out.set_has_test_accuracy(r.finalTestAccuracy.has_value());
  out.set_final_test_accuracy(r.finalTestAccuracy.value_or(0.0));
  out.set_final_test_loss(r.finalTestLoss.value_or(0.0));
  out.set_has_time_to_target(r.timeToTargetS.has_value());
  out.set_time_to_target_s(r.timeToTargetS.value_or(0.0));
}

void JobBuffer::onStep(const core::StepMetrics& metrics) {
  const StepClock now{std::chrono::steady_clock::now(), processCpuSeconds()};  // about 1 us
  std::lock_guard<std::mutex> lock(mutex_);
  steps_.push(metrics);
  lastStepClock_ = now;
}

void JobBuffer::onEval(const core::EvalMetrics& metrics) {
  std::lock_guard<std::mutex> lock(mutex_);
  evals_.push(metrics);
}

void JobBuffer::onEvent(const core::RunEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(event);
}

void JobBuffer::onCheckpoint(const core::Checkpoint& checkpoint) {
  auto bytes =
      std::make_shared<const std::vector<unsigned char>>(core::encodeCheckpoint(checkpoint));
  std::lock_guard<std::mutex> lock(mutex_);
  queuedCheckpointBytes_ += bytes->size();
  checkpoints_.push_back({++checkpointSeq_, std::move(bytes)});
  // A watcher sending one of those dropped holds it (Cursor::sendingCheckpoint).
  while (checkpoints_.size() > 1 && queuedCheckpointBytes_ > kQueuedCheckpointBytes) {
    queuedCheckpointBytes_ -= checkpoints_.front().bytes->size();
    checkpoints_.pop_front();
  }
}

void JobBuffer::onPush(const core::PushRecord& push) {
  std::lock_guard<std::mutex> lock(mutex_);
  openRecords_.add(push);
  if (openRecords_.pushes() >= kPushesPerChunk) closeRecordChunk();
}

void JobBuffer::onReplica(const core::ReplicaRecord& replica) {
  std::lock_guard<std::mutex> lock(mutex_);
  openRecords_.add(replica);
  closeRecordChunk();
}

void JobBuffer::onReset(const core::ResetRecord& reset) {
  std::lock_guard<std::mutex> lock(mutex_);
  openRecords_.add(reset);
  closeRecordChunk();
}

void JobBuffer::closeRecordChunk() {
  if (openRecords_.empty()) return;
  const std::vector<unsigned char> bytes = openRecords_.take();
  recordChunks_.emplace_back(bytes.begin(), bytes.end());
}

void JobBuffer::onNode(const core::NodeMetrics& sample) {
  std::lock_guard<std::mutex> lock(mutex_);
  core::NodeMetrics stamped = sample;
  if (stamped.step == 0 && !steps_.items.empty()) stamped.step = steps_.items.back().step;
  samples_.push(stamped);
}

bool JobBuffer::finish(const core::WorkerResult& result) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (result_) return false;
  closeRecordChunk();
  result_ = result;
  return true;
}

std::optional<JobBuffer::StepClock> JobBuffer::lastStepClock() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lastStepClock_;
}

bool JobBuffer::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return result_.has_value();
}

std::optional<core::WorkerResult> JobBuffer::result() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return result_;
}

uint64_t JobBuffer::stepsDropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return steps_.base;
}

bool JobBuffer::fill(Cursor& cursor, int maxPoints, std::size_t maxBlobBytes,
                     proto::JobUpdate& update) const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t budget = static_cast<uint64_t>(std::max(maxPoints, 1));
  bool any = false;
  // Events and evals first: they are rare and matter most to a watcher that is behind.
  for (; budget > 0 && cursor.events < events_.size(); ++cursor.events, --budget, any = true)
    toProto(events_[cursor.events], *update.add_events());
  cursor.evals = std::max(cursor.evals, evals_.base);
  for (; budget > 0 && cursor.evals < evals_.end(); ++cursor.evals, --budget, any = true)
    toProto(evals_.items[cursor.evals - evals_.base], *update.add_evals());
  cursor.steps = std::max(cursor.steps, steps_.base);
  for (; budget > 0 && cursor.steps < steps_.end(); ++cursor.steps, --budget, any = true)
    toProto(steps_.items[cursor.steps - steps_.base], *update.add_steps());
  cursor.samples = std::max(cursor.samples, samples_.base);
  for (; budget > 0 && cursor.samples < samples_.end(); ++cursor.samples, --budget, any = true)
    toProto(samples_.items[cursor.samples - samples_.base], *update.add_node_samples());
  // Blobs go in parts, at most maxBlobBytes of them in one update. The checkpoint starts after
  // every step point taken before it (the training thread recorded those first), so a
  // coordinator stores no checkpoint ahead of its run's points; once begun it is sent whole,
  // even when a newer one replaces it meanwhile (that one follows).
  std::size_t blobBudget = std::max<std::size_t>(maxBlobBytes, 1);
  auto addPart = [&](proto::BlobKind kind, std::string_view blob, uint64_t& offset) {
    const std::size_t n = std::min<std::size_t>(blobBudget, blob.size() - offset);
    proto::BlobPart* part = update.add_blobs();
    part->set_kind(kind);
    part->set_total_bytes(blob.size());
    part->set_offset(offset);
    part->set_data(blob.data() + offset, n);
    offset += n;
    blobBudget -= n;
    any = true;
    return offset == blob.size();  // sent whole
  };
  if (!cursor.sendingCheckpoint && cursor.checkpoints < checkpointSeq_ &&
      cursor.steps == steps_.end()) {
    // The oldest still queued that this watcher has not had.
    const auto next =
        std::find_if(checkpoints_.begin(), checkpoints_.end(),
                     [&](const QueuedCheckpoint& c) { return c.seq > cursor.checkpoints; });
    cursor.sendingCheckpoint = next->bytes;
    cursor.sendingCheckpointSeq = next->seq;
    cursor.checkpointOffset = 0;
  }
  if (cursor.sendingCheckpoint && blobBudget > 0) {
    const std::vector<unsigned char>& blob = *cursor.sendingCheckpoint;
    if (addPart(proto::BLOB_CHECKPOINT, {reinterpret_cast<const char*>(blob.data()), blob.size()},
                cursor.checkpointOffset)) {
      cursor.checkpoints = cursor.sendingCheckpointSeq;
      cursor.sendingCheckpoint.reset();
    }
  }
  while (blobBudget > 0 && budget > 0 && cursor.psRecords < recordChunks_.size()) {
    if (!addPart(proto::BLOB_PS_RECORDS, recordChunks_[cursor.psRecords], cursor.psRecordOffset))
      break;
    ++cursor.psRecords;
    cursor.psRecordOffset = 0;
    --budget;
  }
  const bool drained = cursor.events == events_.size() && cursor.evals == evals_.end() &&
                       cursor.steps == steps_.end() && cursor.samples == samples_.end() &&
                       cursor.checkpoints == checkpointSeq_ && !cursor.sendingCheckpoint &&
                       cursor.psRecords == recordChunks_.size();
  if (result_ && drained) {
    update.set_finished(true);
    toProto(*result_, *update.mutable_result());
    any = true;
  }
  return any;
}

}  // namespace dtlab::remote
