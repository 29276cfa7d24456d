#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/store/sqlite_db.h"

namespace dtlab::core {

// How a project keeps a checkpoint (the encoded form of core/train/checkpoint.h): a row in
// `checkpoints` with its manifest, and its bytes in parts of kCheckpointPartBytes in
// `checkpoint_parts`, each with its own checksum (core/common/checksum.h), all committed in one
// transaction. The stored manifest adds the checksum of the run's spec as stored ("spec_hash"). No
// row holds more than one part, so a checkpoint has no size limit (SQLite refuses a single value
// over 1 GB), and damage on disk is found, and named, part by part.
inline constexpr std::size_t kCheckpointPartBytes = std::size_t{16} << 20;

// An encoded checkpoint cut into parts, with the checksums and the manifest to store: format,
// step, rank steps, strategy, optimizer, bytes, the parts' sizes and checksums, and the
// tensors (name, float32 count, offset, checksum). A checkpoint whose header cannot be read
// (only a damaged one from an older project) gets a manifest without tensors.
struct StoredCheckpointParts {
  std::vector<std::span<const unsigned char>> parts;
  std::vector<uint64_t> checksums;
  nlohmann::json manifest;
};
StoredCheckpointParts splitCheckpoint(std::span<const unsigned char> encoded);

// A stored checkpoint whose parts are missing or do not match their checksums.
class CheckpointDamaged : public StoreError {
 public:
  CheckpointDamaged(const std::string& message, int64_t step, std::optional<int64_t> previousWhole)
      : StoreError(message), step_(step), previousWhole_(previousWhole) {}
  int64_t step() const { return step_; }
  // The newest older checkpoint of the run whose parts all verify, if there is one.
  std::optional<int64_t> previousWhole() const { return previousWhole_; }

 private:
  int64_t step_;
  std::optional<int64_t> previousWhole_;
};

// Reads the checkpoint of (runId, step) from `db` and checks every part against its checksum
// and the manifest. Returns its bytes, or nullopt when there is no such checkpoint; throws
// CheckpointDamaged (previousWhole unset) naming the first part that is missing or damaged.
std::optional<std::vector<unsigned char>> readCheckpointParts(sqlite::Db& db, int64_t runId,
                                                              int64_t step);

// Writes a checkpoint's row and parts (replacing one of the same step), inside the caller's
// transaction.
void writeCheckpointParts(sqlite::Db& db, int64_t runId, int64_t step, double wallMs,
                          int64_t createdMs, std::span<const unsigned char> encoded);

}  // namespace dtlab::core
