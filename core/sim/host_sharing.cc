#include "core/sim/host_sharing.h"

#include <algorithm>
#include <cmath>

#include "core/common/check.h"

namespace dtlab::core::sim {

StretchDistribution sharedCoreStretches(int nodes, int cores, double busy) {
  if (nodes < 1 || cores < 1) throw Error("a host needs at least one node and one core");
  busy = std::clamp(busy, 0.0, 1.0);
  StretchDistribution d;
  const auto add = [&](double stretch, double p) {
    if (!d.stretches.empty() && d.stretches.back() == stretch)
      d.probabilities.back() += p;
    else {
      d.stretches.push_back(stretch);
      d.probabilities.push_back(p);
    }
  };
  if (nodes <= cores || busy == 0.0) {
    add(1.0, 1.0);
    return d;
  }
  if (busy == 1.0) {
    add(static_cast<double>(nodes) / cores, 1.0);
    return d;
  }
  // The binomial's terms in turn: P(k others busy) from P(k - 1), in logs for large hosts.
  const int others = nodes - 1;
  const double logBusy = std::log(busy), logIdle = std::log1p(-busy);
  double logChoose = 0.0;  // log C(others, k)
  for (int k = 0; k <= others; ++k) {
    if (k > 0) logChoose += std::log(static_cast<double>(others - k + 1) / k);
    add(std::max(1.0, static_cast<double>(1 + k) / cores),
        std::exp(logChoose + k * logBusy + (others - k) * logIdle));
  }
  return d;
}

double sharedCoreStretch(int nodes, int cores, double busy) {
  const StretchDistribution d = sharedCoreStretches(nodes, cores, busy);
  double mean = 0.0;
  for (std::size_t i = 0; i < d.stretches.size(); ++i) mean += d.stretches[i] * d.probabilities[i];
  return mean;
}

void stretchCompute(NodeModel& node, const StretchDistribution& distribution) {
  node.stretches = distribution.stretches;
  node.stretchCdf.clear();
  double total = 0.0;
  for (double p : distribution.probabilities) node.stretchCdf.push_back(total += p);
  if (!node.stretchCdf.empty()) node.stretchCdf.back() = 1.0;  // rounding
}

double hostStretch(int nodes, int cores, double cpuS, double stepS, double* busy) {
  if (busy != nullptr) *busy = stepS > 0.0 ? std::min(1.0, cpuS / stepS) : 0.0;
  if (nodes <= cores || !(cpuS > 0.0) || !(stepS > 0.0)) return 1.0;
  // s - stretch(s) rises with s (the stretch falls as steps lengthen): bisect between 1, where
  // it is <= 0, and nodes / cores, the stretch when every node is always busy.
  const auto excess = [&](double s) {
    return s - sharedCoreStretch(nodes, cores, std::min(1.0, cpuS / (stepS * s)));
  };
  double low = 1.0, high = static_cast<double>(nodes) / cores;
  double s = high;  // busy throughout even at the longest step
  if (cpuS < stepS * high) {
    if (excess(low) >= 0.0) high = low;
    for (int i = 0; i < 60 && high - low > 1e-9 * high; ++i) {
      const double mid = 0.5 * (low + high);
      (excess(mid) < 0.0 ? low : high) = mid;
    }
    s = 0.5 * (low + high);
  }
  if (busy != nullptr) *busy = std::min(1.0, cpuS / (stepS * s));
  return s;
}

}  // namespace dtlab::core::sim
