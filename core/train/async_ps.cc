#include "core/train/async_ps.h"

#include <chrono>
#include <cmath>

#include "core/common/log.h"
#include "core/data/dataset.h"
#include "core/nn/model.h"
#include "core/train/compression_settings.h"
#include "core/train/data_shards.h"
#include "core/train/ps_checkpoint.h"
#include "core/train/push_record.h"
#include "core/train/staged_parameter_client.h"

namespace dtlab::core {

namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

const VariantConfig& variantOf(const StrategyContext& c) {
  return c.job.spec.variants.at(static_cast<std::size_t>(c.job.variant));
}

// What async_ps and ssp share: a parameter server, no collective group, replicas that differ.
StrategyDescriptor parameterServerDescriptor(std::string name, std::string summary) {
  StrategyDescriptor d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.traits.usesParameterServer = true;
  d.traits.needsCollectiveGroup = false;
  d.traits.keepsCheckpoints = true;
  d.traits.replaysFromRecord = true;
  d.settings = {psShardsSetting()};
  for (SettingSchema& s : compressionSettings(/*collective=*/false))
    d.settings.push_back(std::move(s));
  d.settings.push_back(onNodeLossSetting(NodeLossPolicy::kContinue));
  d.check = checkPsShards;
  // The simulator's model: the shards of ps_shards, ssp's bound when the strategy has one.
  d.simulate = [](const VariantConfig& v, const sim::ClusterModel& cluster,
                  const sim::ModelShape& model, const sim::SimOptions& options) {
    const SettingsView settings = strategyOf(v).view(v);
    sim::ParameterServerModel server;
    server.shards = psShardCount(v, static_cast<int>(cluster.nodes.size()));
    server.parallelism = cluster.serverParallelism;
    server.staleness = settings.declares("staleness") ? settings.integer("staleness") : -1;
    if (server.staleness >= 0) server.clockCheckS = cluster.clockCheckS;
    return sim::simulateParameterServer(cluster, model, options, server);
  };
  // Every step pulls and pushes the whole model (compressed pushes move other bytes).
  d.transferPattern = [](const VariantConfig& v, const CollectiveFacts&) {
    const SettingsView settings = strategyOf(v).view(v);
    sim::TransferPattern p;
    if (!compressionOf(settings).enabled()) p.path = sim::TransferPath::kParameterServer;
    p.clockCheck = settings.declares("staleness");  // ssp asks for the slowest's clock
    return p;
  };
  return d;
}

}  // namespace

StrategyDescriptor asyncPsDescriptor() {
  StrategyDescriptor d = parameterServerDescriptor(
      "async_ps",
      "Asynchronous parameter server: workers pull, compute and push on their own clock");
  d.make = [](StrategyContext& c) -> std::unique_ptr<Strategy> {
    const VariantConfig& v = variantOf(c);
    return std::make_unique<AsyncPs>(c, std::nullopt, compressionOf(strategyOf(v).view(v)));
  };
  return d;
}

StrategyDescriptor sspDescriptor() {
  StrategyDescriptor d = parameterServerDescriptor(
      "ssp",
      "Stale synchronous parallel: a parameter server with a bound on how far workers drift");
  const SettingSchema staleness{.key = "staleness",
                                .label = "Staleness",
                                .help = "How many clocks a worker may be ahead of the slowest",
                                .defaultValue = int64_t{3},
                                .min = 0,
                                .max = 1'000'000};
  d.settings.push_back(staleness);
  d.make = [](StrategyContext& c) -> std::unique_ptr<Strategy> {
    const VariantConfig& v = variantOf(c);
    const SettingsView settings = strategyOf(v).view(v);
    return std::make_unique<AsyncPs>(c, settings.integer("staleness"), compressionOf(settings));
  };
  return d;
}

AsyncPs::AsyncPs(StrategyContext& context, std::optional<int64_t> staleness,
                 CompressionConfig compression)
    : context_(context),
      global_(context.job.spec.training.batchSize),
      staleness_(staleness.value_or(-1)),
      compression_(compression) {}

AsyncPs::~AsyncPs() {
  try {
    finish();
  } catch (...) {  // a failing run: the server may be gone already
    logCurrentException(LogLevel::kDebug, "async_ps: leaving the parameter server");
  }
}

std::string AsyncPs::setUp() {
  const WorkerJob& job = context_.job;
  const VariantConfig& variant = variantOf(context_);
  if (global_ < job.world)
    throw Error("training.batch_size " + std::to_string(global_) + " is smaller than the " +
                std::to_string(job.world) + " workers: every worker needs at least one sample");
  localBatch_ = BatchSlice::equal(global_, job.rank, job.world).count;
  // Its own contiguous range of the training set under "shared", else its own shard.
  WorkerData data =
      workerData(job.spec, context_.dataset, job.rank, job.world, SharedDraw::kContiguousRanges);
  worker_ = std::make_unique<Worker>(job.spec, context_.backend, context_.dataset,
                                     std::move(data.samples), data.slice,
                                     context_.totalSteps * job.world);
  emulation_ = std::make_unique<ComputeEmulation>(job.node, job.spec.seed, job.rank,
                                                  context_.backend.threads() == 1);

  Model& model = worker_->model();
  ps_ = context_.ps;
  if (ps_ == nullptr) {
    if (job.world != 1)
      throw Error(strategyOf(variant).name + " on " + std::to_string(job.world) +
                  " workers needs parameter-server shards, and this worker was given none");
    ownHost_ = makeParameterHost(job.spec, job.variant, 1, -1, context_.totalSteps);
    std::vector<PsBlock> layout = psLayoutFor(job.spec, job.variant, 1);
    ownClient_ = std::make_unique<LocalParameterClient>(*ownHost_, layout, job.rank);
    ps_ = ownClient_.get();
  }
  // The server's blocks are host memory: a GPU replica's parameters and gradients go through
  // a host mirror.
  if (!context_.backend.hostMemory()) {
    staged_ =
        std::make_unique<StagedParameterClient>(*ps_, context_.backend, model.parameterCount());
    ps_ = staged_.get();
  }
  DTLAB_ENFORCE(!ps_->layout().empty() && ps_->layout().back().end == model.parameterCount(),
                "the parameter server's layout does not cover the model's ", model.parameterCount(),
                " parameters");
  // Every worker offers its initial weights (the same, from the run's seed); the first wins.
  ps_->init(model.params());

  int shards = 0;
  for (const PsBlock& b : ps_->layout()) shards = std::max(shards, b.shard + 1);
  std::string detail = std::to_string(localBatch_) + " samples per push, " +
                       std::to_string(shards) + (shards == 1 ? " shard" : " shards") + " in " +
                       std::to_string(ps_->layout().size()) +
                       (ps_->layout().size() == 1 ? " block" : " blocks");
  if (staleness_ >= 0) detail += ", staleness bound " + std::to_string(staleness_);
  for (const PsBlock& b : ps_->layout()) blocks_.push_back({b.begin, b.end});
  if (compression_.enabled()) {
    if (!context_.backend.hostMemory())
      throw Error("compression \"" + std::string(toString(compression_.kind)) +
                  "\" runs on the CPU path only: this build has no GPU kernels for it (device " +
                  job.device + ")");
    if (compression_.kind == CompressionKind::kTopK)
      sparsifier_ = std::make_unique<PushSparsifier>(compression_.ratio, model.parameterCount());
    detail += ", " + describe(compression_) + ": pushes as " +
              toString(pushEncoding(compression_)) + ", pulls as " +
              toString(pullEncoding(compression_));
  }
  if (!data.detail.empty()) detail += ", " + data.detail;
  return detail;
}

StepReport AsyncPs::step(int64_t step, const Votes& local, Votes& agreed) {
  Worker& worker = *worker_;
  Model& model = worker.model();
  StepReport r;
  const int64_t sent = ps_->bytesSent();
  const int64_t received = ps_->bytesReceived();

  // ssp: the slowest worker still training must have pushed clock_ - staleness times. The
  // board this worker heard with its last push says so already in most steps (the slowest's
  // clock only grows): then the server is not asked, which saves a round trip a step (0.3-0.5
  // ms on a busy 2-core host, where the bound itself held back 1 step in 10).
  if (const int64_t need = clock_ - staleness_;
      staleness_ >= 0 && need > 0 && board_.minClock < need)
    r.waitMs = ps_->waitForClock(need);
  const bool compressing = compressesPush(compression_, clock_ + 1);
  const PsEncoding pushAs = compressing ? pushEncoding(compression_) : PsEncoding::kFloat32;
  lastPull_ = compressing ? pullEncoding(compression_) : PsEncoding::kFloat32;
  ps_->setEncodings(pushAs, lastPull_);
  const Clock::time_point t0 = Clock::now();
  const PullOutcome pulled = ps_->pull(model.params(), versions_);
  const Clock::time_point t1 = Clock::now();
  if (measureDivergence_ && pulled.normSquared > 0.0)
    r.divergence = std::sqrt(pulled.distanceSquared / pulled.normSquared);

  const Clock::time_point t2 = Clock::now();
  worker.loadBatch();
  emulation_->beginStep(step, worker.warm());
  r.loss = worker.computeGradients(1.0f / static_cast<float>(localBatch_), emulation_.get());
  worker.backend().synchronize();  // compute ends when a GPU has finished the backward pass
  const Clock::time_point t3 = Clock::now();
  WorkerReport report;
  report.worker = context_.job.rank;
  report.clock = clock_ + 1;
  report.votes = local;
  report.computeMs = msBetween(t2, t3);
  report.phase = phase_;
  if (compressing) {
    // What the push delivers: topk's largest values (the rest kept for later pushes); the
    // 16-bit encodings round on the way. Counted as a collective's payload would be.
    const auto start = Clock::now();
    if (sparsifier_) sparsifier_->apply(model.grads(), blocks_);
    const float* params = model.params();
    const float* grads = model.grads();
    for (const GradientRange& b : blocks_) {
      compressionTotals_.denseBytes += 2 * b.size() * int64_t{sizeof(float)};
      compressionTotals_.payloadBytes += encodedBytes(pushAs, grads + b.begin, b.size()) +
                                         encodedBytes(lastPull_, params + b.begin, b.size());
    }
    compressionTotals_.seconds += msBetween(start, Clock::now()) / 1e3;
  }
  const PushOutcome pushed = ps_->push(model.grads(), versions_, report);
  const Clock::time_point t4 = Clock::now();
  ++clock_;
  board_ = pushed.board;
  measureDivergence_ = true;
  // The record a replay follows.
  if (context_.sink != nullptr) {
    PushRecord& record = pushRecord_;  // reused: its vectors keep their room
    record.worker = context_.job.rank;
    record.clock = clock_;
    record.basedOn.assign(versions_.begin(), versions_.end());
    record.appliedTo.assign(pushed.appliedTo.begin(), pushed.appliedTo.end());
    record.gradient = worker.backend().hostMemory()
                          ? gradientFingerprint(model.grads(), model.parameterCount())
                          : 0;
    context_.sink->onPush(record);
  }

  r.samples = localBatch_;
  r.computeMs = msBetween(t2, t3);
  r.commMs = msBetween(t0, t1) + msBetween(t3, t4);
  r.staleness = static_cast<double>(pushed.staleness);
  r.batchShare = static_cast<double>(localBatch_) / static_cast<double>(global_);
  r.bytesSent = ps_->bytesSent() - sent;
  r.bytesReceived = ps_->bytesReceived() - received;
  agreed = board_.votes;
  r.votesAgreed = true;
  return r;
}

Votes AsyncPs::agree(const Votes& local) {
  WorkerReport report;
  report.worker = context_.job.rank;
  report.clock = clock_;
  report.votes = local;
  board_ = ps_->agree(report);
  return board_.votes;
}

const BoardState& AsyncPs::refreshBoard() {
  WorkerReport report;
  report.worker = context_.job.rank;
  report.clock = clock_;
  board_ = ps_->agree(report);
  return board_;
}

bool AsyncPs::budgetSpent(int64_t /*step*/, int64_t totalSteps) const {
  return totalSteps > 0 && board_.totalPushes >= totalSteps * context_.job.world;
}

int64_t AsyncPs::globalStep(int64_t /*step*/) const {
  return board_.totalPushes / context_.job.world;
}

void AsyncPs::beforeEvaluate() {
  // Evaluate what the server holds now, not this worker's last (stale) pull, in float32.
  ps_->setEncodings(PsEncoding::kFloat32, PsEncoding::kFloat32);
  lastPull_ = PsEncoding::kFloat32;
  ps_->pull(worker_->model().params(), versions_);
  measureDivergence_ = false;
}

void AsyncPs::checkpoint(int64_t step, Checkpoint& c) const {
  checkpointBeside(step, c, {}).fill(c);
}

CheckpointCopy AsyncPs::checkpointBeside(int64_t /*step*/, Checkpoint& c,
                                         std::function<void()> /*copied*/) const {
  // Every shard sets a copy of its blocks aside now, at the step boundary; the copies cross
  // the network on the writer's thread while this worker's pushes go on changing the blocks.
  ps_->stageSnapshot();
  c.strategy = strategyOf(variantOf(context_)).name;
  c.optimizer = worker_->optimizerName();
  ParameterClient* ps = ps_;
  const int64_t planned = psUpdatesPlanned(context_.totalSteps, context_.job.world);
  return {[ps, planned](Checkpoint& out) {
            serverCheckpoint(ps->fetchStagedSnapshot(), ps->layout(), planned, out);
          },
          /*readsLiveState=*/false};
}

int64_t AsyncPs::restore(const Checkpoint& c) {
  const WorkerJob& job = context_.job;
  Worker& worker = *worker_;
  checkCheckpointFits(c, worker.optimizerName(), worker.model().parameterCount());
  if (ownHost_) ownHost_->restore(c);
  // The same workers go on from their own clocks; another group (a restart after a lost
  // node) from the run's progress, each worker at it.
  clock_ = restoredClocks(c, job.world)[static_cast<std::size_t>(job.rank)];
  worker.model().setParams(c.params);  // the next pull replaces them; evaluation reads them
  worker.skipBatches(clock_);          // one local batch a push
  measureDivergence_ = false;
  refreshBoard();
  return clock_;
}

void AsyncPs::recordReplica(int64_t phase) {
  if (versions_.empty()) return;
  if (lastPull_ != PsEncoding::kFloat32) {
    // The replica as the server holds it, not as a 16-bit pull rounded it: the run's checksum
    // and a replay's (which rebuilds replicas from the server's blocks) then agree.
    ps_->setEncodings(PsEncoding::kFloat32, PsEncoding::kFloat32);
    ps_->pull(worker_->model().params(), versions_);
    lastPull_ = PsEncoding::kFloat32;
    measureDivergence_ = false;
  }
  if (context_.sink == nullptr) return;
  context_.sink->onReplica(ReplicaRecord{context_.job.rank, phase, versions_,
                                         paramChecksum(worker_->model().paramsToHost())});
}

void AsyncPs::finish() {
  if (finished_ || ps_ == nullptr) return;
  finished_ = true;
  recordReplica(-1);
  ps_->leave(context_.job.rank);
}

}  // namespace dtlab::core
