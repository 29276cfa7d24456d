#include "core/analysis/run_replay.h"

#include <algorithm>

#include "core/common/check.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/train/strategy_registry.h"

namespace dtlab::core {

StoredRunReplay loadStoredRunReplay(ProjectStore& store, int64_t runId) {
  const RunRecord run = store.requireRun(runId);
  StoredRunReplay r;
  r.named = "run " + std::to_string(runId) + " ('" + run.name + "')";
  if (run.spec.is_null()) throw Error(r.named + " has no stored spec");
  r.spec = parseExperimentSpec(run.spec);
  r.variant = run.strategy == kSingleProcessStrategy ? 0 : variantOfRun(r.spec, run.name);
  const StrategyDescriptor& strategy =
      strategyOf(r.spec.variants.at(static_cast<std::size_t>(r.variant)));
  r.strategy = strategy.name;
  if (!strategy.traits.replaysFromRecord)
    throw Error(r.named + " is " + strategy.name +
                ": its workers agree on every step, so the same spec and seed repeat it "
                "(dtlab-cli run); async_ps, ssp and hybrid runs are replayed from a record");
  for (const RunEvent& e : store.events(runId))
    if (e.kind == "resume")
      throw Error(r.named + " was resumed from a checkpoint at step " + std::to_string(e.step) +
                  ": a replay follows a run recorded from its start");
  for (const std::vector<unsigned char>& chunk : store.psRecords(runId))
    r.record.add(decodePsRecords(chunk));
  if (r.record.pushes.empty())
    throw Error(r.named +
                " has no record of pushes (recorded before DTLab kept them, or "
                "stopped before its first push)");
  if (const auto summary = store.runSummary(runId);
      summary && summary->contains("param_checksum") && (*summary)["param_checksum"].is_array())
    for (const auto& c : (*summary)["param_checksum"]) r.checksums.push_back(c.get<std::string>());
  r.world = static_cast<int>(r.checksums.size());
  for (const PushRecord& p : r.record.pushes) r.world = std::max(r.world, p.worker + 1);
  return r;
}

PsReplayResult replayStoredRun(const StoredRunReplay& run, std::optional<int64_t> until) {
  return replayParameterServer(run.spec, run.variant, run.world, run.record, until);
}

}  // namespace dtlab::core
