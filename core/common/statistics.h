#pragma once

// Statistics for comparing training strategies over repeated runs (repetitions, usually 3 to 10
// per variant). A comparison reports, per variant, the median with a 95% percentile-bootstrap
// interval; per pair of variants, the ratio of their medians with a paired bootstrap interval
// (repetition i of one variant is paired with repetition i of the other); and
// whether the difference holds across repetitions, by a paired t-test on the log ratios.
//
// Known limitation: with n = 5 the percentile-bootstrap interval of the median spans nearly
// the whole sample range (for 5 distinct values it is exactly [min, max]). That is honest:
// five repetitions say little about where the median lies. More repetitions narrow it.

#include <cstdint>
#include <limits>
#include <vector>

namespace dtlab::core {

// The median; for an even count the mean of the two middle values. Throws dtlab::Error when
// samples is empty or holds a value that is not finite (as do the bootstraps).
double median(std::vector<double> samples);

struct Interval {
  double estimate = 0;
  double low = 0;
  double high = 0;
  int n = 0;  // samples (or pairs) the interval was computed from
};

struct BootstrapOptions {
  double level = 0.95;  // coverage, strictly between 0 and 1
  int resamples = 10000;
  uint64_t seed = 0x5EED;
};

// Percentile bootstrap of the median. With the resampled medians sorted as m[0..B-1] and
// alpha = 1 - level, low = m[ceil(B*alpha/2) - 1] and high = m[ceil(B*(1-alpha/2)) - 1]: order
// statistics, never interpolated, so for an odd count the bounds are sample values. The
// estimate is median(samples). Deterministic for a given seed, and independent of the order in
// which the samples are listed.
Interval bootstrapMedian(const std::vector<double>& samples, const BootstrapOptions& = {});

// median(a) / median(b) with a paired percentile bootstrap: a[i] and b[i] come from the same
// repetition, so each resample draws indices and takes both a[i] and b[i]. The pairs are
// resampled sorted by a, with the index draws of bootstrapMedian for the same options, so for a
// constant b = c the interval is exactly bootstrapMedian(a)'s divided by c, and listing the
// repetitions in another order changes nothing. Requires equal, non-zero sizes and every b > 0.
Interval bootstrapRatioOfMedians(const std::vector<double>& a, const std::vector<double>& b,
                                 const BootstrapOptions& = {});

struct PairedTest {
  int n = 0;
  int greater = 0;  // pairs with a[i] > b[i]
  int less = 0;     // pairs with a[i] < b[i]
  double meanLogRatio = 0;
  double t = 0;
  double pValue = std::numeric_limits<double>::quiet_NaN();
};

// Two-sided paired Student t-test on d[i] = log(a[i] / b[i]) with n - 1 degrees of freedom:
// log ratios, because run times and throughputs differ by factors, not by offsets. With fewer
// than two pairs t and pValue are NaN. When every d[i] is the same the spread is zero: pValue
// is 1 if they are all 0 (t = 0), else 0 (t = +-infinity). Requires equal, non-zero sizes and
// every value > 0.
PairedTest pairedLogRatioTest(const std::vector<double>& a, const std::vector<double>& b);

// P(|T| >= |t|) for Student's T with the given degrees of freedom (> 0), which is
// I_x(df/2, 1/2) at x = df / (df + t^2).
double studentTTwoSidedP(double t, double degreesOfFreedom);

// The regularized incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1].
double regularizedIncompleteBeta(double a, double b, double x);

}  // namespace dtlab::core
