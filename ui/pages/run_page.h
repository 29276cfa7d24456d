#pragma once

#include <QtWidgets/QWidget>

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
};

}  // namespace dtlab::ui
