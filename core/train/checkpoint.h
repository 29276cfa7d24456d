#pragma once

#include <cstdint>
#include <span>
#include <string>
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
  int64_t step = 0;       // the last step taken; a resumed run's first is step + 1
  double wallMs = 0.0;    // the run's clock when it was taken
  std::string strategy;   // the variant's strategy name
  std::string optimizer;  // "sgd", "adam", ... (Optimizer::name)
  std::vector<float> params;
  std::vector<std::vector<float>> optimizerState;  // Optimizer::state(), in its order
  nlohmann::json strategyState;                    // Strategy::checkpointState()

  bool operator==(const Checkpoint&) const = default;
};

class CheckpointError : public Error {
 public:
  using Error::Error;
};

// The stored form: magic "DTLCKPT1", a JSON header (step, time, strategy, optimizer, sizes,
// the strategy's state), the float arrays little-endian, and a 64-bit FNV-1a of everything
// before it. Decoding checks all of it and throws CheckpointError saying what is wrong.
std::vector<unsigned char> encodeCheckpoint(const Checkpoint& checkpoint);
Checkpoint decodeCheckpoint(std::span<const unsigned char> bytes);

}  // namespace dtlab::core
