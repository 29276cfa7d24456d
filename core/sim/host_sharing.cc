#include "core/sim/host_sharing.h"

#include <algorithm>
#include <cmath>

#include "core/common/check.h"

namespace dtlab::core::sim {

double sharedCoreStretch(int nodes, int cores, double busy) {
  if (nodes < 1 || cores < 1) throw Error("a host needs at least one node and one core");
  busy = std::clamp(busy, 0.0, 1.0);
  if (nodes <= cores || busy == 0.0) return 1.0;
  if (busy == 1.0) return static_cast<double>(nodes) / cores;
  // The binomial's terms in turn: P(k others busy) from P(k - 1), in logs for large hosts.
  const int others = nodes - 1;
  const double logBusy = std::log(busy), logIdle = std::log1p(-busy);
  double logChoose = 0.0;  // log C(others, k)
  double stretch = 0.0;
  for (int k = 0; k <= others; ++k) {
    if (k > 0) logChoose += std::log(static_cast<double>(others - k + 1) / k);
    const double p = std::exp(logChoose + k * logBusy + (others - k) * logIdle);
    stretch += p * std::max(1.0, static_cast<double>(1 + k) / cores);
  }
  return stretch;
}

double hostStretch(int nodes, int cores, double cpuS, double stepS) {
  if (nodes <= cores || !(cpuS > 0.0) || !(stepS > 0.0)) return 1.0;
  // s - stretch(s) rises with s (the stretch falls as steps lengthen): bisect between 1, where
  // it is <= 0, and nodes / cores, the stretch when every node is always busy.
  const auto excess = [&](double s) {
    return s - sharedCoreStretch(nodes, cores, std::min(1.0, cpuS / (stepS * s)));
  };
  double low = 1.0, high = static_cast<double>(nodes) / cores;
  if (cpuS >= stepS * high) return high;  // busy throughout even at the longest step
  if (excess(low) >= 0.0) return low;
  for (int i = 0; i < 60 && high - low > 1e-9 * high; ++i) {
    const double mid = 0.5 * (low + high);
    (excess(mid) < 0.0 ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

}  // namespace dtlab::core::sim
