#pragma once

#include <QtWidgets/QWidget>

#include "ui/controller/live_feed.h"
#include "ui/models/project_snapshot.h"

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
  qint64 runId_ = -1;
};

}  // namespace dtlab::ui
