#include "core/common/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

#include "core/common/check.h"
#include "core/common/random.h"

namespace dtlab::core {
namespace {

void requireFinite(const std::vector<double>& samples, const char* what) {
  DTLAB_ENFORCE(!samples.empty(), what, ": no samples");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    DTLAB_ENFORCE(std::isfinite(samples[i]), what, ": sample ", i, " is ", samples[i]);
  }
}

// Reorders values; bootstrap resamples pass one scratch buffer, so no resample allocates.
double medianInPlace(std::vector<double>& values) {
  const std::size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  const double upper = values[middle];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + middle);
  // Exact under scaling by a power of two, so median(2 * b) == 2 * median(b) holds bitwise.
  return std::midpoint(lower, upper);
}

void requireOptions(const BootstrapOptions& options) {
  DTLAB_ENFORCE(options.level > 0 && options.level < 1,
                "bootstrap level must lie strictly between 0 and 1, got ", options.level);
  DTLAB_ENFORCE(options.resamples >= 1, "bootstrap needs at least one resample, got ",
                options.resamples);
}

// Draws options.resamples index sets of size n with replacement and returns the statistic of
// each, sorted. Both bootstraps draw through here, so for equal options they see the same
// index sets, which is what makes the ratio against a constant match the plain median.
template <typename Statistic>
std::vector<double> sortedResampledStatistics(std::size_t n, const BootstrapOptions& options,
                                              Statistic statistic) {
  Rng rng(options.seed);
  std::vector<std::size_t> indices(n);
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(options.resamples));
  for (int r = 0; r < options.resamples; ++r) {
    for (auto& index : indices) index = static_cast<std::size_t>(rng.below(n));
    values.push_back(statistic(indices));
  }
  std::sort(values.begin(), values.end());
  return values;
}

// The 0-based index of the order statistic of 1-based rank ceil(position), clamped into the
// sample. position is a product such as 10000 * (1 - 0.95) / 2, an integer in exact arithmetic
// that lands a hair above it in binary (1 - 0.95 is 0.05000000000000004), where a plain ceil
// would step one rank outwards.
std::size_t orderStatisticIndex(double position, std::size_t count) {
  const double rank = std::ceil(position * (1 - 1e-12));
  if (rank <= 1) return 0;
  return std::min(static_cast<std::size_t>(rank) - 1, count - 1);
}

Interval percentileInterval(double estimate, const std::vector<double>& sorted, double level,
                            std::size_t n) {
  const double alpha = 1 - level;
  const auto count = static_cast<double>(sorted.size());
  Interval interval;
  interval.estimate = estimate;
  interval.low = sorted[orderStatisticIndex(count * alpha / 2, sorted.size())];
  interval.high = sorted[orderStatisticIndex(count * (1 - alpha / 2), sorted.size())];
  interval.n = static_cast<int>(n);
  return interval;
}

// Evaluates 1 + d1/(1 + d2/(1 + ...)), the continued fraction in
//   I_x(a,b) = x^a (1-x)^b / (a B(a,b)) / (1 + d1/(1 + d2/(1 + ...))),
//   d(2m+1) = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),   d(2m) = m(b-m) x / ((a+2m-1)(a+2m)),
// which converges fast for x < (a+1)/(a+b+2). Modified Lentz: the value is the product of the
// ratios of successive convergents, each kept as C*D from forward recurrences, with a tiny
// number standing in for a zero denominator.
double betaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kTolerance = 1e-15;
  constexpr int kMaxTerms = 10000;
  double value = 1;
  double c = 1;
  double d = 0;
  for (int j = 1; j <= kMaxTerms; ++j) {
    const double m = j / 2;
    const double term = j % 2 == 1 ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                                   : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 + term * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    d = 1 / d;
    c = 1 + term / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    const double ratio = c * d;
    value *= ratio;
    if (std::fabs(ratio - 1) < kTolerance) return value;
  }
  throw Error(detail::concat("incomplete beta: continued fraction did not converge for a = ", a,
                             ", b = ", b, ", x = ", x));
}

}  // namespace

double median(std::vector<double> samples) {
  requireFinite(samples, "median");
  return medianInPlace(samples);
}

Interval bootstrapMedian(const std::vector<double>& samples, const BootstrapOptions& options) {
  requireFinite(samples, "bootstrapMedian");
  requireOptions(options);
  // Resampling the sorted samples makes the interval depend on the values only, not on the
  // order the repetitions happened to be listed in.
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> resample(sorted.size());
  const auto medians = sortedResampledStatistics(sorted.size(), options, [&](const auto& indices) {
    for (std::size_t i = 0; i < indices.size(); ++i) resample[i] = sorted[indices[i]];
    return medianInPlace(resample);
  });
  return percentileInterval(median(samples), medians, options.level, samples.size());
}

Interval bootstrapRatioOfMedians(const std::vector<double>& a, const std::vector<double>& b,
                                 const BootstrapOptions& options) {
  requireFinite(a, "bootstrapRatioOfMedians (a)");
  requireFinite(b, "bootstrapRatioOfMedians (b)");
  DTLAB_ENFORCE_EQ(a.size(), b.size(), "bootstrapRatioOfMedians pairs a[i] with b[i]");
  for (std::size_t i = 0; i < b.size(); ++i) {
    DTLAB_ENFORCE(b[i] > 0, "bootstrapRatioOfMedians divides by b, but b[", i, "] is ", b[i]);
  }
  requireOptions(options);
  // As in bootstrapMedian, the pairs are resampled in sorted order (by a, then b), so the
  // interval ignores the order of the repetitions and, for a constant b, the resamples of a
  // are exactly bootstrapMedian's.
  std::vector<std::size_t> order(a.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t i, std::size_t j) { return a[i] != a[j] ? a[i] < a[j] : b[i] < b[j]; });
  std::vector<double> resampleA(a.size());
  std::vector<double> resampleB(b.size());
  const auto ratios = sortedResampledStatistics(a.size(), options, [&](const auto& indices) {
    for (std::size_t i = 0; i < indices.size(); ++i) {
      resampleA[i] = a[order[indices[i]]];
      resampleB[i] = b[order[indices[i]]];
    }
    const double denominator = medianInPlace(resampleB);
    DTLAB_ENFORCE(denominator > 0, "bootstrapRatioOfMedians: resampled median of b is ",
                  denominator);
    return medianInPlace(resampleA) / denominator;
  });
  return percentileInterval(median(a) / median(b), ratios, options.level, a.size());
}

PairedTest pairedLogRatioTest(const std::vector<double>& a, const std::vector<double>& b) {
  DTLAB_ENFORCE(!a.empty(), "pairedLogRatioTest: no pairs");
  DTLAB_ENFORCE_EQ(a.size(), b.size(), "pairedLogRatioTest pairs a[i] with b[i]");
  const std::size_t n = a.size();
  PairedTest result;
  result.n = static_cast<int>(n);
  std::vector<double> logRatios(n);
  for (std::size_t i = 0; i < n; ++i) {
    DTLAB_ENFORCE(a[i] > 0 && b[i] > 0 && std::isfinite(a[i]) && std::isfinite(b[i]),
                  "pairedLogRatioTest takes logs of ratios, so values must be positive and "
                  "finite; pair ",
                  i, " is ", a[i], " and ", b[i]);
    if (a[i] > b[i]) ++result.greater;
    if (a[i] < b[i]) ++result.less;
    logRatios[i] = std::log(a[i] / b[i]);
  }
  const double mean =
      std::accumulate(logRatios.begin(), logRatios.end(), 0.0) / static_cast<double>(n);
  result.meanLogRatio = mean;
  if (n < 2) {
    result.t = std::numeric_limits<double>::quiet_NaN();
    return result;
  }
  // Equal log ratios have no spread, but the rounded mean would leave a spurious tiny one and
  // a huge, meaningless t; decide these cases exactly.
  const auto [lowest, highest] = std::minmax_element(logRatios.begin(), logRatios.end());
  if (*lowest == *highest) {
    result.meanLogRatio = *lowest;
    if (*lowest == 0) {
      result.t = 0;
      result.pValue = 1;
    } else {
      result.t = std::copysign(std::numeric_limits<double>::infinity(), *lowest);
      result.pValue = 0;
    }
    return result;
  }
  double squares = 0;
  for (double d : logRatios) squares += (d - mean) * (d - mean);
  const double standardDeviation = std::sqrt(squares / static_cast<double>(n - 1));
  result.t = mean / (standardDeviation / std::sqrt(static_cast<double>(n)));
  result.pValue = studentTTwoSidedP(result.t, static_cast<double>(n - 1));
  return result;
}

double studentTTwoSidedP(double t, double degreesOfFreedom) {
  DTLAB_ENFORCE(degreesOfFreedom > 0, "Student's t needs positive degrees of freedom, got ",
                degreesOfFreedom);
  DTLAB_ENFORCE(!std::isnan(t), "Student's t: t is NaN");
  if (std::isinf(t)) return 0;
  const double x = degreesOfFreedom / (degreesOfFreedom + t * t);
  return regularizedIncompleteBeta(degreesOfFreedom / 2, 0.5, x);
}

double regularizedIncompleteBeta(double a, double b, double x) {
  DTLAB_ENFORCE(a > 0 && b > 0, "incomplete beta needs a, b > 0, got a = ", a, ", b = ", b);
  DTLAB_ENFORCE(x >= 0 && x <= 1, "incomplete beta needs x in [0, 1], got ", x);
  if (x == 0) return 0;
  if (x == 1) return 1;
  // log of x^a (1-x)^b / B(a,b), the factor shared by the fraction and its mirror image.
  const double logFactor =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double factor = std::exp(logFactor);
  if (x < (a + 1) / (a + b + 2)) return factor / (a * betaContinuedFraction(a, b, x));
  // Past the mean the fraction converges slowly; I_x(a,b) = 1 - I_{1-x}(b,a) brings x back.
  return 1 - factor / (b * betaContinuedFraction(b, a, 1 - x));
}

}  // namespace dtlab::core
