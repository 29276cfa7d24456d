#include "ui/models/variants_model.h"

#include <QtCore/QStringList>
#include <QtGui/QColor>

#include "core/spec/experiment_spec.h"

namespace dtlab::ui {
namespace {

// How a column's value is read from an edit: a name, one of the spec's names, a count where
// absent (or 0) means every node, an integer, a real.
enum class Kind { kText, kChoice, kCount, kInteger, kReal };

struct ColumnInfo {
  const char* key;
  const char* header;  // two lines where that makes the column narrower: 13 columns share a row
  Kind kind;
  const char* tip;     // what the field does
  const char* usedBy;  // who reads it, for the tooltip of a cell it does not apply to
};
constexpr ColumnInfo kColumns[VariantsModel::kColumnCount] = {
    {"name", "Variant", Kind::kText, "The run's name (unique in the experiment)", ""},
    {"strategy", "Strategy", Kind::kChoice, "How workers exchange gradients or weights", ""},
    {"nodes", "Nodes", Kind::kCount,
     "Run on the cluster's first N nodes only (a baseline); empty or 0: all", ""},
    {"bucket_kb", "Bucket\n(KiB)", Kind::kInteger,
     "Gradient bucket size for all-reduce overlapped with backward", ""},
    {"partition", "Partition", Kind::kChoice,
     "How each global batch is split: equally, or by measured speed", "sync_allreduce"},
    {"rebalance_every", "Rebalance\nevery", Kind::kInteger,
     "Steps between rebalances of the batch shares by measured speed",
     "the speed_proportional partition"},
    {"ps_shards", "PS\nshards", Kind::kCount,
     "Nodes holding a shard of the parameters (the first N); empty or 0: every node of the run",
     "async_ps, ssp and hybrid"},
    {"staleness", "Staleness", Kind::kInteger,
     "How many clocks a worker may be ahead of the slowest", "ssp"},
    {"period", "Period", Kind::kInteger, "Local steps between model averages (1: synchronous SGD)",
     "local_sgd"},
    {"policy", "Policy", Kind::kChoice,
     "sync_then_async: switch at a fraction of the run; adaptive: switch on measured stragglers",
     "hybrid"},
    {"switch_at", "Switch\nat", Kind::kReal,
     "Fraction of the run's steps trained synchronously before the switch to async",
     "hybrid with the sync_then_async policy"},
    {"straggler_ratio", "Straggler\nratio", Kind::kReal,
     "Slowest / median step time above which the adaptive hybrid trains asynchronously",
     "hybrid with the adaptive policy"},
    {"window", "Window", Kind::kInteger,
     "Steps the straggler ratio must hold before the adaptive hybrid switches",
     "hybrid with the adaptive policy"},
};

// What the spec fills in when a field is left out, from the spec's own defaults.
QVariant defaultOf(int column) {
  const core::VariantConfig d;
  switch (column) {
    case VariantsModel::kStrategyColumn:
      return QString::fromUtf8(core::toString(d.strategy));
    case VariantsModel::kPartitionColumn:
      return QString::fromUtf8(core::toString(d.partition));
    case VariantsModel::kBucketColumn:
      return QVariant::fromValue<qint64>(d.bucketKb);
    case VariantsModel::kRebalanceColumn:
      return QVariant::fromValue<qint64>(d.rebalanceEvery);
    case VariantsModel::kNodesColumn:
    case VariantsModel::kPsShardsColumn:
      return VariantsModel::tr("all");
    case VariantsModel::kStalenessColumn:
      return QVariant::fromValue<qint64>(d.staleness);
    case VariantsModel::kPeriodColumn:
      return QVariant::fromValue<qint64>(d.period);
    case VariantsModel::kPolicyColumn:
      return QString::fromUtf8(core::toString(d.policy));
    case VariantsModel::kSwitchAtColumn:
      return d.switchAt;
    case VariantsModel::kStragglerRatioColumn:
      return d.stragglerRatio;
    case VariantsModel::kWindowColumn:
      return QVariant::fromValue<qint64>(d.window);
    default:
      return {};
  }
}

// An edit as the JSON the spec gets: a number when the text is one, else the text itself, so
// that the spec's parser names the field and says what it wants ("must be an integer").
nlohmann::json numberOf(const QVariant& value, Kind kind) {
  const QString text = value.toString().trimmed();
  bool ok = false;
  if (kind == Kind::kReal) {
    const double real = text.toDouble(&ok);
    if (ok) return real;
  } else {
    const qint64 integer = text.toLongLong(&ok);
    if (ok) return integer;
    const double real = text.toDouble(&ok);  // 2.5: the parser says it must be an integer
    if (ok) return real;
  }
  return text.toStdString();
}

}  // namespace

VariantsModel::VariantsModel(QObject* parent) : QAbstractTableModel(parent) {}

const char* VariantsModel::keyOf(int column) {
  return column >= 0 && column < kColumnCount ? kColumns[column].key : "";
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
  if (orientation != Qt::Horizontal || section < 0 || section >= kColumnCount) return {};
  if (role == Qt::DisplayRole) return tr(kColumns[section].header);
  if (role == Qt::ToolTipRole) return tr(kColumns[section].tip);
  return {};
}

std::string VariantsModel::textOf(int row, const char* key, const char* fallback) const {
  const nlohmann::json& v = rowAt(row);
  return v.contains(key) && v[key].is_string() ? v[key].get<std::string>() : fallback;
}

bool VariantsModel::applies(int row, int column) const {
  if (row < 0 || row >= rowCount()) return false;
  const std::string strategy = textOf(row, "strategy", "sync_allreduce");
  const bool hybrid = strategy == "hybrid";
  const bool adaptive = hybrid && textOf(row, "policy", "sync_then_async") == "adaptive";
  switch (column) {
    case kPartitionColumn:
      return strategy == "sync_allreduce";
    case kRebalanceColumn:
      return strategy == "sync_allreduce" &&
             textOf(row, "partition", "equal") == "speed_proportional";
    case kPsShardsColumn:
      return strategy == "async_ps" || strategy == "ssp" || hybrid;
    case kStalenessColumn:
      return strategy == "ssp";
    case kPeriodColumn:
      return strategy == "local_sgd";
    case kPolicyColumn:
      return hybrid;
    case kSwitchAtColumn:
      return hybrid && !adaptive;
    case kStragglerRatioColumn:
    case kWindowColumn:
      return adaptive;
    default:
      return column >= 0 && column < kColumnCount;
  }
}

void VariantsModel::dropInapplicable(int row) {
  nlohmann::json& v = rowAt(row);
  for (int column = 0; column < kColumnCount; ++column)
    if (!applies(row, column)) v.erase(keyOf(column));
}

Qt::ItemFlags VariantsModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  if (!applies(index.row(), index.column())) return Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable | Qt::ItemNeverHasChildren;
}

QVariant VariantsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const int column = index.column();
  const bool applicable = applies(index.row(), column);
  switch (role) {
    case AppliesRole:
      return applicable;
    case ChoicesRole: {
      std::vector<std::string> names;
      if (column == kStrategyColumn) names = core::strategyNames();
      if (column == kPartitionColumn) names = core::partitionNames();
      if (column == kPolicyColumn) names = core::hybridPolicyNames();
      QStringList choices;
      for (const std::string& name : names) choices << QString::fromStdString(name);
      return choices;
    }
    case Qt::ToolTipRole:
      if (applicable) return tr(kColumns[column].tip);
      return tr("Only %1 reads %2").arg(tr(kColumns[column].usedBy), keyOf(column));
    case Qt::BackgroundRole:
      // A field this strategy does not have: a grey cell, so the row reads as the strategy's
      // own settings.
      return applicable ? QVariant() : QVariant(QColor(238, 238, 238));
    case Qt::DisplayRole:
    case Qt::EditRole:
      break;
    default:
      return {};
  }
  if (!applicable) return {};
  const nlohmann::json& row = rowAt(index.row());
  const char* key = keyOf(column);
  if (!row.contains(key)) return defaultOf(column);
  const nlohmann::json& v = row[key];
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_number_integer()) return v.get<qint64>();
  if (v.is_number()) return v.get<double>();
  return QString::fromStdString(v.dump());
}

bool VariantsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole || index.row() >= rowCount()) return false;
  const int column = index.column();
  if (!applies(index.row(), column)) return false;
  nlohmann::json& row = rowAt(index.row());
  const char* key = keyOf(column);
  const Kind kind = kColumns[column].kind;
  const QString text = value.toString().trimmed();
  if (kind == Kind::kText || kind == Kind::kChoice) {
    row[key] = text.toStdString();
  } else if (text.isEmpty() ||
             (kind == Kind::kCount && (text == tr("all") || text == QLatin1String("0")))) {
    // Empty: back to the spec's default (a count's default is every node).
    row.erase(key);
  } else {
    row[key] = numberOf(value, kind);
  }
  if (kind == Kind::kChoice) {
    // A strategy, partition or policy changes which fields the parser accepts: a field left
    // from the old choice would be refused, so it goes, and the row's cells change with it.
    dropInapplicable(index.row());
    emit dataChanged(this->index(index.row(), 0), this->index(index.row(), kColumnCount - 1));
    return true;
  }
  emit dataChanged(index, index);
  return true;
}

}  // namespace dtlab::ui
