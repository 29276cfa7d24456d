#pragma once

#include <QtCore/QAbstractTableModel>

#include <vector>

#include "core/store/project_store.h"

namespace dtlab::ui {

// A run's metrics, one row per metric key (over all its workers / nodes): unit and scope
// from the metric table, last value and its step, min, max, points.
class RunMetricsModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Columns {
    kMetricColumn,
    kUnitColumn,
    kScopeColumn,
    kLastColumn,
    kMinColumn,
    kMaxColumn,
    kPointsColumn,
    kColumnCount
  };
  // The raw number behind a value column (DisplayRole is formatted text), for sorting.
  enum Roles { ValueRole = Qt::UserRole + 1 };

  explicit RunMetricsModel(QObject* parent = nullptr);
  void setMetrics(std::vector<core::RunMetric> metrics);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<core::RunMetric> metrics_;
};

}  // namespace dtlab::ui
