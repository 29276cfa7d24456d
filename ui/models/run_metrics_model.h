#pragma once

#include <QtCore/QAbstractTableModel>

#include <span>
#include <string_view>
#include <vector>

#include "core/store/project_store.h"

namespace dtlab::ui {

// A run's metrics, one row per metric key (over all its workers / nodes), in key order: unit
// and scope from the metric table, last value and its step, min, max, points. Filled from the
// store (setMetrics) and, while the run is executed from this window, point by point
// (addPoints), with the store's figures either way.
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
  // What a column sorts by: the raw number behind a value column (DisplayRole is formatted
  // text), the text of the others.
  enum Roles { ValueRole = Qt::UserRole + 1 };

  // One measured value of metric `key` (a row name of core::kMetricTable).
  struct Point {
    std::string_view key;
    int64_t step = 0;
    double wallMs = 0.0;
    double value = 0.0;
  };

  explicit RunMetricsModel(QObject* parent = nullptr);
  // The store's rows (ProjectStore::runMetrics). The same keys again (a run re-read while it
  // is recorded) change the rows in place, so selection and scrolling stay.
  void setMetrics(std::vector<core::RunMetric> metrics);
  // Adds measured points to the rows as the store adds them to run_metrics (MetricDelta in
  // core/store/chunk_rows.h): the value at float precision, "last" the point of the highest
  // step (of equal steps the later one), NaN counted but never min or max. So the rows are
  // what the store gives for the same points. A new key inserts its row; the rows changed
  // get one dataChanged per batch, never a reset.
  void addPoints(std::span<const Point> points);
  const std::vector<core::RunMetric>& metrics() const { return metrics_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<core::RunMetric> metrics_;
};

}  // namespace dtlab::ui
