#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/train/push_record.h"

// Replay of an asynchronous parameter-server run (async_ps, ssp, a hybrid's asynchronous
// phases) from its record (issue 23):
// in one process, every worker's gradients are computed again from the weights it had pulled,
// on the same batches, and every block applies them in the order the server applied them, to
// the same versions. Each worker's gradient of push k is a function of the weights it pulled
// and its k-th batch, and each block's update a function of its state and the gradient, so the
// replay ends on the run's parameters bit for bit, on the same CPU code (one thread per worker,
// as the daemons run by default); where a gradient comes out other than the recorded one
// (its fingerprint), the replay says which push diverged first.

namespace dtlab::core {

// A replica the record names (a worker's pull at the end of the run or of a hybrid's
// asynchronous phase): the checksum the worker took, and the replay's of the same versions.
struct ReplicaCheck {
  int worker = 0;
  int64_t phase = -1;  // -1: the end of the run
  std::string recorded;
  std::string replayed;
};

// With `until`: the update that completed the step (the push block 0 applied last before the
// cut), and the test loss and accuracy of the server's parameters with every block one update
// before the cut and at the cut.
struct ReplayCutUpdate {
  PushRecord push;
  int64_t staleness = 0;  // the most versions any block moved between its pull and its push
  double lossBefore = 0.0;
  double lossAfter = 0.0;
  double accuracyBefore = 0.0;  // NaN for regression
  double accuracyAfter = 0.0;
};

struct PsReplayResult {
  int64_t pushesApplied = 0;
  int64_t resetsApplied = 0;
  // Per worker, the replay's checksum (paramChecksum) of its replica at the end of the run (the
  // blocks at the versions of its last pull); empty for a worker with no such record.
  std::vector<std::string> replicaChecksums;
  std::vector<ReplicaCheck> replicas;  // every replica record, in record order
  // Every block's parameters, in layout order: after the last push, or at the cut of `until`.
  std::vector<float> serverParams;
  // With `until`: the pushes whose gradients were computed before the cut and applied after it
  // (in flight at that moment), in the order of their first block's application.
  std::vector<PushRecord> pending;
  std::vector<int64_t> versions;          // every block's version at the end (or the cut)
  std::optional<ReplayCutUpdate> update;  // with `until`, unless no push came before the cut
  // Empty: every recomputed gradient and every replica matched the record. Else the first
  // push whose gradient differed ("worker 2's push 14 (computed from ...) is the first ..."),
  // or the first replica that did.
  std::string divergence;
};

// Replays the record's pushes (any order; each worker's clocks 1, 2, ... and each block's
// appliedTo 0, 1, ... without a gap, a reset starting a new run of versions, else throws Error
// naming the first hole) of the spec's variant on `world` workers, applying its resets where
// they fall, and rebuilds every replica it names. Throws Error for a record that cannot be
// replayed (a strategy without a record, a gap, an order no execution could have had).
// until: stop at the server's state after global step `until` (every block at version
// until * world: a version counts pushes, each a worker's share of a global batch), leaving the
// replicas unchecked and listing the pushes in flight then.
PsReplayResult replayParameterServer(const ExperimentSpec& spec, int variant, int world,
                                     const PsRecordChunk& record,
                                     std::optional<int64_t> until = std::nullopt);

}  // namespace dtlab::core
