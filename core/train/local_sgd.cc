#include "core/train/local_sgd.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "core/backend/backend.h"
#include "core/comm/communicator.h"
#include "core/common/random.h"
#include "core/data/dataset.h"
#include "core/train/data_shards.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

StrategyDescriptor localSgdDescriptor() {
  StrategyDescriptor d;
  d.name = "local_sgd";
  d.summary = "Local SGD: each worker takes `period` local steps, then the models are averaged";
  const SettingSchema period{.key = "period",
                             .label = "Period",
                             .help = "Local steps between model averages (1: synchronous SGD)",
                             .defaultValue = int64_t{8},
                             .min = 1,
                             .max = 1'000'000};
  d.settings = {period};
  d.make = [](StrategyContext& c) -> std::unique_ptr<Strategy> {
    const VariantConfig& v = c.job.spec.variants.at(static_cast<std::size_t>(c.job.variant));
    return std::make_unique<LocalSgd>(c, strategyOf(v).view(v).integer("period"));
  };
  return d;
}

LocalSgd::LocalSgd(StrategyContext& context, int64_t period)
    : context_(context), global_(context.job.spec.training.batchSize), period_(period) {}

LocalSgd::~LocalSgd() = default;

std::string LocalSgd::setUp() {
  const WorkerJob& job = context_.job;
  if (global_ < job.world)
    throw Error("training.batch_size " + std::to_string(global_) + " is smaller than the " +
                std::to_string(job.world) + " workers: every worker needs at least one sample");
  if (period_ < 1)
    throw Error("local_sgd period must be at least 1, got " + std::to_string(period_));
  slice_ = BatchSlice::equal(global_, job.rank, job.world);
  WorkerData data =
      workerData(job.spec, context_.dataset, job.rank, job.world, SharedDraw::kGlobalBatchSlices);
  worker_ =
      std::make_unique<Worker>(job.spec, context_.backend, context_.dataset,
                               std::move(data.samples), data.slice, context_.totalSteps, global_);
  emulation_ = std::make_unique<ComputeEmulation>(job.node, job.spec.seed, job.rank,
                                                  context_.backend.threads() == 1);
  Mlp& model = worker_->model();
  const int64_t params = model.parameterCount();
  // Rank 0's initial weights everywhere: replicas start identical whatever their seeds.
  if (context_.comm != nullptr) {
    context_.comm->broadcast(model.params(), params, 0);
    buffer_.resize(static_cast<std::size_t>(params + Votes::kCount));
  }
  return "local_sgd, period " + std::to_string(period_) + ", " + std::to_string(slice_.count) +
         " of " + std::to_string(global_) + " samples per local step" +
         (data.detail.empty() ? "" : ", " + data.detail);
}

StepReport LocalSgd::step(int64_t step, const Votes& local, Votes& agreed) {
  Worker& worker = *worker_;
  Mlp& model = worker.model();
  if (holdsEvaluationAverage_) {
    // The last step averaged for an evaluation only: go on from this rank's own parameters.
    worker.backend().upload(model.params(), ownParams_.data(), model.parameterCount());
    holdsEvaluationAverage_ = false;
  }
  const Clock::time_point t1 = Clock::now();
  worker.loadBatch();
  // Emulated speed and straggler pauses, as every strategy has them: a slow node's local
  // steps take 1/speed of their real time, so it reaches the average late and its peers wait.
  emulation_->beginStep(step);
  const double loss =
      worker.computeGradients(1.0f / static_cast<float>(slice_.count), emulation_.get());
  worker.applyUpdate(step);
  const Clock::time_point t2 = Clock::now();
  samplesSinceAverage_ += slice_.count;
  allSamplesSinceAverage_ += global_;  // the slices partition every global batch

  StepReport r;
  r.loss = loss;
  r.samples = slice_.count;
  r.computeMs = msBetween(t1, t2);
  r.batchShare = static_cast<double>(slice_.count) / static_cast<double>(global_);
  if (context_.comm == nullptr) {
    // One rank: nothing to average, and agreeing is free.
    agreed = local;
    r.votesAgreed = true;
    return r;
  }
  const int64_t evalInterval = context_.job.spec.training.evalInterval;
  const bool lastStep = context_.totalSteps > 0 && step >= context_.totalSteps;
  const bool averageNow = step % period_ == 0 || lastStep;
  const bool evaluationNext = evalInterval > 0 && step % evalInterval == 0;
  if (!averageNow && !evaluationNext) return r;

  if (!averageNow) {
    ownParams_.resize(static_cast<std::size_t>(model.parameterCount()));
    worker.backend().download(ownParams_.data(), model.params(), model.parameterCount());
  }
  average(local, agreed);
  const Clock::time_point t3 = Clock::now();
  if (averageNow) {
    samplesSinceAverage_ = 0;
    allSamplesSinceAverage_ = 0;
  } else {
    holdsEvaluationAverage_ = true;
  }
  // The training thread sits in the averaging collective for all of it (nothing overlaps it),
  // and a blocking all-reduce cannot tell waiting for the slowest peer from the transfer: the
  // whole time is communication and, as sync_allreduce counts what backward does not hide,
  // time blocked on peers.
  r.commMs = msBetween(t2, t3);
  r.waitMs = r.commMs;
  r.votesAgreed = true;
  return r;
}

void LocalSgd::average(const Votes& local, Votes& agreed) {
  Mlp& model = worker_->model();
  const int64_t params = model.parameterCount();
  // FedAvg: this rank's parameters weighted by its share of the samples all ranks trained on
  // since the last average, so the all-reduced sum is the weighted mean.
  const float weight = static_cast<float>(static_cast<double>(samplesSinceAverage_) /
                                          static_cast<double>(allSamplesSinceAverage_));
  // Staged through host memory: the communicator reduces host buffers, the votes must share
  // the parameters' all-reduce, and the backend has no scaling kernel. On the CPU backend this
  // is two copies of the parameters, small beside the all-reduce itself.
  worker_->backend().download(buffer_.data(), model.params(), params);
  for (int64_t i = 0; i < params; ++i) buffer_[static_cast<std::size_t>(i)] *= weight;
  std::copy(local.values.begin(), local.values.end(), buffer_.begin() + params);
  context_.comm->allReduceSum(buffer_.data(), params + Votes::kCount);
  worker_->backend().upload(model.params(), buffer_.data(), params);
  std::copy_n(buffer_.begin() + params, Votes::kCount, agreed.values.begin());
}

Votes LocalSgd::agree(const Votes& local) {
  Votes sum = local;
  if (context_.comm != nullptr) context_.comm->allReduceSum(sum.values.data(), Votes::kCount);
  return sum;
}

}  // namespace dtlab::core
