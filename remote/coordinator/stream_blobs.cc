#include "remote/coordinator/stream_blobs.h"

namespace dtlab::remote {

JoinedBlobs StreamBlobs::join(const proto::JobUpdate& update, const std::string& rank) {
  JoinedBlobs out;
  for (const proto::BlobPart& part : update.blobs()) {
    const bool isCheckpoint = part.kind() == proto::BLOB_CHECKPOINT;
    BlobJoiner& joiner = isCheckpoint ? checkpointParts : recordParts;
    if (const std::string wrong = joiner.add(part.total_bytes(), part.offset(), part.data());
        !wrong.empty()) {
      // Not a reason to end the run: the training goes on without this checkpoint or record
      // chunk, and the run's events say so.
      out.notes.push_back({0, 0.0,
                           std::string(isCheckpoint ? core::kCheckpointNotKeptEvent : "note"),
                           std::string(isCheckpoint ? "a checkpoint" : "a record of pushes") +
                               " from " + rank + " was not kept: " + wrong});
      continue;
    }
    if (!joiner.whole()) continue;
    std::vector<unsigned char> bytes = joiner.take();
    if (!isCheckpoint) {
      out.records.push_back(std::move(bytes));
      continue;
    }
    try {
      core::CheckpointLayout layout = core::verifyCheckpoint(bytes);
      out.checkpoints.push_back(
          {std::move(layout),
           std::make_shared<const std::vector<unsigned char>>(std::move(bytes))});
    } catch (const core::CheckpointError& e) {
      out.notes.push_back({0, 0.0, std::string(core::kCheckpointNotKeptEvent),
                           std::string("a checkpoint was not kept: ") + e.what()});
    }
  }
  return out;
}

}  // namespace dtlab::remote
