#include "ui/models/run_metrics_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/metrics/metric_table.h"

namespace dtlab::ui {
namespace {

QString formatValue(double v, std::string_view unit) {
  if (std::isnan(v)) return QStringLiteral("-");
  if (unit == "bytes") {
    const double mib = v / (1024.0 * 1024.0);
    return QString("%1 MiB").arg(mib, 0, 'f', 1);
  }
  const double a = std::fabs(v);
  if (a != 0.0 && (a < 1e-3 || a >= 1e6)) return QString::number(v, 'e', 3);
  return QString::number(v, 'g', 5);
}

}  // namespace

RunMetricsModel::RunMetricsModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunMetricsModel::setMetrics(std::vector<core::RunMetric> metrics) {
  std::sort(metrics.begin(), metrics.end(),
            [](const core::RunMetric& a, const core::RunMetric& b) { return a.key < b.key; });
  const bool sameKeys =
      std::equal(metrics.begin(), metrics.end(), metrics_.begin(), metrics_.end(),
                 [](const core::RunMetric& a, const core::RunMetric& b) { return a.key == b.key; });
  if (!sameKeys) {
    beginResetModel();
    metrics_ = std::move(metrics);
    endResetModel();
    return;
  }
  metrics_ = std::move(metrics);
  if (!metrics_.empty())
    emit dataChanged(index(0, kLastColumn), index(rowCount() - 1, kPointsColumn),
                     {Qt::DisplayRole, ValueRole});
}

void RunMetricsModel::addPoints(std::span<const Point> points) {
  std::vector<char> changed(metrics_.size(), 0);
  for (const Point& p : points) {
    auto it = std::lower_bound(
        metrics_.begin(), metrics_.end(), p.key,
        [](const core::RunMetric& m, std::string_view key) { return m.key < key; });
    if (it == metrics_.end() || it->key != p.key) {
      const int row = static_cast<int>(it - metrics_.begin());
      core::RunMetric fresh;
      fresh.key = std::string(p.key);
      fresh.lastStep = std::numeric_limits<int64_t>::min();
      fresh.minValue = fresh.maxValue = std::numeric_limits<double>::quiet_NaN();
      beginInsertRows({}, row, row);
      it = metrics_.insert(it, std::move(fresh));
      changed.insert(changed.begin() + row, 0);
      endInsertRows();
    }
    core::RunMetric& m = *it;
    const double stored = static_cast<float>(p.value);
    ++m.count;
    if (p.step >= m.lastStep) {
      m.lastStep = p.step;
      m.lastWallMs = p.wallMs;
      m.lastValue = stored;
    }
    if (!std::isnan(stored)) {
      m.minValue = std::isnan(m.minValue) ? stored : std::min(m.minValue, stored);
      m.maxValue = std::isnan(m.maxValue) ? stored : std::max(m.maxValue, stored);
    }
    changed[static_cast<std::size_t>(it - metrics_.begin())] = 1;
  }
  // One dataChanged per run of neighbouring rows changed.
  for (std::size_t first = 0; first < changed.size(); ++first) {
    if (changed[first] == 0) continue;
    std::size_t last = first;
    while (last + 1 < changed.size() && changed[last + 1] != 0) ++last;
    emit dataChanged(index(static_cast<int>(first), kLastColumn),
                     index(static_cast<int>(last), kPointsColumn), {Qt::DisplayRole, ValueRole});
    first = last;
  }
}

int RunMetricsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(metrics_.size());
}

int RunMetricsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant RunMetricsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kMetricColumn:
      return tr("Metric");
    case kUnitColumn:
      return tr("Unit");
    case kScopeColumn:
      return tr("Per");
    case kLastColumn:
      return tr("Last");
    case kMinColumn:
      return tr("Min");
    case kMaxColumn:
      return tr("Max");
    case kPointsColumn:
      return tr("Points");
    default:
      return {};
  }
}

QVariant RunMetricsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const core::RunMetric& m = metrics_[static_cast<std::size_t>(index.row())];
  const core::MetricInfo* info = core::findMetric(m.key);
  const std::string_view unit = info != nullptr ? info->unit : std::string_view();
  if (role == Qt::TextAlignmentRole && index.column() >= kLastColumn)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && info != nullptr)
    return QString::fromUtf8(info->description.data(), static_cast<int>(info->description.size()));
  if (role == ValueRole) {
    switch (index.column()) {
      case kLastColumn:
        return m.lastValue;
      case kMinColumn:
        return m.minValue;
      case kMaxColumn:
        return m.maxValue;
      case kPointsColumn:
        return QVariant::fromValue<qint64>(m.count);
      default:
        return data(index, Qt::DisplayRole);
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kMetricColumn:
      return QString::fromStdString(m.key);
    case kUnitColumn:
      return QString::fromUtf8(unit.data(), static_cast<int>(unit.size()));
    case kScopeColumn:
      return info != nullptr ? QString(core::toString(info->scope)) : QString("?");
    case kLastColumn:
      return formatValue(m.lastValue, unit);
    case kMinColumn:
      return formatValue(m.minValue, unit);
    case kMaxColumn:
      return formatValue(m.maxValue, unit);
    case kPointsColumn:
      return QString::number(m.count);
    default:
      return {};
  }
}

}  // namespace dtlab::ui
