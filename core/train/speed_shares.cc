#include "core/train/speed_shares.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/common/check.h"

namespace dtlab::core {

std::vector<int64_t> proportionalCounts(const std::vector<double>& speeds, int64_t global) {
  const auto world = static_cast<int64_t>(speeds.size());
  DTLAB_ENFORCE(world > 0 && global >= world, "cannot split a batch of ", global, " over ", world,
                " workers");
  // A rank that measured nothing (or nonsense) counts as the slowest that did.
  double slowest = 0.0;
  for (double s : speeds)
    if (std::isfinite(s) && s > 0.0) slowest = slowest == 0.0 ? s : std::min(slowest, s);
  std::vector<double> weights(speeds.size(), 1.0);
  if (slowest > 0.0)
    for (std::size_t r = 0; r < speeds.size(); ++r)
      weights[r] = std::isfinite(speeds[r]) && speeds[r] > 0.0 ? speeds[r] : slowest;
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> exact(speeds.size());
  std::vector<int64_t> counts(speeds.size());
  int64_t sum = 0;
  for (std::size_t r = 0; r < speeds.size(); ++r) {
    exact[r] = static_cast<double>(global) * weights[r] / total;
    counts[r] = std::max<int64_t>(1, static_cast<int64_t>(std::floor(exact[r])));  // one at least
    sum += counts[r];
  }
  // Samples still to give go to the largest shortfalls; samples given over (the minimum of
  // one) come back from the largest excesses. First rank first on ties.
  while (sum != global) {
    const bool give = sum < global;
    std::size_t best = speeds.size();
    for (std::size_t r = 0; r < speeds.size(); ++r) {
      if (!give && counts[r] <= 1) continue;
      const double gap = exact[r] - static_cast<double>(counts[r]);
      if (best == speeds.size() || (give ? gap > exact[best] - static_cast<double>(counts[best])
                                         : gap < exact[best] - static_cast<double>(counts[best])))
        best = r;
    }
    counts[best] += give ? 1 : -1;
    sum += give ? 1 : -1;
  }
  return counts;
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

void SpeedEstimate::add(int64_t samples, double computeMs) {
  if (!(computeMs > 0.0) || samples <= 0) return;
  const double speed = static_cast<double>(samples) * 1000.0 / computeMs;
  value_ = value_ == 0.0 ? speed : weight_ * speed + (1.0 - weight_) * value_;
}

}  // namespace dtlab::core
