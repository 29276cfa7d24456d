#include "core/train/strategy.h"

#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include "core/backend/backend.h"
#include "core/comm/communicator.h"
#include "core/comm/gradient_buckets.h"
#include "core/data/dataset.h"
#include "core/train/local_trainer.h"
#include "core/train/worker.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Slots of the control block that travels with each step's gradient all-reduce
// (Mlp::control()). Each rank writes 1 where it wants the run to stop; the sums
// tell every rank the same thing at the same step, so all ranks stop together.
enum ControlSlot : int64_t { kVoteCancel = 0, kVoteTime = 1, kControlUsed = 2 };

// Synchronous data parallel (BSP) with the equal partition: every rank takes a
// near-equal slice of each global batch, gradients are summed across ranks (each
// rank scales its loss by 1/global batch, so the sum is the global mean), and every
// rank applies the same update to the same weights.
class SyncAllReduce {
 public:
  SyncAllReduce(const WorkerJob& job, Communicator* comm, MetricSink* sink,
                const std::atomic<bool>* cancel)
      : job_(job), spec_(job.spec), comm_(comm), sink_(sink), cancel_(cancel) {}

  WorkerResult run();

 private:
  void event(int64_t step, std::string kind, std::string detail);
  // Sum across ranks in place (nothing to do on one rank).
  void allReduce(float* data, int64_t count) {
    if (comm_ != nullptr && job_.world > 1) comm_->allReduceSum(data, count);
  }

  const WorkerJob& job_;
  const ExperimentSpec& spec_;
  Communicator* comm_;
  MetricSink* sink_;
  const std::atomic<bool>* cancel_;
  Clock::time_point start_ = Clock::now();
  WorkerResult result_;
};

void SyncAllReduce::event(int64_t step, std::string kind, std::string detail) {
  if (sink_ != nullptr && job_.rank == 0)
    sink_->onEvent({step, msBetween(start_, Clock::now()), std::move(kind), std::move(detail)});
}

WorkerResult SyncAllReduce::run() {
  const int64_t global = spec_.training.batchSize;
  if (global < job_.world)
    throw Error("training.batch_size " + std::to_string(global) + " is smaller than the " +
                std::to_string(job_.world) + " workers: every worker needs at least one sample");
  std::unique_ptr<Dataset> dataset = makeDataset(spec_.dataset);
  std::unique_ptr<Backend> backend = makeBackend(job_.device, job_.threads);
  std::vector<int64_t> all(static_cast<std::size_t>(dataset->size(Split::kTrain)));
  std::iota(all.begin(), all.end(), int64_t{0});
  const int64_t stepsPerEpoch = static_cast<int64_t>(all.size()) / global;
  const int64_t totalSteps = plannedSteps(spec_, stepsPerEpoch);
  const BatchSlice slice = BatchSlice::equal(global, job_.rank, job_.world);
  Worker worker(spec_, *backend, *dataset, std::move(all), slice, totalSteps);
  Mlp& model = worker.model();
  const int64_t params = model.parameterCount();
  // Rank 0's initial weights everywhere: replicas start identical whatever their seeds.
  if (comm_ != nullptr && job_.world > 1) comm_->broadcast(model.params(), params, 0);
  Tensor testX, testY;
  if (job_.rank == 0) materialize(*dataset, Split::kTest, testX, testY);
  event(0, "start",
        "rank " + std::to_string(job_.rank) + "/" + std::to_string(job_.world) + " on " +
            backend->name() + " (" + std::to_string(backend->threads()) +
            (backend->threads() == 1 ? " thread), " : " threads), ") + std::to_string(slice.count) +
            " of " + std::to_string(global) + " samples per step, " + std::to_string(params) +
            " parameters");

  // Gradients are reduced bucket by bucket on a communication thread while backward
  // goes on; the control block rides in the first bucket (it is ready before backward).
  std::unique_ptr<GradientBuckets> buckets;
  if (comm_ != nullptr && job_.world > 1) {
    std::vector<GradientRange> blocks = {{params, params + kControlUsed}};
    const std::vector<ParamRange>& layers = model.denseLayers();
    for (auto it = layers.rbegin(); it != layers.rend(); ++it)
      blocks.push_back({it->weight, it->end()});
    GradientBucketsOptions options;
    options.bucketBytes = spec_.variants[job_.variant].bucketKb * 1024;
    options.average = false;  // each rank already scaled its loss by 1/global batch
    buckets = std::make_unique<GradientBuckets>(*comm_, model.grads(), params + kControlUsed,
                                                blocks, options);
  }
  // Emulated speed stretches compute where it happens: before a layer's gradients are
  // handed to the communication thread, the time since the previous hand-off is
  // stretched, so a slow node's gradients really arrive late at its peers.
  struct Marker final : GradientListener {
    GradientBuckets* buckets = nullptr;
    double stretch = 0.0;
    Clock::time_point last;
    void onGradientsReady(int64_t begin, int64_t end) override {
      if (stretch > 0.0) {
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(stretch * msBetween(last, Clock::now())));
        last = Clock::now();
      }
      if (buckets != nullptr) buckets->markReady(begin, end);
    }
  } marker;
  marker.buckets = buckets.get();
  marker.stretch = 1.0 / job_.node.speed - 1.0;

  const float gradScale = 1.0f / static_cast<float>(global);
  const double share = static_cast<double>(slice.count) / static_cast<double>(global);
  int64_t step = 0;
  std::string stopReason;

  // Replicas are identical, so rank 0 alone evaluates (on a local cluster the ranks
  // share cores) and its verdict on the target reaches every rank through a one-float
  // all-reduce, so all ranks stop at the same step.
  auto evaluate = [&]() {
    float reached = 0.0f;
    if (job_.rank == 0) {
      const Evaluation e = worker.evaluate(testX, testY);
      const double wallMs = msBetween(start_, Clock::now());
      result_.finalTestLoss = e.loss;
      result_.finalTestAccuracy = std::isnan(e.accuracy) ? std::nullopt : std::optional(e.accuracy);
      if (sink_ != nullptr) sink_->onEval({step, wallMs, e.loss, e.accuracy});
      reached = spec_.training.targetAccuracy && !std::isnan(e.accuracy) &&
                        e.accuracy >= *spec_.training.targetAccuracy
                    ? 1.0f
                    : 0.0f;
    }
    allReduce(&reached, 1);
    if (reached > 0.0f && !result_.timeToTargetS)
      result_.timeToTargetS = msBetween(start_, Clock::now()) / 1000.0;
    return reached > 0.0f;
  };

  const Clock::time_point trainStart = Clock::now();
  for (;;) {
    if (totalSteps > 0 && step >= totalSteps) {
      stopReason =
          spec_.training.maxSteps > 0 && step >= spec_.training.maxSteps ? "max_steps" : "epochs";
      break;
    }
    const Clock::time_point t0 = Clock::now();
    worker.loadBatch();
    const Clock::time_point t1 = Clock::now();
    ++step;
    float* control = model.control();
    std::fill_n(control, Mlp::kControlSlots, 0.0f);
    control[kVoteCancel] =
        cancel_ != nullptr && cancel_->load(std::memory_order_relaxed) ? 1.0f : 0.0f;
    control[kVoteTime] = spec_.training.maxSeconds > 0 && msBetween(trainStart, Clock::now()) >=
                                                              spec_.training.maxSeconds * 1000.0
                             ? 1.0f
                             : 0.0f;
    if (buckets) buckets->markReady(params, params + kControlUsed);
    marker.last = Clock::now();
    const double loss = worker.computeGradients(gradScale, &marker);
    const Clock::time_point t2 = Clock::now();
    if (buckets) buckets->waitAll();
    const Clock::time_point t3 = Clock::now();
    worker.applyUpdate(step);
    const Clock::time_point t4 = Clock::now();

    StepMetrics m;
    m.worker = job_.rank;
    m.step = step;
    m.wallMs = msBetween(start_, t4);
    m.loss = loss;
    m.stepMs = msBetween(t0, t4);
    m.computeMs = msBetween(t1, t2) + msBetween(t3, t4);
    // comm: time the communication thread spent in all-reduces (mostly hidden behind
    // backward); wait: the part the training thread sat blocked for, after backward.
    m.commMs = buckets ? buckets->lastCommSeconds() * 1000.0 : 0.0;
    m.waitMs = msBetween(t2, t3);
    m.samplesPerS = m.stepMs > 0.0 ? static_cast<double>(slice.count) * 1000.0 / m.stepMs : 0.0;
    m.utilization = m.stepMs > 0.0 ? m.computeMs / m.stepMs : 1.0;
    m.batchShare = share;
    result_.computeMsTotal += m.computeMs;
    result_.stepMsTotal += m.stepMs;
    result_.waitMsTotal += m.waitMs;
    if (sink_ != nullptr) sink_->onStep(m);
    if (!std::isfinite(loss))
      throw Error("loss diverged to " + std::to_string(loss) + " at step " + std::to_string(step) +
                  " on rank " + std::to_string(job_.rank) + " (lower optimizer.lr?)");

    if (spec_.training.evalInterval > 0 && step % spec_.training.evalInterval == 0 && evaluate()) {
      stopReason = "target_accuracy";
      break;
    }
    if (control[kVoteCancel] > 0.0f) {
      stopReason = "cancelled";
      break;
    }
    if (control[kVoteTime] > 0.0f) {
      stopReason = "max_seconds";
      break;
    }
  }
  if (stopReason != "target_accuracy" && (step == 0 || step % spec_.training.evalInterval != 0)) {
    if (evaluate() && stopReason != "cancelled") stopReason = "target_accuracy";
  }
  result_.status = stopReason == "cancelled" ? "cancelled" : "completed";
  result_.stopReason = stopReason;
  result_.steps = step;
  result_.samples = step * slice.count;
  std::vector<float> finalParams = model.paramsToHost();
  result_.paramChecksum = paramChecksum(finalParams);
  if (job_.keepParams) result_.params = std::move(finalParams);
  if (stopReason == "cancelled") event(step, "cancel", "cancelled");
  return result_;
}

}  // namespace

WorkerResult runWorker(const WorkerJob& job, Communicator* comm, MetricSink* sink,
                       const std::atomic<bool>* cancel) {
  const Clock::time_point start = Clock::now();
  WorkerResult result;
  try {
    if (job.variant < 0 || job.variant >= static_cast<int>(job.spec.variants.size()))
      throw Error("variant " + std::to_string(job.variant) + " does not exist (the spec has " +
                  std::to_string(job.spec.variants.size()) + ")");
    if (job.world < 1 || job.rank < 0 || job.rank >= job.world)
      throw Error("rank " + std::to_string(job.rank) + " outside a world of " +
                  std::to_string(job.world));
    if (job.world > 1 && (comm == nullptr || comm->size() != job.world || comm->rank() != job.rank))
      throw Error("the communicator does not match rank " + std::to_string(job.rank) + " of " +
                  std::to_string(job.world));
    switch (job.spec.variants[job.variant].strategy) {
      case StrategyKind::kSyncAllReduce:
        result = SyncAllReduce(job, comm, sink, cancel).run();
        break;
    }
  } catch (const std::exception& e) {
    result.status = "failed";
    result.stopReason = "error";
    result.error = e.what();
  }
  result.wallS = msBetween(start, Clock::now()) / 1000.0;
  return result;
}

}  // namespace dtlab::core
