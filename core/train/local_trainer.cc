#include "core/train/local_trainer.h"

#include <chrono>
#include <cmath>
#include <numeric>

#include "core/backend/backend.h"
#include "core/data/dataset.h"
#include "core/train/worker.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start, Clock::time_point now) {
  return std::chrono::duration<double, std::milli>(now - start).count();
}

}  // namespace

int autoThreads(const ExperimentSpec& spec, const Dataset& dataset) {
  // Below about 0.2 GFLOP a step, waking a second thread costs more than it saves, and
  // a spinning OpenMP pool slows to a crawl when another process holds the other core
  // (measured: 25x slower on the default spec beside a compiler).
  int64_t macs = 0;
  int64_t width = dataset.features();
  for (int64_t h : spec.model.hidden) {
    macs += width * h;
    width = h;
  }
  macs += width * dataset.outputs();
  const double stepFlops =
      6.0 * static_cast<double>(macs) * static_cast<double>(spec.training.batchSize);
  return stepFlops < 2e8 ? 1 : 0;
}

int64_t plannedSteps(const ExperimentSpec& spec, int64_t stepsPerEpoch) {
  int64_t steps = spec.training.epochs > 0 ? spec.training.epochs * stepsPerEpoch : 0;
  if (spec.training.maxSteps > 0)
    steps = steps > 0 ? std::min(steps, spec.training.maxSteps) : spec.training.maxSteps;
  return steps;
}

RunSummary trainLocal(const ExperimentSpec& spec, const LocalTrainOptions& options,
                      MetricSink* sink, const std::atomic<bool>* cancel) {
  RunSummary summary;
  summary.name = spec.name;
  summary.strategy = "single";
  const Clock::time_point start = Clock::now();
  auto event = [&](int64_t step, std::string kind, std::string detail) {
    RunEvent e{step, msSince(start, Clock::now()), std::move(kind), std::move(detail)};
    if (sink != nullptr) sink->onEvent(e);
    summary.events.push_back(std::move(e));
  };

  double computeMsTotal = 0.0;
  double stepMsTotal = 0.0;
  try {
    std::unique_ptr<Dataset> dataset = makeDataset(spec.dataset);
    int threads = options.threads > 0 ? options.threads : spec.training.threads;
    if (threads == 0) threads = autoThreads(spec, *dataset);
    std::unique_ptr<Backend> backend = makeBackend(options.device, threads);
    std::vector<int64_t> all(static_cast<std::size_t>(dataset->size(Split::kTrain)));
    std::iota(all.begin(), all.end(), int64_t{0});
    const int64_t batch = spec.training.batchSize;
    const int64_t stepsPerEpoch = static_cast<int64_t>(all.size()) / batch;
    const int64_t totalSteps = plannedSteps(spec, stepsPerEpoch);
    Worker worker(spec, *backend, *dataset, std::move(all), BatchSlice::whole(batch), totalSteps);
    Tensor testX, testY;
    materialize(*dataset, Split::kTest, testX, testY);
    event(0, "start",
          "device " + backend->name() + ", " + std::to_string(backend->threads()) + " threads, " +
              std::to_string(worker.model().parameterCount()) + " parameters");

    const float gradScale = 1.0f / static_cast<float>(batch);
    int64_t step = 0;
    auto evaluate = [&]() {
      const Evaluation e = worker.evaluate(testX, testY);
      summary.finalTestLoss = e.loss;
      summary.finalTestAccuracy =
          std::isnan(e.accuracy) ? std::nullopt : std::optional<double>(e.accuracy);
      const double wallMs = msSince(start, Clock::now());
      if (sink != nullptr) sink->onEval({step, wallMs, e.loss, e.accuracy});
      if (spec.training.targetAccuracy && !std::isnan(e.accuracy) &&
          e.accuracy >= *spec.training.targetAccuracy) {
        summary.timeToTargetS = wallMs / 1000.0;
        return true;
      }
      return false;
    };

    const Clock::time_point trainStart = Clock::now();
    for (;;) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
        summary.status = "cancelled";
        summary.stopReason = "cancelled";
        event(step, "cancel", "cancelled by the user");
        break;
      }
      if (totalSteps > 0 && step >= totalSteps) {
        summary.stopReason =
            spec.training.maxSteps > 0 && step >= spec.training.maxSteps ? "max_steps" : "epochs";
        break;
      }
      if (spec.training.maxSeconds > 0 &&
          msSince(trainStart, Clock::now()) >= spec.training.maxSeconds * 1000.0) {
        summary.stopReason = "max_seconds";
        break;
      }
      const Clock::time_point t0 = Clock::now();
      worker.loadBatch();
      const Clock::time_point t1 = Clock::now();
      ++step;
      const double loss = worker.computeGradients(gradScale);
      worker.applyUpdate(step);
      const Clock::time_point t2 = Clock::now();
      StepMetrics m;
      m.step = step;
      m.wallMs = msSince(start, t2);
      m.loss = loss;
      m.stepMs = msSince(t0, t2);
      m.computeMs = msSince(t1, t2);
      m.samplesPerS = m.stepMs > 0.0 ? static_cast<double>(batch) * 1000.0 / m.stepMs : 0.0;
      m.utilization = m.stepMs > 0.0 ? m.computeMs / m.stepMs : 1.0;
      computeMsTotal += m.computeMs;
      stepMsTotal += m.stepMs;
      if (sink != nullptr) sink->onStep(m);
      if (!std::isfinite(loss))
        throw Error("loss diverged to " + std::to_string(loss) + " at step " +
                    std::to_string(step) + " (lower optimizer.lr?)");
      if (spec.training.evalInterval > 0 && step % spec.training.evalInterval == 0 && evaluate()) {
        summary.stopReason = "target_accuracy";
        break;
      }
    }
    // Final evaluation unless the last step was just evaluated.
    if (step == 0 || step % spec.training.evalInterval != 0) {
      if (evaluate() && summary.stopReason != "cancelled") summary.stopReason = "target_accuracy";
    }
    if (summary.status.empty()) summary.status = "completed";
    summary.steps = step;
    summary.samples = step * batch;
    summary.paramChecksum = {paramChecksum(worker.model().paramsToHost())};
  } catch (const SpecError&) {
    throw;
  } catch (const std::exception& e) {
    summary.status = "failed";
    summary.stopReason = "error";
    summary.error = e.what();
  }
  summary.wallS = msSince(start, Clock::now()) / 1000.0;
  summary.samplesPerS =
      stepMsTotal > 0.0 ? static_cast<double>(summary.samples) * 1000.0 / stepMsTotal : 0.0;
  summary.meanUtilization = stepMsTotal > 0.0 ? computeMsTotal / stepMsTotal : 0.0;
  summary.meanWaitFraction = 0.0;
  event(summary.steps, "finish", summary.status + " (" + summary.stopReason + ")");
  return summary;
}

}  // namespace dtlab::core
