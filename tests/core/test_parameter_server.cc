// The parameter server (async_ps, ssp): the layout of blocks, a block's versions and
// optimizer, the workers' board, one worker equal to sequential SGD bit for bit, and several
// workers (threads sharing the server's blocks) with one slow node: nobody waits under
// async_ps, ssp never lets a worker run more than its bound ahead of the slowest (asserted
// from the clocks the server recorded), the shared budget and a target reached by rank 0 stop
// every worker.
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <latch>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/backend/cpu_backend.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/spec/spec_json.h"
#include "core/train/parameter_server.h"
#include "core/train/strategy.h"
#include "core/train/strategy_registry.h"
#include "core/train/worker.h"
#include "tests/core/not_host_memory.h"
#include "tests/support/specs.h"

using namespace dtlab::core;

namespace {

ExperimentSpec blobsSpec(const char* strategy, int64_t steps) {
  ExperimentSpec spec;
  spec.seed = 11;
  spec.dataset.kind = "gaussian_blobs";
  spec.dataset.trainSize = 4096;
  spec.dataset.testSize = 512;
  // Big enough that a step takes a millisecond or two, so the workers' steps overlap.
  spec.dataset.features = 128;
  spec.dataset.classes = 4;
  spec.model.hidden = {512};
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.lr = 0.05f;
  spec.optimizer.momentum = 0.9f;
  spec.training.batchSize = 48;
  spec.training.epochs = 0;
  spec.training.maxSteps = steps;
  spec.training.evalInterval = 10;
  spec.variants = {test::variant({{"strategy", strategy}})};
  return spec;
}

// A client over the shared blocks that records, at every pull, how far its worker's clock was
// ahead of the slowest worker still training (the server's own clocks).
class RecordingClient final : public ParameterClient {
 public:
  // `startLine`: when given, a worker's first pull waits until every worker is at its first
  // pull, so that they train side by side (one that finished setting up first would
  // otherwise use up a short run's budget alone).
  RecordingClient(ParameterHost& host, const std::vector<PsBlock>& layout, int worker,
                  std::latch* startLine = nullptr)
      : host_(host), inner_(host, layout, worker), startLine_(startLine) {}
  const std::vector<PsBlock>& layout() const override { return inner_.layout(); }
  void init(const float* params) override { inner_.init(params); }
  void reset(const float* params, int64_t version, int64_t epoch) override {
    inner_.reset(params, version, epoch);
  }
  double waitForClock(int64_t clock) override {
    ++waits;
    return inner_.waitForClock(clock);
  }
  PullOutcome pull(float* params, std::vector<int64_t>& versions) override {
    if (startLine_ != nullptr) std::exchange(startLine_, nullptr)->arrive_and_wait();
    const int64_t slowest = host_.board()->state().minClock;
    // The pull a push follows is the one its gradient was computed from (an evaluation pulls
    // in between steps too, without a bound to keep).
    pendingLead_ = slowest == std::numeric_limits<int64_t>::max() ? 0 : pushes - slowest;
    return inner_.pull(params, versions);
  }
  PushOutcome push(const float* grads, const std::vector<int64_t>& basedOn,
                   const WorkerReport& report) override {
    PushOutcome o = inner_.push(grads, basedOn, report);
    maxLead = std::max(maxLead, pendingLead_);
    ++pushes;
    maxStaleness = std::max(maxStaleness, o.staleness);
    return o;
  }
  BoardState agree(const WorkerReport& report) override { return inner_.agree(report); }
  void leave(int worker) override { inner_.leave(worker); }
  void stageSnapshot() override { inner_.stageSnapshot(); }
  ServerSnapshot fetchStagedSnapshot() override { return inner_.fetchStagedSnapshot(); }
  int64_t bytesSent() const override { return 0; }
  int64_t bytesReceived() const override { return 0; }

  int64_t pushes = 0;
  int64_t maxLead = 0;  // most pushes this worker was ahead of the slowest at a pull
  int64_t maxStaleness = 0;
  int waits = 0;

 private:
  ParameterHost& host_;
  LocalParameterClient inner_;
  std::latch* startLine_ = nullptr;
  int64_t pendingLead_ = 0;
};

WorkerReport at(int worker, int64_t clock, const Votes& votes = {}) {
  WorkerReport r;
  r.worker = worker;
  r.clock = clock;
  r.votes = votes;
  return r;
}

struct Ranks {
  bool everyoneLeft = false;  // every worker told the server it was done
  std::vector<WorkerResult> results;
  std::vector<std::unique_ptr<RecordingClient>> clients;
};

// Runs `speeds.size()` workers as threads against one host serving every block.
Ranks runRanks(const ExperimentSpec& spec, const std::vector<double>& speeds) {
  const int world = static_cast<int>(speeds.size());
  const std::vector<PsBlock> layout = psLayoutFor(spec, 0, world);
  const int64_t steps = spec.training.maxSteps;
  ParameterHost host(spec, layout, -1, world, spec.training.batchSize / world,
                     psUpdatesPlanned(steps, world));
  Ranks out;
  out.results.resize(static_cast<std::size_t>(world));
  std::latch startLine(world);
  for (int r = 0; r < world; ++r)
    out.clients.push_back(std::make_unique<RecordingClient>(host, layout, r, &startLine));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      WorkerJob job;
      job.spec = spec;
      job.rank = r;
      job.world = world;
      job.node.speed = speeds[static_cast<std::size_t>(r)];
      job.keepParams = true;
      out.results[static_cast<std::size_t>(r)] =
          runWorker(job, nullptr, nullptr, nullptr, out.clients[static_cast<std::size_t>(r)].get());
    });
  for (std::thread& t : threads) t.join();
  out.everyoneLeft = host.everyoneLeft();
  return out;
}

}  // namespace

class TestParameterServer : public QObject {
  Q_OBJECT
 private slots:
  void layoutCoversTheBufferInShardsAndBoundedBlocks() {
    for (int shards : {1, 2, 3, 7}) {
      const int64_t n = 3 * kMaxBlockFloats + 12345;
      const std::vector<PsBlock> layout = psLayout(n, shards);
      int64_t at = 0;
      std::vector<int64_t> perShard(static_cast<std::size_t>(shards), 0);
      for (const PsBlock& b : layout) {
        QCOMPARE(b.begin, at);
        QVERIFY(b.size() > 0 && b.size() <= kMaxBlockFloats);
        QVERIFY(b.shard >= 0 && b.shard < shards);
        perShard[static_cast<std::size_t>(b.shard)] += b.size();
        at = b.end;
      }
      QCOMPARE(at, n);
      const auto [least, most] = std::minmax_element(perShard.begin(), perShard.end());
      QVERIFY(*most - *least <= 1);  // near-equal shards
    }
    QCOMPARE(psLayout(10, 3).size(), std::size_t{3});
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, psLayout(2, 3));
  }

  void aBlockCountsVersionsAndReportsWhatAGradientWasAppliedTo() {
    ExperimentSpec spec = blobsSpec("async_ps", 10);
    spec.optimizer.momentum = 0.0f;
    spec.optimizer.lr = 0.5f;
    ParameterBlock block(spec, {0, 0, 3}, 48, 10);
    std::vector<float> out(3);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, block.pull(out.data()));
    const std::vector<float> init = {1.0f, 2.0f, 3.0f};
    QVERIFY(block.init(init.data(), 3));
    const std::vector<float> other = {9.0f, 9.0f, 9.0f};
    QVERIFY(!block.init(other.data(), 3));  // the first worker's values win
    QCOMPARE(block.pull(out.data()), int64_t{0});
    QCOMPARE(out, init);
    const std::vector<float> g = {1.0f, 0.0f, -2.0f};
    QCOMPARE(block.push(g.data(), 3, 0), int64_t{0});
    QCOMPARE(block.push(g.data(), 3, 0), int64_t{1});  // stale by one
    QCOMPARE(block.version(), int64_t{2});
    block.pull(out.data());
    QCOMPARE(out, (std::vector<float>{0.0f, 2.0f, 5.0f}));  // two plain SGD steps of lr 0.5
    // Measuring while pulling: out holds a replica that is a known distance away.
    out = {0.0f, 2.0f, 8.0f};
    PullOutcome m;
    block.pull(out.data(), &m);
    QCOMPARE(m.distanceSquared, 9.0);
    QCOMPARE(m.normSquared, 29.0);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, block.push(g.data(), 3, 5));  // from the future
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, block.push(g.data(), 2, 0));  // wrong size
  }

  // A block restored from a snapshot (parameters, momentum, version) goes on exactly as the
  // block it was taken from: the base of a shard's checkpoint.
  void aRestoredBlockGoesOnAsTheOriginalWould() {
    ExperimentSpec spec = blobsSpec("async_ps", 10);
    spec.optimizer.momentum = 0.9f;  // state that a copy of the parameters alone would lose
    ParameterBlock original(spec, {0, 0, 4}, 48, 20);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, original.snapshot());
    const std::vector<float> init = {1.0f, -2.0f, 0.5f, 3.0f};
    original.init(init.data(), 4);
    const auto gradient = [](int k) {
      return std::vector<float>{0.1f * static_cast<float>(k), -0.3f, 0.2f, 0.05f};
    };
    for (int k = 0; k < 5; ++k) original.push(gradient(k).data(), 4, original.version());
    const ParameterBlock::Snapshot taken = original.snapshot();
    QCOMPARE(taken.version, int64_t{5});
    QCOMPARE(taken.optimizerState.size(), std::size_t{1});  // SGD's momentum buffer

    ParameterBlock restored(spec, {0, 0, 4}, 48, 20);
    restored.restore(taken);
    for (int k = 5; k < 9; ++k) {
      original.push(gradient(k).data(), 4, original.version());
      restored.push(gradient(k).data(), 4, restored.version());
    }
    std::vector<float> a(4), b(4);
    QCOMPARE(restored.pull(b.data()), original.pull(a.data()));
    QCOMPARE(b, a);  // bit for bit: same momentum, same schedule position

    // Without the momentum the same pushes land elsewhere: the state is what the test saw.
    ParameterBlock paramsOnly(spec, {0, 0, 4}, 48, 20);
    ParameterBlock::Snapshot bare = taken;
    for (std::vector<float>& part : bare.optimizerState) std::fill(part.begin(), part.end(), 0.0f);
    paramsOnly.restore(bare);
    for (int k = 5; k < 9; ++k) paramsOnly.push(gradient(k).data(), 4, paramsOnly.version());
    paramsOnly.pull(b.data());
    QVERIFY(b != a);

    // A snapshot of another range or optimizer is refused, naming what does not fit.
    ParameterBlock wider(spec, {0, 0, 5}, 48, 20);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, wider.restore(taken));
    ParameterBlock::Snapshot noState = taken;
    noState.optimizerState.clear();
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, restored.restore(noState));
  }

  void theBoardReleasesWaitersWhenTheSlowestCatchesUpOrLeaves() {
    WorkerBoard board(3);
    std::atomic<int> released{0};
    QCOMPARE(board.whenClockReached(0, [&] { ++released; }), uint64_t{0});  // at once
    QCOMPARE(released.load(), 1);
    const uint64_t id = board.whenClockReached(2, [&] { ++released; });
    QVERIFY(id != 0);
    board.report(at(0, 5));
    board.report(at(1, 2));
    QCOMPARE(released.load(), 1);  // worker 2 is still at 0
    board.report(at(2, 1));
    QCOMPARE(released.load(), 1);
    board.leave(2);  // left: it holds nobody back
    QCOMPARE(released.load(), 2);
    QVERIFY(!board.cancelWait(id));
    const uint64_t late = board.whenClockReached(10, [&] { ++released; });
    QVERIFY(board.cancelWait(late));
    Votes v;
    v[Votes::kTargetReached] = 1.0f;
    board.report(at(1, 3, v));
    const BoardState s = board.report(at(0, 6));
    QVERIFY(s.votes.any(Votes::kTargetReached));  // sticky
    QCOMPARE(s.totalPushes, int64_t{6 + 3 + 1});
    QCOMPARE(s.minClock, int64_t{3});
  }

  // The server applies the run's optimizer with the run's schedule to one worker's gradients
  // in order: exactly the sequential learner (same data, same initial weights).
  void oneWorkerUnderAsyncPsIsSequentialSgdExactly() {
    for (const char* optimizer : {"sgd", "adam"}) {
      ExperimentSpec ps = blobsSpec("async_ps", 40);
      ps.optimizer =
          parseExperimentSpec({{"optimizer", {{"kind", optimizer}, {"lr", 0.01}}}}).optimizer;
      ps.optimizer.schedule.kind = ScheduleKind::kCosine;
      ExperimentSpec sequential = ps;
      sequential.variants = {VariantConfig{"single"}};
      WorkerJob a;
      a.spec = ps;
      a.keepParams = true;
      WorkerJob b;
      b.spec = sequential;
      b.keepParams = true;
      const WorkerResult server = runWorker(a, nullptr, nullptr, nullptr);
      const WorkerResult local = runWorker(b, nullptr, nullptr, nullptr);
      QVERIFY2(server.status == RunStatus::kCompleted, server.error.c_str());
      QVERIFY2(local.status == RunStatus::kCompleted, local.error.c_str());
      QCOMPARE(server.steps, int64_t{40});
      QCOMPARE(server.params.size(), local.params.size());
      QVERIFY2(server.params == local.params, optimizer);  // bit for bit
      QCOMPARE(server.finalTestAccuracy, local.finalTestAccuracy);
      QCOMPARE(server.exchange.maxStaleness, 0.0);  // nobody else pushes
    }
  }

  void asyncWorkersNeverWaitAndTheFastOnesDoMore() {
    const ExperimentSpec spec = blobsSpec("async_ps", 60);
    const Ranks ranks = runRanks(spec, {1.0, 1.0, 0.1});
    QVERIFY(ranks.everyoneLeft);
    int64_t pushes = 0;
    for (std::size_t r = 0; r < 3; ++r) {
      const WorkerResult& w = ranks.results[r];
      QVERIFY2(w.status == RunStatus::kCompleted, w.error.c_str());
      QCOMPARE(w.stopReason, StopReason::kMaxSteps);
      QCOMPARE(ranks.clients[r]->waits, 0);
      QCOMPARE(w.waitMsTotal, 0.0);
      pushes += ranks.clients[r]->pushes;
    }
    // The shared budget: 60 global batches of 48 = 180 pushes of 16, give or take the pushes
    // in flight when it ran out.
    QVERIFY2(pushes >= 180 && pushes <= 183, qPrintable(QString::number(pushes)));
    // Together, the two fast workers pushed more than twice as often as the slow one (not by
    // the speed ratio, nor each for sure: the fast threads share two cores with whatever else
    // runs, while the slow one mostly sleeps).
    const auto& c = ranks.clients;
    QVERIFY2(
        c[0]->pushes + c[1]->pushes > 2 * c[2]->pushes,
        qPrintable(
            QString("pushes %1, %2, %3").arg(c[0]->pushes).arg(c[1]->pushes).arg(c[2]->pushes)));
    // The slow worker saw the fast ones' pushes land between its pull and its push (it sleeps
    // nine times its compute while they push), and the model move under it. (A fast worker
    // need not: where the two fast threads take turns, each pull-compute-push can complete
    // before the other's; seen on an AMD EPYC VM in half the runs.)
    const std::size_t slow = 2;
    QVERIFY2(
        c[slow]->maxStaleness > 0,
        qPrintable(
            QString("pushes %1, %2, %3").arg(c[0]->pushes).arg(c[1]->pushes).arg(c[slow]->pushes)));
    QVERIFY(ranks.results[slow].exchange.stalenessSum > 0.0);
    QVERIFY2(ranks.results[slow].exchange.divergenceSteps > 0,
             qPrintable(QString("rank %1 of pushes %2, %3, %4 measured no divergence")
                            .arg(slow)
                            .arg(c[0]->pushes)
                            .arg(c[1]->pushes)
                            .arg(c[2]->pushes)));
    // Without a bound the fast workers run far ahead of the slow one: the check below for
    // ssp is not vacuous.
    const std::size_t busy = c[0]->pushes >= c[1]->pushes ? 0 : 1;
    QVERIFY2(c[busy]->maxLead > 3, qPrintable(QString::number(c[busy]->maxLead)));
    // The final evaluation saw a model that learnt.
    QVERIFY(ranks.results[0].finalTestAccuracy.value_or(0.0) > 0.5);
  }

  // A replica outside host memory (a GPU's) trains through a host mirror of its parameters
  // (StagedParameterClient): every pull copied to it, every gradient from it, and the same
  // weights, bit for bit, as the replica in host memory (one worker: a deterministic run).
  void aReplicaOutsideHostMemoryTrainsThroughAHostMirror() {
    for (const char* strategy : {"async_ps", "ssp"}) {
      const ExperimentSpec spec = blobsSpec(strategy, 12);
      const auto dataset = makeDataset(spec.dataset);
      WorkerJob job;
      job.spec = spec;
      auto train = [&](Backend& backend) {
        StrategyContext context{
            job,      nullptr, nullptr, nullptr,
            *dataset, backend, 12,      [](int64_t, std::string, std::string, std::string) {}};
        std::unique_ptr<Strategy> s = makeStrategy(context);
        s->setUp();
        for (int64_t step = 1; step <= 12; ++step) {
          Votes agreed;
          s->step(step, Votes{}, agreed);
        }
        s->beforeEvaluate();
        std::vector<float> params = s->replica().model().paramsToHost();
        s->finish();
        return params;
      };
      CpuBackend cpu(1);
      const std::vector<float> onHost = train(cpu);
      dtlab::core::test::NotHostMemory elsewhere;
      const int64_t uploadsBefore = elsewhere.uploads;
      const std::vector<float> mirrored = train(elsewhere);
      QVERIFY2(mirrored == onHost, strategy);
      // The initial weights, then a pull before each of the 12 steps and the final one.
      // The initial weights and the training rows (x, y), then the pull before each of the 12
      // steps and the one before the evaluation.
      QCOMPARE(elsewhere.uploads - uploadsBefore, int64_t{3 + 12 + 1});
      QVERIFY(onHost.size() > 1000);
    }
  }

  void sspNeverRunsMoreThanItsBoundAheadOfTheSlowest() {
    for (int64_t bound : {0, 2}) {
      ExperimentSpec spec = blobsSpec("ssp", 60);
      spec.variants[0].settings.set("staleness", int64_t{bound});
      const Ranks ranks = runRanks(spec, {1.0, 1.0, 0.2});
      for (std::size_t r = 0; r < 3; ++r) {
        const WorkerResult& w = ranks.results[r];
        QVERIFY2(w.status == RunStatus::kCompleted, w.error.c_str());
        // A worker about to compute its step c+1 is at most `bound` pushes ahead.
        QVERIFY2(ranks.clients[r]->maxLead <= bound,
                 qPrintable(QString("rank %1 led by %2, bound %3")
                                .arg(r)
                                .arg(ranks.clients[r]->maxLead)
                                .arg(bound)));
      }
      // The fast workers had to wait for the slow one, and said so.
      QVERIFY(ranks.results[0].waitMsTotal > 0.0);
      QVERIFY(ranks.clients[0]->waits > 0);
      // A worker asks the server only when the board its last push heard does not show the
      // bound holding: each would have asked from its step bound + 2 on, and the slow one,
      // mostly the slowest itself, seldom needs to.
      int64_t asked = 0, wouldHave = 0;
      for (const auto& c : ranks.clients) {
        asked += c->waits;
        wouldHave += std::max<int64_t>(0, c->pushes - bound - 1);
      }
      QVERIFY2(asked < wouldHave, qPrintable(QString("%1 of %2").arg(asked).arg(wouldHave)));
      QVERIFY2(ranks.clients[2]->waits < ranks.clients[2]->pushes - bound - 1,
               qPrintable(QString::number(ranks.clients[2]->waits)));
    }
  }

  void aTargetReachedByRankZeroStopsEveryWorker() {
    ExperimentSpec spec = blobsSpec("async_ps", 2000);
    spec.training.targetAccuracy = 0.6;
    spec.training.evalInterval = 5;
    const Ranks ranks = runRanks(spec, {1.0, 1.0, 1.0});
    for (const WorkerResult& w : ranks.results) {
      QVERIFY2(w.status == RunStatus::kCompleted, w.error.c_str());
      QCOMPARE(w.stopReason, StopReason::kTargetAccuracy);
      QVERIFY(w.steps < 2000);
    }
    QVERIFY(ranks.results[0].timeToTargetS.has_value());
    QVERIFY(*ranks.results[0].finalTestAccuracy >= 0.6);
  }
};

QTEST_GUILESS_MAIN(TestParameterServer)
#include "test_parameter_server.moc"
