#include "core/train/sync_allreduce.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <thread>

#include "core/backend/backend.h"
#include "core/comm/communicator.h"
#include "core/comm/gradient_buckets.h"
#include "core/common/random.h"
#include "core/data/dataset.h"
#include "core/metrics/event_facts.h"
#include "core/train/checkpoint.h"
#include "core/train/compression_settings.h"
#include "core/train/data_shards.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

constexpr const char* kName = "sync_allreduce";
constexpr const char* kSpeedProportional = "speed_proportional";
// Bucket size where the communicator measures nothing (NCCL tunes itself): see
// GradientBucketsOptions.
constexpr int64_t kDefaultBucketBytes = GradientBucketsOptions{}.bucketBytes;

// How the "start" event's sentence names the bucket size.
constexpr std::string_view kBucketsPhrase = "gradient buckets of ";

}  // namespace

SettingSchema bucketKbSetting() {
  const SettingSchema s{.key = "bucket_kb",
                        .label = "Bucket\n(KiB)",
                        .help =
                            "Gradient bucket size for all-reduce overlapped with backward; "
                            "empty or 0: from the all-reduce measured when the group forms",
                        .defaultValue = int64_t{0},
                        .min = 1,
                        .max = double{int64_t{1} << 21},
                        .zeroMeans = "auto"};
  return s;
}

StrategyDescriptor syncAllReduceDescriptor() {
  StrategyDescriptor d;
  d.name = kName;
  d.summary = "Synchronous data parallel: gradients averaged by all-reduce every step";
  d.traits.keepsCheckpoints = true;
  const SettingSchema partition{
      .key = "partition",
      .type = SettingType::kChoice,
      .label = "Partition",
      .help = "How each global batch is split: equally, or by measured speed",
      .defaultValue = std::string("equal"),
      .choices = {"equal", kSpeedProportional}};
  const SettingSchema rebalance{
      .key = "rebalance_every",
      .label = "Rebalance\nevery",
      .help = "Steps between rebalances of the batch shares by measured speed",
      .defaultValue = int64_t{20},
      .min = 1,
      .max = 1'000'000,
      .when = SettingCondition{"partition", {kSpeedProportional}}};
  d.settings = {bucketKbSetting(), partition, rebalance};
  for (SettingSchema& s : compressionSettings()) d.settings.push_back(std::move(s));
  d.settings.push_back(onNodeLossSetting(NodeLossPolicy::kRestart));
  d.check = [](const VariantConfig& v, const VariantCheckContext& at) {
    const TrainingConfig& t = at.spec.training;
    if (nodeLossPolicy(v) == NodeLossPolicy::kRestart && t.checkpointEvery == 0 &&
        t.checkpointSeconds <= 0.0)
      throw SpecError(at.path + ".on_node_loss",
                      "\"restart\" continues from the run's last checkpoint, and this spec keeps "
                      "none: set training.checkpoint_every (steps) or "
                      "training.checkpoint_seconds");
    const DataPartitionKind data = t.dataPartition.kind;
    if (SyncAllReduceOptions::of(v).speedProportional && data != DataPartitionKind::kShared)
      throw SpecError(at.path + ".partition",
                      std::string("\"speed_proportional\" gives each worker a slice of every "
                                  "global batch drawn from the whole training set, so it needs "
                                  "training.data_partition \"shared\"; training.data_partition "
                                  "is \"") +
                          toString(data) + "\", where each worker draws only from its own shard");
  };
  // The simulator's model: speed_proportional at its balance, the equal split otherwise (or the
  // split the options give).
  d.simulate = [](const VariantConfig& v, const sim::ClusterModel& cluster,
                  const sim::ModelShape& model, const sim::SimOptions& options) {
    std::vector<int64_t> shares = options.shares;
    if (shares.empty() && SyncAllReduceOptions::of(v).speedProportional) {
      // The scheduler's own split (speed_shares.h) for the nodes' costs.
      std::vector<RankCost> costs;
      for (const sim::NodeModel& n : cluster.nodes)
        costs.push_back({1.0 / n.secondsPerSample, 1e3 * n.fixedSeconds});
      shares = balancedCounts(costs, options.globalBatch).counts;
    }
    return sim::simulateSyncAllReduce(cluster, model, options, shares);
  };
  // Every step all-reduces its buckets (compressed buckets move other bytes in other steps).
  d.transferPattern = [](const VariantConfig& v, const CollectiveFacts& measured) {
    const SyncAllReduceOptions o = SyncAllReduceOptions::of(v);
    sim::TransferPattern p;
    if (!o.compression.enabled()) p.path = sim::TransferPath::kCollective;
    p.bucketBytes = o.bucketKb > 0 ? o.bucketKb * 1024 : measured.bucketBytes;
    // The calls of the algorithm the buckets used (the fastest at their size), at every size
    // the group timed it: a link's latency is told from its bandwidth by calls of several sizes
    // of one algorithm, even where another won at some size. (Facts written before every
    // candidate was stated hold only each size's winner.)
    AllReduceTuning timed;
    for (const CollectiveFacts::Call& c : measured.calls) {
      if (timed.sizes.empty() || timed.sizes.back().bytes != c.bytes)
        timed.sizes.push_back({c.bytes, {}, 0});
      AllReduceTuning::SizeClass& size = timed.sizes.back();
      size.candidates.push_back({c.algorithm, c.ms / 1e3});
      if (c.ms / 1e3 < size.best().seconds)
        size.chosen = static_cast<int>(size.candidates.size()) - 1;
    }
    if (!timed.empty() && p.bucketBytes > 0) {
      const std::string buckets = timed.algorithmFor(p.bucketBytes);
      for (const AllReduceTuning::SizeClass& s : timed.sizes)
        for (const AllReduceTuning::Candidate& c : s.candidates)
          if (c.algorithm == buckets) p.calls.push_back({s.bytes, c.seconds * 1e3});
    }
    return p;
  };
  d.make = [](StrategyContext& c) -> std::unique_ptr<Strategy> {
    return std::make_unique<SyncAllReduce>(
        c,
        SyncAllReduceOptions::of(c.job.spec.variants.at(static_cast<std::size_t>(c.job.variant))));
  };
  return d;
}

std::string SyncAllReduce::startFacts() const {
  return collective_ ? eventData(*collective_) : std::string();
}

CompressionTotals SyncAllReduce::compression() const {
  return reducer_ ? reducer_->totals() : CompressionTotals{};
}

SyncAllReduceOptions SyncAllReduceOptions::of(const VariantConfig& variant) {
  const StrategyDescriptor& strategy = strategyOf(variant);
  DTLAB_ENFORCE(strategy.name == kName, "variant '", variant.name, "' is not ", kName);
  const SettingsView settings = strategy.view(variant);
  SyncAllReduceOptions options;
  options.bucketKb = settings.integer("bucket_kb");
  options.speedProportional = settings.choice("partition") == kSpeedProportional;
  options.rebalanceEvery = settings.integer("rebalance_every");
  options.compression = compressionOf(settings);
  return options;
}

SyncAllReduce::SyncAllReduce(StrategyContext& context, SyncAllReduceOptions options)
    : context_(context), options_(options), global_(context.job.spec.training.batchSize) {}

SyncAllReduce::~SyncAllReduce() = default;

std::string SyncAllReduce::setUp() {
  const WorkerJob& job = context_.job;
  if (global_ < job.world)
    throw Error("training.batch_size " + std::to_string(global_) + " is smaller than the " +
                std::to_string(job.world) + " workers: every worker needs at least one sample");
  slice_ = BatchSlice::equal(global_, job.rank, job.world);
  for (int r = 0; r < job.world; ++r)
    counts_.push_back(BatchSlice::equal(global_, r, job.world).count);
  WorkerData data =
      workerData(job.spec, context_.dataset, job.rank, job.world, SharedDraw::kGlobalBatchSlices);
  worker_ = std::make_unique<Worker>(job.spec, context_.backend, context_.dataset,
                                     std::move(data.samples), data.slice, context_.totalSteps,
                                     global_, controlSlots());
  control_.assign(static_cast<std::size_t>(controlSlots()), 0.0f);
  if (options_.speedProportional) window_ = std::make_unique<StepCostWindow>(job.world);
  Model& model = worker_->model();
  const int64_t params = model.parameterCount();
  // Rank 0's initial weights everywhere: replicas start identical whatever their seeds.
  if (context_.comm != nullptr) context_.comm->broadcast(model.params(), params, 0);

  // Gradients are reduced bucket by bucket on a communication thread while backward goes
  // on; the control block (the votes) rides in the first bucket: it is ready before backward.
  // The group's all-reduce is measured first, up to the whole gradient (the largest message a
  // bucket can be): the algorithm for each size and, unless bucket_kb says, the bucket size.
  std::string communication;
  if (context_.comm != nullptr) {
    // On the gradient buffer itself (backward and the votes overwrite all of it every step),
    // so the pass needs no memory of its own.
    const int64_t gradients = params + controlSlots();
    const AllReduceTuning tuning = context_.backend.hostMemory()
                                       ? context_.comm->tuneAllReduce(model.grads(), gradients)
                                       : AllReduceTuning{};
    const int64_t bucketBytes =
        options_.bucketKb > 0 ? options_.bucketKb * 1024 : tuning.bucketBytes(kDefaultBucketBytes);
    communication = tuning.describe();
    if (!tuning.empty() && !tuning.reused) {
      context_.uncountedSeconds += tuning.seconds;
      communication += " (outside the run's clock: later groups of these hosts reuse it)";
    }
    if (!communication.empty()) communication += "; ";
    communication += kBucketsPhrase;
    communication += byteSizeText(bucketBytes);
    if (options_.bucketKb > 0)
      communication += " (bucket_kb)";
    else if (tuning.empty())
      communication += " (default)";
    else
      communication += " (the smallest size at " +
                       std::to_string(std::lround(AllReduceTuning::kBucketBandwidthShare * 100)) +
                       "% of the best bandwidth)";
    collective_ = CollectiveFacts{bucketBytes, {}};
    for (const AllReduceTuning::SizeClass& size : tuning.sizes)
      for (const AllReduceTuning::Candidate& c : size.candidates)
        collective_->calls.push_back({size.bytes, c.algorithm, c.seconds * 1e3});
    std::vector<GradientRange> blocks = {{params, params + controlSlots()}};
    blocks.insert(blocks.end(), model.handOffs().begin(), model.handOffs().end());
    GradientBucketsOptions options;
    options.bucketBytes = bucketBytes;
    options.average = false;  // each rank already scaled its loss by 1/global batch
    if (options_.compression.enabled()) {
      if (!context_.backend.hostMemory())
        throw Error("compression \"" + std::string(toString(options_.compression.kind)) +
                    "\" runs on the CPU path only: this build has no GPU kernels for it (device " +
                    job.device + ")");
      // Buckets are made of whole blocks, so cut the layers' tensors where the blocks end.
      std::vector<int64_t> cuts;
      for (const GradientRange& block : blocks) cuts.push_back(block.begin);
      reducer_ = std::make_unique<CompressedReducer>(
          options_.compression, cutTensors(modelShapes(model), cuts, controlSlots()),
          params + controlSlots(), job.spec.seed);
      options.reducer = reducer_.get();
      communication += "; " + describe(options_.compression);
    }
    buckets_ = std::make_unique<GradientBuckets>(*context_.comm, model.grads(),
                                                 params + controlSlots(), blocks, options);
    // The bucket in which half of the elements have been handed over.
    const std::vector<GradientRange>& all = buckets_->buckets();
    for (int64_t through = 0; halfBucket_ + 1 < all.size(); ++halfBucket_) {
      through += all[halfBucket_].size();
      if (2 * through >= params + controlSlots()) break;
    }
  }
  emulation_ = std::make_unique<ComputeEmulation>(job.node, job.spec.seed, job.rank,
                                                  context_.backend.threads() == 1);
  // Before the emulation hands gradients on to the buckets: the probe reduces nothing.
  const std::string probe = options_.speedProportional ? probeSpeeds() : std::string();
  if (buckets_)
    emulation_->setNext([this, params](int64_t begin, int64_t end) {
      buckets_->markReady(begin, end);
      handed_ += end - begin;
      if (!halfAt_ && 2 * handed_ >= params) halfAt_ = Clock::now();
    });
  std::string detail =
      std::to_string(slice_.count) + " of " + std::to_string(global_) + " samples per step";
  if (options_.speedProportional)
    detail += ", rebalanced by measured speed every " + std::to_string(options_.rebalanceEvery) +
              " steps";
  if (!probe.empty()) detail += ", " + probe;
  if (!data.detail.empty()) detail += ", " + data.detail;
  if (!communication.empty()) detail += ", " + communication;
  return detail;
}

int64_t SyncAllReduce::controlSlots() const {
  return Votes::kCount + kRankStepTimeSlots * context_.job.world;
}

StepReport SyncAllReduce::step(int64_t step, const Votes& local, Votes& agreed) {
  Worker& worker = *worker_;
  Model& model = worker.model();
  const int64_t params = model.parameterCount();
  // Preparing the batch is the worker's own work (it scales with the slice): compute.
  const Clock::time_point t1 = Clock::now();
  worker.loadBatch();
  emulation_->beginStep(step, worker.warm());  // a straggler's pause lands here, inside compute
  // The votes and this rank's times of the step before (zeros where there is none: the
  // first step, or the first after the hybrid strategy's asynchronous phase) go into the
  // control slots through the backend (its memory may be a GPU's).
  const bool sendsTimes = lastStep_ == step - 1;
  std::fill(control_.begin(), control_.end(), 0.0f);
  std::copy(local.values.begin(), local.values.end(), control_.begin());
  if (sendsTimes) {
    float* mine = control_.data() + Votes::kCount + kRankStepTimeSlots * context_.job.rank;
    const RankStepTimes& t = lastTimes_;
    for (double v : {t.computeMs, t.readyMs, t.stepMs, t.halfMs, t.commAfterHalfMs, t.lastBucketMs})
      *mine++ = static_cast<float>(v);
  }
  handed_ = 0;
  halfAt_.reset();
  float* control = model.control();
  worker.backend().upload(control, control_.data(), controlSlots());
  if (reducer_) reducer_->setStep(step);
  if (buckets_) buckets_->markReady(params, params + controlSlots());
  const double loss = worker.computeGradients(1.0f / static_cast<float>(global_), emulation_.get());
  // A GPU works on after its kernels are queued: each compute span ends when the device has
  // finished it, else the backward pass would count as waiting and the update as nothing.
  worker.backend().synchronize();
  const Clock::time_point t2 = Clock::now();
  if (buckets_) buckets_->waitAll();
  const Clock::time_point t3 = Clock::now();
  worker.applyUpdate(step);
  worker.backend().synchronize();
  const Clock::time_point t4 = Clock::now();
  worker.backend().download(control_.data(), control, controlSlots());
  std::copy_n(control_.begin(), Votes::kCount, agreed.values.begin());

  StepReport r;
  r.loss = loss;
  r.samples = slice_.count;
  r.computeMs = msBetween(t1, t2) + msBetween(t3, t4);
  // comm: time the communication thread spent in all-reduces (mostly hidden behind
  // backward); wait: the part the training thread sat blocked for, after backward.
  r.commMs = buckets_ ? buckets_->lastCommSeconds() * 1000.0 : 0.0;
  r.waitMs = msBetween(t2, t3);
  r.batchShare = static_cast<double>(slice_.count) / static_cast<double>(global_);
  r.votesAgreed = true;

  // Every rank's times of the step before, where all ranks sent theirs (each wrote its own
  // slots, the others' were zero, so the sums are exact and the same on every rank).
  if (buckets_ && sendsTimes) {
    std::vector<RankStepTimes> times;
    for (int rank = 0; rank < context_.job.world; ++rank) {
      const float* t = control_.data() + Votes::kCount + kRankStepTimeSlots * rank;
      times.push_back({t[0], t[1], t[2], t[3], t[4], t[5]});
    }
    const bool complete = std::all_of(times.begin(), times.end(),
                                      [](const RankStepTimes& t) { return t.stepMs > 0.0; });
    if (complete) {
      r.tailMs = tailMs(times, static_cast<std::size_t>(context_.job.rank));
      // The first step pays first-touch costs: its times stay out of the model.
      if (window_ && step - 1 > 1) window_->add(lastCounts_, times);
    }
  }
  // This step's times, sent with the next. Batch preparation, forward and backward scale with
  // the slice; the update and whatever ran between the steps (an evaluation, a checkpoint) do
  // not. The first step counts from its own start.
  const Clock::time_point from = lastStep_ == step - 1 ? lastEnd_ : t1;
  lastTimes_ = {msBetween(t1, t2), msBetween(from, t2), msBetween(from, t3),
                msBetween(from, halfAt_.value_or(t2))};
  if (buckets_) {
    const std::vector<double>& seconds = buckets_->lastBucketSeconds();
    lastTimes_.commAfterHalfMs =
        1e3 * std::accumulate(seconds.begin() + static_cast<std::ptrdiff_t>(halfBucket_),
                              seconds.end(), 0.0);
    lastTimes_.lastBucketMs = 1e3 * seconds.back();
  }
  lastCounts_ = counts_;
  lastStep_ = step;
  lastEnd_ = t3;

  if (options_.speedProportional) {
    const int64_t warmup = std::min(kWarmupSteps, options_.rebalanceEvery);
    if (step == warmup || step == 2 * warmup || step % options_.rebalanceEvery == 0)
      rebalance(step);
  }
  return r;
}

namespace {

// "18335,4592" from doubles, rounded to `decimals`.
std::string listText(const std::vector<double>& values, int decimals) {
  std::string text;
  for (double v : values) {
    char one[32];
    std::snprintf(one, sizeof(one), "%.*f", decimals, v);
    if (!text.empty()) text += ',';
    text += one;
  }
  return text;
}

std::string msText(double ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f ms", ms);
  return text;
}

}  // namespace

// Every rank calls this at the same step with the same window (the times came through the
// all-reduce), so all ranks fit the same costs and move to the same slices.
void SyncAllReduce::rebalance(int64_t step) {
  if (context_.comm == nullptr || window_->empty()) return;  // one rank: the whole batch
  const double measured = window_->measuredStepMs();
  const std::vector<RankCost> costs = window_->takeCosts();
  const ShareProposal proposal = balancedCounts(costs, global_);
  const LeaveOutProposal leave = leaveOutProposal(costs, global_);
  // The model's step for the current shares against the one measured: what the model does
  // not see (wake-ups, latencies) is added to what it expects of other shares.
  const double model = expectedStepMs(costs, counts_);
  const double unseen = measured - model;
  const bool move = outsideDeadBand(counts_, proposal.counts, kShareDeadBand) &&
                    proposal.stepMs < model * (1.0 - kMinExpectedGain);
  if (!move && leave.rank == advisedLeaveOut_) return;
  std::vector<double> speeds, fixed, tails, comms, halves;
  for (const RankCost& c : costs) {
    speeds.push_back(c.samplesPerS);
    fixed.push_back(c.fixedMs);
    tails.push_back(c.tailMs);
    comms.push_back(c.commAfterHalfMs);
    halves.push_back(100.0 * c.halfFraction);
  }
  std::string detail = "shares " + formatShares(counts_);
  detail += move ? " -> " + formatShares(proposal.counts) : std::string(" kept");
  detail += " (measured " + listText(speeds, 0) + " samples/s, fixed " + listText(fixed, 1) +
            " ms, half the gradient handed over at " + listText(halves, 0) +
            "% of the compute, its second half reduced in " + listText(comms, 1) +
            " ms, the last bucket in " + listText(tails, 1) + " ms); step " + msText(measured) +
            " measured (the model: " + msText(model) + ")";
  if (move) detail += ", " + msText(proposal.stepMs + unseen) + " expected with the new shares";
  if (leave.rank >= 0) {
    char gain[32];
    std::snprintf(gain, sizeof(gain), "%.2fx",
                  (proposal.stepMs + unseen) / (leave.stepMs + unseen));
    detail += "; without rank " + std::to_string(leave.rank) + " the others are expected at " +
              msText(leave.stepMs + unseen) + " a step (" + gain +
              "): leaving it out of the cluster pays";
  }
  RebalanceFacts facts{.before = counts_,
                       .after = move ? proposal.counts : counts_,
                       .samplesPerSecond = speeds,
                       .measuredStepMs = measured,
                       .expectedStepMs = move ? proposal.stepMs + unseen : measured,
                       .leaveOut = leave.rank};
  context_.event(step, std::string(kRebalanceEvent), detail, eventData(facts));
  advisedLeaveOut_ = leave.rank;
  if (move) setCounts(proposal.counts);
}

std::string SyncAllReduce::probeSpeeds() {
  Communicator* comm = context_.comm;
  if (comm == nullptr || comm->deviceMemory()) return {};  // one rank; NCCL: steps start equal
  const Clock::time_point start = Clock::now();
  Worker& worker = *worker_;
  // Untimed, at the slice's size: the first-touch costs the first step would pay.
  const int64_t loaded = worker.loadProbe(slice_.count);
  worker.computeProbe(loaded, nullptr);
  worker.backend().synchronize();
  const int64_t rows = std::min(kProbeRows, loaded);
  double fastestMs = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kProbeRepeats && rows > 0; ++i) {
    emulation_->beginProbe();
    const Clock::time_point t0 = Clock::now();
    worker.computeProbe(rows, emulation_.get());
    worker.backend().synchronize();
    fastestMs = std::min(fastestMs, msBetween(t0, Clock::now()));
  }
  // A rank with no rows to time (a slice of none) counts as not measured: the slowest.
  const float mine =
      rows > 0 ? static_cast<float>(1e3 * static_cast<double>(rows) / fastestMs) : 0.0f;
  const auto world = static_cast<std::size_t>(context_.job.world);
  std::vector<float> speeds(world);
  comm->allGather(&mine, 1, speeds.data());
  const std::vector<double> measured(speeds.begin(), speeds.end());
  std::vector<RankCost> costs(world);
  for (std::size_t r = 0; r < world; ++r) costs[r].samplesPerS = measured[r];
  const ShareProposal proposal = balancedCounts(costs, global_);
  const bool move = outsideDeadBand(counts_, proposal.counts, kShareDeadBand);
  if (move) setCounts(proposal.counts);
  return std::string(move ? "first shares " : "shares kept ") + formatShares(counts_) +
         " by a probe before the first step (" + listText(measured, 0) +
         " samples/s, forward and backward of " + std::to_string(rows) + " samples, in " +
         msText(msBetween(start, Clock::now())) + ")";
}

void SyncAllReduce::setCounts(std::vector<int64_t> counts) {
  counts_ = std::move(counts);
  const auto rank = static_cast<std::size_t>(context_.job.rank);
  const int64_t begin = std::accumulate(counts_.begin(), counts_.begin() + rank, int64_t{0});
  slice_ = {global_, begin, counts_[rank]};
  worker_->setSlice(slice_);
}

void SyncAllReduce::checkpoint(int64_t step, Checkpoint& c) const {
  checkpointHeader(step, c);
  copyState(*worker_, c);
}

CheckpointCopy SyncAllReduce::checkpointBeside(int64_t step, Checkpoint& c,
                                               std::function<void()> copied) const {
  if (!worker_->stateInHostMemory()) return {};
  checkpointHeader(step, c);
  // The parameters and the optimizer's state change only in the update (the forward and
  // backward passes read them, the gradients are buffers of their own).
  worker_->holdNextUpdate(std::move(copied));
  const Worker* worker = worker_.get();
  return {[worker](Checkpoint& out) { copyState(*worker, out); }, /*readsLiveState=*/true};
}

void SyncAllReduce::checkpointHeader(int64_t step, Checkpoint& c) const {
  c.step = step;
  c.rankSteps.clear();
  c.strategy =
      strategyOf(context_.job.spec.variants[static_cast<std::size_t>(context_.job.variant)]).name;
  c.optimizer = worker_->optimizerName();
  c.strategyState = {{"shares", counts_}};
}

void SyncAllReduce::copyState(const Worker& worker, Checkpoint& c) {
  worker.model().paramsToHost(c.params);
  worker.optimizerState(c.optimizerState);
}

int64_t SyncAllReduce::restore(const Checkpoint& c) {
  Worker& worker = *worker_;
  checkCheckpointFits(c, worker.optimizerName(), worker.model().parameterCount());
  worker.model().setParams(c.params);
  worker.restoreOptimizerState(c.optimizerState);
  // The shares carry over when the group has the same size; another group starts equal.
  const WorkerJob& job = context_.job;
  std::vector<int64_t> shares;
  if (c.strategyState.is_object() && c.strategyState.contains("shares"))
    for (const nlohmann::json& s : c.strategyState["shares"])
      if (s.is_number_integer()) shares.push_back(s.get<int64_t>());
  int64_t sum = 0;
  for (int64_t s : shares) sum += s >= 0 ? s : global_ + 1;
  if (static_cast<int>(shares.size()) == job.world && sum == global_ && shares != counts_)
    setCounts(std::move(shares));
  worker.skipBatches(c.step);  // one global batch a step
  return c.step;
}

Votes SyncAllReduce::agree(const Votes& local) {
  Votes sum = local;
  if (context_.comm != nullptr) context_.comm->allReduceSum(sum.values.data(), Votes::kCount);
  return sum;
}

}  // namespace dtlab::core
