#include "ui/charts/comparison_data.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/common/check.h"
#include "core/store/project_store.h"

namespace dtlab::ui {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

core::XAxis storeAxis(ChartX x) {
  return x == ChartX::kStep ? core::XAxis::kStep : core::XAxis::kWallMs;
}

// A point's x in the store's unit for the axis (steps or milliseconds).
double storeX(const core::SeriesPoint& p, ChartX x) {
  return x == ChartX::kStep ? static_cast<double>(p.step) : p.wallMs;
}

double chartX(double storeValue, ChartX x) {
  return x == ChartX::kStep ? storeValue : storeValue / 1000.0;
}

// The series of one run behind the curve of `metric`: every worker's, every node's, or the
// run's own, narrowed to the lowest worker (node) for MemberReduction::kFirst.
std::vector<core::SeriesInfo> membersOf(const std::vector<core::SeriesInfo>& all,
                                        const core::MetricInfo& metric, MemberReduction reduction) {
  std::vector<core::SeriesInfo> out;
  for (const core::SeriesInfo& s : all) {
    if (s.key != metric.name) continue;
    const bool belongs = metric.scope == core::MetricScope::kWorker ? s.worker >= 0
                         : metric.scope == core::MetricScope::kNode
                             ? s.node >= 0 && s.worker == core::kNoWorker
                             : s.node == core::kNoNode;
    if (belongs) out.push_back(s);
  }
  if (reduction == MemberReduction::kFirst && out.size() > 1) {
    const bool byWorker = metric.scope == core::MetricScope::kWorker;
    const auto first = std::min_element(out.begin(), out.end(), [&](const auto& a, const auto& b) {
      return byWorker ? a.worker < b.worker : a.node < b.node;
    });
    out = {*first};
  }
  return out;
}

core::SeriesData query(core::ProjectStore& store, const core::SeriesInfo& series,
                       const ComparisonRequest& request, std::optional<double> from = {},
                       std::optional<double> to = {}) {
  core::SeriesQuery q;
  q.seriesId = series.id;
  q.axis = storeAxis(request.x);
  q.from = from;
  q.to = to;
  q.buckets = request.buckets;
  return store.querySeries(q);
}

void appendPoints(const core::SeriesData& data, ChartX x, ComparisonSeries& out) {
  for (const core::SeriesPoint& p : data.points) {
    if (std::isnan(p.value)) continue;
    out.x.push_back(chartX(storeX(p, x), x));
    out.values.push_back(p.value);
  }
}

// The mean over the members of their points at each step, or, for nodes, of their k-th
// samples: a node samples on its own clock (every 500 ms), so its samples carry whatever step
// it had reached, and grouping them by step would mix unrelated moments. A point sits at the
// latest wall time (and step) among those averaged: the step is over when its last member is.
void meanOfMembers(const std::vector<core::SeriesData>& members, ChartX x, bool bySample,
                   ComparisonSeries& out) {
  struct Sum {
    double value = 0.0;
    int count = 0;
    int64_t latestStep = 0;
    double latestWallMs = -kInf;
  };
  std::map<int64_t, Sum> groups;
  for (const core::SeriesData& d : members) {
    int64_t sample = 0;
    for (const core::SeriesPoint& p : d.points) {
      if (std::isnan(p.value)) continue;
      Sum& s = groups[bySample ? sample++ : p.step];
      s.value += p.value;
      ++s.count;
      s.latestStep = std::max(s.latestStep, p.step);
      s.latestWallMs = std::max(s.latestWallMs, p.wallMs);
    }
  }
  for (const auto& [key, s] : groups) {
    out.x.push_back(x == ChartX::kStep ? static_cast<double>(s.latestStep)
                                       : s.latestWallMs / 1000.0);
    out.values.push_back(s.value / s.count);
  }
}

// When the store downsampled a member, steps no longer line up across members. Every member
// is then read over the same range in the same buckets (the store's, or, for a member short
// enough to come back whole, the same bucketing applied here), and each bucket contributes
// two points: the members' mean minimum and mean maximum, each at the mean x of those points.
// The mean curve's own extremes in a bucket lie between the two.
void meanByBucket(core::ProjectStore& store, const std::vector<core::SeriesInfo>& members,
                  const std::vector<core::SeriesData>& firstRead, const ComparisonRequest& request,
                  ComparisonSeries& out) {
  double from = kInf, to = -kInf;
  for (const core::SeriesData& d : firstRead) {
    if (d.pointsInRange == 0) continue;
    from = std::min(from, d.from);
    to = std::max(to, d.to);
  }
  if (from > to) return;
  const int n = std::max(1, request.buckets);
  const double width = (to - from) / n;
  const double scale = width > 0.0 ? 1.0 / width : 0.0;
  auto bucketOf = [&](double x) {
    return std::clamp(static_cast<int>((x - from) * scale), 0, n - 1);
  };
  struct Sum {
    double min = 0.0, max = 0.0, minX = 0.0, maxX = 0.0;
    int count = 0;
  };
  std::vector<Sum> sums(static_cast<std::size_t>(n));
  for (const core::SeriesInfo& member : members) {
    const core::SeriesData d = query(store, member, request, from, to);
    struct Extremes {
      bool set = false;
      core::SeriesPoint min, max;
    };
    std::vector<Extremes> own(static_cast<std::size_t>(n));
    if (d.downsampled) {
      for (const core::SeriesBucket& b : d.buckets) {
        if (!b.hasValue) continue;
        own[static_cast<std::size_t>(bucketOf((b.from + b.to) / 2.0))] = {true, b.min, b.max};
      }
    } else {
      for (const core::SeriesPoint& p : d.points) {
        if (std::isnan(p.value)) continue;
        Extremes& e = own[static_cast<std::size_t>(bucketOf(storeX(p, request.x)))];
        if (!e.set || p.value < e.min.value) e.min = p;
        if (!e.set || p.value > e.max.value) e.max = p;
        e.set = true;
      }
    }
    for (std::size_t i = 0; i < own.size(); ++i) {
      if (!own[i].set) continue;
      Sum& s = sums[i];
      s.min += own[i].min.value;
      s.max += own[i].max.value;
      s.minX += storeX(own[i].min, request.x);
      s.maxX += storeX(own[i].max, request.x);
      ++s.count;
    }
  }
  for (const Sum& s : sums) {
    if (s.count == 0) continue;
    std::pair<double, double> low{s.minX / s.count, s.min / s.count};
    std::pair<double, double> high{s.maxX / s.count, s.max / s.count};
    if (high.first < low.first) std::swap(low, high);
    out.x.push_back(chartX(low.first, request.x));
    out.values.push_back(low.second);
    if (high == low) continue;
    out.x.push_back(chartX(high.first, request.x));
    out.values.push_back(high.second);
  }
}

void readCurve(core::ProjectStore& store, const std::vector<core::SeriesInfo>& members,
               const ComparisonRequest& request, bool nodes, ComparisonSeries& out) {
  std::vector<core::SeriesData> data;
  for (const core::SeriesInfo& m : members) {
    data.push_back(query(store, m, request));
    out.downsampled = out.downsampled || data.back().downsampled;
  }
  if (data.size() == 1)
    appendPoints(data.front(), request.x, out);
  else if (!out.downsampled)
    meanOfMembers(data, request.x, nodes, out);
  else
    meanByBucket(store, members, data, request, out);
  // Wall times of different steps need not be in order across members; the smoothing and the
  // CSV go in x order.
  if (!std::is_sorted(out.x.begin(), out.x.end())) {
    std::vector<std::size_t> order(out.x.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return out.x[a] < out.x[b]; });
    std::vector<double> x, values;
    for (const std::size_t i : order) {
      x.push_back(out.x[i]);
      values.push_back(out.values[i]);
    }
    out.x = std::move(x);
    out.values = std::move(values);
  }
}

}  // namespace

const char* toString(ChartX x) {
  return x == ChartX::kStep ? "step" : "wall";
}

std::optional<ChartX> parseChartX(std::string_view text) {
  if (text == "step") return ChartX::kStep;
  if (text == "wall") return ChartX::kWallSeconds;
  return std::nullopt;
}

std::string metricNames() {
  std::string names;
  for (const core::MetricInfo& m : core::kMetricTable) {
    if (!names.empty()) names += ", ";
    names += m.name;
  }
  return names;
}

const core::MetricInfo& requireMetric(std::string_view name) {
  const core::MetricInfo* info = core::findMetric(name);
  if (info == nullptr)
    throw Error("unknown metric '" + std::string(name) + "' (metrics: " + metricNames() + ")");
  return *info;
}

ComparisonData readComparison(core::ProjectStore& store, const ComparisonRequest& request) {
  const core::MetricInfo& metric = requireMetric(request.metric);
  ComparisonData data;
  data.request = request;
  for (const int64_t runId : request.runIds) {
    const core::RunRecord run = store.requireRun(runId);
    ComparisonSeries s;
    s.runId = runId;
    s.runName = run.name;
    s.strategy = run.strategy;
    s.status = run.status;
    const std::vector<core::SeriesInfo> members =
        membersOf(store.series(runId), metric, request.reduction);
    s.members = static_cast<int>(members.size());
    if (!members.empty())
      readCurve(store, members, request, metric.scope == core::MetricScope::kNode, s);
    data.series.push_back(std::move(s));
  }
  return data;
}

}  // namespace dtlab::ui
