#pragma once

#include <span>
#include <vector>

namespace dtlab::ui {

// The smoothing of TensorBoard's scalar charts: an exponential moving average with `weight`
// in [0, 1) (0: none), debiased as Adam debiases its moments, so early points are not pulled
// towards zero and the first smoothed point equals the first value. Non-finite values pass
// through and do not feed the average; a constant series is returned as it is (the
// debiasing would otherwise wobble it in the last digit).
std::vector<double> smoothEma(std::span<const double> values, double weight);

}  // namespace dtlab::ui
