#pragma once
// What a replay of a stored run needs (core/train/ps_replay.h), read from its project: the
// spec and variant it ran, its workers and its record. `dtlab-cli replay` and the GUI's
// "Replay to here" read runs through it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/train/ps_replay.h"
#include "core/train/push_record.h"

namespace dtlab::core {

class ProjectStore;

struct StoredRunReplay {
  std::string named;  // "run 4 ('modes/async_ps')", for messages
  std::string strategy;
  ExperimentSpec spec;
  int variant = 0;
  int world = 0;
  PsRecordChunk record;
  std::vector<std::string> checksums;  // the summary's, one per worker in rank order
};

// Reads run `runId` for a replay. Throws Error saying why it cannot be replayed: no such run,
// no stored spec, a strategy whose runs repeat from their seed instead, a run resumed from a
// checkpoint, or one without a record of pushes.
StoredRunReplay loadStoredRunReplay(ProjectStore& store, int64_t runId);

// Replays it (to the end, or to global step `until`).
PsReplayResult replayStoredRun(const StoredRunReplay& run,
                               std::optional<int64_t> until = std::nullopt);

}  // namespace dtlab::core
