#include "ui/models/statistics_table_model.h"

namespace dtlab::ui {

StatisticsTableModel::StatisticsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void StatisticsTableModel::setTable(core::StatisticsTable table) {
  beginResetModel();
  table_ = std::move(table);
  endResetModel();
}

int StatisticsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.rows.size());
}

int StatisticsTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.header.size());
}

QVariant StatisticsTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const auto r = static_cast<std::size_t>(index.row());
  const auto c = static_cast<std::size_t>(index.column());
  switch (role) {
    case Qt::DisplayRole:
      return c < table_.rows[r].size() ? QString::fromStdString(table_.rows[r][c]) : QString();
    case Qt::ToolTipRole:
      if (r < table_.tooltips.size() && c < table_.tooltips[r].size() &&
          !table_.tooltips[r][c].empty())
        return QString::fromStdString(table_.tooltips[r][c]);
      return {};
    case Qt::TextAlignmentRole:
      return c < table_.textColumns.size() && table_.textColumns[c]
                 ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                 : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    default:
      return {};
  }
}

QVariant StatisticsTableModel::headerData(int section, Qt::Orientation orientation,
                                          int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 ||
      section >= columnCount())
    return {};
  return QString::fromStdString(table_.header[static_cast<std::size_t>(section)]);
}

}  // namespace dtlab::ui
