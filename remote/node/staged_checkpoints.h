#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <grpcpp/support/server_callback.h>

#include "core/train/checkpoint.h"
#include "remote/proto/dtlab.pb.h"

namespace dtlab::remote {

// Checkpoints handed to this node in parts (StageCheckpoint) for the jobs about to start from
// them (StartJob's resume_staged), by job id: decoded and verified once, shared by every rank
// of the job on this node. The newest kMaxKept are kept; a job that starts leaves its own, and
// staging another job's checkpoint drops the oldest beyond the bound. Thread-safe.
class StagedCheckpoints {
 public:
  static constexpr std::size_t kMaxKept = 2;

  void put(const std::string& jobId, std::shared_ptr<const core::Checkpoint> checkpoint);
  // Null when none was staged for the job (or it was dropped).
  std::shared_ptr<const core::Checkpoint> find(const std::string& jobId) const;
  // Drops every checkpoint but the job's own (a new job started: the others' will not).
  void keepOnly(const std::string& jobId);

 private:
  mutable std::mutex mutex_;
  std::deque<std::pair<std::string, std::shared_ptr<const core::Checkpoint>>> kept_;
};

// The largest checkpoint a node stages: half of this machine's memory (a larger one could not
// be held beside the job that resumes from it).
uint64_t maxStagedCheckpointBytes();

// The reactor of one StageCheckpoint call: joins the parts (in order, one job id and total in
// every part, the total at most `maxBytes`), decodes and verifies the checkpoint when the client
// has sent the last, and puts it in `table`. `refused`: a status that ends the call before any
// part is read (authentication, protocol version).
grpc::ServerReadReactor<proto::CheckpointPart>* stageCheckpoint(
    const grpc::Status& refused, StagedCheckpoints& table, uint64_t maxBytes,
    proto::StageCheckpointResponse* response);

}  // namespace dtlab::remote
