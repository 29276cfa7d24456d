// The coordinator's second and third phases on their own (remote/coordinator/dispatch.h),
// against real dtlab-node daemons on loopback: a job starts on every rank's node or on none
// (a failed start aborts the ranks already started), and the watch follows every rank to its
// end, declares a killed node lost and aborts the others, and forwards a user's cancel; a
// coordinator busy with what a node sent (storing it) does not count that time as the node's
// silence.
#include "core/spec/spec_json.h"
#include "remote/coordinator/dispatch.h"  // before QtTest: proto accessors named slots()

#include <QtTest/QtTest>

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/placement.h"
#include "tests/support/wait.h"

using namespace dtlab;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kNodeBinary = DTLAB_BINARY_DIR "/app/dtlab-node";

// Two nodes of sync_allreduce on small blobs, `steps` steps.
core::ExperimentSpec twoNodeSpec(int64_t steps) {
  return core::parseExperimentSpec(
      {{"name", "dispatch"},
       {"seed", 5},
       {"dataset",
        {{"kind", "gaussian_blobs"}, {"train_size", 2000}, {"test_size", 200}, {"features", 8}}},
       {"model", {{"hidden", {16}}}},
       {"training", {{"batch_size", 32}, {"epochs", 0}, {"max_steps", steps}}},
       {"cluster", {{"local_nodes", 2}}}});
}

remote::Placement placementOf(const remote::NodeLinks& links, const core::ExperimentSpec& spec) {
  std::vector<remote::NodeSummary> nodes;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < links.size(); ++i) {
    nodes.push_back(links.info(i));
    labels.push_back(links.label(i));
  }
  return remote::placeRun(spec, 0, nodes, labels);
}

// Counts the step points each rank reports.
class StepCounter : public core::MetricSink {
 public:
  void onStep(const core::StepMetrics& m) override {
    if (m.worker >= 0 && m.worker < 2) ++steps[static_cast<std::size_t>(m.worker)];
  }
  std::atomic<int64_t> steps[2] = {0, 0};
};

// Takes `pause` over each of the first `times` step points of each rank, as a coordinator
// storing a checkpoint of hundreds of MB on a loaded machine takes seconds.
class SlowStepCounter final : public StepCounter {
 public:
  SlowStepCounter(std::chrono::milliseconds pause, int times) : pause_(pause), times_(times) {}
  void onStep(const core::StepMetrics& m) override {
    if (m.worker >= 0 && m.worker < 2 && paused_[static_cast<std::size_t>(m.worker)]++ < times_)
      std::this_thread::sleep_for(pause_);
    StepCounter::onStep(m);
  }

 private:
  std::chrono::milliseconds pause_;
  int times_;
  std::atomic<int> paused_[2] = {0, 0};
};

// What a watch delivered, and the watch's own end.
struct Watched {
  remote::WatchEnd end;
  std::vector<remote::RankEnd> ranks;
  std::vector<core::RunEvent> events;
  std::vector<std::string> added;  // the kinds of events the watch added itself
};

// Watches the job; `during` runs on its own thread meanwhile (it sees the sink).
template <typename During>
Watched watch(const remote::NodeLinks& links, const remote::Placement& placement,
              const std::string& jobId, StepCounter& sink, const std::atomic<bool>* cancel,
              During during) {
  Watched w;
  std::mutex mutex;
  std::thread side(during);
  w.end = links.watchJobs(placement, jobId, cancel,
                          {&sink, mutex, w.events,
                           [&](int64_t, std::string kind, std::string, std::string) {
                             w.added.push_back(std::move(kind));
                           },
                           core::NodeLossPolicy::kFail, remote::ContinueBy::kLeavingShards, false,
                           false, nullptr, nullptr},
                          w.ranks);
  side.join();
  return w;
}

}  // namespace

class TestDispatch : public QObject {
  Q_OBJECT
 private slots:
  // Rank 1's start is refused (its node wants another token): rank 0's job, already started
  // and waiting at the rendezvous for a peer that will never come, is aborted at once, well
  // before the minute its connect timeout would let it wait.
  void aFailedStartAbortsTheRanksAlreadyStarted() {
    remote::LocalCluster cluster(kNodeBinary, {{}, {}}, "secret");
    // The daemons got the token through their environment: the process list never shows it.
    for (int i = 0; i < 2; ++i) {
      std::ifstream cmdline("/proc/" + std::to_string(cluster.pid(i)) + "/cmdline");
      const std::string args((std::istreambuf_iterator<char>(cmdline)),
                             std::istreambuf_iterator<char>());
      QVERIFY2(args.find("dtlab-node") != std::string::npos, args.c_str());
      QVERIFY2(args.find("secret") == std::string::npos, args.c_str());
    }
    remote::CoordinatorOptions options;
    options.token = "secret";
    options.connectTimeout = 60s;
    const remote::NodeLinks good(cluster.addresses(), options);
    const remote::Placement placement = placementOf(good, twoNodeSpec(1000000));
    options.nodeTokens[cluster.address(1)] = "wrong";
    const remote::NodeLinks links(cluster.addresses(), options);
    const std::string spec = core::toJson(twoNodeSpec(1000000)).dump();
    try {
      links.startJobs(placement, "job-rollback", spec, 0, "");
      QFAIL("the start on a node that refuses the token succeeded");
    } catch (const dtlab::Error& e) {
      QVERIFY2(std::string(e.what()).starts_with("starting the job on node1"), e.what());
    }
    QVERIFY2(dtlab::test::waitUntil([&] { return !links.info(0).busy; }, 10s),
             "node0 still runs the job that started before node1 refused");
  }

  // A node running a job says whose and which (GetInfo), as the coordinator told it.
  void aRunningJobNamesItsOwnerAndRun() {
    remote::LocalCluster cluster(kNodeBinary, {{}, {}});
    const remote::NodeLinks links(cluster.addresses(), {});
    const core::ExperimentSpec spec = twoNodeSpec(1000000);
    links.startJobs(placementOf(links, spec), "job-owned", core::toJson(spec).dump(), 0, "");
    for (std::size_t node = 0; node < 2; ++node) {
      const remote::NodeSummary info = links.info(node);
      QVERIFY(info.busy);
      QCOMPARE(info.jobRun, "dispatch/" + spec.variants[0].name);
      QVERIFY2(!info.jobOwner.empty() && info.jobOwner.find(' ') == std::string::npos,
               info.jobOwner.c_str());
      links.cancelJob(node, "job-owned", /*abort=*/true);
    }
    QVERIFY(
        dtlab::test::waitUntil([&] { return !links.info(0).busy && !links.info(1).busy; }, 10s));
  }

  // A short run: every rank reports its steps and ends completed; nothing is lost or sent.
  void theWatchFollowsEveryRankToItsEnd() {
    remote::LocalCluster cluster(kNodeBinary, {{}, {}});
    const remote::NodeLinks links(cluster.addresses(), {});
    const core::ExperimentSpec spec = twoNodeSpec(30);
    const remote::Placement placement = placementOf(links, spec);
    links.startJobs(placement, "job-whole", core::toJson(spec).dump(), 0, "");
    StepCounter sink;
    const Watched w = watch(links, placement, "job-whole", sink, nullptr, [] {});
    QVERIFY(!w.end.failing && !w.end.cancelSent && w.end.lostNode.empty());
    QCOMPARE(w.ranks.size(), std::size_t{2});
    for (const remote::RankEnd& r : w.ranks) {
      QVERIFY2(r.finished && !r.abandoned, r.error.c_str());
      QCOMPARE(core::readRunStatus(r.result.status()), core::RunStatus::kCompleted);
      QCOMPARE(r.result.steps(), int64_t{30});
    }
    QCOMPARE(w.ranks[1].name, std::string("node1 (") + cluster.address(1) + ")");
    QVERIFY(sink.steps[0] > 0 && sink.steps[1] > 0);
    QVERIFY(std::any_of(w.events.begin(), w.events.end(),
                        [](const core::RunEvent& e) { return e.kind == "start"; }));
    QVERIFY(w.added.empty());
  }

  // SIGKILL on node1 once both ranks train: it is declared lost by name (a "node_lost" event)
  // and node0's rank is aborted and reports its end within the wind-down.
  void aKilledNodeIsLostAndTheOthersAborted() {
    remote::LocalCluster cluster(kNodeBinary, {{}, {}});
    remote::CoordinatorOptions options;
    options.lostAfter = 2000ms;
    options.windDown = 5000ms;
    const remote::NodeLinks links(cluster.addresses(), options);
    const core::ExperimentSpec spec = twoNodeSpec(1000000);
    const remote::Placement placement = placementOf(links, spec);
    links.startJobs(placement, "job-lost", core::toJson(spec).dump(), 0, "");
    StepCounter sink;
    bool killed = false;
    const Watched w = watch(links, placement, "job-lost", sink, nullptr, [&] {
      killed = dtlab::test::waitUntil([&] { return sink.steps[0] > 5 && sink.steps[1] > 5; }, 60s);
      cluster.signal(1, SIGKILL);
    });
    QVERIFY2(killed, "the ranks never reported steps");
    QVERIFY(w.end.failing);
    QVERIFY2(w.end.lostNode.starts_with("node1 (" + cluster.address(1) + ") lost: "),
             w.end.lostNode.c_str());
    QCOMPARE(w.added, std::vector<std::string>{"node_lost"});
    QVERIFY2(w.ranks[0].finished, w.ranks[0].error.c_str());
    QVERIFY(core::readRunStatus(w.ranks[0].result.status()) != core::RunStatus::kCompleted);
    QVERIFY(!w.ranks[1].finished);
  }

  // The coordinator is busy with each of each rank's first four steps for twice the silence
  // that loses a node (the other rank's reader waits for the same lock meanwhile): neither node
  // is lost, since both went on sending their heartbeats; the run ends completed.
  void aBusyCoordinatorLosesNoNode() {
    remote::LocalCluster cluster(kNodeBinary, {{}, {}});
    remote::CoordinatorOptions options;
    options.heartbeatInterval = 50ms;
    options.lostAfter = 1000ms;
    const remote::NodeLinks links(cluster.addresses(), options);
    const core::ExperimentSpec spec = twoNodeSpec(30);
    const remote::Placement placement = placementOf(links, spec);
    links.startJobs(placement, "job-busy", core::toJson(spec).dump(), 0, "");
    SlowStepCounter sink(2000ms, 4);
    const Watched w = watch(links, placement, "job-busy", sink, nullptr, [] {});
    QVERIFY2(w.end.lostNode.empty() && !w.end.failing, w.end.lostNode.c_str());
    for (const remote::RankEnd& r : w.ranks) {
      QVERIFY2(r.finished, r.error.c_str());
      QCOMPARE(core::readRunStatus(r.result.status()), core::RunStatus::kCompleted);
    }
    QVERIFY(w.added.empty());
  }

  // The user's cancel reaches every rank, which stops and reports itself cancelled.
  void aCancelIsForwardedToEveryRank() {
    remote::LocalCluster cluster(kNodeBinary, {{}, {}});
    const remote::NodeLinks links(cluster.addresses(), {});
    const core::ExperimentSpec spec = twoNodeSpec(1000000);
    const remote::Placement placement = placementOf(links, spec);
    links.startJobs(placement, "job-cancel", core::toJson(spec).dump(), 0, "");
    StepCounter sink;
    std::atomic<bool> cancel{false};
    const Watched w = watch(links, placement, "job-cancel", sink, &cancel, [&] {
      dtlab::test::waitUntil([&] { return sink.steps[0] > 5 && sink.steps[1] > 5; }, 60s);
      cancel = true;
    });
    QVERIFY(w.end.cancelSent && !w.end.failing);
    for (const remote::RankEnd& r : w.ranks) {
      QVERIFY2(r.finished, r.error.c_str());
      QCOMPARE(core::readRunStatus(r.result.status()), core::RunStatus::kCancelled);
    }
  }
};

QTEST_GUILESS_MAIN(TestDispatch)
#include "test_dispatch.moc"
