// The part of every strategy that is the same: runWorker and its step loop.
#include <chrono>
#include <cmath>
#include <limits>

#include "core/backend/backend.h"
#include "core/comm/communicator.h"
#include "core/comm/elastic_group.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/metrics/event_facts.h"
#include "core/train/checkpoint.h"
#include "core/train/checkpoint_writer.h"
#include "core/train/local_trainer.h"
#include "core/train/strategy.h"
#include "core/train/strategy_registry.h"
#include "core/train/worker.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string formatLoss(double loss) {
  if (std::isnan(loss)) return "nan";
  if (std::isinf(loss)) return loss > 0 ? "inf" : "-inf";
  return std::to_string(loss);
}

class TrainingLoop {
 public:
  TrainingLoop(const WorkerJob& job, Communicator* comm, MetricSink* sink,
               const std::atomic<bool>* cancel, ParameterClient* ps, GroupRecovery* recovery)
      : job_(job), spec_(job.spec), comm_(comm), sink_(sink), cancel_(cancel), ps_(ps) {
    if (recovery != nullptr && comm != nullptr && job.world > 1) {
      elastic_ = std::make_unique<ElasticGroup>(*comm, job.rank, job.world, *recovery);
      comm_ = elastic_.get();
    }
    if (job.rank == 0 && sink != nullptr && keepsCheckpoints())
      writer_ = std::make_unique<CheckpointWriter>(*sink);
  }

  WorkerResult run();

 private:
  void event(int64_t step, std::string kind, std::string detail, std::string data = {}) {
    if (sink_ != nullptr && (elastic_ ? elastic_->leads() : job_.rank == 0))
      sink_->onEvent({step, msBetween(start_, Clock::now()), std::move(kind), std::move(detail),
                      std::move(data)});
  }
  // Evaluates (on the ranks the strategy names) and agrees on the verdict; throws RunFailure
  // when any rank's evaluation failed or loss diverged. Returns whether the target was reached.
  bool evaluate(Strategy& strategy, int64_t step);
  // Throws RunFailure when the agreed votes say a rank's loss diverged or its evaluation failed.
  void failOnAgreedErrors(const Votes& agreed, int64_t step);
  Votes localVotes(Clock::time_point trainStart) const;
  void recordStep(int64_t step, const StepReport& r, double stepMs, double wallMs,
                  int64_t sentBefore, int64_t receivedBefore);
  // Puts the run where job_.resumeFrom was taken; returns its step.
  int64_t resume(Strategy& strategy);
  // Rank 0 hands the sink a checkpoint after `step` when the spec's interval says so.
  void maybeCheckpoint(const Strategy& strategy, int64_t step);
  bool keepsCheckpoints() const {
    return strategyOf(spec_.variants[static_cast<std::size_t>(job_.variant)])
        .traits.keepsCheckpoints;
  }

  const WorkerJob& job_;
  const ExperimentSpec& spec_;
  Communicator* comm_;  // elastic_ when there is one
  std::unique_ptr<ElasticGroup> elastic_;
  MetricSink* sink_;
  const std::atomic<bool>* cancel_;
  ParameterClient* ps_;
  Clock::time_point start_ = Clock::now();
  std::unique_ptr<Dataset> dataset_;
  std::unique_ptr<Backend> backend_;
  WorkerResult result_;
  std::unique_ptr<EvalSet> testSet_;  // before backend_ in destruction: it holds its memory
  // This rank's own failures, voted at the next agreement and reported as its own.
  std::string divergedBecause_;
  std::string evalFailedBecause_;
  int64_t lastEvalStep_ = -1;
  int64_t lastEvalProgress_ = 0;        // the global step of the last evaluation
  int64_t lastCheckpointProgress_ = 0;  // the global step of the last checkpoint
  Clock::time_point lastCheckpoint_ = Clock::now();
  // Rank 0's checkpoints go to the sink on the writer's thread; the training thread's part
  // (the snapshot, and any wait for the previous write) is reported with the next step.
  std::unique_ptr<CheckpointWriter> writer_;
  double stallMs_ = std::numeric_limits<double>::quiet_NaN();
  double heldMs_ = 0.0;  // the step's wait for a copy beside it (Strategy::checkpointBeside)
  bool awaitCopyAtStepEnd_ = false;  // the copy beside the next step reads the live state
};

int64_t TrainingLoop::resume(Strategy& strategy) {
  const Checkpoint& c = *job_.resumeFrom;
  const std::string name = strategyOf(spec_.variants[static_cast<std::size_t>(job_.variant)]).name;
  if (!keepsCheckpoints())
    throw Error(name + " keeps no checkpoints, so it cannot resume from one");
  if (c.strategy != name)
    throw Error("the checkpoint is of a " + c.strategy + " run, this variant is " + name);
  const int64_t step = strategy.restore(c);
  lastEvalProgress_ = strategy.globalStep(step);
  lastCheckpointProgress_ = lastEvalProgress_;
  return step;
}

void TrainingLoop::maybeCheckpoint(const Strategy& strategy, int64_t step) {
  const TrainingConfig& t = spec_.training;
  if (!writer_) return;
  const Clock::time_point now = Clock::now();
  // The interval counts the run's steps, as evaluation does: on an asynchronous strategy rank 0's
  // own steps are a share of them, and fewer still while it evaluates for everyone.
  const int64_t progress = strategy.globalStep(step);
  const bool bySteps = t.checkpointEvery > 0 &&
                       progress / t.checkpointEvery > lastCheckpointProgress_ / t.checkpointEvery;
  const bool bySeconds =
      t.checkpointSeconds > 0.0 && msBetween(lastCheckpoint_, now) >= t.checkpointSeconds * 1000.0;
  if (!bySteps && !bySeconds) return;
  Checkpoint& c = writer_->take();
  // The writer fills the arrays beside the next steps where the strategy can; where that reads
  // the live state (a replica in host memory), the update that would change it waits for the
  // copy, and that wait is part of the stall.
  CheckpointWriter* writer = writer_.get();
  double* stall = &heldMs_;
  CheckpointCopy copy =
      strategy.checkpointBeside(step, c, [writer, stall] { *stall += writer->awaitCopy(); });
  if (!copy.fill) strategy.checkpoint(step, c);
  awaitCopyAtStepEnd_ = copy.fill && copy.readsLiveState;
  c.wallMs = msBetween(start_, now);
  writer_->write(std::move(copy.fill));
  stallMs_ = msBetween(now, Clock::now());
  lastCheckpoint_ = now;
  lastCheckpointProgress_ = progress;
}

Votes TrainingLoop::localVotes(Clock::time_point trainStart) const {
  Votes v;
  v[Votes::kCancel] = cancel_ != nullptr && cancel_->load(std::memory_order_relaxed) ? 1.0f : 0.0f;
  v[Votes::kTimeUp] = spec_.training.maxSeconds > 0 && msBetween(trainStart, Clock::now()) >=
                                                           spec_.training.maxSeconds * 1000.0
                          ? 1.0f
                          : 0.0f;
  v[Votes::kDiverged] = divergedBecause_.empty() ? 0.0f : 1.0f;
  v[Votes::kEvalFailed] = evalFailedBecause_.empty() ? 0.0f : 1.0f;
  return v;
}

void TrainingLoop::failOnAgreedErrors(const Votes& agreed, int64_t step) {
  // Divergence first: a diverged model also makes the evaluation meaningless.
  if (agreed.any(Votes::kDiverged)) {
    if (!divergedBecause_.empty())
      throw RunFailure(FailureOrigin::kThisRank, divergedBecause_, StopReason::kDiverged);
    throw RunFailure(
        FailureOrigin::kPeer,
        "stopped at step " + std::to_string(step) + ": the loss diverged on another rank",
        StopReason::kDiverged);
  }
  if (agreed.any(Votes::kEvalFailed)) {
    if (!evalFailedBecause_.empty()) throw RunFailure(FailureOrigin::kThisRank, evalFailedBecause_);
    throw RunFailure(FailureOrigin::kPeer, "stopped at step " + std::to_string(step) +
                                               ": the evaluation failed on another rank");
  }
}

bool TrainingLoop::evaluate(Strategy& strategy, int64_t step) {
  Votes v = localVotes(start_);
  v[Votes::kCancel] = 0.0f;  // evaluation decides only errors and the target
  v[Votes::kTimeUp] = 0.0f;
  const int64_t progress = strategy.globalStep(step);
  if (strategy.evaluates() && evalFailedBecause_.empty()) {
    try {
      if (!testSet_) testSet_ = std::make_unique<EvalSet>(*dataset_, Split::kTest, *backend_);
      strategy.beforeEvaluate();
      const Evaluation e = strategy.replica().evaluate(*testSet_);
      const double wallMs = msBetween(start_, Clock::now());
      result_.finalTestLoss = e.loss;
      result_.finalTestAccuracy = std::isnan(e.accuracy) ? std::nullopt : std::optional(e.accuracy);
      if (sink_ != nullptr) sink_->onEval({progress, wallMs, e.loss, e.accuracy, e.perplexity});
      if (spec_.training.targetAccuracy && !std::isnan(e.accuracy) &&
          e.accuracy >= *spec_.training.targetAccuracy)
        v[Votes::kTargetReached] = 1.0f;
    } catch (const std::exception& e) {
      evalFailedBecause_ = "evaluation at step " + std::to_string(step) + " failed on rank " +
                           std::to_string(job_.rank) + ": " + e.what();
      v[Votes::kEvalFailed] = 1.0f;
    }
  }
  lastEvalStep_ = step;
  lastEvalProgress_ = progress;
  const Votes agreed = strategy.agree(v);
  failOnAgreedErrors(agreed, step);
  const bool reached = agreed.any(Votes::kTargetReached);
  if (reached && !result_.timeToTargetS)
    result_.timeToTargetS = msBetween(start_, Clock::now()) / 1000.0;
  return reached;
}

// This rank's metrics of one step: sent to the sink and added to the run's totals.
void TrainingLoop::recordStep(int64_t step, const StepReport& r, double stepMs, double wallMs,
                              int64_t sentBefore, int64_t receivedBefore) {
  StepMetrics m;
  m.worker = job_.rank;
  m.step = step;
  m.wallMs = wallMs;
  m.loss = r.loss;
  m.stepMs = stepMs;
  m.computeMs = r.computeMs;
  m.commMs = r.commMs;
  m.waitMs = r.waitMs;
  m.tailMs = r.tailMs;
  m.samplesPerS = m.stepMs > 0.0 ? static_cast<double>(r.samples) * 1000.0 / m.stepMs : 0.0;
  m.utilization = m.stepMs > 0.0 ? m.computeMs / m.stepMs : 1.0;
  m.batchShare = r.batchShare;
  m.staleness = r.staleness;
  m.bytesSent = static_cast<double>(r.bytesSent);
  m.bytesReceived = static_cast<double>(r.bytesReceived);
  if (comm_ != nullptr && job_.world > 1) {
    m.bytesSent += static_cast<double>(comm_->bytesSent() - sentBefore);
    m.bytesReceived += static_cast<double>(comm_->bytesReceived() - receivedBefore);
  }
  m.divergence = r.divergence;
  m.checkpointStallMs = std::exchange(stallMs_, std::numeric_limits<double>::quiet_NaN());
  if (writer_) m.checkpointWriteMs = writer_->takeWriteMs().value_or(m.checkpointWriteMs);
  result_.exchange.add(m);
  result_.computeMsTotal += m.computeMs;
  result_.stepMsTotal += m.stepMs;
  result_.waitMsTotal += m.waitMs;
  result_.samples += r.samples;
  if (sink_ != nullptr) sink_->onStep(m);
}

WorkerResult TrainingLoop::run() {
  // The run's clock goes on from where it stood (events, series, time limit, time to target).
  const auto clockStart =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(
          job_.clockStartMs.value_or(job_.resumeFrom ? job_.resumeFrom->wallMs : 0.0)));
  start_ -= clockStart;
  dataset_ = makeDataset(spec_.dataset);
  backend_ = makeBackend(job_.device, job_.threads, spec_.training.precision);
  if (!backend_->hostMemory()) {
    const bool needsGroup = strategyOf(spec_.variants[static_cast<std::size_t>(job_.variant)])
                                .traits.needsCollectiveGroup;
    if (job_.world > 1 && needsGroup && (comm_ == nullptr || !comm_->deviceMemory()))
      throw Error(detail::concat("device '", job_.device, "' with ", job_.world,
                                 " workers needs collectives on the GPU (NCCL); this group's "
                                 "work on host memory"));
    if (comm_ != nullptr) comm_->setComputeStream(backend_->stream());
  }
  const int64_t global = spec_.training.batchSize;
  const int64_t stepsPerEpoch = dataset_->size(Split::kTrain) / global;
  const int64_t totalSteps = plannedSteps(spec_, stepsPerEpoch);
  StrategyContext context{
      job_,
      job_.world > 1 ? comm_ : nullptr,
      elastic_.get(),
      ps_,
      *dataset_,
      *backend_,
      totalSteps,
      [this](int64_t step, std::string kind, std::string detail, std::string data) {
        event(step, std::move(kind), std::move(detail), std::move(data));
      },
      sink_};
  std::unique_ptr<Strategy> strategy = makeStrategy(context);
  // A copy beside a step reads the strategy's state: it ends before the strategy goes, however
  // the run ends (a failed collective's exception included).
  struct CopyEnds {
    CheckpointWriter* writer;
    ~CopyEnds() {
      if (writer != nullptr) writer->awaitCopy();
    }
  } copyEnds{writer_.get()};
  const std::string setUp = strategy->setUp();
  start_ += std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(context.uncountedSeconds));
  event(0, std::string(kStartEvent),
        "rank " + std::to_string(job_.rank) + "/" + std::to_string(job_.world) + " on " +
            backend_->name() + " (" + std::to_string(backend_->threads()) +
            (backend_->threads() == 1 ? " thread), " : " threads), ") + setUp + ", " +
            std::to_string(strategy->replica().model().parameterCount()) + " parameters",
        strategy->startFacts());

  if ((spec_.training.checkpointEvery > 0 || spec_.training.checkpointSeconds > 0.0) &&
      !keepsCheckpoints())
    event(0, std::string(kNoCheckpointsEvent),
          "no checkpoints: " +
              strategyOf(spec_.variants[static_cast<std::size_t>(job_.variant)]).name +
              " keeps none (its workers hold replicas of their own)");
  int64_t step = 0;
  if (job_.resumeFrom) {
    step = resume(*strategy);
    event(step, "resume", "from the checkpoint of step " + std::to_string(job_.resumeFrom->step));
  }
  StopReason stop = StopReason::kNone;
  Clock::time_point trainStart = Clock::now() - clockStart;
  for (;;) {
    if (strategy->budgetSpent(step, totalSteps)) {
      stop = spec_.training.maxSteps > 0 && strategy->globalStep(step) >= spec_.training.maxSteps
                 ? StopReason::kMaxSteps
                 : StopReason::kEpochs;
      break;
    }
    ++step;
    const Votes local = localVotes(trainStart);
    Votes agreed;
    const int64_t sentBefore = comm_ != nullptr && job_.world > 1 ? comm_->bytesSent() : 0;
    const int64_t receivedBefore = comm_ != nullptr && job_.world > 1 ? comm_->bytesReceived() : 0;
    const Clock::time_point t0 = Clock::now();
    const StepReport r = strategy->step(step, local, agreed);
    if (writer_ && !std::isnan(stallMs_)) {
      // A copy of the live state beside the step is done by its end (a step that did not
      // update waits here).
      if (std::exchange(awaitCopyAtStepEnd_, false)) heldMs_ += writer_->awaitCopy();
      stallMs_ += std::exchange(heldMs_, 0.0);
    }
    const Clock::time_point t1 = Clock::now();

    recordStep(step, r, msBetween(t0, t1), msBetween(start_, t1), sentBefore, receivedBefore);
    // Ranks that evaluated on their own clocks (asynchronous) may have seen different interval
    // boundaries; from a common state on, they count from the same one.
    if (r.resynchronized) lastEvalProgress_ = strategy->globalStep(step) - 1;
    // A diverged loss is voted with the next agreement, so that every rank stops together
    // (a rank that stopped alone would leave its peers blocked in a collective).
    if (r.samples > 0 && !std::isfinite(r.loss) && divergedBecause_.empty())
      divergedBecause_ = "loss diverged to " + formatLoss(r.loss) + " at step " +
                         std::to_string(step) + " on rank " + std::to_string(job_.rank) +
                         " (lower optimizer.lr?)";

    if (r.votesAgreed) {
      // The votes were cast before this step; they may say a rank diverged a step ago.
      failOnAgreedErrors(agreed, step);
      if (agreed.any(Votes::kCancel)) {
        stop = StopReason::kCancelled;
        break;
      }
      if (agreed.any(Votes::kTimeUp)) {
        stop = StopReason::kMaxSeconds;
        break;
      }
      // Only asynchronous strategies hear of a target on a step: the evaluating rank reached
      // it and the others learn it from the server.
      if (agreed.any(Votes::kTargetReached)) {
        stop = StopReason::kTargetAccuracy;
        break;
      }
    }
    const int64_t interval = spec_.training.evalInterval;
    if (interval > 0 && strategy->globalStep(step) / interval > lastEvalProgress_ / interval &&
        evaluate(*strategy, step)) {
      stop = StopReason::kTargetAccuracy;
      break;
    }
    maybeCheckpoint(*strategy, step);
  }
  // The final evaluation, unless the last step had one. Either way the last agreement came
  // after the last step, so it settled a divergence of that step too. (Whether to evaluate
  // depends only on what every rank agreed on, so all ranks make the same collective call.)
  if (lastEvalStep_ != step && evaluate(*strategy, step) && stop != StopReason::kCancelled)
    stop = StopReason::kTargetAccuracy;
  if (writer_) writer_->drain();  // the last checkpoint reaches the sink before the result
  strategy->finish();
  const CompressionTotals compressed = strategy->compression();
  result_.exchange.compressDenseBytes += compressed.denseBytes;
  result_.exchange.compressPayloadBytes += compressed.payloadBytes;
  result_.exchange.compressSeconds += compressed.seconds;
  result_.status = stop == StopReason::kCancelled ? RunStatus::kCancelled : RunStatus::kCompleted;
  result_.stopReason = stop;
  result_.steps = strategy->globalStep(step);  // asynchronous: the run's, not this rank's
  std::vector<float> finalParams = strategy->replica().model().paramsToHost();
  result_.paramChecksum = paramChecksum(finalParams);
  if (job_.keepParams) result_.params = std::move(finalParams);
  if (stop == StopReason::kCancelled) event(step, "cancel", "cancelled");
  return result_;
}

}  // namespace

CheckpointCopy Strategy::checkpointBeside(int64_t, Checkpoint&, std::function<void()>) const {
  return {};
}

void Strategy::checkpoint(int64_t, Checkpoint&) const {
  throw Error("this strategy keeps no checkpoints");
}

int64_t Strategy::restore(const Checkpoint&) {
  throw Error("this strategy keeps no checkpoints");
}

const char* toString(FailureOrigin origin) {
  switch (origin) {
    case FailureOrigin::kNone:
      return "";
    case FailureOrigin::kThisRank:
      return "this_rank";
    case FailureOrigin::kPeer:
      return "peer";
    case FailureOrigin::kCommunication:
      return "communication";
  }
  return "communication";
}

FailureOrigin parseFailureOrigin(std::string_view text) {
  for (FailureOrigin o : {FailureOrigin::kNone, FailureOrigin::kThisRank, FailureOrigin::kPeer})
    if (text == toString(o)) return o;
  return FailureOrigin::kCommunication;
}

WorkerResult runWorker(const WorkerJob& job, Communicator* comm, MetricSink* sink,
                       const std::atomic<bool>* cancel, ParameterClient* ps,
                       GroupRecovery* recovery) {
  const Clock::time_point start = Clock::now();
  WorkerResult result;
  auto fail = [&](FailureOrigin origin, const char* message,
                  StopReason reason = StopReason::kError) {
    result = WorkerResult{};
    result.status = RunStatus::kFailed;
    result.stopReason = reason;
    result.origin = origin;
    result.error = message;
  };
  try {
    if (job.variant < 0 || job.variant >= static_cast<int>(job.spec.variants.size()))
      throw Error("variant " + std::to_string(job.variant) + " does not exist (the spec has " +
                  std::to_string(job.spec.variants.size()) + ")");
    if (job.world < 1 || job.rank < 0 || job.rank >= job.world)
      throw Error("rank " + std::to_string(job.rank) + " outside a world of " +
                  std::to_string(job.world));
    // Workers of a parameter server talk only to the servers; every other kind needs the group.
    const bool needsGroup = strategyOf(job.spec.variants[static_cast<std::size_t>(job.variant)])
                                .traits.needsCollectiveGroup;
    if (job.world > 1 && (comm != nullptr || needsGroup) &&
        (comm == nullptr || comm->size() != job.world || comm->rank() != job.rank))
      throw Error("the communicator does not match rank " + std::to_string(job.rank) + " of " +
                  std::to_string(job.world));
    result = TrainingLoop(job, comm, sink, cancel, ps, recovery).run();
  } catch (const RunFailure& e) {
    fail(e.origin(), e.what(), e.reason());
  } catch (const CommError& e) {
    fail(FailureOrigin::kCommunication, e.what());
  } catch (const std::exception& e) {
    fail(FailureOrigin::kThisRank, e.what());
  }
  result.wallS = msBetween(start, Clock::now()) / 1000.0;
  return result;
}

}  // namespace dtlab::core
