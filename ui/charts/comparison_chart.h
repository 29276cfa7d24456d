#pragma once

#include <cstdint>
#include <vector>

#include <qcustomplot.h>

#include "ui/charts/comparison_data.h"
#include "ui/charts/curve_bands.h"

namespace dtlab::ui {

// One metric of several runs overlaid, over QCustomPlot: one curve per run in its colour
// (ui/charts/palette.h), optionally smoothed with the raw curve faint behind it; or, when the
// request groups its runs (a variant's repetitions), per group its median curve over a band
// (the range of its runs) with the runs faint behind, each group in its colour. Axis labels
// with the metric table's units, the legend below the plot, and a note inside the chart when
// the store downsampled a curve, it is smoothed, or a run has no points. On a chart too short
// for a two-line y-axis label, the label's second line (mean over workers, worker 0) moves
// into the title. Title, legend and
// note are part of the plot, so every export (ui/charts/chart_export.h) carries them.
// Drawing only: the data are read elsewhere (readComparison, off the GUI thread).
class ComparisonChart final : public QCustomPlot {
  Q_OBJECT
 public:
  explicit ComparisonChart(QWidget* parent = nullptr);

  // Draws `data`, replacing what was drawn, smoothed with the current weight.
  void setData(ComparisonData data);
  // The EMA weight in [0, 1) (0: raw curves only); redraws from the data held.
  void setSmoothing(double weight);
  double smoothing() const { return smoothing_; }
  const ComparisonData& data() const { return data_; }

  // What is drawn, one entry per run of the data, in its order, in both modes (so an export
  // of the plotted points, chartCsv, lists every run). x and values as read (the metric
  // table's unit); `smoothed` is empty when the smoothing weight is 0. With groups, `graph` is
  // the run's faint curve in its group's colour (smoothed when smoothing; the first group's
  // when the run is in several), not in the legend, and rawGraph is null: the group's median
  // stands in the legend for its runs.
  struct Curve {
    int64_t runId = 0;
    QString label;  // as in the legend, or as it would be without groups
    std::vector<double> x;
    std::vector<double> values;
    std::vector<double> smoothed;
    QCPGraph* graph = nullptr;     // the curve in the legend (the smoothed one when smoothing)
    QCPGraph* rawGraph = nullptr;  // the faint raw curve behind it, or null
  };
  const std::vector<Curve>& curves() const { return curves_; }

  // What is drawn per group when the request has groups, in the order of request.groups, then
  // one single-run group for each run of the data that no group names (so none goes missing);
  // empty without groups. `band` is computed from the runs' curves (smoothed first when
  // smoothing), in the metric table's unit like Curve. The legend holds only the medians.
  struct Band {
    QString label;                // as in the legend: "sync_allreduce (median of 5, band: range)"
    std::vector<int64_t> runIds;  // the group's runs the data hold, in the group's order
    CurveBand band;
    QCPGraph* median = nullptr;  // the group's colour, 2 px, in the legend
    QCPGraph* low = nullptr;     // the band's edges, no pen; high fills down to low
    QCPGraph* high = nullptr;
    std::vector<QCPGraph*> members;  // the runs' faint curves, one per entry of runIds
  };
  const std::vector<Band>& bands() const { return bands_; }

  QString title() const;
  QString note() const;  // "" when there is nothing to say

  // Sets the legend's columns to as many as fit across `width` pixels. The chart does it for
  // its own width; an export at another size does it for that size, then for the chart's.
  void fitLegend(int width);
  // fitLegend(size.width()), and the y-axis label on one line or two by size.height(): what
  // the chart does on each resize, and an export for its own size.
  void fitToSize(QSize size);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void redraw();
  // A run's curve as read, smoothed when smoothing is on (no graphs yet).
  Curve curveOf(const ComparisonSeries& series, const core::MetricInfo& metric) const;
  void drawRuns(const core::MetricInfo& metric);
  void drawGroups(const core::MetricInfo& metric);
  void setLabels();  // title and y-axis label, compact or not
  void setNote(const QString& text);

  ComparisonData data_;
  double smoothing_ = 0.0;
  bool compact_ = false;  // shorter than kCompactHeight
  std::vector<Curve> curves_;
  std::vector<Band> bands_;
  QCPTextElement* title_;
  QCPTextElement* note_;
};

// What a curve of `data` stands for, as the y-axis says it: "step_ms (ms)\nmean over workers
// at each step", "test_accuracy".
QString describeValues(const ComparisonRequest& request);

}  // namespace dtlab::ui
