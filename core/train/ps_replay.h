#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/train/push_record.h"

// Replay of an asynchronous parameter-server run (async_ps, ssp) from its record (issue 23):
// in one process, every worker's gradients are computed again from the weights it had pulled,
// on the same batches, and every block applies them in the order the server applied them, to
// the same versions. Each worker's gradient of push k is a function of the weights it pulled
// and its k-th batch, and each block's update a function of its state and the gradient, so the
// replay ends on the run's parameters bit for bit, on the same CPU code (one thread per worker,
// as the daemons run by default); where a gradient comes out other than the recorded one
// (its fingerprint), the replay says which push diverged first.

namespace dtlab::core {

struct PsReplayResult {
  int64_t pushesApplied = 0;
  // Per worker, the checksum (paramChecksum) of its replica as the record says it ended (the
  // blocks at the versions of its last pull); empty for a worker with no replica record.
  std::vector<std::string> replicaChecksums;
  // Every block's final parameters, in layout order (the server's state after the last push).
  std::vector<float> serverParams;
  // Empty: every recomputed gradient matched its record. Else the first push whose gradient
  // differed ("push 57 (worker 2's push 14): ...").
  std::string divergence;
};

// Replays `pushes` (any order; each worker's clocks 1, 2, ... and each block's appliedTo 0, 1,
// ... without a gap, else throws Error naming the first hole) of the spec's variant on `world`
// workers, and rebuilds each worker's final replica from `replicas`. Throws Error for a record
// that cannot be replayed (not a parameter-server strategy, a gap, an order no execution could
// have had).
PsReplayResult replayParameterServer(const ExperimentSpec& spec, int variant, int world,
                                     const std::vector<PushRecord>& pushes,
                                     const std::vector<ReplicaRecord>& replicas);

}  // namespace dtlab::core
