// A variant's repetitions drawn as one curve: the median and range of several curves on a
// common grid (ui/charts/curve_bands.h), checked in closed form, and the comparison chart's
// group mode (median in the legend over a filled band, repetitions faint) on data built here,
// under QT_QPA_PLATFORM=offscreen.
#include <QtTest/QtTest>

#include <qcustomplot.h>

#include <QtWidgets/QApplication>

#include <cmath>
#include <limits>
#include <vector>

#include "core/common/check.h"
#include "ui/charts/comparison_chart.h"
#include "ui/charts/comparison_data.h"
#include "ui/charts/curve_bands.h"
#include "ui/charts/smoothing.h"

using namespace dtlab;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// x = first, first + 1, ..., last and y = slope * x + offset.
struct Line {
  std::vector<double> x;
  std::vector<double> y;
};
Line line(double first, double last, double slope, double offset) {
  Line l;
  for (double x = first; x <= last; x += 1.0) {
    l.x.push_back(x);
    l.y.push_back(slope * x + offset);
  }
  return l;
}

std::vector<ui::CurveView> views(const std::vector<Line>& lines) {
  std::vector<ui::CurveView> out;
  for (const Line& l : lines) out.push_back({l.x, l.y});
  return out;
}

ui::ComparisonSeries series(int64_t runId, const std::string& strategy, const Line& l) {
  ui::ComparisonSeries s;
  s.runId = runId;
  s.runName = "rep" + std::to_string(runId);
  s.strategy = strategy;
  s.status = core::RunStatus::kCompleted;
  s.x = l.x;
  s.values = l.y;
  return s;
}

// Five runs over steps 1..20, as an execution of two variants would record them:
// sync_allreduce runs 1-3 with loss = step, step + 1, step + 5 (median step + 1), and
// async_ps runs 4 (2 x step) and 5 (2 x step + 4, stopped at step 10): median 2 x step + 2
// up to step 10, then run 4's alone.
ui::ComparisonData twoVariants() {
  ui::ComparisonData data;
  data.request.metric = "loss";
  data.request.runIds = {1, 2, 3, 4, 5};
  data.request.groups = {{"sync_allreduce", {1, 2, 3}}, {"async_ps", {4, 5}}};
  data.series = {series(1, "sync_allreduce", line(1, 20, 1, 0)),
                 series(2, "sync_allreduce", line(1, 20, 1, 1)),
                 series(3, "sync_allreduce", line(1, 20, 1, 5)),
                 series(4, "async_ps", line(1, 20, 2, 0)),
                 series(5, "async_ps", line(1, 10, 2, 4))};
  return data;
}

// Legend entries (itemCount() counts the cells of the legend's grid, empty ones too).
int legendEntries(const ui::ComparisonChart& chart) {
  int n = 0;
  for (int i = 0; i < chart.legend->itemCount(); ++i) n += chart.legend->item(i) != nullptr;
  return n;
}

std::vector<double> keysOf(const QCPGraph* graph) {
  std::vector<double> out;
  for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
    out.push_back(it->key);
  return out;
}
std::vector<double> valuesOf(const QCPGraph* graph) {
  std::vector<double> out;
  for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
    out.push_back(it->value);
  return out;
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b));
}

}  // namespace

class TestCompareBands : public QObject {
  Q_OBJECT
 private slots:
  void constantCurvesGiveTheirMedianAndRange() {
    const ui::CurveBand b =
        ui::bandOf(views({line(0, 10, 0, 1), line(0, 10, 0, 3), line(0, 10, 0, 2)}), 11);
    QCOMPARE(b.x.size(), std::size_t{11});
    QCOMPARE(b.median.size(), std::size_t{11});
    QCOMPARE(b.low.size(), std::size_t{11});
    QCOMPARE(b.high.size(), std::size_t{11});
    QCOMPARE(b.count.size(), std::size_t{11});
    for (std::size_t i = 0; i < 11; ++i) {
      QCOMPARE(b.x[i], static_cast<double>(i));  // 0, 1, ..., 10: the curves' own x
      QCOMPARE(b.median[i], 2.0);
      QCOMPARE(b.low[i], 1.0);
      QCOMPARE(b.high[i], 3.0);
      QCOMPARE(b.count[i], 3);
    }
    // An even count: the mean of the middle two.
    const ui::CurveBand even = ui::bandOf(
        views({line(0, 10, 0, 1), line(0, 10, 0, 3), line(0, 10, 0, 2), line(0, 10, 0, 10)}), 5);
    QCOMPARE(even.x, (std::vector<double>{0, 2.5, 5, 7.5, 10}));
    for (std::size_t i = 0; i < even.x.size(); ++i) {
      QCOMPARE(even.median[i], 2.5);
      QCOMPARE(even.high[i], 10.0);
      QCOMPARE(even.count[i], 4);
    }
  }

  // A run that stops early (it reached its target) counts where it has points, and only there.
  void aCurveThatEndsEarlyLeavesTheOthers() {
    const ui::CurveBand b =
        ui::bandOf(views({line(0, 10, 1, 0), line(0, 10, 1, 2), line(0, 4, 1, 10)}), 11);
    QCOMPARE(b.x.size(), std::size_t{11});
    for (std::size_t i = 0; i < 11; ++i) {
      const double x = static_cast<double>(i);
      QCOMPARE(b.x[i], x);
      QCOMPARE(b.low[i], x);
      if (x <= 4) {
        QCOMPARE(b.count[i], 3);
        QCOMPARE(b.median[i], x + 2);
        QCOMPARE(b.high[i], x + 10);
      } else {
        QCOMPARE(b.count[i], 2);
        QCOMPARE(b.median[i], x + 1);  // the mean of x and x + 2
        QCOMPARE(b.high[i], x + 2);
      }
    }
    // Curves that do not overlap: the grid points between them are left out.
    const ui::CurveBand apart = ui::bandOf(views({line(0, 1, 0, 1), line(9, 10, 0, 2)}), 11);
    QCOMPARE(apart.x, (std::vector<double>{0, 1, 9, 10}));
    QCOMPARE(apart.median, (std::vector<double>{1, 1, 2, 2}));
    QCOMPARE(apart.count, (std::vector<int>{1, 1, 1, 1}));
  }

  void valuesBetweenPointsAreInterpolated() {
    const std::vector<double> ax = {0, 10}, ay = {0, 10};
    const std::vector<double> bx = {10, 0, 4}, by = {8, 0, 8};  // unsorted: (0,0) (4,8) (10,8)
    const ui::CurveBand one = ui::bandOf({{ax, ay}}, 3);
    QCOMPARE(one.x, (std::vector<double>{0, 5, 10}));
    QCOMPARE(one.median, (std::vector<double>{0, 5, 10}));
    const ui::CurveBand b = ui::bandOf({{ax, ay}, {bx, by}}, 3);
    QCOMPARE(b.x, (std::vector<double>{0, 5, 10}));
    QCOMPARE(b.median, (std::vector<double>{0, 6.5, 9}));
    QCOMPARE(b.low, (std::vector<double>{0, 5, 8}));
    QCOMPARE(b.high, (std::vector<double>{0, 8, 10}));
    QCOMPARE(b.count, (std::vector<int>{2, 2, 2}));
    // Grid points between two of a curve's points: x = 2.5 on (0,0)-(10,10) is 2.5.
    const ui::CurveBand fine = ui::bandOf({{ax, ay}}, 5);
    QCOMPARE(fine.median, (std::vector<double>{0, 2.5, 5, 7.5, 10}));
  }

  void nonFiniteValuesAreSkipped() {
    // A NaN inside a curve: interpolated across from its neighbours.
    const std::vector<double> x = {0, 5, 10}, gap = {1, kNaN, 3};
    const ui::CurveBand across = ui::bandOf({{x, gap}}, 3);
    QCOMPARE(across.median, (std::vector<double>{1, 2, 3}));
    // NaN at the end (a diverged run): the curve ends at its last finite point.
    const std::vector<double> diverged = {1, 1, kNaN}, flat = {3, 3, 3};
    const ui::CurveBand b = ui::bandOf({{x, diverged}, {x, flat}}, 3);
    QCOMPARE(b.count, (std::vector<int>{2, 2, 1}));
    QCOMPARE(b.median, (std::vector<double>{2, 2, 3}));
    QCOMPARE(b.low, (std::vector<double>{1, 1, 3}));
    // A curve with no finite value is ignored.
    const std::vector<double> none = {kNaN, kNaN, std::numeric_limits<double>::infinity()};
    const ui::CurveBand ignored = ui::bandOf({{x, none}, {x, flat}}, 3);
    QCOMPARE(ignored.count, (std::vector<int>{1, 1, 1}));
    QCOMPARE(ignored.median, (std::vector<double>{3, 3, 3}));
  }

  void emptyAndDegenerateInputs() {
    QVERIFY(ui::bandOf({}).x.empty());
    const std::vector<double> nothing;
    const ui::CurveBand empty = ui::bandOf({{nothing, nothing}, {nothing, nothing}});
    QVERIFY(empty.x.empty() && empty.median.empty() && empty.low.empty() && empty.high.empty() &&
            empty.count.empty());
    // Every point at one x: one grid point.
    const std::vector<double> at3 = {3}, v1 = {1}, v5 = {5}, v2 = {2};
    const ui::CurveBand single = ui::bandOf({{at3, v1}, {at3, v5}, {at3, v2}});
    QCOMPARE(single.x, (std::vector<double>{3}));
    QCOMPARE(single.median, (std::vector<double>{2}));
    QCOMPARE(single.low, (std::vector<double>{1}));
    QCOMPARE(single.high, (std::vector<double>{5}));
    QCOMPARE(single.count, (std::vector<int>{3}));
    // The default grid: 400 points from the first x to the last.
    const ui::CurveBand standard = ui::bandOf(views({line(0, 10, 1, 0)}));
    QCOMPARE(standard.x.size(), std::size_t{400});
    QCOMPARE(standard.x.front(), 0.0);
    QCOMPARE(standard.x.back(), 10.0);
    const std::vector<double> twoX = {0, 1}, oneY = {0};
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, ui::bandOf({{twoX, oneY}}));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, ui::bandOf({{twoX, twoX}}, 1));
  }

  void chartDrawsEachGroupAsMedianOverBand() {
    ui::ComparisonChart chart;
    chart.resize(900, 500);
    chart.setData(twoVariants());
    QCOMPARE(chart.bands().size(), std::size_t{2});
    // Only the medians are in the legend: no run's curve, no band edge.
    QCOMPARE(legendEntries(chart), 2);
    QCOMPARE(chart.graphCount(), 2 * 3 + 5);  // per group low, high, median; a curve per run
    const auto& sync = chart.bands()[0];
    const auto& async = chart.bands()[1];
    QCOMPARE(sync.label, QString("sync_allreduce (median of 3, band: range)"));
    QCOMPARE(async.label, QString("async_ps (median of 2, band: range)"));
    QCOMPARE(sync.runIds, (std::vector<int64_t>{1, 2, 3}));
    QCOMPARE(async.runIds, (std::vector<int64_t>{4, 5}));
    QVERIFY(chart.legend->hasItemWithPlottable(sync.median));
    QVERIFY(chart.legend->hasItemWithPlottable(async.median));
    QCOMPARE(sync.median->name(), sync.label);

    // On the runs' own steps 1..20: the closed forms of twoVariants().
    QCOMPARE(sync.band.x.size(), std::size_t{20});
    QCOMPARE(async.band.x.size(), std::size_t{20});
    for (std::size_t i = 0; i < 20; ++i) {
      const double step = static_cast<double>(i + 1);
      QCOMPARE(sync.band.x[i], step);
      QCOMPARE(sync.band.median[i], step + 1);
      QCOMPARE(sync.band.low[i], step);
      QCOMPARE(sync.band.high[i], step + 5);
      QCOMPARE(async.band.median[i], step <= 10 ? 2 * step + 2 : 2 * step);
      QCOMPARE(async.band.count[i], step <= 10 ? 2 : 1);
    }
    // The graphs draw the band as computed (loss: no display scale).
    for (const auto& b : chart.bands()) {
      QCOMPARE(keysOf(b.median), b.band.x);
      QCOMPARE(valuesOf(b.median), b.band.median);
      QCOMPARE(valuesOf(b.low), b.band.low);
      QCOMPARE(valuesOf(b.high), b.band.high);
      QCOMPARE(b.high->channelFillGraph(), b.low);
      QVERIFY(b.high->brush().style() != Qt::NoBrush);
      QVERIFY(b.high->brush().color().alpha() < 128);
      QCOMPARE(b.low->pen().style(), Qt::NoPen);
      QCOMPARE(b.high->pen().style(), Qt::NoPen);
      QCOMPARE(b.median->pen().widthF(), 2.0);
      QCOMPARE(b.members.size(), b.runIds.size());
      for (const QCPGraph* m : b.members) {
        QVERIFY(!chart.legend->hasItemWithPlottable(m));
        QVERIFY(m->pen().color().alpha() < 128);
        QCOMPARE(m->pen().color().rgb(), b.median->pen().color().rgb());  // the group's colour
      }
    }
    // Groups take the series colours in order (ui/charts/palette.h: blue, then orange).
    QCOMPARE(sync.median->pen().color(), QColor(0, 114, 178));
    QCOMPARE(async.median->pen().color(), QColor(230, 159, 0));
    QCOMPARE(sync.high->brush().color().rgb(), QColor(0, 114, 178).rgb());

    // curves(): every run of the data in its order, its graph the faint member curve.
    QCOMPARE(chart.curves().size(), std::size_t{5});
    QCOMPARE(chart.curves()[0].graph, sync.members[0]);
    QCOMPARE(chart.curves()[4].graph, async.members[1]);
    QCOMPARE(chart.curves()[4].graph->data()->size(), 10);
    QVERIFY(chart.curves()[0].rawGraph == nullptr);
    QVERIFY2(chart.note().contains("median of its repetitions"), qPrintable(chart.note()));
    QVERIFY(chart.title().startsWith("loss: "));
  }

  // With smoothing, each run is smoothed first and the band taken over the smoothed curves.
  // The debiased EMA keeps a constant offset (its weights sum to 1), so the sync group's median
  // is the smoothed steps plus 1 and its band the smoothed steps plus 0 and 5.
  void smoothingSmoothsTheRunsBeforeTheBand() {
    ui::ComparisonChart chart;
    chart.setData(twoVariants());
    const std::vector<double> rawMedian = chart.bands()[0].band.median;
    chart.setSmoothing(0.8);
    QCOMPARE(chart.bands().size(), std::size_t{2});
    QCOMPARE(legendEntries(chart), 2);
    const auto& sync = chart.bands()[0];
    std::vector<double> steps;
    for (int s = 1; s <= 20; ++s) steps.push_back(s);
    const std::vector<double> smoothedSteps = ui::smoothEma(steps, 0.8);
    QCOMPARE(sync.band.median.size(), std::size_t{20});
    for (std::size_t i = 0; i < 20; ++i) {
      QVERIFY(near(sync.band.median[i], smoothedSteps[i] + 1));
      QVERIFY(near(sync.band.low[i], smoothedSteps[i]));
      QVERIFY(near(sync.band.high[i], smoothedSteps[i] + 5));
    }
    // The EMA lags a rising curve: every point after the first is below the raw median.
    QCOMPARE(sync.band.median[0], rawMedian[0]);
    for (std::size_t i = 1; i < 20; ++i) QVERIFY(sync.band.median[i] < rawMedian[i]);
    // The runs are drawn smoothed, still faint, and nothing raw is added.
    QCOMPARE(chart.graphCount(), 2 * 3 + 5);
    QCOMPARE(valuesOf(sync.members[2]), chart.curves()[2].smoothed);
    QVERIFY(chart.note().contains("weight 0.80"));
    chart.setSmoothing(0.0);
    QCOMPARE(chart.bands()[0].band.median, rawMedian);
  }

  // Runs without points, a run in no group, bytes drawn in MiB and the wall-time axis.
  void groupsSayWhatTheyHold() {
    ui::ComparisonData data = twoVariants();
    data.request.runIds = {1, 2, 3, 4, 5, 6, 7};
    data.request.groups.push_back({"ssp", {6}});
    data.series.push_back(series(6, "ssp", Line{}));
    data.series.push_back(series(7, "local_sgd", line(1, 5, 0, 7)));
    ui::ComparisonChart chart;
    chart.setData(data);
    QCOMPARE(chart.bands().size(), std::size_t{4});
    QCOMPARE(legendEntries(chart), 4);
    QCOMPARE(chart.bands()[2].label, QString("ssp (1 run, no points)"));
    QVERIFY(chart.bands()[2].band.x.empty());
    QCOMPARE(chart.bands()[2].median->data()->size(), 0);
    // Run 7 is in no group: drawn as a group of its own rather than left out.
    QCOMPARE(chart.bands()[3].label, QString("#7 rep7 (1 run)"));
    QCOMPARE(chart.bands()[3].band.median, (std::vector<double>{7, 7, 7, 7, 7}));
    QVERIFY2(chart.note().contains("No loss points in #6"), qPrintable(chart.note()));

    // Part of a group without points: the median is of the others, and the label says so.
    data = twoVariants();
    data.series[2].x.clear();
    data.series[2].values.clear();
    chart.setData(data);
    QCOMPARE(chart.bands()[0].label,
             QString("sync_allreduce (median of 2, band: range; 1 of 3 runs without points)"));
    QCOMPARE(chart.bands()[0].band.median[0], 1.5);

    // Bytes: the band in bytes as read, the graphs in MiB as the axis says.
    data = twoVariants();
    data.request.metric = "mem_bytes";
    for (auto& s : data.series)
      for (double& v : s.values) v *= 1024.0 * 1024.0;
    chart.setData(data);
    QCOMPARE(chart.yAxis->label().section('\n', 0, 0), QString("mem_bytes (MiB)"));
    QCOMPARE(chart.bands()[0].band.median[0], 2.0 * 1024 * 1024);
    QCOMPARE(valuesOf(chart.bands()[0].median)[0], 2.0);
    QCOMPARE(valuesOf(chart.bands()[0].high)[19], 25.0);

    // Wall time: runs at their own times; the grid spans the earliest to the latest.
    data = twoVariants();
    data.request.x = ui::ChartX::kWallSeconds;
    for (auto& s : data.series)
      for (double& x : s.x) x = x * 0.5 + 0.1 * static_cast<double>(s.runId);
    chart.setData(data);
    QCOMPARE(chart.xAxis->label(), QString("wall time (s)"));
    QVERIFY(near(chart.bands()[0].band.x.front(), 0.6));  // run 1's first point, 0.5 + 0.1
    QVERIFY(near(chart.bands()[0].band.x.back(), 10.3));  // run 3's last, 10 + 0.3
    QCOMPARE(chart.bands()[0].band.count.front(), 1);
    QCOMPARE(chart.bands()[0].band.count[10], 3);

    // Runs that do not overlap in time: a gap in the band and the median, not a line across.
    data = twoVariants();
    data.request.x = ui::ChartX::kWallSeconds;
    data.series[4] = series(5, "async_ps", line(31, 40, 2, 4));
    chart.setData(data);
    const auto& apart = chart.bands()[1];
    QCOMPARE(apart.band.x.front(), 1.0);
    QCOMPARE(apart.band.x.back(), 40.0);
    QVERIFY(apart.band.x.size() < 40);  // the grid points between 20 and 31 left out
    QCOMPARE(apart.median->data()->size(), static_cast<int>(apart.band.x.size()) + 1);
    int gaps = 0;
    for (const double v : valuesOf(apart.median)) gaps += std::isnan(v) ? 1 : 0;
    QCOMPARE(gaps, 1);
    gaps = 0;
    for (const double v : valuesOf(apart.high)) gaps += std::isnan(v) ? 1 : 0;
    QCOMPARE(gaps, 1);
  }

  // Without groups the chart draws one curve per run, as before.
  void withoutGroupsOneCurvePerRun() {
    ui::ComparisonData data = twoVariants();
    data.request.groups.clear();
    ui::ComparisonChart chart;
    chart.setData(data);
    QVERIFY(chart.bands().empty());
    QCOMPARE(chart.curves().size(), std::size_t{5});
    QCOMPARE(chart.graphCount(), 5);
    QCOMPARE(legendEntries(chart), 5);
    QCOMPARE(chart.curves()[0].graph->pen().color(), QColor(0, 114, 178));  // run 1's colour
    QCOMPARE(chart.curves()[0].graph->pen().color().alpha(), 255);
    QVERIFY(chart.note().isEmpty());
  }
};

QTEST_MAIN(TestCompareBands)
#include "test_compare_bands.moc"
