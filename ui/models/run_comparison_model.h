#pragma once

#include <QtCore/QAbstractTableModel>
#include <QtCore/QSortFilterProxyModel>

#include <cstdint>
#include <set>
#include <vector>

#include "core/analysis/comparison.h"
#include "ui/models/project_snapshot.h"

namespace dtlab::ui {

// The runs of a project side by side, from their stored summaries: one row per run with a
// check box (chosen runs are overlaid in the comparison chart and exported as the
// comparison table) and the run's chart colour as a swatch. A new snapshot of the project
// keeps the choice by run id.
//
// The figures are `dtlab-cli compare`'s, in its order: each row is core::comparisonRow() of the
// run and its summary (consistency, time to target, throughput, utilisation, wait,
// communication, memory, accuracy, outcome), so the page and the command never disagree.
class RunComparisonModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Columns {
    kRunColumn,  // "#id name", check box, colour swatch
    kStrategyColumn,
    kStepsColumn,
    kMeanStalenessColumn,  // consistency; "–" in summaries recorded before it was measured
    kMaxStalenessColumn,
    kDivergenceColumn,  // asynchronous strategies only
    kTimeToTargetColumn,
    kSamplesPerSColumn,
    kUtilizationColumn,
    kWaitColumn,
    kBytesPerSampleColumn,  // communication per sample
    kCompressionColumn,     // compressed runs: bytes compressed / bytes sent instead
    kCompressMsColumn,      // compressed runs: ms per step spent compressing
    kPeakMemoryColumn,
    kAccuracyColumn,
    kRecoveriesColumn,  // lost nodes survived (on_node_loss); the tooltip has time and steps
    // core::comparisonOutcome(): why the run stopped, in words; it says what a status would
    // (running, cancelled, failed: why) and more (time limit, target not reached).
    kOutcomeColumn,
    kColumnCount
  };
  enum Roles {
    IdRole = Qt::UserRole + 1,  // the run id (every column)
    // The raw value behind the text: a number (bytes for peak memory) or a string; invalid
    // when the run has none (no summary yet, target not reached). For sorting and CSV.
    ValueRole,
    // What the columns sort by: the run id for the run column, else ValueRole.
    SortRole,
  };

  // A column's machine name (its CSV header, e.g. "samples_per_s"), and back (-1: none).
  static QString columnName(int column);
  static int columnNamed(const QString& name);

  explicit RunComparisonModel(QObject* parent = nullptr);

  void setSnapshot(const ProjectSnapshot& snapshot);
  // Chooses exactly these runs (ids not in the table are ignored).
  void setChosen(const std::vector<int64_t>& runIds);
  std::vector<int64_t> chosen() const;  // in table order
  std::vector<int64_t> runIds() const;  // every row's, in table order

  // The chosen runs' rows: CSV with machine names and raw values (empty when unknown), and a
  // Markdown table with the columns' titles and the text the table shows.
  QString toCsv() const;
  QString toMarkdown() const;
  // These runs' rows (in the order given) as tab-separated text for the clipboard: a line of
  // the columns' titles, then the text the table shows, one line per run.
  QString toTsv(const std::vector<int64_t>& runIds) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 signals:
  void chosenChanged();

 private:
  struct Row {
    core::RunRecord run;
    nlohmann::json summary;
    core::ComparisonRow figures;  // what `dtlab-cli compare` shows of the run
  };
  QVariant value(const Row& row, int column) const;
  QString text(const Row& row, int column) const;
  static QString fullName(const Row& row);
  QString unknownTip(const Row& row, int column) const;

  std::vector<Row> rows_;
  std::set<int64_t> chosen_;
  bool severalExperiments_ = false;  // the runs belong to more than one experiment
};

// The runs table in the order of a clicked header: numbers as numbers, text as text, and runs
// without a value (no summary yet, target not reached, not recorded) last in either order.
// Equal values keep the run order. The sorted column's title ends in an arrow: Qt's own sort
// indicator widens every column of the header by its width while it is shown, which would
// cost a table of fourteen columns its last ones beside the explorer.
class RunComparisonSortModel final : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit RunComparisonSortModel(QObject* parent = nullptr);

  void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 protected:
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;
};

}  // namespace dtlab::ui
