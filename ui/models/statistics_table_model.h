#pragma once

#include <QtCore/QAbstractTableModel>

#include "core/analysis/comparison_statistics.h"

namespace dtlab::ui {

// One of the statistics tables of an execution (core::StatisticsTable: medians with intervals
// per variant, or the ratios between variants) as a read-only table: the cells as the command
// line prints them, figures aligned right, and each cell's tooltip saying how it was measured.
class StatisticsTableModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  explicit StatisticsTableModel(QObject* parent = nullptr);

  void setTable(core::StatisticsTable table);
  const core::StatisticsTable& table() const { return table_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  core::StatisticsTable table_;
};

}  // namespace dtlab::ui
