#include "core/train/parameter_server.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>

#include "core/comm/abort_signal.h"
#include "core/comm/communicator.h"
#include "core/nn/model_kinds.h"
#include "core/train/strategy_registry.h"

namespace dtlab::core {

std::vector<PsBlock> psLayout(int64_t paramCount, int shards) {
  DTLAB_ENFORCE(shards >= 1 && paramCount >= shards, "cannot split ", paramCount,
                " parameters over ", shards, " shards");
  std::vector<PsBlock> layout;
  for (int s = 0; s < shards; ++s) {
    const int64_t begin = paramCount * s / shards;
    const int64_t end = paramCount * (s + 1) / shards;
    const int64_t pieces = (end - begin + kMaxBlockFloats - 1) / kMaxBlockFloats;
    for (int64_t p = 0; p < pieces; ++p)
      layout.push_back(
          {s, begin + (end - begin) * p / pieces, begin + (end - begin) * (p + 1) / pieces});
  }
  return layout;
}

std::vector<PsBlock> psLayoutFor(const ExperimentSpec& spec, int variant, int world) {
  return psLayout(modelParameterCount(spec),
                  psShardCount(spec.variants.at(static_cast<std::size_t>(variant)), world));
}

int psShardCount(const VariantConfig& variant, int world) {
  const int64_t shards = strategyOf(variant).view(variant).integer("ps_shards");
  return shards > 0 ? static_cast<int>(std::min<int64_t>(shards, world)) : world;
}

SettingSchema psShardsSetting() {
  return {.key = "ps_shards",
          .label = "PS\nshards",
          .help =
              "Nodes holding a shard of the parameters (the first N); empty or 0: every node "
              "of the run",
          .defaultValue = int64_t{0},
          .min = 1,
          .max = static_cast<double>(kMaxClusterNodes),
          .zeroMeans = "all"};
}

void checkPsShards(const VariantConfig& variant, const VariantCheckContext& at) {
  const int64_t shards = strategyOf(variant).view(variant).integer("ps_shards");
  if (shards > at.runNodes)
    throw SpecError(
        at.path + ".ps_shards",
        detail::concat("at most the variant's ", at.runNodes,
                       " nodes (shards live on the first ps_shards nodes), got ", shards));
}

// ---------------------------------------------------------------------------------------------
// ParameterBlock

ParameterBlock::ParameterBlock(const ExperimentSpec& spec, PsBlock block, int64_t pushBatch,
                               int64_t updatesPlanned)
    : block_(block),
      optimizer_(makeOptimizer(spec.optimizer)),
      schedule_(spec.optimizer, pushBatch, updatesPlanned) {
  optimizer_->init(block.size());
}

bool ParameterBlock::init(const float* values, int64_t count) {
  DTLAB_ENFORCE(count == block_.size(), "block [", block_.begin, ", ", block_.end, ") holds ",
                block_.size(), " parameters, got ", count);
  std::lock_guard<std::mutex> lock(mutex_);
  if (initialized_) return false;
  params_.assign(values, values + count);
  initialized_ = true;
  return true;
}

void ParameterBlock::reset(const float* values, int64_t count, int64_t version, int64_t epoch) {
  DTLAB_ENFORCE(count == block_.size(), "block [", block_.begin, ", ", block_.end, ") holds ",
                block_.size(), " parameters, got ", count);
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoch <= epoch_) return;
  copyFrozenLocked();  // a checkpoint's copy is of the block before this change
  params_.assign(values, values + count);
  initialized_ = true;
  version_ = version;
  epoch_ = epoch;
}

int64_t ParameterBlock::pull(float* out, PullOutcome* measure) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!initialized_) throw Error("parameter block pulled before any worker initialised it");
  if (measure != nullptr)
    copyMeasuringDistance(out, params_.data(), block_.size(), *measure);
  else
    std::memcpy(out, params_.data(), params_.size() * sizeof(float));
  return version_;
}

int64_t ParameterBlock::push(const float* gradient, int64_t count, int64_t basedOn) {
  DTLAB_ENFORCE(count == block_.size(), "block [", block_.begin, ", ", block_.end, ") takes ",
                block_.size(), " gradient values, got ", count);
  std::lock_guard<std::mutex> lock(mutex_);
  copyFrozenLocked();  // a checkpoint's copy is of the block before this change
  if (!initialized_) throw Error("gradient pushed to a parameter block before its initial values");
  DTLAB_ENFORCE(basedOn >= 0 && basedOn <= version_, "a gradient of version ", basedOn,
                " pushed to a block at version ", version_);
  const int64_t appliedTo = version_;
  ++version_;
  // The elementwise update of a range equals the same range of a whole-buffer update
  // (optimizer.h), so a sharded server computes what one learner would.
  optimizer_->update(params_.data(), gradient, 0, count, version_, schedule_.at(version_));
  return appliedTo;
}

int64_t ParameterBlock::version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return version_;
}

ParameterBlock::Snapshot ParameterBlock::snapshot() const {
  Snapshot s;
  snapshotInto(s);
  return s;
}

void ParameterBlock::snapshotInto(Snapshot& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  copyLocked(out);
}

void ParameterBlock::copyLocked(Snapshot& out) const {
  if (!initialized_) throw Error("parameter block snapshot taken before its initial values");
  out.params.assign(params_.begin(), params_.end());
  const std::vector<std::span<const float>> state = optimizer_->state();
  out.optimizerState.resize(state.size());
  for (std::size_t i = 0; i < state.size(); ++i)
    out.optimizerState[i].assign(state[i].begin(), state[i].end());
  out.version = version_;
}

int64_t ParameterBlock::freezeInto(Snapshot& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!initialized_) throw Error("parameter block snapshot taken before its initial values");
  copyFrozenLocked();  // an earlier freeze's copy, never made
  frozen_ = &out;
  out.version = version_;
  return version_;
}

void ParameterBlock::copyFrozen() {
  std::lock_guard<std::mutex> lock(mutex_);
  copyFrozenLocked();
}

void ParameterBlock::copyFrozenLocked() {
  if (frozen_ == nullptr) return;
  copyLocked(*frozen_);
  frozen_ = nullptr;
}

void ParameterBlock::restore(const Snapshot& snapshot) {
  DTLAB_ENFORCE(static_cast<int64_t>(snapshot.params.size()) == block_.size(), "block [",
                block_.begin, ", ", block_.end, ") holds ", block_.size(),
                " parameters, the snapshot ", snapshot.params.size());
  DTLAB_ENFORCE(snapshot.version >= 0, "a snapshot of version ", snapshot.version);
  std::lock_guard<std::mutex> lock(mutex_);
  copyFrozenLocked();  // a checkpoint's copy is of the block before this change
  std::vector<std::span<float>> state = optimizer_->mutableState();
  DTLAB_ENFORCE(state.size() == snapshot.optimizerState.size(), "the block's optimizer keeps ",
                state.size(), " state buffers, the snapshot ", snapshot.optimizerState.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    DTLAB_ENFORCE(state[i].size() == snapshot.optimizerState[i].size(), "optimizer state ", i,
                  " of block [", block_.begin, ", ", block_.end, ") holds ", state[i].size(),
                  " values, the snapshot ", snapshot.optimizerState[i].size());
    std::copy(snapshot.optimizerState[i].begin(), snapshot.optimizerState[i].end(),
              state[i].begin());
  }
  params_ = snapshot.params;
  version_ = snapshot.version;
  initialized_ = true;
}

// ---------------------------------------------------------------------------------------------
// WorkerBoard

WorkerBoard::WorkerBoard(int workers, BoardWatch watch)
    : clocks_(static_cast<std::size_t>(workers), 0),
      left_(static_cast<std::size_t>(workers)),
      watch_(watch),
      policy_(watch.above, watch.window * workers) {}

int64_t WorkerBoard::minClockLocked() const {
  int64_t least = -1;
  for (std::size_t w = 0; w < clocks_.size(); ++w)
    if (!left_[w] && (least < 0 || clocks_[w] < least)) least = clocks_[w];
  // Nobody left training: nothing holds anyone back.
  return least < 0 ? std::numeric_limits<int64_t>::max() : least;
}

std::vector<std::function<void()>> WorkerBoard::takeReadyLocked() {
  std::vector<std::function<void()>> ready;
  const int64_t least = minClockLocked();
  for (auto it = waits_.begin(); it != waits_.end();) {
    if (it->second.first <= least) {
      ready.push_back(std::move(it->second.second));
      it = waits_.erase(it);
    } else {
      ++it;
    }
  }
  return ready;
}

BoardState WorkerBoard::report(const WorkerReport& r) {
  DTLAB_ENFORCE(r.worker >= 0 && r.worker < static_cast<int>(clocks_.size()), "worker ", r.worker,
                " outside the run's ", clocks_.size());
  std::vector<std::function<void()>> ready;
  BoardState state;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& mine = clocks_[static_cast<std::size_t>(r.worker)];
    mine = std::max(mine, r.clock);
    for (std::size_t v = 0; v < votes_.values.size(); ++v)
      votes_.values[v] = std::max(votes_.values[v], r.votes.values[v] > 0.5f ? 1.0f : 0.0f);
    if (watch_.enabled && r.phase >= 0) watchLocked(r);
    ready = takeReadyLocked();
    state = stateLocked();
  }
  for (auto& callback : ready) callback();
  return state;
}

void WorkerBoard::watchLocked(const WorkerReport& r) {
  if (r.phase > phase_) {  // a new asynchronous phase: measure afresh
    phase_ = r.phase;
    computeMs_.assign(clocks_.size(), std::numeric_limits<double>::quiet_NaN());
    policy_.reset();
  }
  if (r.phase != phase_ || endPhase_ >= phase_ || !std::isfinite(r.computeMs)) return;
  // Smoothed per worker: reports arrive one worker at a time, and a single preempted step
  // should not decide for everyone.
  smoothInto(computeMs_[static_cast<std::size_t>(r.worker)], r.computeMs);
  std::vector<double> active;
  for (std::size_t w = 0; w < computeMs_.size(); ++w)
    if (!left_[w]) active.push_back(computeMs_[w]);
  if (std::any_of(active.begin(), active.end(), [](double t) { return !std::isfinite(t); }))
    return;  // not every worker has reported in this phase yet
  ratio_ = stragglerRatio(active);
  if (!policy_.switchFromAsync(ratio_)) return;
  int64_t pushes = 0;
  for (int64_t c : clocks_) pushes += c;
  const bool ending =
      std::any_of(votes_.values.begin(), votes_.values.end(), [](float v) { return v > 0.5f; }) ||
      std::any_of(left_.begin(), left_.end(), [](bool b) { return b; }) ||
      (watch_.budgetPushes > 0 && pushes >= watch_.budgetPushes);
  if (ending) return;
  endPhase_ = phase_;
  endRatio_ = ratio_;
}

BoardState WorkerBoard::stateLocked() const {
  BoardState s;
  s.votes = votes_;
  for (int64_t c : clocks_) s.totalPushes += c;
  s.minClock = minClockLocked();
  s.stragglerRatio = ratio_;
  s.endPhase = endPhase_;
  s.endRatio = endRatio_;
  return s;
}

BoardState WorkerBoard::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stateLocked();
}

void WorkerBoard::leave(int worker) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (worker < 0 || worker >= static_cast<int>(left_.size())) return;
    left_[static_cast<std::size_t>(worker)] = true;
    ready = takeReadyLocked();
  }
  for (auto& callback : ready) callback();
}

std::vector<int64_t> WorkerBoard::clocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return clocks_;
}

void WorkerBoard::raiseClocks(const std::vector<int64_t>& clocks) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    DTLAB_ENFORCE(clocks.size() == clocks_.size(), "clocks for ", clocks.size(),
                  " workers on a board of ", clocks_.size());
    for (std::size_t w = 0; w < clocks_.size(); ++w) clocks_[w] = std::max(clocks_[w], clocks[w]);
    ready = takeReadyLocked();
  }
  for (auto& callback : ready) callback();
}

uint64_t WorkerBoard::whenClockReached(int64_t clock, std::function<void()> ready) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (minClockLocked() < clock) {
      const uint64_t id = nextWait_++;
      waits_.emplace(id, std::make_pair(clock, std::move(ready)));
      return id;
    }
  }
  ready();
  return 0;
}

bool WorkerBoard::cancelWait(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return waits_.erase(id) > 0;
}

// ---------------------------------------------------------------------------------------------
// ParameterHost

ParameterHost::ParameterHost(const ExperimentSpec& spec, const std::vector<PsBlock>& layout,
                             int shard, int workers, int64_t pushBatch, int64_t updatesPlanned,
                             BoardWatch watch)
    : workers_(workers),
      paramCount_(layout.empty() ? 0 : layout.back().end),
      updatesPlanned_(updatesPlanned),
      left_(static_cast<std::size_t>(workers)) {
  for (const PsBlock& b : layout)
    blocks_.push_back(shard < 0 || b.shard == shard
                          ? std::make_unique<ParameterBlock>(spec, b, pushBatch, updatesPlanned)
                          : nullptr);
  if (!layout.empty() && (shard < 0 || layout.front().shard == shard))
    board_ = std::make_unique<WorkerBoard>(workers, watch);
  for (const std::unique_ptr<ParameterBlock>& block : blocks_)
    staged_.push_back(block ? std::make_unique<Staged>() : nullptr);
}

ParameterBlock* ParameterHost::block(int index) {
  if (index < 0 || index >= static_cast<int>(blocks_.size())) return nullptr;
  return blocks_[static_cast<std::size_t>(index)].get();
}

ParameterHost::~ParameterHost() {
  {
    std::lock_guard<std::mutex> lock(copierMutex_);
    stopCopier_ = true;
  }
  copierWake_.notify_all();
  if (copier_.joinable()) copier_.join();
}

int64_t ParameterHost::stageSnapshot(int index) {
  ParameterBlock* served = block(index);
  if (served == nullptr) throw Error("block " + std::to_string(index) + " is not served here");
  Staged& staged = *staged_[static_cast<std::size_t>(index)];
  int64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(staged.mutex);
    version = served->freezeInto(staged.copy);
    staged.clocks.clear();
    if (index == 0 && board_) staged.clocks = board_->clocks();
    staged.present = true;
  }
  {
    std::lock_guard<std::mutex> lock(copierMutex_);
    toCopy_.push_back(index);
    if (!copier_.joinable()) copier_ = std::thread([this] { copyLoop(); });
  }
  copierWake_.notify_all();
  return version;
}

void ParameterHost::copyLoop() {
  std::unique_lock<std::mutex> lock(copierMutex_);
  for (;;) {
    copierWake_.wait(lock, [&] { return stopCopier_ || !toCopy_.empty(); });
    if (stopCopier_) return;
    const int index = toCopy_.front();
    toCopy_.pop_front();
    lock.unlock();
    try {
      blocks_[static_cast<std::size_t>(index)]->copyFrozen();
    } catch (const std::exception&) {
      // Not initialised: impossible once frozen; a reader meets the same error itself.
    }
    lock.lock();
  }
}

void ParameterHost::readStagedSnapshot(
    int index,
    const std::function<void(const ParameterBlock::Snapshot&, const std::vector<int64_t>&)>& read)
    const {
  const Staged* staged = index >= 0 && index < static_cast<int>(staged_.size())
                             ? staged_[static_cast<std::size_t>(index)].get()
                             : nullptr;
  if (staged == nullptr) throw Error("block " + std::to_string(index) + " is not served here");
  std::lock_guard<std::mutex> lock(staged->mutex);
  if (!staged->present)
    throw Error("no snapshot of block " + std::to_string(index) + " was staged");
  blocks_[static_cast<std::size_t>(index)]->copyFrozen();  // if the copier has not yet
  read(staged->copy, staged->clocks);
}

void ParameterHost::leave(int worker) {
  if (board_) board_->leave(worker);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (worker < 0 || worker >= workers_) return;
    left_[static_cast<std::size_t>(worker)] = true;
  }
}

bool ParameterHost::everyoneLeft() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::all_of(left_.begin(), left_.end(), [](bool b) { return b; });
}

std::unique_ptr<ParameterHost> makeParameterHost(const ExperimentSpec& spec, int variant, int world,
                                                 int shard, int64_t totalSteps) {
  // Each push averages over the worker's equal share of the global batch (the largest share
  // when the batch does not divide: the linear scaling rule needs one number).
  const int64_t pushBatch = (spec.training.batchSize + world - 1) / world;
  const VariantConfig& v = spec.variants.at(static_cast<std::size_t>(variant));
  BoardWatch watch;
  const StrategyDescriptor& strategy = strategyOf(v);
  if (const auto settings = strategy.serverWatch ? strategy.serverWatch(v) : std::nullopt) {
    watch.enabled = true;
    watch.above = settings->above;
    watch.window = settings->window;
  }
  watch.budgetPushes = psUpdatesPlanned(totalSteps, world);
  return std::make_unique<ParameterHost>(spec, psLayoutFor(spec, variant, world), shard, world,
                                         pushBatch, psUpdatesPlanned(totalSteps, world), watch);
}

// ---------------------------------------------------------------------------------------------
// LocalParameterClient

void copyMeasuringDistance(float* dst, const float* src, int64_t count, PullOutcome& outcome) {
  double distance = 0.0;
  double norm = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double next = src[i];
    const double d = next - dst[i];
    distance += d * d;
    norm += next * next;
    dst[i] = src[i];
  }
  outcome.distanceSquared += distance;
  outcome.normSquared += norm;
}

LocalParameterClient::LocalParameterClient(ParameterHost& host, std::vector<PsBlock> layout,
                                           int worker, const AbortSignal* abort)
    : host_(host), layout_(std::move(layout)), worker_(worker), abort_(abort) {
  for (int b = 0; b < static_cast<int>(layout_.size()); ++b)
    DTLAB_ENFORCE(host_.block(b) != nullptr, "a local parameter client needs every block");
  DTLAB_ENFORCE(host_.board() != nullptr, "a local parameter client needs the board");
}

void LocalParameterClient::reset(const float* params, int64_t version, int64_t epoch) {
  for (int b = 0; b < static_cast<int>(layout_.size()); ++b) {
    const PsBlock& block = layout_[static_cast<std::size_t>(b)];
    host_.block(b)->reset(params + block.begin, block.size(), version, epoch);
  }
}

void LocalParameterClient::init(const float* params) {
  for (int b = 0; b < static_cast<int>(layout_.size()); ++b) {
    const PsBlock& block = layout_[static_cast<std::size_t>(b)];
    host_.block(b)->init(params + block.begin, block.size());
  }
}

double LocalParameterClient::waitForClock(int64_t clock) {
  const auto start = std::chrono::steady_clock::now();
  auto reached = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
  auto done = std::make_shared<bool>(false);
  const uint64_t id = host_.board()->whenClockReached(clock, [reached, done] {
    {
      std::lock_guard<std::mutex> lock(reached->first);
      *done = true;
    }
    reached->second.notify_all();
  });
  if (id != 0) {
    std::unique_lock<std::mutex> lock(reached->first);
    while (!*done) {
      if (abort_ != nullptr && abort_->aborted()) {
        lock.unlock();
        host_.board()->cancelWait(id);
        throw CommError(CommFailure::kAborted, "waiting for the slowest worker (clock " +
                                                   std::to_string(clock) +
                                                   ") aborted: " + abort_->reason());
      }
      reached->second.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

PullOutcome LocalParameterClient::pull(float* params, std::vector<int64_t>& versions) {
  PullOutcome outcome;
  versions.resize(layout_.size());
  for (int b = 0; b < static_cast<int>(layout_.size()); ++b) {
    const PsBlock& block = layout_[static_cast<std::size_t>(b)];
    if (pullEncoding_ == PsEncoding::kFloat32) {
      versions[static_cast<std::size_t>(b)] = host_.block(b)->pull(params + block.begin, &outcome);
      continue;
    }
    scratch_.resize(static_cast<std::size_t>(block.size()));
    versions[static_cast<std::size_t>(b)] = host_.block(b)->pull(scratch_.data());
    roundTrip(pullEncoding_, scratch_.data(), block.size());
    copyMeasuringDistance(params + block.begin, scratch_.data(), block.size(), outcome);
  }
  return outcome;
}

PushOutcome LocalParameterClient::push(const float* grads, const std::vector<int64_t>& basedOn,
                                       const WorkerReport& report) {
  PushOutcome outcome;
  outcome.appliedTo.resize(layout_.size());
  for (int b = 0; b < static_cast<int>(layout_.size()); ++b) {
    const PsBlock& block = layout_[static_cast<std::size_t>(b)];
    const int64_t base = basedOn.at(static_cast<std::size_t>(b));
    const float* gradient = grads + block.begin;
    if (pushEncoding_ == PsEncoding::kFp16 || pushEncoding_ == PsEncoding::kBf16) {
      scratch_.assign(gradient, gradient + block.size());
      roundTrip(pushEncoding_, scratch_.data(), block.size());
      gradient = scratch_.data();
    }
    const int64_t appliedTo = host_.block(b)->push(gradient, block.size(), base);
    outcome.appliedTo[static_cast<std::size_t>(b)] = appliedTo;
    outcome.staleness = std::max(outcome.staleness, appliedTo - base);
  }
  outcome.board = host_.board()->report(report);
  return outcome;
}

BoardState LocalParameterClient::agree(const WorkerReport& report) {
  return host_.board()->report(report);
}

void LocalParameterClient::leave(int worker) {
  host_.leave(worker);
}

}  // namespace dtlab::core
