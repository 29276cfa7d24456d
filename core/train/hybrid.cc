#include "core/train/hybrid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/comm/communicator.h"
#include "core/common/log.h"
#include "core/common/statistics.h"
#include "core/metrics/event_facts.h"
#include "core/train/checkpoint.h"
#include "core/train/compression_settings.h"
#include "core/train/parameter_server.h"
#include "core/train/push_record.h"

namespace dtlab::core {

namespace {

std::string fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

constexpr const char* kName = "hybrid";
constexpr const char* kSyncThenAsync = "sync_then_async";
constexpr const char* kAdaptive = "adaptive";
// Synchronous steps at the start of the run that the adaptive policy does not time.
constexpr int64_t kUntimedSteps = 1;

}  // namespace

StrategyDescriptor hybridDescriptor() {
  StrategyDescriptor d;
  d.name = kName;
  d.summary = "Synchronous all-reduce and the parameter server in one run, switching between them";
  d.traits.usesParameterServer = true;
  d.traits.keepsCheckpoints = true;
  d.traits.replaysFromRecord = true;  // its asynchronous phases, from the record's resets
  d.traits.switchesPhases = true;
  const SettingSchema policy{
      .key = "policy",
      .type = SettingType::kChoice,
      .label = "Policy",
      .help =
          "sync_then_async: switch at a fraction of the run; adaptive: switch on measured "
          "stragglers",
      .defaultValue = std::string(kSyncThenAsync),
      .choices = {kSyncThenAsync, kAdaptive}};
  const SettingSchema switchAt{
      .key = "switch_at",
      .type = SettingType::kReal,
      .label = "Switch\nat",
      .help = "Fraction of the run's steps trained synchronously before the switch to async",
      .defaultValue = 0.5,
      .min = 0.0,
      .max = 1.0,
      .minOpen = true,
      .maxOpen = true,
      .when = SettingCondition{"policy", {kSyncThenAsync}}};
  const SettingSchema ratio{
      .key = "straggler_ratio",
      .type = SettingType::kReal,
      .label = "Straggler\nratio",
      .help = "Slowest / median step time above which the adaptive hybrid trains asynchronously",
      .defaultValue = 1.5,
      .min = 1.0,
      .max = 1000.0,
      .minOpen = true,
      .when = SettingCondition{"policy", {kAdaptive}}};
  const SettingSchema window{
      .key = "window",
      .label = "Window",
      .help = "Steps the straggler ratio must hold before the adaptive hybrid switches",
      .defaultValue = int64_t{20},
      .min = 1,
      .max = 1'000'000,
      .when = SettingCondition{"policy", {kAdaptive}}};
  d.settings = {bucketKbSetting(), psShardsSetting(), policy, switchAt, ratio, window};
  for (SettingSchema& s : compressionSettings(/*collective=*/false))
    d.settings.push_back(std::move(s));
  d.settings.push_back(onNodeLossSetting(NodeLossPolicy::kContinue));
  d.check = checkPsShards;
  d.serverWatch = [](const VariantConfig& v) -> std::optional<ServerWatchSettings> {
    const HybridOptions options = HybridOptions::of(v);
    if (!options.adaptive) return std::nullopt;
    return ServerWatchSettings{options.stragglerRatio, options.window};
  };
  // The simulator's model: the synchronous phase, then the asynchronous one, from the step
  // the policy switches at. sync_then_async: switch_at of the steps. adaptive: the straggler
  // ratio of the modelled nodes (slowest / median mean compute of an equal share, pauses
  // averaged in, as the run's moving average counts them) held for `window` steps after the
  // untimed first; the nodes do not change, so once asynchronous it stays so.
  d.simulate = [](const VariantConfig& v, const sim::ClusterModel& cluster,
                  const sim::ModelShape& model, const sim::SimOptions& options) {
    const HybridOptions o = HybridOptions::of(v);
    int64_t syncSteps = options.steps;
    if (!o.adaptive) {
      // The run switches at switch_at of its planned steps (as Hybrid::setUp), which a run
      // ended early by its target may never reach.
      const double planned =
          static_cast<double>(options.plannedSteps > 0 ? options.plannedSteps : options.steps);
      const double ran = options.ranSteps > 0 ? static_cast<double>(options.ranSteps) : planned;
      const double switchStep = std::max(1.0, std::round(o.switchAt * planned));
      syncSteps =
          std::llround(std::min(1.0, switchStep / ran) * static_cast<double>(options.steps));
    } else {
      const std::vector<int64_t> shares =
          sim::equalShares(options.globalBatch, static_cast<int>(cluster.nodes.size()));
      std::vector<double> means;
      for (std::size_t i = 0; i < cluster.nodes.size(); ++i)
        means.push_back(cluster.nodes[i].meanSeconds(shares[i]));
      const double slowest = *std::max_element(means.begin(), means.end());
      const double ratio = slowest / median(means);
      if (ratio > o.stragglerRatio) syncSteps = std::min(options.steps, kUntimedSteps + o.window);
    }
    std::vector<std::pair<sim::SimResult, int64_t>> phases;
    sim::SimOptions phase = options;
    if (syncSteps > 0) {
      phase.steps = syncSteps;
      phases.emplace_back(sim::simulateSyncAllReduce(cluster, model, phase), syncSteps);
    }
    if (options.steps > syncSteps) {
      phase.steps = options.steps - syncSteps;
      sim::ParameterServerModel server;
      server.shards = psShardCount(v, static_cast<int>(cluster.nodes.size()));
      server.parallelism = cluster.serverParallelism;
      phases.emplace_back(sim::simulateParameterServer(cluster, model, phase, server), phase.steps);
    }
    return sim::runInPhases(phases);
  };
  d.make = [](StrategyContext& c) -> std::unique_ptr<Strategy> {
    return std::make_unique<Hybrid>(
        c, HybridOptions::of(c.job.spec.variants.at(static_cast<std::size_t>(c.job.variant))));
  };
  return d;
}

HybridOptions HybridOptions::of(const VariantConfig& variant) {
  const StrategyDescriptor& strategy = strategyOf(variant);
  DTLAB_ENFORCE(strategy.name == kName, "variant '", variant.name, "' is not ", kName);
  const SettingsView settings = strategy.view(variant);
  HybridOptions options;
  options.adaptive = settings.choice("policy") == kAdaptive;
  options.switchAt = settings.real("switch_at");
  options.stragglerRatio = settings.real("straggler_ratio");
  options.window = settings.integer("window");
  options.bucketKb = settings.integer("bucket_kb");
  options.compression = compressionOf(settings);
  return options;
}

CompressionTotals Hybrid::compression() const {
  CompressionTotals totals = sync_ ? sync_->compression() : CompressionTotals{};
  if (async_) totals.merge(async_->compression());
  return totals;
}

Hybrid::Hybrid(StrategyContext& context, HybridOptions options)
    : context_(context), options_(options), policy_(options.stragglerRatio, options.window) {}

Hybrid::~Hybrid() {
  try {
    finish();
  } catch (...) {  // a failing run: the server may be gone already
    logCurrentException(LogLevel::kDebug, "hybrid: leaving the parameter server");
  }
}

std::string Hybrid::setUp() {
  SyncAllReduceOptions syncOptions;
  syncOptions.bucketKb = options_.bucketKb;
  syncOptions.compression = options_.compression;
  sync_ = std::make_unique<SyncAllReduce>(context_, syncOptions);
  async_ = std::make_unique<AsyncPs>(context_, std::nullopt, options_.compression);
  const std::string syncDetail = sync_->setUp();
  const std::string asyncDetail = async_->setUp();
  syncClocks_ = std::vector<int64_t>(static_cast<std::size_t>(context_.job.world), 0);
  std::string detail = "hybrid ";
  if (!options_.adaptive) {
    if (context_.totalSteps <= 0)
      throw Error(
          "hybrid sync_then_async switches at a fraction of the run's steps, and this run has no "
          "step budget: set training.epochs or training.max_steps");
    switchStep_ = std::max<int64_t>(
        1, std::llround(options_.switchAt * static_cast<double>(context_.totalSteps)));
    detail += "sync_then_async: synchronous until step " + std::to_string(switchStep_) + " of " +
              std::to_string(context_.totalSteps);
  } else {
    detail += "adaptive: asynchronous while the straggler ratio stays above " +
              fixed(policy_.above(), 2) + ", synchronous below " + fixed(policy_.backBelow(), 2) +
              " (window " + std::to_string(policy_.window()) + " steps)";
  }
  return detail + "; sync: " + syncDetail + "; async: " + asyncDetail;
}

bool Hybrid::endRequested() const {
  return inAsync_ && async_->board().endPhase >= phase_;
}

StepReport Hybrid::step(int64_t step, const Votes& local, Votes& agreed) {
  const bool backToSync = endRequested();
  if (backToSync) switchToSync();
  if (inAsync_) {
    StepReport r = async_->step(step, local, agreed);
    if (endRequested()) {
      // Everyone must come to the synchronous steps: no stop while the request is pending
      // (the synchronous steps vote again).
      agreed[Votes::kCancel] = agreed[Votes::kTimeUp] = agreed[Votes::kTargetReached] = 0.0f;
    }
    return r;
  }

  const int64_t global = globalStep(step) + 1;
  StepReport r = sync_->step(global, local, agreed);
  ++syncSteps_;
  r.resynchronized = backToSync;
  if (!options_.adaptive) {
    if (global == switchStep_)
      switchToAsync("at step " + std::to_string(global) + " of " +
                    std::to_string(context_.totalSteps) + " (switch_at " +
                    fixed(options_.switchAt, 2) + ")");
    return r;
  }
  // adaptive: every rank learns every rank's compute time and decides the same. The run's
  // first step is not timed: it carries one-time costs (allocations, the GEMM library's first
  // calls) many times a step's compute, which would hold the smoothed times up for many steps
  // and delay the switch by as much. Every rank skips it alike (a synchronous step count).
  if (syncSteps_ <= kUntimedSteps) return r;
  std::vector<float> times(static_cast<std::size_t>(context_.job.world), 0.0f);
  times[static_cast<std::size_t>(context_.job.rank)] = static_cast<float>(r.computeMs);
  if (context_.comm != nullptr) context_.comm->allReduceSum(times.data(), context_.job.world);
  // Smoothed per worker, like the board does: a straggler that pauses on some steps only
  // shows in its mean compute time. Every rank computes the same from the same sums.
  smoothedMs_.resize(times.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t w = 0; w < times.size(); ++w) smoothInto(smoothedMs_[w], times[w]);
  const std::vector<double>& measured = smoothedMs_;
  const double ratio = stragglerRatio(measured);
  if (policy_.switchFromSync(ratio)) {
    const auto [least, most] = std::minmax_element(measured.begin(), measured.end());
    switchToAsync("straggler ratio " + fixed(ratio, 2) + " above " + fixed(policy_.above(), 2) +
                  " for " + std::to_string(policy_.window()) + " steps (compute " +
                  fixed(*least, 1) + " to " + fixed(*most, 1) + " ms a step)");
  }
  return r;
}

void Hybrid::switchToAsync(const std::string& reason) {
  const int64_t global = syncSteps_ + pushesSeen_ / context_.job.world;
  ++phase_;
  inAsync_ = true;
  async_->setPhase(phase_);
  // Every rank's synchronous replica is the same; the first to arrive seeds the server, at the
  // run's progress in pushes (the server's schedule counts pushes).
  const int64_t version = psUpdatesPlanned(global, context_.job.world);
  async_->client().reset(sync_->replica().model().params(), version, phase_ + 1);
  // For a replay: the values every block starts the phase from (every rank sends the same).
  if (context_.sink != nullptr && context_.job.rank == 0)
    context_.sink->onReset(
        ResetRecord{version, phase_ + 1, sync_->replica().model().paramsToHost()});
  context_.event(global, std::string(kSwitchEvent), "sync -> async " + reason,
                 eventData(PhaseFacts{.asynchronous = true}));
}

void Hybrid::switchToSync() {
  // Every rank has stopped pushing once all are here; then all read the same server.
  if (context_.comm != nullptr) context_.comm->barrier();
  const BoardState& board = async_->refreshBoard();
  pushesSeen_ = board.totalPushes;
  async_->beforeEvaluate();  // pulls the server's weights into the asynchronous replica
  async_->recordReplica(phase_);
  sync_->replica().model().setParams(async_->replica().model().paramsToHost());
  inAsync_ = false;
  policy_.reset();
  smoothedMs_.clear();
  syncClocks_ = gatherClocks();
  const int64_t global = syncSteps_ + pushesSeen_ / context_.job.world;
  context_.event(global, std::string(kSwitchEvent),
                 "async -> sync at step " + std::to_string(global) + ": straggler ratio " +
                     fixed(board.endRatio, 2) + " below " + fixed(policy_.backBelow(), 2) +
                     " for " + std::to_string(policy_.window()) + " steps",
                 eventData(PhaseFacts{.asynchronous = false}));
}

std::vector<int64_t> Hybrid::gatherClocks() const {
  // Each rank's own clock in its slot, as two floats (exact up to 2^36 pushes), summed.
  const std::size_t world = static_cast<std::size_t>(context_.job.world);
  const std::size_t rank = static_cast<std::size_t>(context_.job.rank);
  constexpr int64_t kLow = int64_t{1} << 18;
  std::vector<float> parts(2 * world, 0.0f);
  parts[2 * rank] = static_cast<float>(async_->clock() / kLow);
  parts[2 * rank + 1] = static_cast<float>(async_->clock() % kLow);
  if (context_.comm != nullptr && world > 1)
    context_.comm->allReduceSum(parts.data(), static_cast<int64_t>(parts.size()));
  std::vector<int64_t> clocks(world);
  for (std::size_t w = 0; w < world; ++w)
    clocks[w] = static_cast<int64_t>(parts[2 * w]) * kLow + static_cast<int64_t>(parts[2 * w + 1]);
  return clocks;
}

Votes Hybrid::agree(const Votes& local) {
  if (!inAsync_) return sync_->agree(local);
  Votes agreed = async_->agree(local);
  if (endRequested())
    agreed[Votes::kCancel] = agreed[Votes::kTimeUp] = agreed[Votes::kTargetReached] = 0.0f;
  return agreed;
}

Worker& Hybrid::replica() {
  return inAsync_ ? async_->replica() : sync_->replica();
}

int64_t Hybrid::globalStep(int64_t /*step*/) const {
  const int64_t pushes = inAsync_ ? async_->board().totalPushes : pushesSeen_;
  return syncSteps_ + pushes / context_.job.world;
}

bool Hybrid::budgetSpent(int64_t step, int64_t totalSteps) const {
  if (endRequested()) return false;
  return totalSteps > 0 && globalStep(step) >= totalSteps;
}

void Hybrid::beforeEvaluate() {
  if (inAsync_) async_->beforeEvaluate();
}

void Hybrid::finish() {
  if (async_) async_->finish();
}

void Hybrid::checkpoint(int64_t step, Checkpoint& c) const {
  if (inAsync_) {
    async_->checkpoint(step, c);
    const std::vector<int64_t> clocks = c.strategyState.at("clocks").get<std::vector<int64_t>>();
    addHybridState(c, clocks, syncSteps_, phase_, /*asynchronous=*/true);
  } else {
    sync_->checkpoint(step, c);
    addHybridState(c, clocksOfSyncPhase(), syncSteps_, phase_, /*asynchronous=*/false);
  }
}

CheckpointCopy Hybrid::checkpointBeside(int64_t step, Checkpoint& c,
                                        std::function<void()> copied) const {
  // The hybrid's progress as of this step: the copy may run when the next phase has begun.
  const int64_t syncSteps = syncSteps_;
  const int64_t phase = phase_;
  if (inAsync_) {
    // The server's copies, fetched beside the next steps; the clocks come with them.
    CheckpointCopy fetch = async_->checkpointBeside(step, c, std::move(copied));
    fetch.fill = [fill = std::move(fetch.fill), syncSteps, phase](Checkpoint& out) {
      fill(out);
      const auto clocks = out.strategyState.at("clocks").get<std::vector<int64_t>>();
      addHybridState(out, clocks, syncSteps, phase, /*asynchronous=*/true);
    };
    return fetch;
  }
  CheckpointCopy copy = sync_->checkpointBeside(step, c, std::move(copied));
  if (copy.fill) addHybridState(c, clocksOfSyncPhase(), syncSteps, phase, /*asynchronous=*/false);
  return copy;  // empty: the state is not in host memory, and checkpoint() copies it now
}

const std::vector<int64_t>& Hybrid::clocksOfSyncPhase() const {
  // They stand where the last asynchronous phase left them; after a restore the server's
  // snapshot has them.
  if (!syncClocks_) syncClocks_ = async_->client().snapshot().clocks;
  return *syncClocks_;
}

void Hybrid::addHybridState(Checkpoint& c, const std::vector<int64_t>& clocks, int64_t syncSteps,
                            int64_t phase, bool asynchronous) {
  c.strategyState["clocks"] = clocks;
  c.strategyState["hybrid"] = {
      {"sync_steps", syncSteps}, {"phase", phase}, {"asynchronous", asynchronous}};
  // Every rank took the synchronous steps and its own pushes.
  int64_t pushes = 0;
  c.rankSteps.clear();
  for (int64_t clock : clocks) {
    c.rankSteps.push_back(syncSteps + clock);
    pushes += clock;
  }
  c.step = syncSteps + pushes / static_cast<int64_t>(clocks.size());
}

int64_t Hybrid::restore(const Checkpoint& c) {
  const nlohmann::json& state = c.strategyState;
  if (!state.is_object() || !state.contains("hybrid") || !state["hybrid"].is_object())
    throw Error("the checkpoint holds no hybrid state");
  const nlohmann::json& h = state["hybrid"];
  syncSteps_ = h.value("sync_steps", int64_t{0});
  phase_ = h.value("phase", int64_t{-1});
  inAsync_ = h.value("asynchronous", false);
  // This worker's clock and the board (and a single process's own server, its blocks when
  // the checkpoint has them); the shards' daemons seed theirs from the same checkpoint.
  const int64_t pushes = async_->restore(c);
  // The synchronous side: the checkpoint's weights and optimizer state (an asynchronous
  // phase's are the server's) and the global batches it has drawn.
  Checkpoint synchronous = c;
  synchronous.step = syncSteps_;
  sync_->restore(synchronous);
  pushesSeen_ = async_->board().totalPushes;
  if (inAsync_) async_->setPhase(phase_);
  syncClocks_.reset();  // asked of the server at the first checkpoint that needs them
  policy_.reset();
  smoothedMs_.clear();
  context_.event(
      syncSteps_ + pushes, std::string(kPhaseEvent),
      inAsync_ ? "asynchronous (phase " + std::to_string(phase_) + ", resumed from the checkpoint)"
               : std::string("synchronous (resumed from the checkpoint)"),
      eventData(PhaseFacts{.asynchronous = inAsync_}));
  return syncSteps_ + pushes;
}

}  // namespace dtlab::core
