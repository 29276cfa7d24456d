#include "app/replay_command.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/project_command.h"
#include "core/analysis/run_replay.h"
#include "core/common/check.h"
#include "core/nn/model.h"
#include "core/store/project_store.h"
#include "core/train/ps_replay.h"
#include "core/train/push_record.h"
#include "core/train/strategy_registry.h"

namespace dtlab::app {
namespace {

// --until: the server at the cut, the pushes in flight then, and the weights to a file.
int printCut(const std::string& named, int64_t step, const core::PsReplayResult& replay,
             const std::string& weightsPath, double seconds) {
  std::cout << named << " replayed to step " << step << " in " << seconds
            << " s: " << replay.pushesApplied << " pushes applied, the server's blocks at versions "
            << core::versionList(replay.versions) << ", parameters "
            << core::paramChecksum(replay.serverParams) << "\n";
  nlohmann::json update = nullptr;
  if (const auto& u = replay.update) {
    std::cout << "the update that completed the step: worker " << u->push.worker << "'s push "
              << u->push.clock << ", computed from versions " << core::versionList(u->push.basedOn)
              << " (staleness " << u->staleness << "); test loss " << u->lossBefore << " before, "
              << u->lossAfter << " after";
    if (!std::isnan(u->accuracyAfter))
      std::cout << " (accuracy " << u->accuracyBefore << " -> " << u->accuracyAfter << ")";
    std::cout << "\n";
    update = {{"worker", u->push.worker},    {"push", u->push.clock},
              {"based_on", u->push.basedOn}, {"applied_to", u->push.appliedTo},
              {"staleness", u->staleness},   {"loss_before", u->lossBefore},
              {"loss_after", u->lossAfter}};
  }
  nlohmann::json pending = nlohmann::json::array();
  std::cout << replay.pending.size() << " pushes in flight (computed before the step, applied "
            << "after it):\n";
  for (const core::PushRecord& p : replay.pending) {
    const int64_t staleness = core::pushStaleness(p);
    std::cout << "  worker " << p.worker << "'s push " << p.clock << ": computed from versions "
              << core::versionList(p.basedOn) << ", applied at " << core::versionList(p.appliedTo)
              << " (staleness " << staleness << ")\n";
    pending.push_back({{"worker", p.worker},
                       {"push", p.clock},
                       {"based_on", p.basedOn},
                       {"applied_to", p.appliedTo},
                       {"staleness", staleness}});
  }
  if (!weightsPath.empty()) {
    std::ofstream out(weightsPath, std::ios::binary);
    out.write(reinterpret_cast<const char*>(replay.serverParams.data()),
              static_cast<std::streamsize>(replay.serverParams.size() * sizeof(float)));
    out.close();
    if (!out) throw Error("--weights " + weightsPath + ": cannot write it");
    std::cout << "weights: " << replay.serverParams.size() << " float32 (little-endian) in "
              << weightsPath << "\n";
  }
  if (!replay.divergence.empty()) std::cout << "diverged: " << replay.divergence << "\n";
  std::cout << nlohmann::json{{"replay",
                               {{"until", step},
                                {"pushes", replay.pushesApplied},
                                {"versions", replay.versions},
                                {"checksum", core::paramChecksum(replay.serverParams)},
                                {"update", update},
                                {"pending", pending},
                                {"divergence", replay.divergence}}}}
                   .dump()
            << std::endl;
  return replay.divergence.empty() ? 0 : 1;
}

}  // namespace

int replayCommand(const std::vector<std::string>& argv) {
  const Args args(argv, {"--until", "--weights"}, {});
  if (args.positionals().size() != 2) throw UsageError("replay: expected P.dtlab and a RUN id");
  const std::string& path = args.positionals()[0];
  const int64_t runId = parseRunId(args.positionals()[1]);
  auto store = core::ProjectStore::open(path, /*readOnly=*/true);
  const core::StoredRunReplay stored = core::loadStoredRunReplay(*store, runId);
  const std::string& named = stored.named;
  const std::vector<std::string>& expected = stored.checksums;
  const int world = stored.world;

  std::optional<int64_t> until;
  if (args.has("--until")) until = args.integer("--until", 0, 0, INT64_MAX);
  if (args.has("--weights") && !until) throw UsageError("replay: --weights needs --until STEP");

  const auto start = std::chrono::steady_clock::now();
  const core::PsReplayResult replay = core::replayStoredRun(stored, until);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (until) return printCut(named, *until, replay, args.value("--weights", ""), seconds);

  bool same = replay.divergence.empty();
  nlohmann::json replicas = nlohmann::json::array();
  std::cout << named << ": " << stored.strategy << ", " << replay.pushesApplied << " pushes of "
            << world << " workers";
  if (replay.resetsApplied > 0)
    std::cout << " in " << replay.resetsApplied << " asynchronous phases";
  std::cout << " replayed in " << seconds << " s, one CPU thread each\n";
  for (const core::ReplicaCheck& r : replay.replicas) {
    // The end of the run is also the run's own checksum of that worker, when the run ended
    // there (a hybrid may end in a synchronous phase, which has no record).
    const bool atEnd = r.phase < 0;
    const std::string& run = r.recorded;
    const bool match = !r.replayed.empty() && r.replayed == run;
    same = same && match;
    std::cout << "  worker " << r.worker
              << (atEnd ? " at the end: "
                        : " at the end of asynchronous phase " + std::to_string(r.phase) + ": ")
              << r.replayed
              << (match ? "  = the run's, bit for bit" : "  differs from the run's " + run) << "\n";
    replicas.push_back({{"worker", r.worker},
                        {"phase", r.phase},
                        {"checksum", r.replayed},
                        {"run", run},
                        {"same", match}});
  }
  // The summary's checksums are the replicas' at the end, unless the strategy switches phases
  // (it may have ended synchronous).
  const bool endedAsync = std::any_of(replay.replicas.begin(), replay.replicas.end(),
                                      [](const core::ReplicaCheck& r) { return r.phase < 0; });
  const core::StrategyDescriptor* descriptor = core::findStrategy(stored.strategy);
  const bool phased = descriptor != nullptr && descriptor->traits.switchesPhases;
  for (int w = 0; endedAsync && !phased && w < world; ++w) {
    const std::string& got = replay.replicaChecksums[static_cast<std::size_t>(w)];
    if (w < static_cast<int>(expected.size()) && got != expected[static_cast<std::size_t>(w)]) {
      same = false;
      std::cout << "  worker " << w << ": the summary's checksum "
                << expected[static_cast<std::size_t>(w)] << " is not the replay's "
                << (got.empty() ? "(none)" : got) << "\n";
    }
  }
  if (!replay.divergence.empty()) std::cout << "diverged: " << replay.divergence << "\n";
  std::cout << nlohmann::json{{"replay",
                               {{"run", runId},
                                {"pushes", replay.pushesApplied},
                                {"replicas", replicas},
                                {"same", same},
                                {"divergence", replay.divergence}}}}
                   .dump()
            << std::endl;
  return same ? 0 : 1;
}

}  // namespace dtlab::app
