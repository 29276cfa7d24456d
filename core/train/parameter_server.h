#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/spec/experiment_spec.h"
#include "core/train/ps_encoding.h"
#include "core/train/strategy.h"
#include "core/train/switch_policy.h"

namespace dtlab::core {

class AbortSignal;
struct Checkpoint;
struct VariantCheckContext;  // core/train/strategy_registry.h

// The parameter server of async_ps, ssp and the asynchronous phase of hybrid. The flat parameter
// buffer is split into `shards` contiguous ranges, one per shard node (the first ps_shards nodes of
// the run), and each range into blocks small enough for one message. A block is the unit the server
// applies updates to: it has its own version (pushes applied), its own optimizer state, its own
// lock, so pushes and pulls of different blocks (and shards) proceed side by side.
//
// This header is the server's logic and the interface a worker talks to; remote/ serves the
// blocks of a node over gRPC (ParameterServer service) and implements the client over it.
// Tests and single-process runs use LocalParameterClient, which calls the blocks directly.

// Largest block, in floats: a pull reply or a push request stays under the node's 4 MiB
// message limit with room for the envelope.
inline constexpr int64_t kMaxBlockFloats = int64_t{512} * 1024;

struct PsBlock {
  int shard = 0;  // the node (rank) that serves it
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Near-equal contiguous shard ranges of paramCount floats over `shards` nodes, each cut into
// near-equal blocks of at most kMaxBlockFloats; blocks in buffer order.
std::vector<PsBlock> psLayout(int64_t paramCount, int shards);
class ParameterHost;
// The host of shard `shard` (-1: every block, a single process) of a run of the spec's variant
// on `world` workers planning totalSteps global batches: every node builds the same one from
// the spec alone.
std::unique_ptr<ParameterHost> makeParameterHost(const ExperimentSpec& spec, int variant, int world,
                                                 int shard, int64_t totalSteps);

// The layout of a run of the spec's variant on `world` workers.
std::vector<PsBlock> psLayoutFor(const ExperimentSpec& spec, int variant, int world);
// The variant's number of shards: ps_shards, or every node of the run.
int psShardCount(const VariantConfig& variant, int world);
// ps_shards, a setting of every strategy with a parameter server (usesParameterServer), and
// its check against the variant's nodes (the shards live on the first ps_shards of them).
SettingSchema psShardsSetting();
void checkPsShards(const VariantConfig& variant, const VariantCheckContext& at);
// Optimizer steps the server plans for a run of totalSteps global batches on `world` workers,
// each pushing the gradient of its equal share of the batch: one per push.
inline int64_t psUpdatesPlanned(int64_t totalSteps, int world) {
  return totalSteps * world;
}

// What a pull measures while it copies: the squared L2 distance of the new parameters from
// those the destination held (the replica a worker last computed on), and their squared norm.
struct PullOutcome {
  double distanceSquared = 0.0;
  double normSquared = 0.0;
};

// Copies `count` floats from src to dst, adding to `outcome` the squared distance between the
// old and new dst and the new dst's squared norm, in one pass.
void copyMeasuringDistance(float* dst, const float* src, int64_t count, PullOutcome& outcome);

// One block on its server: parameters, optimizer state and version. Thread safe.
//
// The run's optimizer runs here: push applies it with learning rate schedule.at(version + 1),
// the schedule spanning every update of the run, exactly as one sequential learner would, so
// a single worker under async_ps follows sequential SGD bit for bit.
class ParameterBlock {
 public:
  // updatesPlanned: optimizer steps the run plans (the cosine schedule's length);
  // pushBatch: the samples each push's gradient averages over (the linear scaling rule).
  ParameterBlock(const ExperimentSpec& spec, PsBlock block, int64_t pushBatch,
                 int64_t updatesPlanned);

  const PsBlock& block() const { return block_; }
  // The first worker's initial values win; later calls (the same values, from the same seed)
  // are ignored. Returns whether this call initialised the block.
  bool init(const float* values, int64_t count);
  // Replaces the parameters and the version (the run's progress in pushes) when `epoch` is
  // newer than the block's: every worker of a hybrid run sends the same values when it
  // switches to asynchronous training, and the first one's go in. The optimizer state stays.
  void reset(const float* values, int64_t count, int64_t version, int64_t epoch);
  // Copies the parameters to out (block().size() floats); returns their version. With
  // `measure`, out holds the worker's replica of the block and the copy measures how far it
  // was from the server's. Throws dtlab::Error before init.
  int64_t pull(float* out, PullOutcome* measure = nullptr) const;
  // Applies one optimizer step with `gradient` (block().size() floats), computed from the
  // parameters of version basedOn. Returns the version the gradient was applied to (its
  // staleness is that minus basedOn).
  int64_t push(const float* gradient, int64_t count, int64_t basedOn);
  int64_t version() const;
  const char* optimizerName() const { return optimizer_->name(); }

  // Everything a push depends on, for a checkpoint of the block: its parameters, its
  // optimizer's state (Optimizer::state(), in its order) and its version. Throws dtlab::Error
  // before init.
  struct Snapshot {
    std::vector<float> params;
    std::vector<std::vector<float>> optimizerState;
    int64_t version = 0;
  };
  Snapshot snapshot() const;
  // The same into `out`, whose buffers are reused (no allocation once they are large enough).
  void snapshotInto(Snapshot& out) const;
  // The block as it is now, copied into `out` before anything changes it: by copyFrozen()
  // (a host's copier thread, or a reader), or else by the next call that would change the
  // block (push, reset, restore), whichever comes first. So a checkpoint's copy is taken at a
  // step boundary in the time a lock takes, and made while the workers compute. `out` must
  // stay valid until copyFrozen() has returned. Returns the version it holds. Throws
  // dtlab::Error before init.
  int64_t freezeInto(Snapshot& out);
  void copyFrozen();
  // Puts a block (of the same spec and range) where `snapshot` was taken: the pushes that
  // follow apply exactly as they would have on the block it came from. Throws dtlab::Error
  // naming what does not fit.
  void restore(const Snapshot& snapshot);

 private:
  PsBlock block_;
  mutable std::mutex mutex_;
  bool initialized_ = false;
  std::vector<float> params_;
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  int64_t version_ = 0;
  int64_t epoch_ = 0;
  Snapshot* frozen_ = nullptr;  // where freezeInto's copy goes, until made

  void copyLocked(Snapshot& out) const;
  void copyFrozenLocked();
};

// What the board answers a worker: the votes every worker cast so far (sticky: a stop once
// voted stays), and how far the run has come.
struct BoardState {
  Votes votes;
  int64_t totalPushes = 0;  // every worker's clock added up
  int64_t minClock = 0;     // the slowest worker still training
  // hybrid adaptive: the straggler ratio of the latest compute times, and the asynchronous
  // phase the board asks the workers to end (-1: none) with the ratio that decided it.
  double stragglerRatio = 1.0;
  int64_t endPhase = -1;
  double endRatio = 0.0;
};

// What a worker tells the board with a push or an agreement.
struct WorkerReport {
  int worker = 0;
  int64_t clock = 0;  // pushes completed
  Votes votes;
  double computeMs = std::numeric_limits<double>::quiet_NaN();  // of the step just pushed
  int64_t phase = -1;  // hybrid: which asynchronous phase the worker is in
};

// hybrid adaptive, on the board: during an asynchronous phase, the straggler ratio of the
// workers' latest compute times; when it stays low for the policy's window (counted in
// reports, window x workers), the board asks everyone back to synchronous training. Never
// once the run is ending (a stop vote, a worker gone, the budget spent): a worker that
// stops could not join the others' synchronous steps.
struct BoardWatch {
  bool enabled = false;
  double above = 1.5;
  int64_t window = 20;
  int64_t budgetPushes = 0;  // 0: none
};

// The workers' shared state of one run, kept with block 0 on shard 0: each worker's clock
// (pushes it completed), the votes (cancel, time up, divergence, evaluation failure, target)
// and who has left. SSP waits on it. Thread safe.
class WorkerBoard {
 public:
  explicit WorkerBoard(int workers, BoardWatch watch = {});

  // Records worker's clock and votes; returns the board. A clock never goes back.
  BoardState report(const WorkerReport& report);
  BoardState state() const;
  // A worker that left (finished or failed) no longer holds the others back.
  void leave(int worker);
  // Each worker's clock, and (a run continued from a checkpoint) every worker's clock raised
  // to at least clocks[w].
  std::vector<int64_t> clocks() const;
  void raiseClocks(const std::vector<int64_t>& clocks);
  // Runs `ready` once the slowest worker still training has reached `clock` (at once when it
  // has, else on the report that gets it there, or when everyone it waits for has left).
  // Returns an id for cancelWait, or 0 when `ready` already ran.
  uint64_t whenClockReached(int64_t clock, std::function<void()> ready);
  // Forgets a pending wait; false when its callback ran (or is running) already.
  bool cancelWait(uint64_t id);

 private:
  int64_t minClockLocked() const;
  BoardState stateLocked() const;
  // Takes the callbacks whose clock has come, to run them outside the lock.
  std::vector<std::function<void()>> takeReadyLocked();
  void watchLocked(const WorkerReport& report);

  mutable std::mutex mutex_;
  std::vector<int64_t> clocks_;
  std::vector<bool> left_;
  Votes votes_;
  uint64_t nextWait_ = 1;
  std::map<uint64_t, std::pair<int64_t, std::function<void()>>> waits_;
  BoardWatch watch_;
  SwitchPolicy policy_;
  int64_t phase_ = -1;             // the asynchronous phase being watched
  std::vector<double> computeMs_;  // each worker's latest, in that phase
  double ratio_ = 1.0;
  int64_t endPhase_ = -1;
  double endRatio_ = 0.0;
};

// The blocks one node serves in one run, and the board when it serves block 0.
class ParameterHost {
 public:
  // Serves the blocks of `layout` whose shard is `shard` (all of them when shard < 0).
  ParameterHost(const ExperimentSpec& spec, const std::vector<PsBlock>& layout, int shard,
                int workers, int64_t pushBatch, int64_t updatesPlanned, BoardWatch watch = {});
  ~ParameterHost();
  ParameterHost(const ParameterHost&) = delete;
  ParameterHost& operator=(const ParameterHost&) = delete;

  // The block with this global index, or null when this host does not serve it.
  ParameterBlock* block(int index);
  WorkerBoard* board() { return board_.get(); }
  int workers() const { return workers_; }
  // Puts the blocks this host serves (and the board) where a checkpoint of the server left
  // them (ps_checkpoint.h); throws dtlab::Error naming what does not fit.
  void restore(const Checkpoint& checkpoint);
  // Every worker has sent leave() to this host.
  void leave(int worker);
  bool everyoneLeft() const;
  // A checkpoint's first half on this host (ParameterClient::stageSnapshot): freezes block
  // `index` as it is now (ParameterBlock::freezeInto), with the board's clocks when this host
  // keeps the board and `index` is 0, and has the host's copier thread make the copy while
  // the workers compute; returns the copy's version. The copy's buffers are kept for the next
  // one. Throws dtlab::Error when the block is not served here or not initialised.
  int64_t stageSnapshot(int index);
  // The second half: calls `read` with the copy of block `index` (made now if the copier has
  // not reached it yet) and the clocks staged with it (empty for other blocks). Throws
  // dtlab::Error when none is staged.
  void readStagedSnapshot(int index,
                          const std::function<void(const ParameterBlock::Snapshot&,
                                                   const std::vector<int64_t>&)>& read) const;

 private:
  std::vector<std::unique_ptr<ParameterBlock>> blocks_;  // by global index; null: elsewhere
  std::unique_ptr<WorkerBoard> board_;
  int workers_;
  int64_t paramCount_;
  int64_t updatesPlanned_;
  mutable std::mutex mutex_;
  std::vector<bool> left_;
  // Per block served here, the copy stageSnapshot() set aside (with the clocks, block 0).
  struct Staged {
    mutable std::mutex mutex;
    bool present = false;
    ParameterBlock::Snapshot copy;
    std::vector<int64_t> clocks;
  };
  std::vector<std::unique_ptr<Staged>> staged_;  // by global index; null: elsewhere
  // The copier: makes the frozen blocks' copies, in the order they were staged.
  std::mutex copierMutex_;
  std::condition_variable copierWake_;
  std::deque<int> toCopy_;
  bool stopCopier_ = false;
  std::thread copier_;  // started with the first stage
  void copyLoop();
};

// The whole server at one moment, for a checkpoint: every block's snapshot in layout order
// (each block consistent in itself; blocks may differ by the pushes in flight) and the board's
// clocks.
struct ServerSnapshot {
  std::vector<ParameterBlock::Snapshot> blocks;
  std::vector<int64_t> clocks;
};

// What a push reports back to the worker.
struct PushOutcome {
  int64_t staleness = 0;  // the most any block had moved on since the worker's pull
  BoardState board;       // after this push's clock was reported
  // Per block, the version the push was applied to (the block's version before it): the
  // block's order of pushes, which a replay follows (core/train/ps_replay.h).
  std::vector<int64_t> appliedTo;
};

// A worker's view of the parameter server: every block, on whichever node serves it.
// Implementations issue the calls of different blocks concurrently; the client itself has one
// caller at a time (the worker's thread; a remote client's streams carry one call each).
// Errors throw CommError naming the shard's node (a lost shard fails the run).
class ParameterClient {
 public:
  virtual ~ParameterClient() = default;
  virtual const std::vector<PsBlock>& layout() const = 0;
  // Seeds every block with the initial parameters (the first worker's call wins).
  virtual void init(const float* params) = 0;
  // Replaces every block's parameters and version (ParameterBlock::reset).
  virtual void reset(const float* params, int64_t version, int64_t epoch) = 0;
  // Blocks until the slowest worker still training has reached `clock`; returns the time
  // waited in ms.
  virtual double waitForClock(int64_t clock) = 0;
  // Pulls every block into params (versions[b] receives block b's version) and measures the
  // replica's divergence from the server while copying.
  virtual PullOutcome pull(float* params, std::vector<int64_t>& versions) = 0;
  // Pushes the gradient of every block, computed from `basedOn`, then reports to the board
  // (report.clock: pushes done, this one included).
  virtual PushOutcome push(const float* grads, const std::vector<int64_t>& basedOn,
                           const WorkerReport& report) = 0;
  // Reports without a push (evaluation verdicts); returns the board.
  virtual BoardState agree(const WorkerReport& report) = 0;
  // This worker will not push again: tells the board and every host.
  virtual void leave(int worker) = 0;
  // Every block's snapshot and the board's clocks (a checkpoint, on rank 0), in two halves so
  // that the copy over the network runs beside training. stageSnapshot(), on the caller's
  // thread at a step boundary, has every host set a copy of its blocks (and the board's
  // clocks) aside: the server as of that moment, while it waits. fetchStagedSnapshot() brings
  // the copies over; unlike every other call it may run on another thread while the caller
  // goes on with pulls and pushes. One staged snapshot at a time: the next stageSnapshot()
  // comes after the fetch. snapshot() is the two in turn.
  virtual void stageSnapshot() = 0;
  virtual ServerSnapshot fetchStagedSnapshot() = 0;
  ServerSnapshot snapshot() {
    stageSnapshot();
    return fetchStagedSnapshot();
  }
  // Payload bytes moved so far (parameters and gradients).
  virtual int64_t bytesSent() const = 0;
  virtual int64_t bytesReceived() const = 0;
  // How the next pushes and pulls travel (ps_encoding.h; the variant's compression): the
  // server applies and the worker receives what the encoding delivers.
  virtual void setEncodings(PsEncoding push, PsEncoding pull) {
    pushEncoding_ = push;
    pullEncoding_ = pull;
  }

 protected:
  PsEncoding pushEncoding_ = PsEncoding::kFloat32;
  PsEncoding pullEncoding_ = PsEncoding::kFloat32;
};

// Calls the blocks of `host` (which must serve every block) in this process; waits honour
// `abort` and `cancel`.
class LocalParameterClient final : public ParameterClient {
 public:
  LocalParameterClient(ParameterHost& host, std::vector<PsBlock> layout, int worker,
                       const AbortSignal* abort = nullptr);
  const std::vector<PsBlock>& layout() const override { return layout_; }
  void init(const float* params) override;
  void reset(const float* params, int64_t version, int64_t epoch) override;
  double waitForClock(int64_t clock) override;
  PullOutcome pull(float* params, std::vector<int64_t>& versions) override;
  PushOutcome push(const float* grads, const std::vector<int64_t>& basedOn,
                   const WorkerReport& report) override;
  BoardState agree(const WorkerReport& report) override;
  void leave(int worker) override;
  void stageSnapshot() override;
  ServerSnapshot fetchStagedSnapshot() override;
  int64_t bytesSent() const override { return 0; }  // nothing crosses a link
  int64_t bytesReceived() const override { return 0; }

 private:
  ParameterHost& host_;
  std::vector<PsBlock> layout_;
  int worker_;
  const AbortSignal* abort_;
  std::vector<float> scratch_;  // a block as a 16-bit push or pull delivers it
};

}  // namespace dtlab::core
