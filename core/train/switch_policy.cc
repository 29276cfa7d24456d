#include "core/train/switch_policy.h"

#include <algorithm>
#include <cmath>

namespace dtlab::core {

double stragglerRatio(std::vector<double> computeMs) {
  std::erase_if(computeMs, [](double t) { return !std::isfinite(t) || t <= 0.0; });
  if (computeMs.size() < 2) return 1.0;
  std::sort(computeMs.begin(), computeMs.end());
  const std::size_t n = computeMs.size();
  const double median =
      n % 2 == 1 ? computeMs[n / 2] : (computeMs[n / 2 - 1] + computeMs[n / 2]) / 2.0;
  return computeMs.back() / median;
}

}  // namespace dtlab::core
