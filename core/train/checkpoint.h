#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/check.h"

namespace dtlab::core {

// A run's state at the end of a step, enough to continue it as if it had never stopped
// (training.checkpoint_every / checkpoint_seconds): the replica's parameters and optimizer
// state, the step, and the strategy's own state. The data position and every random stream
// follow from the step and the spec's seed (each epoch's order is a seeded shuffle, and a
// synchronous step takes one global batch), so they need no bytes of their own.
//
// Kept by the strategies whose ranks hold one replica between steps (Strategy::checkpoints):
// rank 0's state is every rank's.
struct Checkpoint {
  int64_t step = 0;  // the last step taken; a resumed run's first is step + 1
  // Where each rank stood, when its ranks step on their own clocks (asynchronous: rank r had
  // taken rankSteps[r] steps, and `step` is the run's progress in global batches); empty:
  // every rank at `step`. A rank's points up to its own step belong to the checkpoint.
  std::vector<int64_t> rankSteps;
  double wallMs = 0.0;    // the run's clock when it was taken
  std::string strategy;   // the variant's strategy name
  std::string optimizer;  // "sgd", "adam", ... (Optimizer::name)
  std::vector<float> params;
  std::vector<std::vector<float>> optimizerState;  // Optimizer::state(), in its order
  nlohmann::json strategyState;                    // the strategy's own (shares, versions)

  // Rank `rank`'s own step at the checkpoint.
  int64_t stepOf(std::size_t rank) const {
    return rank < rankSteps.size() ? rankSteps[rank] : step;
  }

  bool operator==(const Checkpoint&) const = default;
};

class CheckpointError : public Error {
 public:
  using Error::Error;
};

// Throws Error unless the checkpoint is of a run with this optimizer and parameter count.
void checkCheckpointFits(const Checkpoint& checkpoint, std::string_view optimizer,
                         int64_t parameterCount);

// The stored form: magic "DTLCKPT2", a JSON header (step, time, strategy, optimizer, sizes,
// the strategy's state), the float arrays little-endian, and core/common/checksum.h's
// checksum64 of everything before it (format 1, "DTLCKPT1", closed with a byte-wise FNV-1a;
// it is still read). Decoding checks all of it and throws CheckpointError saying what is wrong.
std::vector<unsigned char> encodeCheckpoint(const Checkpoint& checkpoint);
Checkpoint decodeCheckpoint(std::span<const unsigned char> bytes);

// Where an encoded checkpoint keeps what, read from its header alone (no checksum pass): for
// a project's manifest of it, and where decodeCheckpoint reads. Throws CheckpointError when
// the header is damaged or its arrays do not fill the bytes.
struct CheckpointTensor {
  std::string name;     // "params", "optimizer_state.0", ...
  uint64_t floats = 0;  // float32 values
  uint64_t offset = 0;  // of its first byte in the encoded form
};
struct CheckpointLayout {
  int64_t step = 0;
  double wallMs = 0.0;
  std::vector<int64_t> rankSteps;
  std::string strategy;
  std::string optimizer;
  nlohmann::json strategyState;
  std::vector<CheckpointTensor> tensors;

  int64_t stepOf(std::size_t rank) const {  // as Checkpoint::stepOf
    return rank < rankSteps.size() ? rankSteps[rank] : step;
  }
};
CheckpointLayout describeCheckpoint(std::span<const unsigned char> bytes);
// The same after the checksum pass, and nothing copied: what the coordinator checks of a
// checkpoint a node sent before it stores the bytes as they came.
CheckpointLayout verifyCheckpoint(std::span<const unsigned char> bytes);

}  // namespace dtlab::core
