#include "core/train/speed_shares.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/common/check.h"
#include "core/common/statistics.h"

namespace dtlab::core {

namespace {

// Speeds in samples per ms, a rank that measured nothing (or nonsense) counted as the slowest
// that did (all 1 when none did).
std::vector<double> speedsPerMs(const std::vector<RankCost>& costs) {
  double slowest = 0.0;
  for (const RankCost& c : costs)
    if (std::isfinite(c.samplesPerS) && c.samplesPerS > 0.0)
      slowest = slowest == 0.0 ? c.samplesPerS : std::min(slowest, c.samplesPerS);
  std::vector<double> speeds;
  for (const RankCost& c : costs)
    speeds.push_back((std::isfinite(c.samplesPerS) && c.samplesPerS > 0.0
                          ? c.samplesPerS
                          : (slowest > 0.0 ? slowest : 1e3)) /
                     1e3);
  return speeds;
}

double finiteOrZero(double v) {
  return std::isfinite(v) && v > 0.0 ? v : 0.0;
}

double fraction(double v) {
  return std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : 1.0;
}

// The step bound of a rank with `count` samples (speed in samples per ms).
double boundMs(const RankCost& c, double speed, double count) {
  const double compute = count / speed;
  return finiteOrZero(c.fixedMs) +
         std::max(compute + finiteOrZero(c.tailMs),
                  fraction(c.halfFraction) * compute + finiteOrZero(c.commAfterHalfMs));
}

// The most samples a rank can take and keep its bound at `level` (0 when even none exceed
// it): the bound is increasing and piecewise linear in the count.
double samplesWithin(const RankCost& c, double speed, double level) {
  const double room = level - finiteOrZero(c.fixedMs);
  double samples = speed * (room - finiteOrZero(c.tailMs));
  const double half = fraction(c.halfFraction);
  if (half > 0.0)
    samples = std::min(samples, speed * (room - finiteOrZero(c.commAfterHalfMs)) / half);
  else if (room < finiteOrZero(c.commAfterHalfMs))
    samples = 0.0;
  return std::max(0.0, samples);
}

}  // namespace

double expectedStepMs(const std::vector<RankCost>& costs, const std::vector<int64_t>& counts) {
  DTLAB_ENFORCE(costs.size() == counts.size(), costs.size(), " costs for ", counts.size(),
                " counts");
  const std::vector<double> speeds = speedsPerMs(costs);
  double step = 0.0;
  for (std::size_t r = 0; r < costs.size(); ++r)
    step = std::max(step, boundMs(costs[r], speeds[r], static_cast<double>(counts[r])));
  return step;
}

ShareProposal balancedCounts(const std::vector<RankCost>& costs, int64_t global) {
  DTLAB_ENFORCE(!costs.empty() && global >= 1, "cannot split a batch of ", global, " over ",
                costs.size(), " workers");
  const std::vector<double> speeds = speedsPerMs(costs);
  // Water filling: the level at which the samples the ranks can take add up to the batch,
  // by bisection between a level no rank's samples reach (the lowest bound with none) and
  // one the fastest rank alone reaches with the whole batch.
  const auto total = [&](double level) {
    double sum = 0.0;
    for (std::size_t r = 0; r < costs.size(); ++r) sum += samplesWithin(costs[r], speeds[r], level);
    return sum;
  };
  double low = boundMs(costs[0], speeds[0], 0.0);
  double high = boundMs(costs[0], speeds[0], static_cast<double>(global));
  for (std::size_t r = 1; r < costs.size(); ++r) {
    low = std::min(low, boundMs(costs[r], speeds[r], 0.0));
    high = std::min(high, boundMs(costs[r], speeds[r], static_cast<double>(global)));
  }
  for (int i = 0; i < 200 && low < high; ++i) {
    const double mid = low + (high - low) / 2.0;
    if (mid <= low || mid >= high) break;
    (total(mid) < static_cast<double>(global) ? low : high) = mid;
  }
  std::vector<double> exact(costs.size());
  ShareProposal p;
  p.counts.assign(costs.size(), 0);
  int64_t sum = 0;
  for (std::size_t r = 0; r < costs.size(); ++r) {
    exact[r] = samplesWithin(costs[r], speeds[r], high);
    p.counts[r] = std::min(global, static_cast<int64_t>(std::floor(exact[r])));
    sum += p.counts[r];
  }
  // Samples still to give go to the largest shortfalls among the ranks with a share (rounding
  // can leave a few over too); the lower rank first on ties.
  while (sum != global) {
    const bool give = sum < global;
    std::size_t best = costs.size();
    for (std::size_t r = 0; r < costs.size(); ++r) {
      if (give ? exact[r] <= 0.0 : p.counts[r] == 0) continue;
      const double gap = exact[r] - static_cast<double>(p.counts[r]);
      if (best == costs.size() || (give ? gap > exact[best] - static_cast<double>(p.counts[best])
                                        : gap < exact[best] - static_cast<double>(p.counts[best])))
        best = r;
    }
    p.counts[best] += give ? 1 : -1;
    sum += give ? 1 : -1;
  }
  p.stepMs = expectedStepMs(costs, p.counts);
  return p;
}

LeaveOutProposal leaveOutProposal(const std::vector<RankCost>& costs, int64_t global,
                                  double minGain) {
  LeaveOutProposal best;
  if (costs.size() < 2) return best;
  const double with = balancedCounts(costs, global).stepMs;
  for (std::size_t out = 0; out < costs.size(); ++out) {
    std::vector<RankCost> rest;
    for (std::size_t r = 0; r < costs.size(); ++r)
      if (r != out) rest.push_back(costs[r]);
    const double p = static_cast<double>(costs.size());
    const double q = static_cast<double>(rest.size());
    for (RankCost& c : rest) {
      if (rest.size() == 1) {  // one rank left reduces nothing
        c.tailMs = 0.0;
        c.commAfterHalfMs = 0.0;
      } else {  // a ring moves 2(q-1)/q of the gradient per rank instead of 2(p-1)/p
        c.commAfterHalfMs *= (q - 1.0) / q * p / (p - 1.0);
      }
    }
    const double without = balancedCounts(rest, global).stepMs;
    if (without * (1.0 + minGain) <= with && (best.rank < 0 || without < best.stepMs))
      best = {static_cast<int>(out), without};
  }
  return best;
}

double tailMs(const std::vector<RankStepTimes>& times, std::size_t rank) {
  double lastReady = 0.0;
  for (const RankStepTimes& t : times) lastReady = std::max(lastReady, t.readyMs);
  return std::max(0.0, times[rank].stepMs - lastReady);
}

void StepCostWindow::add(const std::vector<int64_t>& counts,
                         const std::vector<RankStepTimes>& times) {
  DTLAB_ENFORCE(counts.size() == speeds_.size() && times.size() == speeds_.size(), "step times of ",
                times.size(), " ranks for a group of ", speeds_.size());
  steps_.push_back({counts, times});
}

std::vector<RankCost> StepCostWindow::takeCosts() {
  DTLAB_ENFORCE(!steps_.empty(), "no step times to fit costs to");
  const std::size_t world = speeds_.size();
  std::vector<RankCost> costs(world);
  // Per rank: speeds, fixed parts and half fractions of its steps; the last rank's
  // communication, per step and per rank when it was the last.
  std::vector<std::vector<double>> speeds(world), fixed(world), halves(world);
  std::vector<std::vector<double>> tailsAsLast(world), commAsLast(world);
  std::vector<double> tails, comms;
  for (const Step& s : steps_) {
    std::size_t last = 0;
    for (std::size_t r = 0; r < world; ++r) {
      const RankStepTimes& t = s.times[r];
      if (t.readyMs > s.times[last].readyMs) last = r;
      const double fixedMs = std::max(0.0, t.readyMs - t.computeMs);
      fixed[r].push_back(fixedMs);
      if (s.counts[r] > 0 && t.computeMs > 0.0) {
        speeds[r].push_back(static_cast<double>(s.counts[r]) * 1e3 / t.computeMs);
        halves[r].push_back(fraction((t.halfMs - fixedMs) / t.computeMs));
      }
    }
    tails.push_back(s.times[last].lastBucketMs);
    comms.push_back(s.times[last].commAfterHalfMs);
    tailsAsLast[last].push_back(tails.back());
    commAsLast[last].push_back(comms.back());
  }
  for (std::size_t r = 0; r < world; ++r) {
    if (!speeds[r].empty()) speeds_[r] = median(speeds[r]);
    costs[r].samplesPerS = speeds_[r];
    costs[r].fixedMs = median(fixed[r]);
    costs[r].halfFraction = halves[r].empty() ? 1.0 : median(halves[r]);
    costs[r].tailMs = median(tailsAsLast[r].empty() ? tails : tailsAsLast[r]);
    costs[r].commAfterHalfMs = median(commAsLast[r].empty() ? comms : commAsLast[r]);
  }
  steps_.clear();
  return costs;
}

double StepCostWindow::measuredStepMs() const {
  DTLAB_ENFORCE(!steps_.empty(), "no step times measured");
  std::vector<double> steps;
  for (const Step& s : steps_) {
    double sum = 0.0;
    for (const RankStepTimes& t : s.times) sum += t.stepMs;
    steps.push_back(sum / static_cast<double>(s.times.size()));
  }
  return median(steps);
}

bool outsideDeadBand(const std::vector<int64_t>& current, const std::vector<int64_t>& proposed,
                     double deadBand) {
  const int64_t global = std::accumulate(current.begin(), current.end(), int64_t{0});
  for (std::size_t r = 0; r < current.size(); ++r)
    if (static_cast<double>(std::abs(proposed[r] - current[r])) >
        deadBand * static_cast<double>(global))
      return true;
  return false;
}

std::string formatShares(const std::vector<int64_t>& counts) {
  const int64_t global = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  std::string text;
  for (int64_t c : counts) {
    char share[32];
    std::snprintf(share, sizeof(share), "%.3f",
                  static_cast<double>(c) / static_cast<double>(global));
    if (!text.empty()) text += ',';
    text += share;
  }
  return text;
}

}  // namespace dtlab::core
