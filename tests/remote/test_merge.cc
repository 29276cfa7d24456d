// The coordinator's last phase on its own: the ranks' results, written here, merged into the
// run's summary. Each rule of the outcome and each figure against a hand-computed value.
// Before Qt: its `slots` macro would otherwise rename the protocol's DeviceInfo::slots().
#include "remote/coordinator/merge.h"

#include <QtTest/QtTest>

#include <string>
#include <vector>

using namespace dtlab;
using remote::RankEnd;
using remote::WatchEnd;

namespace {

RankEnd finished(const std::string& name, const std::string& status,
                 const std::string& stopReason) {
  RankEnd end;
  end.name = name;
  end.finished = true;
  end.result.set_status(status);
  end.result.set_stop_reason(stopReason);
  return end;
}

RankEnd failed(const std::string& name, const std::string& origin, const std::string& error,
               const std::string& stopReason = "error") {
  RankEnd end = finished(name, "failed", stopReason);
  end.result.set_failure_origin(origin);
  end.result.set_error(error);
  return end;
}

core::RunSummary merged(const std::vector<RankEnd>& ranks, const WatchEnd& watch = {}) {
  core::RunSummary s;
  remote::mergeRankEnds(ranks, watch, s);
  return s;
}

}  // namespace

class TestMerge : public QObject {
  Q_OBJECT
 private slots:
  // Figures: samples add up; throughput is all samples over the slowest rank's step time;
  // utilisation and wait are means of each rank's share; rank 0 gives steps and test figures.
  void figuresOfACompletedRun() {
    RankEnd a = finished("node0", "completed", "max_steps");
    a.result.set_steps(100);
    a.result.set_samples(3200);
    a.result.set_step_ms_total(400.0);
    a.result.set_compute_ms_total(300.0);
    a.result.set_wait_ms_total(100.0);
    a.result.set_has_test_accuracy(true);
    a.result.set_final_test_accuracy(0.875);
    a.result.set_final_test_loss(0.25);
    a.result.set_param_checksum("abc");
    a.result.set_peak_mem_bytes(1000);
    a.result.set_exchange_steps(100);
    a.result.set_bytes_sent_total(6400);
    RankEnd b = finished("node1", "completed", "max_steps");
    b.result.set_steps(100);
    b.result.set_samples(3200);
    b.result.set_step_ms_total(800.0);
    b.result.set_compute_ms_total(200.0);
    b.result.set_wait_ms_total(600.0);
    b.result.set_param_checksum("abc");
    b.result.set_peak_mem_bytes(2000);
    b.result.set_exchange_steps(100);
    b.result.set_bytes_sent_total(6400);
    const core::RunSummary s = merged({a, b});
    QCOMPARE(s.status, core::RunStatus::kCompleted);
    QCOMPARE(s.stopReason, core::StopReason::kMaxSteps);
    QVERIFY(s.error.empty());
    QCOMPARE(s.steps, int64_t{100});
    QCOMPARE(s.samples, int64_t{6400});
    QCOMPARE(s.samplesPerS, 6400.0 * 1000.0 / 800.0);
    QCOMPARE(s.utilization, (std::vector<double>{0.75, 0.25}));
    QCOMPARE(s.meanUtilization, (0.75 + 0.25) / 2.0);
    QCOMPARE(s.meanWaitFraction, (0.25 + 0.75) / 2.0);
    QCOMPARE(s.paramChecksum, (std::vector<std::string>{"abc", "abc"}));
    QCOMPARE(s.peakMemBytes, (std::vector<int64_t>{1000, 2000}));
    QCOMPARE(s.finalTestAccuracy, std::optional<double>(0.875));
    QCOMPARE(s.finalTestLoss, std::optional<double>(0.25));
    QVERIFY(!s.timeToTargetS);
    QCOMPARE(s.nodes, int64_t{2});
    QCOMPARE(s.bytesPerSample, 12800.0 / 6400.0);
  }

  // The run's error is the one closest to the root cause: a rank's own failure before the
  // peer that stopped because of it, before a broken stream; a diverged loss keeps its reason.
  void theRootCauseIsTheRunsError() {
    core::RunSummary s =
        merged({failed("node0", "peer",
                       "stopped at step 7: the loss diverged "
                       "on another rank",
                       "diverged"),
                failed("node1", "this_rank", "loss diverged to nan at step 7", "diverged")});
    QCOMPARE(s.status, core::RunStatus::kFailed);
    QCOMPARE(s.stopReason, core::StopReason::kDiverged);
    QCOMPARE(s.error, std::string("node1: loss diverged to nan at step 7"));

    RankEnd broken;
    broken.name = "node2";
    broken.error = "its stream broke (UNAVAILABLE: socket closed)";
    s = merged({failed("node0", "communication", "all-reduce failed"),
                finished("node1", "completed", "max_steps"), broken});
    QCOMPARE(s.stopReason, core::StopReason::kError);
    QCOMPARE(s.error, std::string("node0: all-reduce failed"));
    s = merged({finished("node0", "completed", "max_steps"), broken});
    QCOMPARE(s.error, std::string("node2 its stream broke (UNAVAILABLE: socket closed)"));
  }

  // A lost node is the run's error and stop reason whatever the ranks said; a cancel with
  // stragglers left behind is still a cancel; a rank that never reported is named with the
  // wind-down.
  void lostNodesCancelsAndStragglers() {
    RankEnd left;
    left.name = "node1";
    left.abandoned = true;
    WatchEnd watch;
    watch.windDown = std::chrono::milliseconds(3000);
    core::RunSummary s = merged({finished("node0", "completed", "max_steps"), left}, watch);
    QCOMPARE(s.status, core::RunStatus::kFailed);
    QCOMPARE(s.error, std::string("node1 did not report its end within 3000 ms"));

    watch.cancelSent = true;
    s = merged({finished("node0", "cancelled", "cancelled"), left}, watch);
    QCOMPARE(s.status, core::RunStatus::kCancelled);
    QCOMPARE(s.stopReason, core::StopReason::kCancelled);
    QVERIFY(s.error.empty());

    watch = {};
    watch.lostNode = "node1 (b:2) lost: no heartbeat for 3000 ms";
    watch.failing = true;
    s = merged({failed("node0", "peer", "x", "diverged"), left}, watch);
    QCOMPARE(s.status, core::RunStatus::kFailed);
    QCOMPARE(s.stopReason, core::StopReason::kNodeLost);  // its own reason, not the words
    QCOMPARE(s.error, watch.lostNode);
  }

  // A rank dropped under on_node_loss "continue" has no say in the outcome and no figures:
  // the run is the other ranks' (utilisation averaged over them), its node count the run's.
  void aDroppedRankIsLeftOut() {
    RankEnd a = finished("node0", "completed", "target_accuracy");
    a.result.set_steps(50);
    a.result.set_samples(800);
    a.result.set_step_ms_total(100.0);
    a.result.set_compute_ms_total(50.0);
    RankEnd gone;
    gone.name = "node1";
    gone.error = "its stream broke (UNAVAILABLE)";
    gone.dropped = true;
    const core::RunSummary s = merged({a, gone});
    QCOMPARE(s.status, core::RunStatus::kCompleted);
    QCOMPARE(s.stopReason, core::StopReason::kTargetAccuracy);
    QCOMPARE(s.samples, int64_t{800});
    QCOMPARE(s.meanUtilization, 0.5);
    QCOMPARE(s.utilization.size(), std::size_t{1});
    QCOMPARE(s.nodes, int64_t{2});
  }

  // A node lost as the run ended (its stream broke, every rank on the other nodes completed):
  // its ranks leave the outcome alone. Not while a rank elsewhere is still out or failed, not
  // rank 0's node (its evaluation is the run's), not a rank that reported or was left behind.
  void aNodeLostAsTheRunEndedLeavesTheOutcome() {
    RankEnd broke;
    broke.name = "node2";
    broke.error = "its stream broke (UNAVAILABLE: Socket closed)";
    const RankEnd done = finished("node0", "completed", "target_accuracy");
    using Lost = std::vector<std::size_t>;
    // Ranks 0, 1 on node 0; ranks 2, 3 on node 2 (one of them reported before it went).
    QCOMPARE(remote::lostAsTheRunEnded({done, done, broke, done}, {0, 0, 2, 2}), Lost{2});
    // A rank on another node that failed, has not reported, or broke too (two nodes at once):
    // nothing says the run ended well.
    QCOMPARE(remote::lostAsTheRunEnded({done, done, broke, broke}, {0, 1, 2, 3}), Lost{});
    QCOMPARE(remote::lostAsTheRunEnded({done, failed("n1", "this_rank", "x"), broke}, {0, 1, 2}),
             Lost{});
    RankEnd running;
    running.name = "node1";
    QCOMPARE(remote::lostAsTheRunEnded({done, running, broke}, {0, 1, 2}), Lost{});
    // Rank 0's node, or a rank beside it.
    QCOMPARE(remote::lostAsTheRunEnded({broke, done}, {0, 1}), Lost{});
    QCOMPARE(remote::lostAsTheRunEnded({done, broke, done}, {0, 0, 1}), Lost{});
    // Left behind at the wind-down, or already dropped: not this rule's.
    RankEnd abandoned = broke;
    abandoned.abandoned = true;
    RankEnd dropped = broke;
    dropped.dropped = true;
    QCOMPARE(remote::lostAsTheRunEnded({done, abandoned, dropped}, {0, 1, 2}), Lost{});
    // Dropped, the lost rank leaves a completed run.
    broke.dropped = true;
    QCOMPARE(merged({done, broke}).status, core::RunStatus::kCompleted);
  }

  // A status or stop reason this build does not know is not taken for success.
  void unknownNamesAreNotSuccess() {
    core::RunSummary s = merged({finished("node0", "paused", "")});
    QCOMPARE(s.status, core::RunStatus::kFailed);
    s = merged({finished("node0", "completed", "some_new_reason")});
    QCOMPARE(s.status, core::RunStatus::kCompleted);
    QCOMPARE(s.stopReason, core::StopReason::kError);
  }
};

QTEST_GUILESS_MAIN(TestMerge)
#include "test_merge.moc"
