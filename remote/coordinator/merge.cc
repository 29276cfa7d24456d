#include "remote/coordinator/merge.h"

#include <algorithm>

#include "core/train/strategy.h"

namespace dtlab::remote {
namespace {

// Rank of a failure origin when choosing a run's error: lower is closer to the root cause.
int causeRank(core::FailureOrigin origin) {
  switch (origin) {
    case core::FailureOrigin::kThisRank:
      return 0;
    case core::FailureOrigin::kPeer:
      return 1;
    case core::FailureOrigin::kCommunication:
      return 2;
    case core::FailureOrigin::kNone:
      return 3;
  }
  return 3;
}
constexpr int kNoReport = 4;  // a rank that never reported its end

const RankEnd& leaderOf(const std::vector<RankEnd>& ranks) {
  for (const RankEnd& end : ranks)
    if (!end.dropped) return end;
  return ranks.front();
}

core::ExchangeTotals exchangeOf(const proto::JobResult& r) {
  core::ExchangeTotals x;
  x.steps = r.exchange_steps();
  x.stalenessSum = r.staleness_sum();
  x.maxStaleness = r.max_staleness();
  x.stalenessHistogram.assign(r.staleness_histogram().begin(), r.staleness_histogram().end());
  x.bytesSent = r.bytes_sent_total();
  x.bytesReceived = r.bytes_received_total();
  x.divergenceSum = r.divergence_sum();
  x.divergenceSteps = r.divergence_steps();
  x.compressDenseBytes = r.compress_dense_bytes();
  x.compressPayloadBytes = r.compress_payload_bytes();
  x.compressSeconds = r.compress_seconds();
  return x;
}

// The run's outcome: failed when a rank failed (its error the one closest to the root cause: a
// rank's own failure before one it learned from a peer, before a communication error, before
// a rank that never reported), or a node was lost; cancelled when a rank was; else completed.
void mergeOutcome(const std::vector<RankEnd>& ranks, const WatchEnd& watch,
                  core::RunSummary& summary) {
  summary.status = core::RunStatus::kCompleted;
  int bestCause = 99;
  core::StopReason failedBecause = core::StopReason::kError;
  for (const RankEnd& end : ranks) {
    if (end.dropped) continue;
    const proto::JobResult& r = end.result;
    const core::RunStatus status =
        end.finished ? core::readRunStatus(r.status()) : core::RunStatus::kFailed;
    if (status == core::RunStatus::kFailed || status == core::RunStatus::kUnknown) {
      summary.status = core::RunStatus::kFailed;
      const int cause =
          end.finished ? causeRank(core::parseFailureOrigin(r.failure_origin())) : kNoReport;
      if (cause >= bestCause) continue;
      bestCause = cause;
      // A diverged loss is its own reason to stop; every other failure is an error.
      failedBecause =
          end.finished && core::readStopReason(r.stop_reason()) == core::StopReason::kDiverged
              ? core::StopReason::kDiverged
              : core::StopReason::kError;
      summary.error = end.finished    ? end.name + ": " + r.error()
                      : end.abandoned ? end.name + " did not report its end within " +
                                            std::to_string(watch.windDown.count()) + " ms"
                                      : end.name + " " + end.error;
    } else if (status == core::RunStatus::kCancelled &&
               summary.status == core::RunStatus::kCompleted) {
      summary.status = core::RunStatus::kCancelled;
    }
  }
  if (!watch.lostNode.empty()) {
    summary.status = core::RunStatus::kFailed;
    summary.error = watch.lostNode;
    failedBecause = core::StopReason::kNodeLost;
  }
  // A cancelled run whose stragglers were left behind is still a cancelled run.
  if (watch.cancelSent && !watch.failing && summary.status == core::RunStatus::kFailed &&
      bestCause >= causeRank(core::FailureOrigin::kCommunication)) {
    summary.status = core::RunStatus::kCancelled;
    summary.error.clear();
  }
  if (summary.status == core::RunStatus::kFailed) {
    summary.stopReason = failedBecause;
  } else if (summary.status == core::RunStatus::kCancelled) {
    summary.stopReason = core::StopReason::kCancelled;
  } else {
    const core::StopReason first = core::readStopReason(leaderOf(ranks).result.stop_reason());
    summary.stopReason = first == core::StopReason::kUnknown ? core::StopReason::kError : first;
  }
}

}  // namespace

std::vector<std::size_t> lostAsTheRunEnded(const std::vector<RankEnd>& ranks,
                                           const std::vector<std::size_t>& nodeOf) {
  auto broke = [](const RankEnd& e) {
    return !e.finished && !e.abandoned && !e.dropped && !e.error.empty();
  };
  std::vector<std::size_t> lost;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (!broke(ranks[i]) || nodeOf[i] == nodeOf[0]) continue;
    bool othersCompleted = true;
    for (std::size_t j = 0; j < ranks.size() && othersCompleted; ++j) {
      const RankEnd& e = ranks[j];
      if (nodeOf[j] == nodeOf[i] || e.dropped) continue;
      othersCompleted =
          e.finished && core::readRunStatus(e.result.status()) == core::RunStatus::kCompleted;
    }
    if (othersCompleted) lost.push_back(i);
  }
  return lost;
}

void mergeRankEnds(const std::vector<RankEnd>& ranks, const WatchEnd& watch,
                   core::RunSummary& summary) {
  if (ranks.empty()) return;
  const double world = static_cast<double>(
      std::count_if(ranks.begin(), ranks.end(), [](const RankEnd& e) { return !e.dropped; }));
  double maxStepMs = 0.0;
  double utilization = 0.0;
  double waitFraction = 0.0;
  core::ExchangeTotals exchange;
  for (const RankEnd& end : ranks) {
    if (end.dropped) continue;
    const proto::JobResult& r = end.result;
    exchange.merge(exchangeOf(r));
    summary.paramChecksum.push_back(r.param_checksum());
    summary.peakMemBytes.push_back(r.peak_mem_bytes());
    summary.samples += r.samples();
    maxStepMs = std::max(maxStepMs, r.step_ms_total());
    const double stepMs = r.step_ms_total();
    summary.utilization.push_back(stepMs > 0.0 ? r.compute_ms_total() / stepMs : 0.0);
    if (stepMs > 0.0) {
      utilization += r.compute_ms_total() / stepMs / world;
      waitFraction += r.wait_ms_total() / stepMs / world;
    }
  }
  mergeOutcome(ranks, watch, summary);
  // The first rank that stayed evaluates and counts the run's steps (rank 0, unless its node
  // was lost and the others went on).
  const RankEnd& leader = leaderOf(ranks);
  const proto::JobResult& first = leader.result;
  summary.steps = first.steps();
  if (first.has_test_accuracy()) summary.finalTestAccuracy = first.final_test_accuracy();
  if (leader.finished) summary.finalTestLoss = first.final_test_loss();
  if (first.has_time_to_target()) summary.timeToTargetS = first.time_to_target_s();
  // The run's throughput: every rank's samples over the slowest rank's time in steps.
  summary.samplesPerS =
      maxStepMs > 0.0 ? static_cast<double>(summary.samples) * 1000.0 / maxStepMs : 0.0;
  summary.meanUtilization = utilization;
  summary.meanWaitFraction = waitFraction;
  summary.nodes = static_cast<int64_t>(ranks.size());
  core::summarizeExchange(exchange, summary);
}

}  // namespace dtlab::remote
