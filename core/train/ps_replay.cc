#include "core/train/ps_replay.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>

#include "core/backend/backend.h"
#include "core/common/check.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/nn/model.h"
#include "core/train/async_ps.h"
#include "core/train/compression_settings.h"
#include "core/train/data_shards.h"
#include "core/train/local_trainer.h"
#include "core/train/parameter_server.h"
#include "core/train/ps_encoding.h"
#include "core/train/strategy_registry.h"
#include "core/train/worker.h"

namespace dtlab::core {
namespace {

std::string pushName(const PushRecord& p) {
  return "worker " + std::to_string(p.worker) + "'s push " + std::to_string(p.clock);
}

// One worker of the replay: its replica, on its own data, and its pushes in clock order.
struct ReplayWorker {
  std::unique_ptr<Worker> worker;
  std::unique_ptr<PushSparsifier> sparsifier;  // a topk run's, with its kept error
  int64_t localBatch = 0;
  std::vector<std::size_t> pushes;  // indices into the record, clock 1, 2, ...
  std::size_t next = 0;             // the next to compute
};

}  // namespace

PsReplayResult replayParameterServer(const ExperimentSpec& spec, int variant, int world,
                                     const PsRecordChunk& record, std::optional<int64_t> until) {
  const std::vector<PushRecord>& pushes = record.pushes;
  const std::vector<ReplicaRecord>& replicas = record.replicas;
  if (variant < 0 || variant >= static_cast<int>(spec.variants.size()))
    throw Error("variant " + std::to_string(variant) + " does not exist");
  const StrategyDescriptor& strategy = strategyOf(spec.variants[static_cast<std::size_t>(variant)]);
  if (!strategy.traits.replaysFromRecord)
    throw Error(strategy.name +
                " runs are not replayed from a record: their workers agree on every step");
  if (world < 1) throw Error("a replay needs at least one worker");
  if (until && *until < 0) throw Error("--until must be a step >= 0");
  // The version every block stops before (none: the end of the record).
  const int64_t cut = until ? *until * world : INT64_MAX;

  const std::unique_ptr<Dataset> dataset = makeDataset(spec.dataset);
  const std::unique_ptr<Backend> backend = makeBackend("cpu", 1);
  const int64_t global = spec.training.batchSize;
  const int64_t totalSteps = plannedSteps(spec, dataset->size(Split::kTrain) / global);
  const std::unique_ptr<ParameterHost> host =
      makeParameterHost(spec, variant, world, -1, totalSteps);
  const std::vector<PsBlock> layout = psLayoutFor(spec, variant, world);
  const std::size_t blocks = layout.size();
  const int64_t paramCount = layout.back().end;
  // A compressed run's pushes and pulls as its workers and server saw them (ps_encoding.h).
  const VariantConfig& config = spec.variants[static_cast<std::size_t>(variant)];
  const CompressionConfig compression = compressionOf(strategy.view(config));
  std::vector<GradientRange> ranges;
  for (const PsBlock& b : layout) ranges.push_back({b.begin, b.end});

  // The record, checked: every push names a worker, and every worker's clocks and every
  // block's versions run without a gap.
  std::vector<ReplayWorker> workers(static_cast<std::size_t>(world));
  std::vector<std::vector<std::size_t>> order(blocks);  // per block, pushes by appliedTo
  for (std::size_t i = 0; i < pushes.size(); ++i) {
    const PushRecord& p = pushes[i];
    if (p.worker < 0 || p.worker >= world)
      throw Error("the record has a push of worker " + std::to_string(p.worker) + " in a run of " +
                  std::to_string(world) + " workers");
    if (p.basedOn.size() != blocks || p.appliedTo.size() != blocks)
      throw Error(pushName(p) + " names " + std::to_string(p.appliedTo.size()) +
                  " blocks; the run's server has " + std::to_string(blocks));
    for (std::size_t b = 0; b < blocks; ++b) {
      if (p.basedOn[b] < 0 || p.basedOn[b] > p.appliedTo[b])
        throw Error(pushName(p) + " was applied to block " + std::to_string(b) + " at version " +
                    std::to_string(p.appliedTo[b]) + " but computed from version " +
                    std::to_string(p.basedOn[b]));
      order[b].push_back(i);
    }
    workers[static_cast<std::size_t>(p.worker)].pushes.push_back(i);
  }
  for (ReplayWorker& w : workers) {
    std::sort(w.pushes.begin(), w.pushes.end(),
              [&](std::size_t a, std::size_t b) { return pushes[a].clock < pushes[b].clock; });
    for (std::size_t k = 0; k < w.pushes.size(); ++k)
      if (pushes[w.pushes[k]].clock != static_cast<int64_t>(k) + 1)
        throw Error("the record misses worker " + std::to_string(pushes[w.pushes[k]].worker) +
                    "'s push " + std::to_string(k + 1) + " (its next recorded push is " +
                    std::to_string(pushes[w.pushes[k]].clock) + ")");
  }
  // A hybrid's switches: every block starts again from the reset's values at its version.
  std::vector<const ResetRecord*> resets;
  for (const ResetRecord& r : record.resets) {
    if (static_cast<int64_t>(r.params.size()) != paramCount)
      throw Error("the record's reset of epoch " + std::to_string(r.epoch) + " holds " +
                  std::to_string(r.params.size()) + " parameters; the model has " +
                  std::to_string(paramCount));
    resets.push_back(&r);
  }
  std::sort(resets.begin(), resets.end(),
            [](const ResetRecord* x, const ResetRecord* y) { return x->epoch < y->epoch; });
  for (std::size_t k = 1; k < resets.size(); ++k)
    if (resets[k]->version < resets[k - 1]->version || resets[k]->epoch == resets[k - 1]->epoch)
      throw Error("the record's resets go back: epoch " + std::to_string(resets[k]->epoch) +
                  " at version " + std::to_string(resets[k]->version));
  for (std::size_t b = 0; b < blocks; ++b) {
    std::sort(order[b].begin(), order[b].end(), [&](std::size_t x, std::size_t y) {
      return pushes[x].appliedTo[b] < pushes[y].appliedTo[b];
    });
    int64_t expected = 0;
    std::size_t reset = 0;
    for (std::size_t k = 0; k < order[b].size(); ++k) {
      const PushRecord& p = pushes[order[b][k]];
      for (; reset < resets.size() && resets[reset]->version <= p.appliedTo[b]; ++reset) {
        if (resets[reset]->version < expected)
          throw Error("the record's reset of epoch " + std::to_string(resets[reset]->epoch) +
                      " at version " + std::to_string(resets[reset]->version) +
                      " falls among block " + std::to_string(b) + "'s pushes up to version " +
                      std::to_string(expected - 1));
        expected = resets[reset]->version;
      }
      if (p.appliedTo[b] != expected)
        throw Error("the record misses the push applied to block " + std::to_string(b) +
                    " at version " + std::to_string(expected) + " (next: " + pushName(p) + " at " +
                    std::to_string(p.appliedTo[b]) + ")");
      ++expected;
    }
  }

  // Versions some gradient or final replica was computed from: each block keeps a copy of its
  // parameters at each of them until the last use.
  std::vector<std::map<int64_t, int>> uses(blocks);
  for (const PushRecord& p : pushes)
    for (std::size_t b = 0; b < blocks; ++b) ++uses[b][p.basedOn[b]];
  for (const ReplicaRecord& r : replicas) {
    if (r.worker < 0 || r.worker >= world || r.versions.size() != blocks)
      throw Error("the record's replica of worker " + std::to_string(r.worker) +
                  " does not fit a run of " + std::to_string(world) + " workers and " +
                  std::to_string(blocks) + " blocks");
    for (std::size_t b = 0; b < blocks; ++b) ++uses[b][r.versions[b]];
  }
  std::vector<std::map<int64_t, std::vector<float>>> kept(blocks);
  auto keepIfUsed = [&](std::size_t b) {
    const int64_t version = host->block(static_cast<int>(b))->version();
    if (uses[b].count(version) == 0 || kept[b].count(version) != 0) return;
    std::vector<float>& copy = kept[b][version];
    copy.resize(static_cast<std::size_t>(layout[b].size()));
    host->block(static_cast<int>(b))->pull(copy.data());
  };
  auto release = [&](std::size_t b, int64_t version) {
    if (--uses[b][version] == 0) {
      uses[b].erase(version);
      kept[b].erase(version);
    }
  };

  // Every worker starts from the same initial weights (the run's seed); the first one's go in.
  for (int r = 0; r < world; ++r) {
    WorkerData data = workerData(spec, *dataset, r, world, SharedDraw::kContiguousRanges);
    ReplayWorker& w = workers[static_cast<std::size_t>(r)];
    w.worker = std::make_unique<Worker>(spec, *backend, *dataset, std::move(data.samples),
                                        data.slice, totalSteps * world);
    w.localBatch = BatchSlice::equal(global, r, world).count;
    if (compression.kind == CompressionKind::kTopK)
      w.sparsifier = std::make_unique<PushSparsifier>(compression.ratio, paramCount);
  }
  LocalParameterClient(*host, layout, 0).init(workers[0].worker->model().params());
  for (std::size_t b = 0; b < blocks; ++b) keepIfUsed(b);

  PsReplayResult result;
  // Each block's next reset, applied once the block has applied every push before it (so that
  // the gradients computed from the reset's values can be).
  std::vector<std::size_t> nextReset(blocks, 0);
  std::vector<std::size_t> next(blocks, 0);
  auto applyResets = [&](std::size_t b) {
    bool applied = false;
    while (nextReset[b] < resets.size() && resets[nextReset[b]]->version < cut &&
           (next[b] == order[b].size() ||
            pushes[order[b][next[b]]].appliedTo[b] >= resets[nextReset[b]]->version)) {
      const ResetRecord& r = *resets[nextReset[b]++];
      host->block(static_cast<int>(b))
          ->reset(r.params.data() + layout[b].begin, layout[b].size(), r.version, r.epoch);
      keepIfUsed(b);
      if (b == 0) ++result.resetsApplied;
      applied = true;
    }
    return applied;
  };
  std::vector<std::vector<float>> grads(pushes.size());
  std::vector<std::size_t> blocksLeft(pushes.size(), blocks);
  // With `until`: each block's parameters just before the update it applied last before the
  // cut, and block 0's update there.
  std::vector<float> before(until ? static_cast<std::size_t>(paramCount) : 0);
  std::vector<bool> captured(blocks, false);
  std::optional<std::size_t> lastOfBlock0;
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t b = 0; b < blocks; ++b) progress = applyResets(b) || progress;
    // Each worker computes its next gradients once every block has reached the versions it
    // pulled for them.
    for (ReplayWorker& w : workers) {
      while (w.next < w.pushes.size()) {
        const std::size_t i = w.pushes[w.next];
        const PushRecord& p = pushes[i];
        bool ready = true;
        for (std::size_t b = 0; b < blocks && ready; ++b) ready = kept[b].count(p.basedOn[b]) != 0;
        if (!ready) break;
        Model& model = w.worker->model();
        const bool compressing = compressesPush(compression, p.clock);
        const PsEncoding pulledAs = compressing ? pullEncoding(compression) : PsEncoding::kFloat32;
        for (std::size_t b = 0; b < blocks; ++b) {
          const std::vector<float>& from = kept[b].at(p.basedOn[b]);
          std::copy(from.begin(), from.end(), model.params() + layout[b].begin);
          roundTrip(pulledAs, model.params() + layout[b].begin, layout[b].size());
          release(b, p.basedOn[b]);
        }
        w.worker->loadBatch();
        w.worker->computeGradients(1.0f / static_cast<float>(w.localBatch));
        if (compressing && w.sparsifier) w.sparsifier->apply(model.grads(), ranges);
        const float* g = model.grads();
        if (p.gradient != 0 && result.divergence.empty() &&
            gradientFingerprint(g, paramCount) != p.gradient)
          result.divergence = pushName(p) + " (computed from block versions " +
                              versionList(p.basedOn) + ") is the first whose gradient differs " +
                              "from the run's: the weights it was computed from, or its batch, " +
                              "are not the run's";
        grads[i].assign(g, g + paramCount);
        // What the server applied: the push's encoding delivered it.
        if (compressing)
          for (const GradientRange& b : ranges)
            roundTrip(pushEncoding(compression), grads[i].data() + b.begin, b.size());
        ++w.next;
        progress = true;
      }
    }
    // Each block applies the gradients in its recorded order, as far as they are computed.
    for (std::size_t b = 0; b < blocks; ++b) {
      while (next[b] < order[b].size() && pushes[order[b][next[b]]].appliedTo[b] < cut &&
             !grads[order[b][next[b]]].empty()) {
        const std::size_t i = order[b][next[b]];
        const PushRecord& p = pushes[i];
        if (until && p.appliedTo[b] == cut - 1) {
          host->block(static_cast<int>(b))->pull(before.data() + layout[b].begin);
          captured[b] = true;
          if (b == 0) lastOfBlock0 = i;
        }
        const int64_t appliedTo =
            host->block(static_cast<int>(b))
                ->push(grads[i].data() + layout[b].begin, layout[b].size(), p.basedOn[b]);
        DTLAB_ENFORCE(appliedTo == p.appliedTo[b], "block ", b, " applied ", pushName(p), " at ",
                      appliedTo, ", not at the recorded ", p.appliedTo[b]);
        ++next[b];
        if (--blocksLeft[i] == 0) {
          grads[i] = {};
          ++result.pushesApplied;
        }
        keepIfUsed(b);
        applyResets(b);
        progress = true;
      }
    }
  }
  if (until) {
    // The cut: each block at its version of the step; what was computed from before it and
    // applied after it was in flight.
    result.serverParams.resize(static_cast<std::size_t>(paramCount));
    for (std::size_t b = 0; b < blocks; ++b)
      result.versions.push_back(
          host->block(static_cast<int>(b))->pull(result.serverParams.data() + layout[b].begin));
    for (std::size_t i = 0; i < pushes.size(); ++i)
      if (!grads[i].empty() && blocksLeft[i] > 0) result.pending.push_back(pushes[i]);
    std::sort(result.pending.begin(), result.pending.end(),
              [](const PushRecord& x, const PushRecord& y) {
                return x.appliedTo.front() < y.appliedTo.front();
              });
    if (lastOfBlock0) {
      ReplayCutUpdate u;
      u.push = pushes[*lastOfBlock0];
      u.staleness = pushStaleness(u.push);
      for (std::size_t b = 0; b < blocks; ++b) {
        if (!captured[b])  // no update of this block right before the cut: it stood still
          std::copy_n(result.serverParams.data() + layout[b].begin, layout[b].size(),
                      before.data() + layout[b].begin);
      }
      EvalSet test(*dataset, Split::kTest, *backend);
      Worker& probe = *workers[0].worker;
      probe.model().setParams(before);
      const Evaluation b = probe.evaluate(test);
      probe.model().setParams(result.serverParams);
      const Evaluation a = probe.evaluate(test);
      u.lossBefore = b.loss;
      u.accuracyBefore = b.accuracy;
      u.lossAfter = a.loss;
      u.accuracyAfter = a.accuracy;
      result.update = u;
    }
    return result;
  }
  for (std::size_t b = 0; b < blocks; ++b)
    if (next[b] < order[b].size()) {
      const PushRecord& p = pushes[order[b][next[b]]];
      throw Error("the record's order cannot have happened: block " + std::to_string(b) +
                  " applied " + pushName(p) + " at version " + std::to_string(p.appliedTo[b]) +
                  ", which was computed from versions " + versionList(p.basedOn) +
                  " that the record's pushes reach only after it");
    }

  result.replicaChecksums.assign(static_cast<std::size_t>(world), std::string());
  for (const ReplicaRecord& r : replicas) {
    std::vector<float> params(static_cast<std::size_t>(paramCount));
    for (std::size_t b = 0; b < blocks; ++b) {
      const auto from = kept[b].find(r.versions[b]);
      if (from == kept[b].end())
        throw Error("worker " + std::to_string(r.worker) + "'s replica was pulled at block " +
                    std::to_string(b) + " version " + std::to_string(r.versions[b]) +
                    ", which the record never reaches");
      std::copy(from->second.begin(), from->second.end(), params.begin() + layout[b].begin);
    }
    ReplicaCheck check{r.worker, r.phase, r.checksum, paramChecksum(params)};
    if (r.phase < 0) result.replicaChecksums[static_cast<std::size_t>(r.worker)] = check.replayed;
    if (!check.recorded.empty() && check.recorded != check.replayed && result.divergence.empty())
      result.divergence =
          "worker " + std::to_string(r.worker) + "'s replica " +
          (r.phase < 0 ? std::string("at the end")
                       : "at the end of asynchronous phase " + std::to_string(r.phase)) +
          " (block versions " + versionList(r.versions) + ") is " + check.replayed +
          ", the run's " + check.recorded;
    result.replicas.push_back(std::move(check));
  }
  // Phase by phase, the end of the run last; worker by worker.
  std::stable_sort(result.replicas.begin(), result.replicas.end(),
                   [](const ReplicaCheck& x, const ReplicaCheck& y) {
                     const int64_t px = x.phase < 0 ? INT64_MAX : x.phase;
                     const int64_t py = y.phase < 0 ? INT64_MAX : y.phase;
                     return px != py ? px < py : x.worker < y.worker;
                   });
  result.serverParams.resize(static_cast<std::size_t>(paramCount));
  for (std::size_t b = 0; b < blocks; ++b)
    result.versions.push_back(
        host->block(static_cast<int>(b))->pull(result.serverParams.data() + layout[b].begin));
  return result;
}

}  // namespace dtlab::core
