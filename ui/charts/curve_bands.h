#pragma once

#include <span>
#include <vector>

namespace dtlab::ui {

// One curve: x and y of equal length. The points need not be sorted by x; points whose x or y
// is not finite are left out, so a curve that diverged to NaN stops where its values end.
struct CurveView {
  std::span<const double> x;
  std::span<const double> y;
};

// Several repetitions of one variant drawn as one curve with a band, as Weights & Biases draws
// a run group. At each x of `x`: the median of the repetitions' values (for an even count the
// mean of the middle two), `low` and `high` their minimum and maximum (the band is the range of
// the repetitions, not a confidence interval: with 3 to 10 repetitions an interval of the
// median would span nearly the whole range anyway, core/common/statistics.h), and `count` the
// repetitions that cover that x. All five have the same length.
struct CurveBand {
  std::vector<double> x;
  std::vector<double> median;
  std::vector<double> low;
  std::vector<double> high;
  std::vector<int> count;
};

// The band of `curves` on a common grid: repetitions record their points at different x (wall
// times always differ, and a store-downsampled series keeps each bucket's extremes at their own
// steps) and end at different x (a run stops when it reaches its target), so their values are
// compared at `gridPoints` evenly spaced x from the smallest first x to the largest last x over
// the curves (one point when they all lie at a single x). At a grid x, each curve whose x range
// covers it contributes its value there, linearly interpolated between its neighbouring points;
// a grid x that no curve covers is left out. Curves without finite points are ignored; with
// none left the band is empty. Throws dtlab::Error when gridPoints < 2 or a curve's x and y
// differ in length.
CurveBand bandOf(const std::vector<CurveView>& curves, int gridPoints = 400);

}  // namespace dtlab::ui
