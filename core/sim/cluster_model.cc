#include "core/sim/cluster_model.h"

#include <cmath>

namespace dtlab::core::sim {

double transferSeconds(double bytes, const LinkModel& link) {
  return link.latencyS + bytes / link.bytesPerS;
}

double ringAllReduceSeconds(int ranks, double bytes, const LinkModel& link) {
  if (ranks <= 1) return 0.0;
  const double n = ranks;
  return 2.0 * (n - 1.0) * link.latencyS + 2.0 * (n - 1.0) / n * bytes / link.bytesPerS;
}

double treeAllReduceSeconds(int ranks, double bytes, const LinkModel& link) {
  if (ranks <= 1) return 0.0;
  const double depth = std::ceil(std::log2(static_cast<double>(ranks)));
  return 2.0 * depth * transferSeconds(bytes, link);
}

double NodeModel::meanSeconds(int64_t samples) const {
  return (fixedSeconds + static_cast<double>(samples) * secondsPerSample) * meanShape() *
             meanStretch() +
         stragglerProbability * stragglerPauseS;
}

double NodeModel::meanShape() const {
  if (shape.empty()) return 1.0;
  double sum = 0.0;
  for (double s : shape) sum += s;
  return sum / static_cast<double>(shape.size());
}

double NodeModel::meanStretch() const {
  double mean = 0.0, below = 0.0;
  for (std::size_t i = 0; i < stretches.size(); ++i) {
    mean += stretches[i] * (stretchCdf[i] - below);
    below = stretchCdf[i];
  }
  return stretches.empty() ? 1.0 : mean;
}

}  // namespace dtlab::core::sim
