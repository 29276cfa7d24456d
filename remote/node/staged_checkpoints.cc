#include "remote/node/staged_checkpoints.h"

#include <unistd.h>

#include <algorithm>

#include "core/common/log.h"
#include "remote/common/blob_parts.h"
#include "remote/common/protocol.h"

namespace dtlab::remote {

void StagedCheckpoints::put(const std::string& jobId,
                            std::shared_ptr<const core::Checkpoint> checkpoint) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(kept_, [&](const auto& entry) { return entry.first == jobId; });
  kept_.emplace_back(jobId, std::move(checkpoint));
  while (kept_.size() > kMaxKept) kept_.pop_front();
}

std::shared_ptr<const core::Checkpoint> StagedCheckpoints::find(const std::string& jobId) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, checkpoint] : kept_)
    if (id == jobId) return checkpoint;
  return nullptr;
}

void StagedCheckpoints::keepOnly(const std::string& jobId) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(kept_, [&](const auto& entry) { return entry.first != jobId; });
}

uint64_t maxStagedCheckpointBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize) / 2;
}

namespace {

class StageReactor final : public grpc::ServerReadReactor<proto::CheckpointPart> {
 public:
  StageReactor(const grpc::Status& refused, StagedCheckpoints& table, uint64_t maxBytes,
               proto::StageCheckpointResponse* response)
      : table_(table), maxBytes_(maxBytes), response_(response) {
    if (!refused.ok()) {
      Finish(refused);
      return;
    }
    StartRead(&part_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client has sent its last part (or went away: then Finish goes nowhere)
      Finish(complete());
      return;
    }
    if (grpc::Status s = take(); !s.ok()) {
      Finish(s);
      return;
    }
    StartRead(&part_);
  }

  void OnDone() override { delete this; }

 private:
  grpc::Status take() {
    if (grpc::Status s = checkProtocolVersion(part_.protocol_version()); !s.ok()) return s;
    if (grpc::Status s = checkFieldSize("job_id", part_.job_id().size(), kMaxJobIdBytes); !s.ok())
      return s;
    if (parts_ == 0) jobId_ = part_.job_id();
    if (part_.job_id() != jobId_)
      return {grpc::StatusCode::INVALID_ARGUMENT, "job_id: part " + std::to_string(parts_) +
                                                      " names job '" + part_.job_id() +
                                                      "', the first named '" + jobId_ + "'"};
    if (parts_ == 0 && part_.offset() != 0)
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "offset: the first part must start at 0, not " + std::to_string(part_.offset())};
    if (parts_ == 0 && part_.total_bytes() > maxBytes_)
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              "checkpoint of job " + jobId_ + ": " + std::to_string(part_.total_bytes()) +
                  " bytes, more than the " + std::to_string(maxBytes_) +
                  " this node stages (half its memory)"};
    ++parts_;
    if (const std::string wrong = joiner_.add(part_.total_bytes(), part_.offset(), part_.data());
        !wrong.empty())
      return {grpc::StatusCode::INVALID_ARGUMENT, "checkpoint of job " + jobId_ + ": " + wrong};
    return grpc::Status::OK;
  }

  grpc::Status complete() {
    if (parts_ == 0)
      return {grpc::StatusCode::INVALID_ARGUMENT, "StageCheckpoint: no part was sent"};
    if (!joiner_.whole())
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "checkpoint of job " + jobId_ + ": the parts ended at " +
                  std::to_string(joiner_.joined()) + " of " + std::to_string(part_.total_bytes()) +
                  " bytes"};
    const std::vector<unsigned char> bytes = joiner_.take();
    try {
      auto checkpoint = std::make_shared<const core::Checkpoint>(core::decodeCheckpoint(bytes));
      response_->set_step(checkpoint->step);
      logAt(LogLevel::kInfo, "job ", jobId_, ": checkpoint of step ", checkpoint->step, " staged (",
            bytes.size() >> 20, " MiB)");
      table_.put(jobId_, std::move(checkpoint));
    } catch (const core::CheckpointError& e) {
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "checkpoint of job " + jobId_ + ": " + std::string(e.what())};
    }
    return grpc::Status::OK;
  }

  StagedCheckpoints& table_;
  const uint64_t maxBytes_;
  BlobJoiner joiner_;
  proto::StageCheckpointResponse* response_;
  proto::CheckpointPart part_;
  std::string jobId_;
  uint64_t parts_ = 0;
};

}  // namespace

grpc::ServerReadReactor<proto::CheckpointPart>* stageCheckpoint(
    const grpc::Status& refused, StagedCheckpoints& table, uint64_t maxBytes,
    proto::StageCheckpointResponse* response) {
  return new StageReactor(refused, table, maxBytes, response);
}

}  // namespace dtlab::remote
