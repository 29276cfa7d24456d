#pragma once

#include <QtWidgets/QWidget>

#include "ui/controller/live_feed.h"
#include "ui/models/project_snapshot.h"

class QComboBox;
class QCPItemStraightLine;
class QCPItemText;
class QCustomPlot;
class QLabel;
class QTableView;
class QPlainTextEdit;

namespace dtlab::ui {

class RunMetricsModel;

// One run: what it was (strategy, status, error, summary figures), its loss and test
// accuracy against steps, every metric's last / min / max, and its events.
class RunPage final : public QWidget {
  Q_OBJECT
 public:
  explicit RunPage(QWidget* parent = nullptr);
  void showRun(const RunDetail& detail);
  // Appends points measured since (a run being executed from this window): the chart grows
  // without re-reading the store. In-memory series are bounded; history comes from the store.
  void appendLive(const std::vector<LivePoint>& points);
  qint64 runId() const { return runId_; }
  // The chart's x-axis: steps, or wall-clock seconds since the run started.
  void setWallTimeAxis(bool wall);
  // Hides or shows a series, as a click on its legend entry does.
  void toggleSeries(int graph);
  // The crosshair's text at x (every visible series' value there); "" outside the data.
  QString valuesAt(double x) const;
  static constexpr int kMaxLivePoints = 200000;

  // For tests: the chart and the metrics model.
  QCustomPlot* chart() const { return chart_; }
  RunMetricsModel* metricsModel() const { return metrics_; }
  QString headline() const;

 private:
  QLabel* title_;
  QLabel* facts_;
  QLabel* chartNote_;
  QCustomPlot* chart_;
  RunMetricsModel* metrics_;
  QTableView* metricsView_;
  QPlainTextEdit* events_;
  QComboBox* xAxis_;
  QCPItemStraightLine* crossLine_;
  QCPItemText* crossText_;
  qint64 runId_ = -1;
  RunDetail detail_;  // what is drawn, live points included
  void drawChart();
  void moveCrosshair(QMouseEvent* event);
};

}  // namespace dtlab::ui
