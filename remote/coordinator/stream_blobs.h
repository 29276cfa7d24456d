#pragma once
// A WatchJob stream's blobs (checkpoints, records of pushes) joined from the parts its updates
// carry (remote/common/blob_parts.h), a whole checkpoint's checksum checked as it completes:
// the coordinator's watch (dispatch.cc) does this for each rank's stream before the lock the
// streams share.
#include <memory>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/train/checkpoint.h"
#include "remote/common/blob_parts.h"
#include "remote/proto/dtlab.pb.h"

namespace dtlab::remote {

// A checkpoint as a node sent it, its checksum checked and its header read; the bytes are
// stored and staged for a restart as they came (never decoded here, never copied).
struct CheckedCheckpoint {
  core::CheckpointLayout layout;
  std::shared_ptr<const std::vector<unsigned char>> bytes;
};

// What one update's blob parts completed: record chunks, the newest checkpoint, and events
// for parts that could not be kept.
struct JoinedBlobs {
  std::vector<std::vector<unsigned char>> records;
  std::vector<CheckedCheckpoint> checkpoints;
  std::vector<core::RunEvent> notes;
};

// The blobs of one stream being joined from their parts.
struct StreamBlobs {
  BlobJoiner checkpointParts, recordParts;

  // Adds the update's parts; returns what they completed. `rank` names the stream in notes.
  JoinedBlobs join(const proto::JobUpdate& update, const std::string& rank);
};

}  // namespace dtlab::remote
