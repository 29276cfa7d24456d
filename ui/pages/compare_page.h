#pragma once

#include <QtWidgets/QWidget>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ui/charts/chart_export.h"
#include "ui/charts/comparison_data.h"
#include "ui/models/compare_layout.h"
#include "ui/models/project_snapshot.h"

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QSplitter;
class QTabWidget;
class QTableView;
class QTimer;

namespace dtlab::ui {

class ComparisonChart;
class ComparisonPanel;
class ExecutionStatistics;
class RunComparisonModel;
class RunComparisonSortModel;

// Runs side by side. An execution (every variant of an experiment, repeated) is compared as
// a whole: its runs chosen, each variant drawn as the median of its repetitions with a band,
// and the Statistics tab showing the medians with intervals and the ratios between variants;
// a project opens on its latest execution. Otherwise: the table of the project's runs (check the
// ones to overlay; each keeps its colour; sortable by any column; Ctrl+C copies the selected rows),
// and one or more comparison charts, each with its own metric, x-axis, member reduction and
// smoothing in a toolbar of its own, stacked in a splitter ("Add chart"). Exports: every chart
// (PNG, SVG, PDF, CSV) and the table (CSV, Markdown).
//
// The page keeps itself as the user left it: the charts and their settings, the chosen runs,
// the splitters' sizes and the table's sort are written to the project's metadata
// (kCompareLayoutKey) off the GUI thread, half a second after the last change, and restored
// when the project is opened again. A new snapshot of the same project (the window re-reads
// the file when it changes, this page's own writes included) neither restores nor re-writes
// the layout.
class ComparePage final : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePage(QWidget* parent = nullptr);
  ~ComparePage() override;

  // The project whose runs are compared. A new snapshot of the same project (the file
  // changed) keeps the choice and re-reads the charts; another project starts with the layout
  // it keeps (read in the background), or one chart of its latest runs.
  void setSnapshot(const ProjectSnapshot& snapshot);

  // What the controls choose, for the command line and tests. The chart setters act on the
  // current chart. Called while a project's saved layout is still on its way, a setter that
  // changes what is shown is applied again once the layout is restored: what was asked for
  // wins (one that changes nothing, such as the command line's default metric, does not).
  void setChosenRuns(const std::vector<int64_t>& runIds);
  // Compares execution `executionId` (its runs, a band per variant, its statistics); none:
  // the runs chosen by hand, one curve each. An unknown execution is refused (false).
  bool showExecution(std::optional<int64_t> executionId);
  std::optional<int64_t> execution() const { return execution_; }
  // Draw an execution's variants as medians with bands (else each run alone).
  void setBands(bool bands);
  void setMetric(const QString& metric);  // a name of the metric table
  void setXAxis(ChartX x);
  void setReduction(MemberReduction reduction);
  void setSmoothing(double weight);  // [0, 1)
  void setExportOptions(const ChartExportOptions& options);
  ComparisonRequest request() const;  // the current chart's

  // The charts, top to bottom. addChart returns the new chart's index and makes it current;
  // the last chart cannot be removed.
  int chartCount() const;
  ComparisonPanel* panel(int index) const;
  int addChart(const ChartSettings& settings);
  int addChart();  // a metric not shown yet, the current chart's other settings
  void removeChart(int index);
  int currentChart() const { return current_; }
  void setCurrentChart(int index);

  // The page as it would be saved now, and as it is applied when a project is opened.
  CompareLayout compareLayout() const;
  void applyCompareLayout(const CompareLayout& layout);
  // A layout write is waiting out the debounce or under way. When false (and the page is not
  // being changed), nothing more will be written: callers need not wait on the clock.
  bool layoutWritePending() const;

  // What the Export buttons do once a file name is chosen. Throw ExportError.
  void exportChartTo(const QString& path);  // the current chart: .png, .svg, .pdf, .csv
  void exportChartTo(int index, const QString& path);
  void exportTableTo(const QString& path);  // .csv, .md
  // Ctrl+C and the table's context menu: the selected rows, in the table's order, with a line
  // of column titles, as tab-separated text on the clipboard. Returns the text ("" when no row
  // is selected: the clipboard is left alone).
  QString copySelectedRows();

  RunComparisonModel* runsModel() const { return runs_; }
  RunComparisonSortModel* sortedRuns() const { return sorted_; }
  QTableView* runsView() const { return runsView_; }
  ComparisonChart* chart() const;  // the current chart's
  QSplitter* splitter() const { return split_; }
  QTabWidget* tabs() const { return tabs_; }
  QComboBox* executionChoice() const { return executionChoice_; }
  ExecutionStatistics* statistics() const { return statistics_; }
  QSplitter* chartSplitter() const { return charts_; }

 signals:
  // Every chart shows what the controls chose (after a completed read, and once a project's
  // saved layout is restored).
  void chartShown();
  void failed(const QString& message);
  // Something the user should know but need not act on at once, for the status bar: the saved
  // layout was malformed or had fields this version does not know, and was (partly) ignored.
  void notice(const QString& message);
  // The project's saved layout was read and applied (or found absent or unusable).
  void layoutRestored();
  // The layout was written to the project (after the debounce, off the GUI thread).
  void layoutSaved();

 private:
  // The constructor's parts, in the order it runs them. Each connects its widgets' signals at
  // the point among their settings where it always has: a setting moved after a connection
  // could emit the signal to it (the table's sorting, the splitters).
  void setUpRunsTable();
  QHBoxLayout* buildTableExportRow();
  QHBoxLayout* buildChartRow();
  void buildSplitter(QHBoxLayout* tableRow, QHBoxLayout* chartRow);
  void wirePanel(ComparisonPanel* panel);
  void readLayout();
  void layoutChanged();  // debounced save
  void saveLayout();
  void checkShown();
  void chooseDefaultRuns();
  void exportChartAs(int index, ChartFormat format);
  void exportTableAs(bool markdown);
  QString suggestedName(const QString& fileName) const;  // beside the project
  void fitTableHeight();
  void syncChartButtons();  // remove buttons (the last chart stays) and Add chart (a limit)
  void refreshPanels();
  void fillExecutionChoice();
  // The runs of an execution in its variants' order, and its variants as groups of runs.
  std::vector<int64_t> runsOf(int64_t executionId) const;
  std::vector<RunGroup> groupsOf(int64_t executionId) const;
  bool choosesExecution(int64_t executionId) const;  // the runs checked are its runs
  // Its runs and their statuses, to read its statistics again only when they changed.
  std::string executionState(int64_t executionId) const;

  RunComparisonModel* runs_;
  RunComparisonSortModel* sorted_;
  QTableView* runsView_;
  QSplitter* split_;
  QSplitter* charts_;
  QScrollArea* chartScroll_ = nullptr;
  QSpinBox* exportWidth_;
  QSpinBox* exportHeight_;
  QSpinBox* exportDpi_;
  QTimer* saveTimer_;
  QPushButton* addButton_ = nullptr;
  QComboBox* executionChoice_ = nullptr;
  QCheckBox* bands_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  ExecutionStatistics* statistics_ = nullptr;
  ProjectSnapshot snapshot_;
  std::optional<int64_t> execution_;
  std::string statisticsOf_;  // executionState() of the statistics last read

  std::string path_;
  int current_ = 0;
  // While a project's saved layout is being read: nothing is saved, chartShown waits, and
  // what the setters were asked is replayed over the restored layout.
  bool layoutPending_ = false;
  std::vector<std::function<void()>> asked_;
  quint64 layoutRead_ = 0;  // of the latest read; older results are dropped
  int writesUnderWay_ = 0;  // saveLayout's background writes not finished yet
  std::string saved_;       // the layout as the project holds it (as read or last written)
  int applying_ = 0;        // > 0 while applying a layout: no saves are scheduled
};

}  // namespace dtlab::ui
