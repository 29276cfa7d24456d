// A group that goes on without a lost rank (on_node_loss "continue" of local_sgd): ranks as
// threads over real Gloo, a rank "lost" by aborting its connections, the survivors re-forming
// their group through an in-process GroupRecovery as the node daemon does through RegroupJob.
#include <QtTest/QtTest>

#include <gloo/rendezvous/hash_store.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/comm/elastic_group.h"
#include "core/comm/gloo_communicator.h"
#include "core/train/strategy.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;
using namespace std::chrono_literals;

namespace {

// The survivors' word, as a coordinator would give it: ranks wait in regroup() until the test
// names who goes on, then meet in a new Gloo group on the shared store.
class Survivors {
 public:
  explicit Survivors(gloo::rendezvous::Store& store) : store_(store) {}

  void name(std::vector<int> members) {
    std::lock_guard lock(mutex_);
    members_ = std::move(members);
    ++generation_;
    changed_.notify_all();
  }

  Regroup join(int originalRank, const CommError& cause) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, 20s, [&] { return generation_ > 0; })) throw cause;
    // A rank the coordinator left out was the lost one: it has nothing to join.
    if (std::find(members_.begin(), members_.end(), originalRank) == members_.end()) throw cause;
    Regroup r;
    r.members = members_;
    r.generation = generation_;
    const int rank = static_cast<int>(std::find(members_.begin(), members_.end(), originalRank) -
                                      members_.begin());
    lock.unlock();
    GlooOptions options;
    options.keyPrefix = "generation ";
    options.keyPrefix += std::to_string(r.generation);
    r.comm = std::make_unique<GlooCommunicator>(store_, rank, static_cast<int>(r.members.size()),
                                                options);
    return r;
  }

 private:
  gloo::rendezvous::Store& store_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> members_;
  int generation_ = 0;
};

class RankRecovery final : public GroupRecovery {
 public:
  RankRecovery(Survivors& survivors, int rank) : survivors_(survivors), rank_(rank) {}
  Regroup regroup(const CommError& cause) override { return survivors_.join(rank_, cause); }

 private:
  Survivors& survivors_;
  int rank_;
};

// Rank 2 of three is lost (its connections aborted) once it has recorded step `at`; the test
// names ranks 0 and 1 as the survivors at the same moment.
class LosingSink final : public MetricSink {
 public:
  LosingSink(int64_t at, AbortSignal& lostRank, Survivors& survivors)
      : at_(at), lostRank_(lostRank), survivors_(survivors) {}
  void onStep(const StepMetrics& m) override {
    if (m.worker == 2 && m.step == at_) {
      lostRank_.abort("rank 2 lost (test)");
      survivors_.name({0, 1});
    }
  }
  void onEval(const EvalMetrics& m) override {
    std::lock_guard lock(mutex_);
    evals.push_back(m);
  }
  void onEvent(const RunEvent& e) override {
    std::lock_guard lock(mutex_);
    events.push_back(e);
  }
  std::vector<EvalMetrics> evals;
  std::vector<RunEvent> events;

 private:
  int64_t at_;
  AbortSignal& lostRank_;
  Survivors& survivors_;
  std::mutex mutex_;
};

// local_sgd with on_node_loss "continue".
ExperimentSpec localSgdContinuing(int64_t steps, int64_t period) {
  return test::withVariant(
      test::smallBlobsSpec(steps, 10),
      {{"strategy", "local_sgd"}, {"period", period}, {"on_node_loss", "continue"}}, 3);
}

// Three ranks of `spec` as threads over real Gloo, each with its own recovery; rank `lost`'s
// connections abort with `signal`. `atStart(rank)` runs on each rank's thread once the first
// group is up, before the rank trains.
std::vector<WorkerResult> runThreeRanks(const ExperimentSpec& spec, gloo::rendezvous::Store& store,
                                        Survivors& survivors, int lost, AbortSignal& signal,
                                        MetricSink& sink,
                                        const std::function<void(int)>& atStart = {}) {
  std::vector<WorkerResult> results(3);
  std::vector<std::thread> threads;
  // The group forms before any rank is lost: a rank lost while its peers still warm up their
  // connections fails the start of the run, which is not what these cases are about.
  std::latch formed(3);
  for (int rank = 0; rank < 3; ++rank)
    threads.emplace_back([&, rank] {
      WorkerJob job;
      job.spec = spec;
      job.rank = rank;
      job.world = 3;
      GlooOptions options;
      options.keyPrefix = "g0";
      if (rank == lost) options.abort = &signal;
      GlooCommunicator first(store, rank, 3, options);
      RankRecovery recovery(survivors, rank);
      formed.arrive_and_wait();
      if (atStart) atStart(rank);
      results[static_cast<std::size_t>(rank)] =
          runWorker(job, &first, &sink, nullptr, nullptr, &recovery);
    });
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace

class TestElasticGroup : public QObject {
  Q_OBJECT

 private slots:
  // The survivors of a lost rank run the failed collective again on their new group, among
  // themselves only, and go on from there.
  void theSurvivorsRunTheFailedCollectiveAgain() {
    gloo::rendezvous::HashStore store;
    Survivors survivors(store);
    AbortSignal lost;
    std::vector<float> second(3, 0.0f);
    std::vector<int> generation(3, -1);
    std::vector<char> leads(3, 0);  // not vector<bool>: the threads write their own element
    std::vector<int64_t> sent(3, 0);
    std::vector<float> first(3, 0.0f);
    std::vector<std::vector<int>> members(3);
    std::vector<int> sizes(3, 0);
    std::atomic<int> firstDone{0};
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 3; ++rank)
      threads.emplace_back([&, rank] {
        GlooOptions options;
        options.keyPrefix = "g0";
        if (rank == 2) options.abort = &lost;
        GlooCommunicator whole(store, rank, 3, options);
        RankRecovery recovery(survivors, rank);
        ElasticGroup group(whole, rank, 3, recovery);
        float sum = 0.0f;
        group.collective([&](Communicator& c) {
          sum = static_cast<float>(rank + 1);
          c.allReduceSum(&sum, 1);
        });
        first[static_cast<std::size_t>(rank)] = sum;
        const int64_t before = group.bytesSent();
        firstDone.fetch_add(1);
        if (rank == 2) {
          // Lost once every rank has the first result: a rank still inside that collective
          // when its peer goes would (rightly) skip it after the regroup, which is another case.
          while (firstDone.load() < 3) std::this_thread::yield();
          lost.abort("rank 2 lost (test)");
          survivors.name({0, 1});
          return;
        }
        float one = 0.0f;
        const bool ran = group.collective([&](Communicator& c) {
          one = 1.0f;
          c.allReduceSum(&one, 1);
        });
        second[static_cast<std::size_t>(rank)] = ran ? one : -1.0f;
        generation[static_cast<std::size_t>(rank)] = group.generation();
        leads[static_cast<std::size_t>(rank)] = group.leads();
        sent[static_cast<std::size_t>(rank)] = group.bytesSent() - before;
        members[static_cast<std::size_t>(rank)] = group.members();
        sizes[static_cast<std::size_t>(rank)] = group.size();
      });
    for (std::thread& t : threads) t.join();
    QCOMPARE(first, (std::vector<float>{6.0f, 6.0f, 6.0f}));
    QCOMPARE(members[0], (std::vector<int>{0, 1}));
    QCOMPARE(members[1], (std::vector<int>{0, 1}));
    QCOMPARE(sizes[0], 2);
    QCOMPARE(second[0], 2.0f);  // two survivors, not three ranks
    QCOMPARE(second[1], 2.0f);
    QCOMPARE(generation[0], 1);
    QVERIFY(leads[0]);
    QVERIFY(!leads[1]);
    QVERIFY2(sent[0] > 0, "the re-formed group's bytes count on");
  }

  // A survivor that failed one collective earlier than the others skips it (they completed it
  // without it) and meets them at theirs.
  void aRankBehindSkipsToTheOthersCollective() {
    gloo::rendezvous::HashStore store;
    Survivors survivors(store);
    survivors.name({0, 1});
    std::vector<std::vector<bool>> ran(2);
    std::vector<float> met(2, 0.0f);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 2; ++rank)
      threads.emplace_back([&, rank] {
        GlooOptions options;
        options.keyPrefix = "g0";
        GlooCommunicator first(store, rank, 2, options);
        RankRecovery recovery(survivors, rank);
        ElasticGroup group(first, rank, 2, recovery);
        // Rank 0 fails in collective 1, rank 1 (which completed it) in collective 2.
        bool failedOnce = false;
        const auto failOnce = [&](Communicator&) {
          if (!failedOnce) {
            failedOnce = true;
            throw CommError(CommFailure::kPeerClosed, "a peer was lost (test)");
          }
        };
        const auto meet = [&](Communicator& c) {
          float value = 1.0f;
          c.allReduceSum(&value, 1);
          met[static_cast<std::size_t>(rank)] = value;
        };
        auto& log = ran[static_cast<std::size_t>(rank)];
        if (rank == 0) {
          log.push_back(group.collective(failOnce));
          log.push_back(group.collective(meet));
        } else {
          log.push_back(group.collective([](Communicator&) {}));
          log.push_back(group.collective([&](Communicator& c) {
            failOnce(c);
            meet(c);
          }));
        }
      });
    for (std::thread& t : threads) t.join();
    QCOMPARE(ran[0], (std::vector<bool>{false, true}));  // skipped, then met
    QCOMPARE(ran[1], (std::vector<bool>{true, true}));   // ran again on the new group
    QCOMPARE(met[0], 2.0f);
    QCOMPARE(met[1], 2.0f);
  }

  // local_sgd with on_node_loss "continue": the two ranks left after the third is lost train
  // to the end, end with the same averaged model, and the new leader records the regroup.
  void localSgdGoesOnWithoutALostRank() {
    const ExperimentSpec spec = localSgdContinuing(40, 4);
    gloo::rendezvous::HashStore store;
    Survivors survivors(store);
    AbortSignal lost;
    LosingSink sink(9, lost, survivors);
    const std::vector<WorkerResult> results = runThreeRanks(spec, store, survivors, 2, lost, sink);
    QCOMPARE(results[2].status, RunStatus::kFailed);
    for (int rank = 0; rank < 2; ++rank) {
      const WorkerResult& r = results[static_cast<std::size_t>(rank)];
      QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
      QCOMPARE(r.steps, int64_t{40});
    }
    QCOMPARE(results[0].paramChecksum, results[1].paramChecksum);
    const auto regroup = std::find_if(sink.events.begin(), sink.events.end(),
                                      [](const RunEvent& e) { return e.kind == kRegroupEvent; });
    QVERIFY(regroup != sink.events.end());
    QVERIFY2(regroup->detail.find("2 workers (ranks 0, 1)") != std::string::npos,
             regroup->detail.c_str());
    // Rank 2 is lost once it reported step 9; a survivor may still be finishing the average of
    // step 8 then (rank 2 completed its part of the ring and went on), or reach that of step 12.
    QVERIFY2(regroup->step >= 8 && regroup->step <= 12, regroup->detail.c_str());
    QVERIFY(!sink.evals.empty());
    QCOMPARE(sink.evals.back().step, int64_t{40});
    QVERIFY2(results[0].finalTestAccuracy && *results[0].finalTestAccuracy > 0.5,
             "the survivors went on learning");
  }

  // Rank 0 lost before its initial weights went out: the survivors take the first survivor's.
  void localSgdGoesOnWhenRankZeroIsLostAtTheStart() {
    const ExperimentSpec spec = localSgdContinuing(20, 8);
    gloo::rendezvous::HashStore store;
    Survivors survivors(store);
    AbortSignal lost;
    LosingSink sink(-1, lost, survivors);
    const std::vector<WorkerResult> results =
        runThreeRanks(spec, store, survivors, 0, lost, sink, [&](int rank) {
          if (rank != 0) return;
          lost.abort("rank 0 lost (test)");
          survivors.name({1, 2});
        });
    QCOMPARE(results[0].status, RunStatus::kFailed);
    for (int rank = 1; rank < 3; ++rank)
      QVERIFY2(results[static_cast<std::size_t>(rank)].status == RunStatus::kCompleted,
               results[static_cast<std::size_t>(rank)].error.c_str());
    QCOMPARE(results[1].paramChecksum, results[2].paramChecksum);
    const auto regroup = std::find_if(sink.events.begin(), sink.events.end(),
                                      [](const RunEvent& e) { return e.kind == kRegroupEvent; });
    QVERIFY(regroup != sink.events.end());
    QCOMPARE(regroup->step, int64_t{0});
    QVERIFY2(regroup->detail.find("ranks 1, 2") != std::string::npos, regroup->detail.c_str());
  }
};

QTEST_GUILESS_MAIN(TestElasticGroup)
#include "test_elastic_group.moc"
