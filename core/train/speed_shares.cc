#include "core/train/speed_shares.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/common/check.h"

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

// What a rank costs before its first sample: its fixed part and tail.
double baseMs(const RankCost& c) {
  return finiteOrZero(c.fixedMs) + finiteOrZero(c.tailMs);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2.0;
}

}  // namespace

double expectedStepMs(const std::vector<RankCost>& costs, const std::vector<int64_t>& counts) {
  DTLAB_ENFORCE(costs.size() == counts.size(), costs.size(), " costs for ", counts.size(),
                " counts");
  const std::vector<double> speeds = speedsPerMs(costs);
  double step = 0.0;
  for (std::size_t r = 0; r < costs.size(); ++r)
    step = std::max(step, baseMs(costs[r]) + static_cast<double>(counts[r]) / speeds[r]);
  return step;
}

ShareProposal balancedCounts(const std::vector<RankCost>& costs, int64_t global) {
  DTLAB_ENFORCE(!costs.empty() && global >= 1, "cannot split a batch of ", global, " over ",
                costs.size(), " workers");
  const std::vector<double> speeds = speedsPerMs(costs);
  // Water filling: the ranks in order of their base cost join while they start below the
  // level, the level where the joined ranks' slices add up to the batch.
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return baseMs(costs[a]) < baseMs(costs[b]);
  });
  double weighted = 0.0;  // sum of speed * base over the joined ranks
  double speedSum = 0.0;
  double level = 0.0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::size_t r = order[i];
    if (i > 0 && baseMs(costs[r]) >= level) break;
    weighted += speeds[r] * baseMs(costs[r]);
    speedSum += speeds[r];
    level = (static_cast<double>(global) + weighted) / speedSum;
  }
  std::vector<double> exact(costs.size());
  ShareProposal p;
  p.counts.assign(costs.size(), 0);
  int64_t sum = 0;
  for (std::size_t r = 0; r < costs.size(); ++r) {
    exact[r] = std::max(0.0, speeds[r] * (level - baseMs(costs[r])));
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
    if (rest.size() == 1) rest[0].tailMs = 0.0;  // one rank left reduces nothing
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
  const std::size_t world = speeds_.size();
  std::vector<RankCost> costs(world);
  std::vector<double> tails;  // the group's tail: the last rank's
  std::vector<std::vector<double>> speeds(world), fixed(world), tailsAsLast(world);
  for (const Step& s : steps_) {
    std::size_t last = 0;
    for (std::size_t r = 0; r < world; ++r) {
      const RankStepTimes& t = s.times[r];
      if (t.readyMs > s.times[last].readyMs) last = r;
      fixed[r].push_back(std::max(0.0, t.readyMs - t.computeMs));
      if (s.counts[r] > 0 && t.computeMs > 0.0)
        speeds[r].push_back(static_cast<double>(s.counts[r]) * 1e3 / t.computeMs);
    }
    tails.push_back(tailMs(s.times, last));
    tailsAsLast[last].push_back(tails.back());
  }
  const double groupTail = median(tails);
  for (std::size_t r = 0; r < world; ++r) {
    if (!speeds[r].empty()) speeds_[r] = median(speeds[r]);
    costs[r].samplesPerS = speeds_[r];
    costs[r].fixedMs = median(fixed[r]);
    costs[r].tailMs = tailsAsLast[r].empty() ? groupTail : median(tailsAsLast[r]);
  }
  steps_.clear();
  return costs;
}

double StepCostWindow::measuredStepMs() const {
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
