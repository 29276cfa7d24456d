#include "ui/models/variants_model.h"

#include <QtCore/QStringList>

#include "core/spec/experiment_spec.h"

namespace dtlab::ui {

VariantsModel::VariantsModel(QObject* parent) : QAbstractTableModel(parent) {}

const char* VariantsModel::keyOf(int column) {
  switch (column) {
    case kNameColumn:
      return "name";
    case kStrategyColumn:
      return "strategy";
    case kPartitionColumn:
      return "partition";
    case kBucketColumn:
      return "bucket_kb";
    case kRebalanceColumn:
      return "rebalance_every";
    case kNodesColumn:
      return "nodes";
    default:
      return "";
  }
}

void VariantsModel::setVariants(const nlohmann::json& variants) {
  beginResetModel();
  rows_ = variants.is_array() ? variants : nlohmann::json::array();
  for (auto& row : rows_)
    if (!row.is_object()) row = nlohmann::json::object();
  endResetModel();
}

nlohmann::json VariantsModel::variants() const {
  return rows_;
}

void VariantsModel::addVariant() {
  const int row = rowCount();
  beginInsertRows({}, row, row);
  rows_.push_back({{"name", "variant " + std::to_string(row + 1)}, {"strategy", "sync_allreduce"}});
  endInsertRows();
}

void VariantsModel::removeVariant(int row) {
  if (row < 0 || row >= rowCount()) return;
  beginRemoveRows({}, row, row);
  rows_.erase(static_cast<std::size_t>(row));
  endRemoveRows();
}

int VariantsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int VariantsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant VariantsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kNameColumn:
      return tr("Variant");
    case kStrategyColumn:
      return tr("Strategy");
    case kPartitionColumn:
      return tr("Partition");
    case kBucketColumn:
      return tr("Bucket (KiB)");
    case kRebalanceColumn:
      return tr("Rebalance every (steps)");
    case kNodesColumn:
      return tr("Nodes");
    default:
      return {};
  }
}

bool VariantsModel::speedProportional(int row) const {
  const nlohmann::json& v = rows_[static_cast<std::size_t>(row)];
  return v.contains("partition") && v["partition"] == "speed_proportional";
}

Qt::ItemFlags VariantsModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  // The rebalance period means something only to the speed_proportional partition.
  if (index.column() == kRebalanceColumn && !speedProportional(index.row()))
    return Qt::ItemIsSelectable;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable;
}

QVariant VariantsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  if (role == ChoicesRole) {
    std::vector<std::string> names;
    if (index.column() == kStrategyColumn) names = core::strategyNames();
    if (index.column() == kPartitionColumn) names = core::partitionNames();
    QStringList choices;
    for (const std::string& name : names) choices << QString::fromStdString(name);
    return choices;
  }
  if (role == Qt::ToolTipRole && index.column() == kNodesColumn)
    return tr("Run on the cluster's first N nodes only (a baseline); empty or 0: all");
  if (role == Qt::ToolTipRole && index.column() == kRebalanceColumn)
    return speedProportional(index.row())
               ? tr("Steps between rebalances of the batch shares by measured speed")
               : tr("Only the speed_proportional partition rebalances");
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const nlohmann::json& row = rows_[static_cast<std::size_t>(index.row())];
  const char* key = keyOf(index.column());
  if (!row.contains(key)) {
    // What the spec fills in when the field is left out.
    if (index.column() == kStrategyColumn) return QStringLiteral("sync_allreduce");
    if (index.column() == kPartitionColumn) return QStringLiteral("equal");
    if (index.column() == kBucketColumn) return 1024;
    if (index.column() == kRebalanceColumn)
      return speedProportional(index.row()) ? QVariant(20) : QVariant(QStringLiteral("-"));
    if (index.column() == kNodesColumn) return tr("all");
    return {};
  }
  const nlohmann::json& v = row[key];
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_number_integer()) return v.get<qint64>();
  if (v.is_number()) return v.get<double>();
  return QString::fromStdString(v.dump());
}

bool VariantsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole || index.row() >= rowCount()) return false;
  nlohmann::json& row = rows_[static_cast<std::size_t>(index.row())];
  const char* key = keyOf(index.column());
  if (index.column() == kNodesColumn) {
    // Empty, "all" or 0: every node of the cluster (the field is left out).
    const QString text = value.toString().trimmed();
    bool ok = false;
    const qint64 nodes = text.toLongLong(&ok);
    if (text.isEmpty() || text == tr("all") || (ok && nodes == 0)) {
      row.erase("nodes");
    } else if (ok) {
      row[key] = nodes;
    } else {
      return false;
    }
    emit dataChanged(index, index);
    return true;
  }
  if (index.column() == kBucketColumn || index.column() == kRebalanceColumn) {
    if (index.column() == kRebalanceColumn && !speedProportional(index.row())) return false;
    bool ok = false;
    const qint64 number = value.toLongLong(&ok);
    if (!ok) return false;
    row[key] = number;
    emit dataChanged(index, index);
    return true;
  }
  row[key] = value.toString().trimmed().toStdString();
  if (index.column() == kPartitionColumn) {
    // A period left from speed_proportional would be refused by the spec for another scheme.
    if (!speedProportional(index.row())) row.erase("rebalance_every");
    emit dataChanged(index, this->index(index.row(), kRebalanceColumn));
    return true;
  }
  emit dataChanged(index, index);
  return true;
}

}  // namespace dtlab::ui
