#include "ui/charts/curve_bands.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/common/check.h"
#include "core/common/statistics.h"

namespace dtlab::ui {
namespace {

struct Point {
  double x;
  double y;
};

// The curve's finite points sorted by x; stable, so points that share an x keep their order
// and the last of them is the one interpolation reaches from the right.
std::vector<Point> finitePoints(const CurveView& curve) {
  DTLAB_ENFORCE(curve.x.size() == curve.y.size(), "curve with ", curve.x.size(), " x and ",
                curve.y.size(), " y values");
  std::vector<Point> points;
  points.reserve(curve.x.size());
  for (std::size_t i = 0; i < curve.x.size(); ++i)
    if (std::isfinite(curve.x[i]) && std::isfinite(curve.y[i]))
      points.push_back({curve.x[i], curve.y[i]});
  std::stable_sort(points.begin(), points.end(),
                   [](const Point& a, const Point& b) { return a.x < b.x; });
  return points;
}

// The value of `points` at x, which lies within their x range.
double valueAt(const std::vector<Point>& points, double x) {
  const auto right = std::upper_bound(points.begin(), points.end(), x,
                                      [](double v, const Point& p) { return v < p.x; });
  if (right == points.end()) return points.back().y;  // x is the last point's
  const Point& b = *right;
  const Point& a = *(right - 1);  // a.x <= x < b.x: the range starts at or before x
  return a.y + (b.y - a.y) * ((x - a.x) / (b.x - a.x));
}

}  // namespace

CurveBand bandOf(const std::vector<CurveView>& curves, int gridPoints) {
  DTLAB_ENFORCE(gridPoints >= 2, "a band's grid needs at least 2 points, not ", gridPoints);
  std::vector<std::vector<Point>> sorted;
  double first = std::numeric_limits<double>::infinity();
  double last = -std::numeric_limits<double>::infinity();
  for (const CurveView& curve : curves) {
    std::vector<Point> points = finitePoints(curve);
    if (points.empty()) continue;
    first = std::min(first, points.front().x);
    last = std::max(last, points.back().x);
    sorted.push_back(std::move(points));
  }
  CurveBand band;
  if (sorted.empty()) return band;

  const int n = first == last ? 1 : gridPoints;
  std::vector<double> values;
  values.reserve(sorted.size());
  for (int i = 0; i < n; ++i) {
    // The last point is `last` itself, so the curve that ends there covers it despite rounding.
    const double x = i == n - 1 ? last : first + (last - first) * i / (n - 1);
    values.clear();
    for (const std::vector<Point>& points : sorted)
      if (points.front().x <= x && x <= points.back().x) {
        // Finite points can still interpolate to infinity (1e308 and -1e308): left out too.
        const double v = valueAt(points, x);
        if (std::isfinite(v)) values.push_back(v);
      }
    if (values.empty()) continue;
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    band.x.push_back(x);
    band.low.push_back(*low);
    band.high.push_back(*high);
    band.count.push_back(static_cast<int>(values.size()));
    band.median.push_back(core::median(values));
  }
  return band;
}

}  // namespace dtlab::ui
