#pragma once

#include <QtWidgets/QWidget>

#include "ui/charts/chart_export.h"
#include "ui/charts/comparison_data.h"
#include "ui/models/project_snapshot.h"

class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;
class QSplitter;
class QTableView;

namespace dtlab::ui {

class ComparisonChart;
class RunComparisonModel;

// Runs side by side: the table of the project's runs (check the ones to overlay; each keeps
// its colour), one metric of the metric table overlaid for the checked runs against steps or
// wall time, optionally smoothed, and exports of the chart (PNG, SVG, PDF, CSV) and of the
// table (CSV, Markdown). Chart data are read on the thread pool; a change of choice while a
// read is on its way supersedes it.
class ComparePage final : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePage(QWidget* parent = nullptr);

  // The project whose runs are compared. A new snapshot of the same project (the file
  // changed) keeps the choice and re-reads the chart; another project starts with its
  // latest runs chosen.
  void setSnapshot(const ProjectSnapshot& snapshot);

  // What the controls choose, for the command line and tests; each re-reads the chart.
  void setChosenRuns(const std::vector<int64_t>& runIds);
  void setMetric(const QString& metric);  // a name of the metric table
  void setXAxis(ChartX x);
  void setReduction(MemberReduction reduction);
  void setSmoothing(double weight);  // [0, 1)
  void setExportOptions(const ChartExportOptions& options);
  ComparisonRequest request() const;

  // What the Export buttons do once a file name is chosen. Throw ExportError.
  void exportChartTo(const QString& path);  // .png, .svg, .pdf, .csv
  void exportTableTo(const QString& path);  // .csv, .md

  RunComparisonModel* runsModel() const { return runs_; }
  ComparisonChart* chart() const { return chart_; }

 signals:
  // The chart shows what the controls chose (after each completed read).
  void chartShown();
  void failed(const QString& message);

 private:
  void scheduleRead();
  void read();
  void exportChartAs(ChartFormat format);
  void exportTableAs(bool markdown);
  QString suggestedName(const QString& fileName) const;  // beside the project
  void syncReductionChoice();
  void fitTableHeight();

  RunComparisonModel* runs_;
  QTableView* runsView_;
  QSplitter* split_;
  QComboBox* metric_;
  QComboBox* reduction_;
  QComboBox* xAxis_;
  QSlider* smoothing_;
  QLabel* smoothingValue_;
  ComparisonChart* chart_;
  QSpinBox* exportWidth_;
  QSpinBox* exportHeight_;
  QSpinBox* exportDpi_;

  std::string path_;
  bool readScheduled_ = false;
  quint64 request_ = 0;  // of the latest read; older results are dropped
};

}  // namespace dtlab::ui
