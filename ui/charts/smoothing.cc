#include "ui/charts/smoothing.h"

#include <cmath>

#include "core/common/check.h"

namespace dtlab::ui {

std::vector<double> smoothEma(std::span<const double> values, double weight) {
  DTLAB_ENFORCE(weight >= 0.0 && weight < 1.0, "smoothing weight ", weight, " not in [0, 1)");
  std::vector<double> out(values.begin(), values.end());
  if (weight == 0.0) return out;
  bool constant = true;
  bool seen = false;
  double first = 0.0;
  for (const double v : values) {
    if (!std::isfinite(v)) continue;
    if (!seen) {
      first = v;
      seen = true;
    }
    constant = constant && v == first;
  }
  if (constant) return out;
  double last = 0.0;
  double weightPower = 1.0;  // weight^n after n finite values
  for (double& v : out) {
    if (!std::isfinite(v)) continue;
    last = last * weight + (1.0 - weight) * v;
    weightPower *= weight;
    v = last / (1.0 - weightPower);
  }
  return out;
}

}  // namespace dtlab::ui
