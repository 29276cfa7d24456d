#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/store/chunk_codec.h"

namespace dtlab::core {

namespace sqlite {
class Db;
}

// Which coordinate a chart's x-axis uses; every point carries both.
enum class XAxis { kStep, kWallMs };

// A range read of one series. `from`/`to` bound x inclusively (absent: the series' extent).
// When more than 2 x `buckets` points fall in the range, the range is cut into `buckets`
// equal-width buckets and each keeps its minimum and maximum point, which is what a line
// chart at that resolution draws anyway; buckets <= 0 never downsamples.
struct SeriesQuery {
  int64_t seriesId = 0;
  XAxis axis = XAxis::kStep;
  std::optional<double> from;
  std::optional<double> to;
  int buckets = 2000;
};

// One bucket of a downsampled result: [from, to) on the x-axis (the last one includes `to`),
// how many stored points it covers, and the points holding its minimum and maximum value
// (NaN values never count as either; hasValue is false when the bucket holds only NaN).
struct SeriesBucket {
  double from = 0.0;
  double to = 0.0;
  int64_t count = 0;
  bool hasValue = false;
  SeriesPoint min;
  SeriesPoint max;
};

struct SeriesData {
  // True when `points` is a min/max reduction and not every stored point: a chart should
  // say so: a chart tells its user when it shows fewer points than were stored.
  bool downsampled = false;
  int64_t pointsInRange = 0;  // stored points with x in [from, to]
  double from = 0.0;          // the x range actually covered
  double to = 0.0;
  // Raw points in x order, or, downsampled, each bucket's min and max point in x order.
  std::vector<SeriesPoint> points;
  std::vector<SeriesBucket> buckets;  // non-empty buckets in x order; empty unless downsampled
};

// Reads through `db` (any connection to a project file); see SeriesQuery.
SeriesData querySeries(sqlite::Db& db, const SeriesQuery& query);

// Every stored point of a series with step in [fromStep, toStep], in step order (points
// with equal steps keep the order they were written in).
std::vector<SeriesPoint> readSeriesPoints(sqlite::Db& db, int64_t seriesId,
                                          std::optional<int64_t> fromStep = std::nullopt,
                                          std::optional<int64_t> toStep = std::nullopt);

}  // namespace dtlab::core
