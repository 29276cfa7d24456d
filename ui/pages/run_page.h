#pragma once

#include <QtWidgets/QWidget>

#include "ui/charts/run_dashboard.h"
#include "ui/controller/live_feed.h"
#include "ui/models/project_snapshot.h"

class QComboBox;
class QLabel;
class QTableView;
class QPlainTextEdit;

namespace dtlab::ui {

class RunMetricsModel;

// One run: what it was (strategy, status, error, summary figures), its dashboard (loss and
// test accuracy, throughput, step-time breakdown, utilisation and a metric of the user's
// choice, against steps, seconds or the time of day), every metric's last / min / max, and
// its events.
class RunPage final : public QWidget {
  Q_OBJECT
 public:
  explicit RunPage(QWidget* parent = nullptr);
  void showRun(const RunDetail& detail);
  // Appends points measured since (a run being executed from this window): the charts grow
  // without re-reading the store, one replot for the batch. In-memory series are bounded;
  // history comes from the store.
  void appendLive(const std::vector<LivePoint>& points);
  qint64 runId() const { return runId_; }
  // Every chart's x-axis: steps, seconds since the run started, or the time of day.
  void setXAxis(RunXAxis axis);
  // The last chart's metric (a row name of the metric table).
  void chooseMetric(const QString& key);
  // Hides or shows a series (a graph of chart(), by index), as a click on its legend entry does.
  void toggleSeries(int graph);
  // The crosshair's text on `chart` at x (every visible series' value there); "" outside the
  // data.
  QString valuesAt(double x, RunDashboard::Chart chart = RunDashboard::kLossChart) const;
  static constexpr int kMaxLivePoints = RunDashboard::kMaxLivePoints;

  // For tests: the charts (one QCustomPlot), the metrics model, the metric chooser.
  RunDashboard* chart() const { return dashboard_; }
  RunMetricsModel* metricsModel() const { return metrics_; }
  QComboBox* metricChooser() const { return metricChoice_; }
  QString headline() const;
  QString chartNote() const;

 private:
  QLabel* title_;
  QLabel* facts_;
  QLabel* chartNote_;
  RunDashboard* dashboard_;
  RunMetricsModel* metrics_;
  QTableView* metricsView_;
  QPlainTextEdit* events_;
  QComboBox* xAxis_;
  QComboBox* metricChoice_;
  qint64 runId_ = -1;
  void updateNote();
};

}  // namespace dtlab::ui
