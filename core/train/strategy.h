#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/comm/gradient_compression.h"
#include "core/metrics/metrics.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

class AbortSignal;
class Backend;
struct Checkpoint;
class Communicator;
class ElasticGroup;
class GroupRecovery;
class ParameterClient;
class Dataset;
class Worker;

// One rank's part of one run: what a node daemon executes for StartJob.
struct WorkerJob {
  ExperimentSpec spec;
  int variant = 0;  // index into spec.variants
  int rank = 0;
  int world = 1;
  NodeConfig node;  // this node's emulated speed (bandwidth/latency act in the communicator)
  int threads = 1;  // CPU threads of this worker's backend
  std::string device = "cpu";
  bool keepParams = false;  // return the final parameters (tests, equivalence checks)
  // Continue from this checkpoint (every rank the same one): the first step is its step + 1,
  // and the run's clock goes on from its time.
  std::shared_ptr<const Checkpoint> resumeFrom;
  // The run's clock at the start of this job: a group restarted after a lost node goes on
  // from the time the run has taken so far, lost time included. Unset: the checkpoint's time,
  // or 0 for a fresh run.
  std::optional<double> clockStartMs;
};

// Where a failed rank's error started. A run's error is the root cause: the coordinator
// reports a rank's own failure before one that a peer's failure caused, and both before a
// communication error, which is usually the echo of something else (a peer that died or
// aborted its connections).
enum class FailureOrigin { kNone, kThisRank, kPeer, kCommunication };
const char* toString(FailureOrigin origin);
FailureOrigin parseFailureOrigin(std::string_view text);  // unknown text: kCommunication

// A run-ending failure that every rank learned of together (through the control votes), with
// where it started from this rank's point of view.
class RunFailure : public Error {
 public:
  RunFailure(FailureOrigin origin, const std::string& message,
             StopReason reason = StopReason::kError)
      : Error(message), origin_(origin), reason_(reason) {}
  FailureOrigin origin() const { return origin_; }
  // kDiverged for a loss that was not finite (on this rank or a peer), else kError.
  StopReason reason() const { return reason_; }

 private:
  FailureOrigin origin_;
  StopReason reason_;
};

// This rank's outcome; the coordinator merges the ranks' results into a RunSummary.
struct WorkerResult {
  RunStatus status = RunStatus::kFailed;
  StopReason stopReason = StopReason::kError;
  std::string error;
  FailureOrigin origin = FailureOrigin::kNone;
  int64_t steps = 0;
  int64_t samples = 0;  // samples this rank trained on
  double wallS = 0.0;
  double computeMsTotal = 0.0;
  double stepMsTotal = 0.0;
  double waitMsTotal = 0.0;
  ExchangeTotals exchange;  // staleness, bytes and divergence of this rank's steps
  std::string paramChecksum;
  std::optional<double> finalTestAccuracy;
  std::optional<double> finalTestLoss;
  std::optional<double> timeToTargetS;
  // Peak resident memory of the process that ran this rank, from the job's start (0: not
  // measured). Set by whoever owns the process: the node daemon, the local trainer.
  int64_t peakMemBytes = 0;
  std::vector<float> params;  // the final parameters when WorkerJob::keepParams
};

// Decisions every rank must take at the same step, so they are taken from values all ranks
// share: each rank casts its votes, a strategy sums them over the ranks (with the step's own
// communication where it has some, or with agree()), and every rank acts on the sums.
struct Votes {
  enum Slot : int {
    kCancel,         // the user or the coordinator asked this rank to stop
    kTimeUp,         // training.max_seconds has passed on this rank's clock
    kDiverged,       // this rank's loss was not finite
    kEvalFailed,     // this rank's evaluation threw
    kTargetReached,  // this rank's evaluation reached training.target_accuracy
    kCount
  };
  std::array<float, kCount> values{};
  float& operator[](Slot slot) { return values[slot]; }
  bool any(Slot slot) const { return values[slot] > 0.5f; }
};

// What one step did, reported by the strategy to the shared loop.
struct StepReport {
  double loss = 0.0;    // this rank's mean loss on its batch
  int64_t samples = 0;  // samples this rank trained on in this step
  double computeMs = 0.0;
  double commMs = 0.0;  // time spent in communication, hidden or not
  double waitMs = 0.0;  // time the training thread sat blocked on peers or servers
  double tailMs = std::numeric_limits<double>::quiet_NaN();  // StepMetrics::tailMs
  double batchShare = 1.0;
  double staleness = 0.0;
  // Bytes moved outside the communicator (parameter-server pushes and pulls); the loop adds
  // the communicator's own counts.
  int64_t bytesSent = 0;
  int64_t bytesReceived = 0;
  double divergence = std::numeric_limits<double>::quiet_NaN();
  // Every rank came to the same state in this step after acting on its own (hybrid back to
  // synchronous): the loop restarts its evaluation schedule from this step's global step, so
  // that all ranks make the same collective calls from here on.
  bool resynchronized = false;
  bool votesAgreed = false;  // the step's communication carried the votes: `agreed` is set
};

// What Strategy::checkpointBeside leaves to the checkpoint's writer thread.
struct CheckpointCopy {
  std::function<void(Checkpoint&)> fill;  // empty: nothing (checkpoint() is called instead)
  // The fill reads the strategy's live state, so the step after the checkpoint does not end
  // before it ran (a step that did not update waits for it at its end). False: it reads copies
  // of its own (a parameter server's staged blocks) and may take as long as it needs.
  bool readsLiveState = true;
};

// What the shared loop hands a strategy.
struct StrategyContext {
  const WorkerJob& job;
  Communicator* comm;  // null when world == 1
  // The same group when it may go on without a lost rank (on_node_loss "continue" of a
  // strategy with a group, elastic_group.h); null otherwise.
  ElasticGroup* elastic;
  // The parameter server's blocks, for strategies that use one; null: a single-process run
  // (the strategy serves its parameters itself) or a strategy that has none.
  ParameterClient* ps;
  const Dataset& dataset;
  Backend& backend;
  int64_t totalSteps;  // for the learning-rate schedule; 0: unbounded
  // Records an event (the leading rank's are the run's: rank 0, or the first of the group
  // re-formed after a loss; the loop keeps the others out): its sentence, and its facts as
  // RunEvent::data holds them ("" when it has none; core/metrics/event_facts.h).
  std::function<void(int64_t step, std::string kind, std::string detail, std::string data)> event;
  // The run's sink, for records beyond steps and events (a parameter server's pushes); null:
  // none.
  MetricSink* sink = nullptr;
  // Seconds setUp() spent measuring the cluster for every later group of the same hosts (the
  // all-reduce tuning pass, which a cache then spares them). The loop takes them out of the
  // run's clock, so that of two variants on one cluster the first is not the slower for
  // having measured it.
  double uncountedSeconds = 0.0;
};

// What a training strategy supplies; the loop in runWorker does everything they share: the
// step loop, the stop votes (cancel, time, divergence, evaluator failure, target), evaluation,
// metric emission and the final checksum. A new strategy is one subclass and its descriptor in
// the registry (core/train/README.md).
class Strategy {
 public:
  virtual ~Strategy() = default;
  // Builds this rank's replica and whatever must happen before the first step (replicas
  // made identical, buckets, servers). Returns the detail of the "start" event.
  virtual std::string setUp() = 0;
  // After setUp: the facts of the "start" event (RunEvent::data; "" when it has none).
  virtual std::string startFacts() const { return {}; }
  // One training step. The strategy sums `local` over the ranks if its communication this
  // step allows (setting report.votesAgreed and `agreed`); otherwise the loop does not act
  // on votes this step.
  virtual StepReport step(int64_t step, const Votes& local, Votes& agreed) = 0;
  // Sums the votes over all ranks now: a collective every rank calls at the same step.
  virtual Votes agree(const Votes& local) = 0;
  // The replica this rank evaluates and checksums.
  virtual Worker& replica() = 0;
  // Whether this rank evaluates (with identical replicas, one rank is enough).
  virtual bool evaluates() const = 0;
  // Global batch per step, for the epoch arithmetic.
  virtual int64_t globalBatch() const = 0;

  // Whether the run's step budget (totalSteps global batches; 0: none) is spent after this
  // rank's `step`. Synchronous strategies: when this rank has taken totalSteps steps.
  // Asynchronous ones count every worker's steps, so a fast worker takes more of them.
  virtual bool budgetSpent(int64_t step, int64_t totalSteps) const {
    return totalSteps > 0 && step >= totalSteps;
  }
  // The run's progress in global batches after this rank's `step` (the evaluation interval
  // and the step of evaluation points count these).
  virtual int64_t globalStep(int64_t step) const { return step; }
  // Called on the evaluating rank before it evaluates replica() (an asynchronous worker
  // fetches the server's current weights first).
  virtual void beforeEvaluate() {}
  // This rank trains no more (called after the final evaluation): release what other ranks
  // may wait on. Also called, ignoring errors, when the run fails.
  virtual void finish() {}
  // What this rank's compressed exchanges did (the variant's "compression"); zeros without.
  virtual CompressionTotals compression() const { return {}; }

  // Checkpoints (core/train/checkpoint.h), for a strategy whose descriptor says it keeps them
  // (StrategyTraits::keepsCheckpoints). checkpoint(), called on rank 0 after `step`, takes
  // what continues every rank from there (a synchronous replica; a parameter server's blocks);
  // restore(), called on every rank right after setUp(), puts a fresh rank where the
  // checkpoint was (replica, optimizer, data position, the strategy's own state) and returns
  // this rank's step there (its next is that + 1). checkpoint() fills `out`, which holds an
  // earlier checkpoint's buffers (or none): the arrays are copied into the memory they have,
  // so a checkpoint of hundreds of MB costs one copy, not an allocation, page faults and a copy.
  virtual void checkpoint(int64_t step, Checkpoint& out) const;
  virtual int64_t restore(const Checkpoint& checkpoint);
  // The same with the arrays' copy left to the checkpoint's writer thread: fills `out` but its
  // arrays and returns what fills them (CheckpointCopy), which runs beside the next steps. A
  // copy that reads the live state (a replica in host memory) must end before that state
  // changes: the strategy calls `copied` before its next update, which waits for it. Returns
  // an empty fill where the strategy cannot (checkpoint() is then called instead).
  virtual CheckpointCopy checkpointBeside(int64_t step, Checkpoint& out,
                                          std::function<void()> copied) const;
};

// Runs one rank of the job's strategy variant to the end (stopping conditions as in
// trainLocal; every rank stops at the same step because the decisions are taken from votes
// all ranks share). `comm` connects the `world` ranks and may be null when world == 1.
// Errors (a peer lost, a collective failing) come back as status kFailed with the message
// and its origin; `cancel` stops at the next step boundary. Metrics go to sink with
// StepMetrics::worker = rank.
// `ps` serves the parameters of parameter-server strategies across processes (null: the
// strategy serves them in this process, which needs world == 1). `recovery` (may be null)
// re-forms the group without a lost rank, for a variant whose on_node_loss is "continue".
WorkerResult runWorker(const WorkerJob& job, Communicator* comm, MetricSink* sink,
                       const std::atomic<bool>* cancel, ParameterClient* ps = nullptr,
                       GroupRecovery* recovery = nullptr);

}  // namespace dtlab::core
