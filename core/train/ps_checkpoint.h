#pragma once
// Checkpoints of the parameter server (async_ps and ssp): the server's blocks are the run's
// state, so a checkpoint is taken from them (rank 0 has every shard set a copy of its blocks
// aside at a step boundary, then fetches the copies beside the next steps:
// ParameterClient::stageSnapshot) and a run continues from one by seeding the blocks of
// whichever hosts serve it now (ParameterHost::restore, on each shard's daemon as it accepts
// the job): a resume, or a restart on the surviving nodes after a shard's node was lost.
#include <cstdint>
#include <vector>

#include "core/train/checkpoint.h"
#include "core/train/parameter_server.h"

namespace dtlab::core {

// The checkpoint of a server whose blocks (`layout`) and board gave `snapshot`, on a run
// planning `updatesPlanned` optimizer steps (the learning-rate schedule's length):
//   params, optimizerState  every block's, in buffer order: the flat form of a replica's,
//                           so the checkpoint does not depend on how the blocks were cut;
//   rankSteps               each worker's clock (pushes done: an async_ps or ssp rank's step);
//   step                    the run's progress in global batches (every clock added up,
//                           over the workers);
//   strategyState           {"blocks": [[begin, end, version], ...], "updates_planned": U,
//                            "clocks": [each worker's]}.
// The caller fills in strategy, optimizer and time. (A strategy that holds its replicas
// elsewhere between phases may keep "clocks" alone: the board is then restored without the
// blocks.)
Checkpoint serverCheckpoint(const ServerSnapshot& snapshot, const std::vector<PsBlock>& layout,
                            int64_t updatesPlanned);
// The same into `out` (its arrays' memory reused; step, rankSteps, params, optimizerState and
// strategyState are set, the rest left as they are).
void serverCheckpoint(const ServerSnapshot& snapshot, const std::vector<PsBlock>& layout,
                      int64_t updatesPlanned, Checkpoint& out);

// The version a block starting at `begin` continues from on a server planning
// `updatesPlanned` steps: the version of the checkpoint's block holding `begin`, scaled to the
// new plan when the number of workers changed (so the schedule keeps its place in the run).
int64_t restoredVersion(const Checkpoint& checkpoint, int64_t begin, int64_t updatesPlanned);

// The clocks `workers` workers continue from: the checkpoint's own for as many workers; for
// another number, every worker at the mean (so the run's progress, pushes over workers, stays).
// Throws Error when the checkpoint keeps no clocks.
std::vector<int64_t> restoredClocks(const Checkpoint& checkpoint, int workers);

}  // namespace dtlab::core
