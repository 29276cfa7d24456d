#pragma once

#include <cstdint>
#include <vector>

#include <qcustomplot.h>

#include "ui/charts/comparison_data.h"

namespace dtlab::ui {

// One metric of several runs overlaid, over QCustomPlot: one curve per run in its colour
// (ui/charts/palette.h), optionally smoothed with the raw curve faint behind it, axis labels
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

  // What is drawn, one entry per run of the data, in its order. x and values as read (the
  // metric table's unit); `smoothed` is empty when the smoothing weight is 0.
  struct Curve {
    int64_t runId = 0;
    QString label;  // as in the legend
    std::vector<double> x;
    std::vector<double> values;
    std::vector<double> smoothed;
    QCPGraph* graph = nullptr;     // the curve in the legend (the smoothed one when smoothing)
    QCPGraph* rawGraph = nullptr;  // the faint raw curve behind it, or null
  };
  const std::vector<Curve>& curves() const { return curves_; }

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
  void setLabels();  // title and y-axis label, compact or not
  void setNote(const QString& text);

  ComparisonData data_;
  double smoothing_ = 0.0;
  bool compact_ = false;  // shorter than kCompactHeight
  std::vector<Curve> curves_;
  QCPTextElement* title_;
  QCPTextElement* note_;
};

// What a curve of `data` stands for, as the y-axis says it: "step_ms (ms)\nmean over workers
// at each step", "test_accuracy".
QString describeValues(const ComparisonRequest& request);

}  // namespace dtlab::ui
