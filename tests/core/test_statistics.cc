// The statistics behind comparisons over repetitions (core/common/statistics.h): the median,
// the incomplete beta and Student's t against closed forms and tabled critical values, the
// bootstrap intervals against the exact bootstrap distribution of the median, and the paired
// t-test on log ratios against a hand computation.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include "core/common/check.h"
#include "core/common/statistics.h"

using namespace dtlab::core;

namespace {

bool near(double actual, double expected, double tolerance) {
  return std::abs(actual - expected) <= tolerance;
}

#define EXPECT_NEAR(actual, expected, tolerance)           \
  QVERIFY2(near((actual), (expected), (tolerance)),        \
           qPrintable(QString("%1 = %2, expected %3")      \
                          .arg(#actual)                    \
                          .arg(double(actual), 0, 'g', 17) \
                          .arg(double(expected), 0, 'g', 17)))

// Eleven distinct values 10, 20, ..., 110, shuffled: the bootstraps must not rely on sorted input.
const std::vector<double> kEleven = {70, 20, 110, 50, 10, 90, 40, 100, 30, 80, 60};

}  // namespace

class TestStatistics : public QObject {
  Q_OBJECT

 private slots:
  void medianOfOddEvenAndUnsortedSamples() {
    QCOMPARE(median({7}), 7.0);
    QCOMPARE(median({3, 1, 2}), 2.0);
    QCOMPARE(median({5, 1, 4, 2, 3}), 3.0);
    QCOMPARE(median({4, 1, 3, 2}), 2.5);
    QCOMPARE(median({-1, 10}), 4.5);
    QCOMPARE(median({2, 2, 2, 9}), 2.0);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, median({}));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, median({1, std::nan(""), 3}));
  }

  void incompleteBetaMatchesClosedForms() {
    for (double x : {0.0, 0.1, 0.37, 0.5, 0.9, 1.0}) {
      EXPECT_NEAR(regularizedIncompleteBeta(1, 1, x), x, 1e-13);  // uniform
    }
    // I_x(a,1) = x^a; the second and third lie past (a+1)/(a+b+2), through the mirror image.
    EXPECT_NEAR(regularizedIncompleteBeta(3, 1, 0.2), 0.008, 1e-13);
    EXPECT_NEAR(regularizedIncompleteBeta(5, 1, 0.9), 0.59049, 1e-13);
    EXPECT_NEAR(regularizedIncompleteBeta(0.5, 1, 0.25), 0.5, 1e-13);
    // I_x(1,b) = 1 - (1-x)^b.
    EXPECT_NEAR(regularizedIncompleteBeta(1, 3, 0.2), 1 - 0.512, 1e-13);
    EXPECT_NEAR(regularizedIncompleteBeta(1, 4, 0.5), 1 - 1.0 / 16, 1e-13);
    // I_x(2,2) = 3x^2 - 2x^3 = 0.27 - 0.054 at x = 0.3.
    EXPECT_NEAR(regularizedIncompleteBeta(2, 2, 0.3), 0.216, 1e-13);
    // I_x(1/2,1/2) = (2/pi) asin(sqrt(x)); asin(1/2) = pi/6.
    EXPECT_NEAR(regularizedIncompleteBeta(0.5, 0.5, 0.25), 1.0 / 3, 1e-13);
    // Symmetric about 1/2 when a = b, also for large parameters.
    for (double a : {0.5, 2.0, 7.5, 50.0, 400.0}) {
      EXPECT_NEAR(regularizedIncompleteBeta(a, a, 0.5), 0.5, 1e-12);
    }
    // Far in the tail: I_0.01(10,1) = 0.01^10 = 1e-20, checked to a relative 1e-10.
    EXPECT_NEAR(regularizedIncompleteBeta(10, 1, 0.01) / 1e-20, 1.0, 1e-10);
    // And its mirror image: I_0.99(1,10) = 1 - 0.01^10, so 1 - I_0.01(10,1) exactly.
    EXPECT_NEAR(regularizedIncompleteBeta(1, 10, 0.99), 1.0, 1e-15);

    QVERIFY_THROWS_EXCEPTION(dtlab::Error, regularizedIncompleteBeta(0, 1, 0.5));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, regularizedIncompleteBeta(1, -2, 0.5));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, regularizedIncompleteBeta(1, 1, -0.1));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, regularizedIncompleteBeta(1, 1, 1.5));
  }

  void studentTMatchesClosedFormsAndTables() {
    // df = 1 is the Cauchy distribution: P(|T| >= t) = 1 - (2/pi) atan(t) = (2/pi) atan(1/t).
    EXPECT_NEAR(studentTTwoSidedP(1, 1), 0.5, 1e-13);
    EXPECT_NEAR(studentTTwoSidedP(1e6, 1) / (2 / std::numbers::pi * std::atan(1e-6)), 1.0, 1e-9);
    // df = 2: P(|T| >= t) = 1 - t / sqrt(2 + t^2).
    for (double t : {0.3, 1.0, 2.5, 10.0}) {
      EXPECT_NEAR(studentTTwoSidedP(t, 2), 1 - t / std::sqrt(2 + t * t), 1e-13);
    }
    for (double df : {1.0, 4.0, 30.0}) {
      QCOMPARE(studentTTwoSidedP(0, df), 1.0);
      QCOMPARE(studentTTwoSidedP(std::numeric_limits<double>::infinity(), df), 0.0);
      QCOMPARE(studentTTwoSidedP(-1.7, df), studentTTwoSidedP(1.7, df));
    }
    // Two-sided critical values from the t table.
    EXPECT_NEAR(studentTTwoSidedP(12.706205, 1), 0.05, 1e-5);
    EXPECT_NEAR(studentTTwoSidedP(2.776445, 4), 0.05, 1e-5);
    EXPECT_NEAR(studentTTwoSidedP(2.228139, 10), 0.05, 1e-5);
    EXPECT_NEAR(studentTTwoSidedP(4.604095, 4), 0.01, 1e-5);

    QVERIFY_THROWS_EXCEPTION(dtlab::Error, studentTTwoSidedP(1, 0));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, studentTTwoSidedP(std::nan(""), 3));
  }

  // For sorted distinct x(1..n), n odd, a resample's median is <= x(k) exactly when at least
  // (n+1)/2 of its n draws are, each with probability k/n:
  //   F(k) = P(median* <= x(k)) = P(Binomial(n, k/n) >= (n+1)/2).
  // With B = 10000 resamples the interval's low bound is the 250th smallest median, i.e. the
  // first x(k) whose share of medians at or below it reaches 0.025; the high bound the first
  // whose share reaches 0.975. Each share is F(k) give or take sqrt(F(1-F)/B) <= 0.0016.
  //
  // n = 5, {1..5}: F(1) = [C(5,3) 4^2 + C(5,4) 4 + 1] / 5^5 = (160 + 20 + 1) / 3125 = 0.0579,
  // already above 0.025 by 14 standard deviations, so low = 1; F(4) = 1 - F(1) = 0.9421, below
  // 0.975 by as much, so high = 5: five repetitions bound the median only by their range.
  void bootstrapMedianOfFiveSpansTheRange() {
    const Interval interval = bootstrapMedian({4, 2, 5, 1, 3});
    QCOMPARE(interval.estimate, 3.0);
    QCOMPARE(interval.low, 1.0);
    QCOMPARE(interval.high, 5.0);
    QCOMPARE(interval.n, 5);
  }

  // n = 11, x(k) = 10k: F(k) = sum_{j=6..11} C(11,j) k^j (11-k)^(11-j) / 11^11, 11^11 =
  // 285311670611.
  //   k = 2: (1745960832 + 277136640 + 30792960 + 2280960 + 101376 + 2048) / 11^11
  //        = 2056274816 / 285311670611 = 0.00721
  //   k = 3: (11036196864 + 2956124160 + 554273280 + 69284160 + 5196312 + 177147) / 11^11
  //        = 14621251923 / 285311670611 = 0.05125
  //   k = 8: 1 - F(3) = 0.94875;  k = 9: 1 - F(2) = 0.99279   (F(11-k) = 1 - F(k))
  // 0.025 lies 11 and 17 standard deviations from F(2) and F(3), 0.975 as far from F(8) and
  // F(9), so for any seed the 95% interval is [x(3), x(9)] = [30, 90].
  // At level 0.5 the bounds are the first k reaching 0.25 and 0.75:
  //   F(4) = 49286717440 / 11^11 = 0.17275,  F(5) = 108027921875 / 11^11 = 0.37863,
  //   F(6) = 1 - F(5) = 0.62137,             F(7) = 1 - F(4) = 0.82725,
  // each at least 18 standard deviations (0.0043) away, so the interval is [x(5), x(7)].
  void bootstrapMedianMatchesTheExactBootstrapDistribution() {
    for (uint64_t seed : {uint64_t{0x5EED}, uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{42}}) {
      BootstrapOptions options;
      options.seed = seed;
      const Interval interval = bootstrapMedian(kEleven, options);
      QCOMPARE(interval.estimate, 60.0);
      QCOMPARE(interval.low, 30.0);
      QCOMPARE(interval.high, 90.0);
      QCOMPARE(interval.n, 11);

      options.level = 0.5;
      const Interval half = bootstrapMedian(kEleven, options);
      QCOMPARE(half.low, 50.0);
      QCOMPARE(half.high, 70.0);
    }
  }

  void bootstrapMedianIsDeterministicAndOrderFree() {
    std::vector<double> sorted = kEleven;
    std::sort(sorted.begin(), sorted.end());
    BootstrapOptions options;
    options.resamples = 333;  // a count where the percentile positions are not integers
    const Interval fromSorted = bootstrapMedian(sorted, options);
    const Interval fromShuffled = bootstrapMedian(kEleven, options);
    QCOMPARE(fromShuffled.low, fromSorted.low);
    QCOMPARE(fromShuffled.high, fromSorted.high);
    QCOMPARE(fromShuffled.estimate, 60.0);

    const std::vector<double> even = {3.5, 1.25, 9, 4, 2, 7};
    const Interval first = bootstrapMedian(even);
    const Interval second = bootstrapMedian(even);
    QCOMPARE(first.low, second.low);
    QCOMPARE(first.high, second.high);
    QCOMPARE(first.estimate, 3.75);  // (3.5 + 4) / 2
    QVERIFY(first.low <= first.estimate && first.estimate <= first.high);
  }

  void bootstrapMedianDegenerateCases() {
    const Interval single = bootstrapMedian({4.5});
    QCOMPARE(single.estimate, 4.5);
    QCOMPARE(single.low, 4.5);
    QCOMPARE(single.high, 4.5);
    QCOMPARE(single.n, 1);

    const Interval flat = bootstrapMedian({2.5, 2.5, 2.5, 2.5});
    QCOMPARE(flat.estimate, 2.5);
    QCOMPARE(flat.low, 2.5);
    QCOMPARE(flat.high, 2.5);

    QVERIFY_THROWS_EXCEPTION(dtlab::Error, bootstrapMedian({}));
    BootstrapOptions options;
    for (double level : {0.0, 1.0, -0.5, 1.5}) {
      options.level = level;
      QVERIFY_THROWS_EXCEPTION(dtlab::Error, bootstrapMedian({1, 2, 3}, options));
    }
    options = {};
    options.resamples = 0;
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, bootstrapMedian({1, 2, 3}, options));
  }

  // Against a constant b = c every resampled ratio is that resample's median of a over c, drawn
  // from the same indices as bootstrapMedian's, so the bounds agree bit for bit.
  void ratioAgainstAConstantIsTheMedianIntervalScaled() {
    for (const std::vector<double>& a :
         {kEleven, std::vector<double>{3.5, 1.25, 9, 4, 2, 7}, std::vector<double>{8, 1, 5}}) {
      const std::vector<double> b(a.size(), 3.0);
      const Interval median = bootstrapMedian(a);
      const Interval ratio = bootstrapRatioOfMedians(a, b);
      QCOMPARE(ratio.estimate, median.estimate / 3.0);
      QCOMPARE(ratio.low, median.low / 3.0);
      QCOMPARE(ratio.high, median.high / 3.0);
      QCOMPARE(ratio.n, static_cast<int>(a.size()));
    }
  }

  // Pairs keep together: with a[i] = 2 b[i] every resample has ratio exactly 2 (scaling by 2 is
  // exact), however spread out b is. Unpaired resampling would give a wide interval.
  void ratioOfProportionalPairsIsExact() {
    const std::vector<double> b = {3, 1, 40, 1.5, 9, 2.6};
    std::vector<double> a;
    for (double value : b) a.push_back(2 * value);
    const Interval ratio = bootstrapRatioOfMedians(a, b);
    QCOMPARE(ratio.estimate, 2.0);
    QCOMPARE(ratio.low, 2.0);
    QCOMPARE(ratio.high, 2.0);
    QCOMPARE(ratio.n, 6);
  }

  void ratioIgnoresTheOrderOfRepetitions() {
    const std::vector<double> a = {5, 3, 8, 3, 6, 4, 9};
    const std::vector<double> b = {2, 1, 7, 4, 2.5, 5, 3};
    // The same pairs (a[i], b[i]) listed in another order.
    const std::vector<double> permutedA = {6, 3, 9, 5, 4, 3, 8};
    const std::vector<double> permutedB = {2.5, 4, 3, 2, 5, 1, 7};
    const Interval listed = bootstrapRatioOfMedians(a, b);
    const Interval permuted = bootstrapRatioOfMedians(permutedA, permutedB);
    QCOMPARE(listed.estimate, 5.0 / 3.0);  // median(a) = 5, median(b) = 3
    QCOMPARE(permuted.estimate, listed.estimate);
    QCOMPARE(permuted.low, listed.low);
    QCOMPARE(permuted.high, listed.high);
    QVERIFY(listed.low <= listed.estimate && listed.estimate <= listed.high);
  }

  void ratioRejectsBadInput() {
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, bootstrapRatioOfMedians({1, 2}, {1, 0}));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, bootstrapRatioOfMedians({1, 2}, {1, -3}));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, bootstrapRatioOfMedians({1, 2, 3}, {1, 2}));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, bootstrapRatioOfMedians({}, {}));
  }

  // d = 0.1, 0.2, 0.3: mean 0.2, sd = sqrt((0.01 + 0 + 0.01) / 2) = 0.1,
  // t = 0.2 / (0.1 / sqrt(3)) = 2 sqrt(3) = 3.4641 with df = 2, where
  // P(|T| >= t) = 1 - t / sqrt(2 + t^2) = 1 - sqrt(12 / 14) = 1 - sqrt(6/7) = 0.074180.
  void pairedTestMatchesAHandComputation() {
    const std::vector<double> b = {1, 2, 4};
    const std::vector<double> a = {std::exp(0.1), 2 * std::exp(0.2), 4 * std::exp(0.3)};
    const PairedTest test = pairedLogRatioTest(a, b);
    QCOMPARE(test.n, 3);
    QCOMPARE(test.greater, 3);
    QCOMPARE(test.less, 0);
    EXPECT_NEAR(test.meanLogRatio, 0.2, 1e-14);
    EXPECT_NEAR(test.t, 2 * std::sqrt(3.0), 1e-12);
    EXPECT_NEAR(test.pValue, 1 - std::sqrt(6.0 / 7.0), 1e-12);

    const PairedTest reversed = pairedLogRatioTest(b, a);
    QCOMPARE(reversed.greater, 0);
    QCOMPARE(reversed.less, 3);
    EXPECT_NEAR(reversed.t, -2 * std::sqrt(3.0), 1e-12);
    EXPECT_NEAR(reversed.pValue, 1 - std::sqrt(6.0 / 7.0), 1e-12);
  }

  void pairedTestCountsAndDegenerateCases() {
    // Pairs 3 > 1 and 4 > 1 are greater, 1 < 2 is less, 2 = 2 is neither.
    const PairedTest mixed = pairedLogRatioTest({1, 2, 3, 4}, {2, 2, 1, 1});
    QCOMPARE(mixed.n, 4);
    QCOMPARE(mixed.greater, 2);
    QCOMPARE(mixed.less, 1);
    QVERIFY(mixed.pValue > 0 && mixed.pValue < 1);

    const PairedTest single = pairedLogRatioTest({2}, {1});
    QCOMPARE(single.n, 1);
    QCOMPARE(single.greater, 1);
    QVERIFY(std::isnan(single.pValue));
    QVERIFY(std::isnan(single.t));

    // The same ratio in every pair: no spread, so the difference holds in every repetition.
    const PairedTest faster = pairedLogRatioTest({2, 6, 20}, {1, 3, 10});
    QCOMPARE(faster.pValue, 0.0);
    QCOMPARE(faster.t, std::numeric_limits<double>::infinity());
    QCOMPARE(faster.meanLogRatio, std::log(2.0));
    const PairedTest slower = pairedLogRatioTest({1, 3, 10}, {2, 6, 20});
    QCOMPARE(slower.pValue, 0.0);
    QCOMPARE(slower.t, -std::numeric_limits<double>::infinity());

    const PairedTest same = pairedLogRatioTest({1.5, 2, 7}, {1.5, 2, 7});
    QCOMPARE(same.pValue, 1.0);
    QCOMPARE(same.t, 0.0);
    QCOMPARE(same.greater, 0);
    QCOMPARE(same.less, 0);

    QVERIFY_THROWS_EXCEPTION(dtlab::Error, pairedLogRatioTest({}, {}));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, pairedLogRatioTest({1, 2}, {1}));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, pairedLogRatioTest({1, 0}, {1, 1}));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, pairedLogRatioTest({1, 2}, {1, -1}));
  }
};

QTEST_GUILESS_MAIN(TestStatistics)
#include "test_statistics.moc"
