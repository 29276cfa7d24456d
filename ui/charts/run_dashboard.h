#pragma once

#include <qcustomplot.h>

#include <QtCore/QTimer>

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ui/controller/live_feed.h"
#include "ui/models/project_snapshot.h"

namespace dtlab::ui {

// What the x-axis of every chart of a run counts: steps, seconds since the run started, or
// the wall-clock time of day (from the run's recorded start).
enum class RunXAxis { kStep, kSeconds, kWallClock };

// A run's live dashboard: six charts in one QCustomPlot (one axis rect each, margins aligned
// by QCPMarginGroup), so that a batch of live points costs one replot for all of them:
//   training loss per worker and test accuracy | throughput per worker | step time split
//   into compute, communication and wait | utilisation per node | each worker's share of the
//   batch and its staleness (what a scheduler and an asynchronous strategy decide) | one
//   metric of the metric table that the user picks.
// Which metric goes to which chart, and every axis unit, come from core::kMetricTable. The x
// ranges are linked: a drag or a wheel turn on one chart moves all of them; a double click
// (or resetView) shows everything again and follows a live run's new points. Events are
// marked on every chart: a
// line per event, in a colour and style of its kind, named on the loss and the batch-share
// charts (a rebalance, a strategy switch "→ async"). The mouse shows a crosshair on every chart at
// the same x, with the values of the visible series of the chart under it; a click on a legend
// entry hides or shows its series.
class RunDashboard final : public QCustomPlot {
  Q_OBJECT
 public:
  enum Chart {
    kLossChart,
    kThroughputChart,
    kStepTimeChart,
    kUtilisationChart,
    kScheduleChart,  // batch_share per worker (left axis), staleness per worker (right axis)
    kChosenChart
  };
  static constexpr int kChartCount = 6;
  // Points per series kept in memory and drawn. A live series that reaches it keeps one of
  // every two points (the one farther from its predecessor, so spikes stay) and from then on
  // one of every two new ones, then four...: it always spans the whole run, at about the
  // resolution the store gives history (2,000 points a series) and a chart's width can show.
  // Replots cost time in proportion to the points drawn (five charts, dozens of series).
  static constexpr int kMaxLivePoints = 4096;

  explicit RunDashboard(QWidget* parent = nullptr);

  // Draws a run's series and events. For the run already shown (a reload of a run being
  // recorded elsewhere), the x-axis, the chosen metric, hidden series and a zoomed view
  // stay as the user left them.
  void setRun(const RunDetail& detail);
  // Appends live points of the run on screen (others are ignored), and marks its events:
  // one replot, queued.
  void appendLive(const std::vector<LivePoint>& points);

  void setXAxis(RunXAxis axis);
  RunXAxis xAxisMode() const { return xMode_; }
  // The last chart's metric: a row name of core::kMetricTable. Unknown names are ignored.
  void chooseMetric(const std::string& key);
  const std::string& chosenMetric() const { return chosen_; }
  // TensorBoard's debiased moving average over each worker's per-step series, `weight` in
  // [0, 1) (0: raw points). Node samples and evaluations are few and drawn as measured.
  void setSmoothing(double weight);
  double smoothing() const { return smoothing_; }
  // Every chart back to the whole run, following new live points again.
  void resetView();
  // Hides or shows a series, as a click on its legend entry does (on the step-time chart an
  // entry stands for one component of every worker and hides them together).
  void toggleSeries(QCPGraph* graph);

  // The crosshair's text on `chart` at x: the x, then "name: value unit" of every visible
  // series there (its last point at or before x); "" where no series has a point yet.
  QString valuesAt(Chart chart, double x) const;
  QCPAxisRect* rect(Chart chart) const { return panels_[chart].rect; }
  QList<QCPGraph*> graphs(Chart chart) const { return panels_[chart].rect->graphs(); }
  QCPLegend* legend(Chart chart) const { return panels_[chart].legend; }
  // The event lines drawn on `chart` (one per event but start and finish).
  int eventMarkerCount(Chart chart) const;
  // The names written beside the event lines of `chart`, in event order ("rebalance",
  // "→ async"); empty on charts that draw lines only, or when events are too many to name.
  QStringList eventLabels(Chart chart) const;
  // The short name of an event on the charts: its kind, or for a strategy switch the mode it
  // switched to when its detail says ("→ async").
  static QString eventLabel(const core::RunEvent& event);
  // What the chart says instead of curves ("not recorded in this run"), or "".
  QString note(Chart chart) const;
  // Whether a series shown is a reduction of the points measured (by the store or, live, by
  // the in-memory bound).
  bool downsampled() const;
  // The x range every chart shows.
  QCPRange xRange() const { return panels_[kLossChart].rect->axis(QCPAxis::atBottom)->range(); }
  // The run's events: those it was shown with, then those that came live.
  const std::vector<core::RunEvent>& events() const { return events_; }
  // The step of the run at x on the current axis (steps, or the step measured nearest that
  // time); -1 before the run has a point.
  int64_t stepAt(double x) const;
  // Whether the context menu offers "Replay to here" (an asynchronous run with a record) up to
  // the run's last global step, and otherwise why not (shown on the disabled entry).
  void setReplayable(bool replayable, int64_t lastStep, const QString& whyNot = {});
  // The context menu a right click at `pos` (widget coordinates) opens: "Replay to here (step
  // N)" when the click is on a chart, and "Show the whole run".
  QMenu* contextMenuAt(const QPoint& pos);

 signals:
  void chosenMetricChanged(const QString& key);
  // "Replay to here" on the context menu: the run's state after global step `step`.
  void replayRequested(qint64 step);

 protected:
  void leaveEvent(QEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  struct Series {
    int metric = 0;  // row of core::kMetricTable
    int owner = -1;  // worker (worker scope), node (node scope), -1 (run)
    std::vector<double> steps, seconds, values;
    bool downsampled = false;
    int stride = 1;   // live: keep one of every `stride` new points (see kMaxLivePoints)
    int pending = 0;  // new points since the last one kept
    LivePoint candidate;
    // The newest live point, kept or thinned out: a run being followed shows up to its step.
    std::optional<LivePoint> newest;
    double minValue = 0.0, maxValue = 0.0;
    // What the y-axis spans for timings and rates: their 1st to 99th percentile, so that a
    // slow first step or a pause does not flatten the rest (the line leaves the chart there).
    double lowValue = 0.0, highValue = 0.0;
    // The moving average after the last point (live points continue it).
    double ema = 0.0, emaDecay = 1.0;  // emaDecay: weight^n, for the debiasing
    std::vector<QCPGraph*> graphs;     // one per chart that shows it
  };
  struct Panel {
    QCPAxisRect* rect = nullptr;
    QCPTextElement* title = nullptr;
    QCPLegend* legend = nullptr;
    QCPItemStraightLine* cursor = nullptr;
    QCPItemText* cursorText = nullptr;
    QCPItemText* note = nullptr;
    std::vector<QCPAbstractItem*> markers;  // event lines, and their names on the first chart
  };

  std::array<Panel, kChartCount> panels_;
  // While live points stream, curves are drawn without antialiasing (it doubles the cost of a
  // replot of dozens of noisy series); this timer restores it once they stop.
  QTimer* settle_;
  bool replayable_ = false;
  int64_t replayLastStep_ = 0;
  QString notReplayable_;
  std::vector<Series> series_;
  std::map<std::pair<int, int>, std::size_t> seriesIndex_;  // (metric, owner) -> series_
  std::vector<core::RunEvent> events_;
  std::set<std::string> hidden_;  // hiddenKey() of the series the user hid
  qint64 runId_ = -1;
  double startS_ = 0.0;  // the run's start, seconds since the epoch
  RunXAxis xMode_ = RunXAxis::kStep;
  std::string chosen_;
  double smoothing_ = 0.6;
  bool userChose_ = false;
  bool following_ = true;  // the view spans the whole run (no zoom or pan since a reset)
  bool linking_ = false;   // inside a programmatic x range change

  void buildLayout();
  void rebuild(RefreshPriority refresh = rpRefreshHint);
  void placeSeries(std::size_t index);
  void addSeriesGraph(std::size_t index, Chart chart, bool rightAxis);
  void drawMarkers();
  static void updateBounds(Series& s);
  bool smoothed(const Series& s) const;
  void restartSmoothing(Series& s) const;
  // The values a graph of `s` draws: smoothed or not, in the display unit.
  QVector<double> drawnValues(const Series& s) const;
  void fitView();
  void fitTimeFormat(const QCPRange& range);
  void updateNotes();
  void moveCrosshair(QMouseEvent* event);
  void hideCrosshair();
  double keyOf(const Series& s, std::size_t i) const;
  double lastKeyOf(const Series& s) const;  // of its last point, or the newest live one
  std::size_t seriesFor(int metric, int owner);
  static std::string hiddenKey(const QCPGraph* graph);
  QString seriesName(const Series& s) const;
};

}  // namespace dtlab::ui
