#pragma once

#include <QtWidgets/QWidget>

#include <cstdint>
#include <string>

class QLabel;
class QTableView;

namespace dtlab::ui {

class StatisticsTableModel;

// What an execution's repetitions say, on the compare page: a heading (the experiment, its
// variants and repetitions), the variants' medians with intervals, and the ratios against the
// first variant, each table under its caption (core/analysis/comparison_statistics.h, the tables
// `dtlab-cli compare` prints); and the measured seed table (core/analysis/seed_table.h), in a
// view of its own that the page shows on a tab of its own. Read off the GUI thread.
class ExecutionStatistics final : public QWidget {
  Q_OBJECT
 public:
  explicit ExecutionStatistics(QWidget* parent = nullptr);

  // Reads and shows execution `executionId` of the project at `path`; a newer call wins.
  void setExecution(const std::string& path, int64_t executionId);
  // Shows no execution, saying why.
  void clear(const QString& why);

  QLabel* heading() const { return heading_; }
  StatisticsTableModel* variants() const { return variants_; }
  StatisticsTableModel* ratios() const { return ratios_; }
  StatisticsTableModel* seed() const { return seed_; }
  // The seed table under its heading and caption; the page gives it a tab.
  QWidget* seedPanel() const { return seedPanel_; }
  // The yardstick (the simulator's time per step beside each run, with the experiment's
  // calibration) under its caption; the page gives it a tab.
  StatisticsTableModel* yardstick() const { return yardstick_; }
  QWidget* yardstickPanel() const { return yardstickPanel_; }
  QTableView* variantsView() const { return variantsView_; }
  QTableView* ratiosView() const { return ratiosView_; }
  bool upToDate() const { return pending_ == 0; }

 signals:
  void shown();  // after each completed read
  void failed(const QString& message);

 private:
  QLabel* heading_;
  QLabel* variantsCaption_;
  QLabel* ratiosCaption_;
  StatisticsTableModel* variants_;
  StatisticsTableModel* ratios_;
  StatisticsTableModel* seed_;
  QWidget* seedPanel_;
  QLabel* seedCaption_;
  StatisticsTableModel* yardstick_;
  QWidget* yardstickPanel_;
  QLabel* yardstickCaption_;
  QTableView* variantsView_;
  QTableView* ratiosView_;
  quint64 read_ = 0;  // of the latest read; older results are dropped
  int pending_ = 0;
};

}  // namespace dtlab::ui
