#include "core/train/local_sgd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include "core/backend/backend.h"
#include "core/comm/communicator.h"
#include "core/comm/elastic_group.h"
#include "core/common/random.h"
#include "core/data/dataset.h"
#include "core/train/compression_settings.h"
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
  for (SettingSchema& s : compressionSettings()) d.settings.push_back(std::move(s));
  d.settings.push_back(onNodeLossSetting(NodeLossPolicy::kContinue));
  d.check = [](const VariantConfig& v, const VariantCheckContext& at) {
    const StrategyDescriptor& self = strategyOf(v);
    if (compressionOf(self.view(v)).enabled() && nodeLossPolicy(v) == NodeLossPolicy::kContinue)
      throw SpecError(at.path + ".on_node_loss",
                      "\"continue\" cannot go with compression: a compressed average sends "
                      "each worker's change since the last average, and a worker left out of "
                      "one after a lost node would no longer know where the others' started; "
                      "set on_node_loss \"fail\" or compression \"none\"");
  };
  // The simulator's model: `period` local steps, then an average (uncompressed).
  d.simulate = [](const VariantConfig& v, const sim::ClusterModel& cluster,
                  const sim::ModelShape& model, const sim::SimOptions& options) {
    return sim::simulateLocalSgd(cluster, model, options, strategyOf(v).view(v).integer("period"));
  };
  d.make = [](StrategyContext& c) -> std::unique_ptr<Strategy> {
    const VariantConfig& v = c.job.spec.variants.at(static_cast<std::size_t>(c.job.variant));
    const SettingsView settings = strategyOf(v).view(v);
    return std::make_unique<LocalSgd>(c, settings.integer("period"), compressionOf(settings));
  };
  return d;
}

LocalSgd::LocalSgd(StrategyContext& context, int64_t period, CompressionConfig compression)
    : context_(context),
      global_(context.job.spec.training.batchSize),
      period_(period),
      compressionConfig_(compression) {}

CompressionTotals LocalSgd::compression() const {
  return reducer_ ? reducer_->totals() : CompressionTotals{};
}

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
  Model& model = worker_->model();
  const int64_t params = model.parameterCount();
  // Rank 0's initial weights everywhere: replicas start identical whatever their seeds. (Rank 0
  // lost before it finished: the first survivor's, each rank starting again from its own.)
  if (context_.comm != nullptr) {
    std::vector<float> own;  // kept only where the broadcast may have to run again
    if (context_.elastic != nullptr) own = model.paramsToHost();
    collective(0, [&](Communicator& comm) {
      if (!own.empty()) context_.backend.upload(model.params(), own.data(), params);
      comm.broadcast(model.params(), params, 0);
    });
    buffer_.resize(static_cast<std::size_t>(params + Votes::kCount + 1));
  }
  std::string compressed;
  if (context_.comm != nullptr && compressionConfig_.enabled()) {
    if (!context_.backend.hostMemory())
      throw Error("compression \"" + std::string(toString(compressionConfig_.kind)) +
                  "\" runs on the CPU path only: this build has no GPU kernels for it (device " +
                  job.device + ")");
    anchor_ = model.paramsToHost();
    reducer_ = std::make_unique<CompressedReducer>(
        compressionConfig_, cutTensors(modelShapes(model), {}, Votes::kCount + 1),
        static_cast<int64_t>(buffer_.size()), job.spec.seed);
    compressed = ", averages of the change since the last one, " + describe(compressionConfig_) +
                 " (an average for an evaluation only goes uncompressed)";
  }
  return "local_sgd, period " + std::to_string(period_) + ", " + std::to_string(slice_.count) +
         " of " + std::to_string(global_) + " samples per local step" +
         (data.detail.empty() ? "" : ", " + data.detail) + compressed;
}

StepReport LocalSgd::step(int64_t step, const Votes& local, Votes& agreed) {
  step_ = step;
  Worker& worker = *worker_;
  Model& model = worker.model();
  if (holdsEvaluationAverage_) {
    // The last step averaged for an evaluation only: go on from this rank's own parameters.
    worker.backend().upload(model.params(), ownParams_.data(), model.parameterCount());
    holdsEvaluationAverage_ = false;
  }
  const Clock::time_point t1 = Clock::now();
  worker.loadBatch();
  // Emulated speed and straggler pauses, as every strategy has them: a slow node's local
  // steps take 1/speed of their real time, so it reaches the average late and its peers wait.
  emulation_->beginStep(step, worker.warm());
  const double loss =
      worker.computeGradients(1.0f / static_cast<float>(slice_.count), emulation_.get());
  worker.applyUpdate(step);
  worker.backend().synchronize();  // compute ends when a GPU has finished the step
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
  const bool averaged = average(step, local, agreed, averageNow);
  const Clock::time_point t3 = Clock::now();
  if (averageNow) {
    samplesSinceAverage_ = 0;
    allSamplesSinceAverage_ = 0;
  } else {
    holdsEvaluationAverage_ = averaged;
  }
  // The training thread sits in the averaging collective for all of it (nothing overlaps it),
  // and a blocking all-reduce cannot tell waiting for the slowest peer from the transfer: the
  // whole time is communication and, as sync_allreduce counts what backward does not hide,
  // time blocked on peers.
  r.commMs = msBetween(t2, t3);
  r.waitMs = r.commMs;
  r.votesAgreed = averaged;
  return r;
}

bool LocalSgd::average(int64_t step, const Votes& local, Votes& agreed, bool training) {
  Model& model = worker_->model();
  const int64_t params = model.parameterCount();
  // FedAvg: this rank's parameters weighted by its share of the samples all ranks trained on
  // since the last average, so the all-reduced sum is the weighted mean. The weights ride
  // along: after a lost rank they sum to less than one, and the sum is divided out.
  const float weight = static_cast<float>(static_cast<double>(samplesSinceAverage_) /
                                          static_cast<double>(allSamplesSinceAverage_));
  // Staged through host memory: the communicator reduces host buffers, the votes must share
  // the parameters' all-reduce, and the backend has no scaling kernel. On the CPU backend this
  // is two copies of the parameters, small beside the all-reduce itself.
  const bool compressed = training && reducer_ != nullptr;
  const auto reduce = [&](Communicator& comm) {
    worker_->backend().download(buffer_.data(), model.params(), params);
    if (compressed)
      for (int64_t i = 0; i < params; ++i) {
        const auto at = static_cast<std::size_t>(i);
        buffer_[at] = weight * (buffer_[at] - anchor_[at]);
      }
    else
      for (int64_t i = 0; i < params; ++i) buffer_[static_cast<std::size_t>(i)] *= weight;
    std::copy(local.values.begin(), local.values.end(), buffer_.begin() + params);
    buffer_.back() = weight;
    if (compressed) {
      reducer_->setStep(step);
      reducer_->reduce(comm, buffer_.data(), {0, static_cast<int64_t>(buffer_.size())});
    } else {
      comm.allReduceSum(buffer_.data(), static_cast<int64_t>(buffer_.size()));
    }
  };
  if (!collective(step, reduce)) return false;
  const float weights = buffer_.back();
  // Whole groups' weights sum to one up to rounding: left alone, so that period 1 follows
  // sync_allreduce's trajectory.
  if (std::abs(weights - 1.0f) > 1e-4f)
    for (int64_t i = 0; i < params; ++i) buffer_[static_cast<std::size_t>(i)] /= weights;
  if (compressed)
    for (int64_t i = 0; i < params; ++i) {
      const auto at = static_cast<std::size_t>(i);
      buffer_[at] += anchor_[at];
      anchor_[at] = buffer_[at];
    }
  worker_->backend().upload(model.params(), buffer_.data(), params);
  std::copy_n(buffer_.begin() + params, Votes::kCount, agreed.values.begin());
  return true;
}

bool LocalSgd::collective(int64_t step, const std::function<void(Communicator&)>& op) {
  ElasticGroup* group = context_.elastic;
  if (group == nullptr) {
    op(*context_.comm);
    return true;
  }
  const int generation = group->generation();
  const bool ran = group->collective(op);
  if (group->generation() != generation) {
    std::string ranks;
    for (int member : group->members())
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(member);
    context_.event(step, kRegroupEvent,
                   "the group went on with " + std::to_string(group->members().size()) +
                       " workers (ranks " + ranks + ") at step " + std::to_string(step) +
                       (ran ? "" : ", this rank's pending average skipped") +
                       "; the lost workers' local steps since the last average are lost",
                   "");
  }
  return ran;
}

Votes LocalSgd::agree(const Votes& local) {
  Votes sum = local;
  if (context_.comm == nullptr) return sum;
  // Skipped: the others agreed without this rank and went on, so the sum said to go on.
  if (!collective(step_, [&](Communicator& comm) {
        sum = local;
        comm.allReduceSum(sum.values.data(), Votes::kCount);
      }))
    return local;
  return sum;
}

bool LocalSgd::evaluates() const {
  return context_.elastic != nullptr ? context_.elastic->leads() : context_.job.rank == 0;
}

}  // namespace dtlab::core
