#include "ui/models/variants_model.h"

#include <QtCore/QStringList>
#include <QtGui/QColor>

#include "core/spec/experiment_spec.h"
#include "core/train/strategy_registry.h"
#include "ui/help/context_help.h"

namespace dtlab::ui {
namespace {

// How a column's value is read from an edit: a name, one of the spec's names, a count where
// absent (or 0) means every node, an integer, a real.
enum class Kind { kText, kChoice, kCount, kInteger, kReal };

Kind kindOf(const core::SettingSchema& s) {
  switch (s.type) {
    case core::SettingType::kChoice:
      return Kind::kChoice;
    case core::SettingType::kReal:
      return Kind::kReal;
    case core::SettingType::kInteger:
      break;
  }
  return s.zeroMeans.empty() ? Kind::kInteger : Kind::kCount;
}

// The first declaration of `key` among the registered strategies (its label, help, type).
const core::SettingSchema* declarationOf(const std::string& key) {
  for (const core::StrategyDescriptor* d : core::strategies())
    if (const core::SettingSchema* s = core::findSetting(d->settings, key)) return s;
  return nullptr;
}

// The row's values of `strategy`'s settings, as far as they read as values (conditions are on
// choices; a malformed number is the parser's to name).
core::SettingValues valuesOf(const nlohmann::json& row, const core::StrategyDescriptor& strategy) {
  core::SettingValues values;
  for (const core::SettingSchema& s : strategy.settings) {
    if (!row.contains(s.key)) continue;
    const nlohmann::json& v = row[s.key];
    if (v.is_string())
      values.set(s.key, v.get<std::string>());
    else if (v.is_number_integer())
      values.set(s.key, v.get<int64_t>());
    else if (v.is_number())
      values.set(s.key, v.get<double>());
  }
  return values;
}

QVariant displayOf(const core::SettingValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return QVariant::fromValue<qint64>(*i);
  if (const auto* d = std::get_if<double>(&value)) return *d;
  return QString::fromStdString(std::get<std::string>(value));
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

VariantsModel::VariantsModel(QObject* parent) : QAbstractTableModel(parent) {
  columns_ = {
      {"name", tr("Variant"), tr("The run's name (unique in the experiment)"),
       static_cast<int>(Kind::kText)},
      {"strategy", tr("Strategy"), tr("How workers exchange gradients or weights"),
       static_cast<int>(Kind::kChoice)},
      {"nodes", tr("Nodes"),
       tr("Run on the cluster's first N nodes only (a baseline); empty or 0: all"),
       static_cast<int>(Kind::kCount)},
  };
  // Every strategy's settings, a column per key (shared keys once), in registration order.
  for (const core::StrategyDescriptor* d : core::strategies())
    for (const core::SettingSchema& s : d->settings)
      if (columnOf(QString::fromStdString(s.key)) < 0)
        columns_.push_back({s.key, QString::fromStdString(s.label), QString::fromStdString(s.help),
                            static_cast<int>(kindOf(s))});
}

// What the spec fills in when a field is left out: the row's strategy's default.
QVariant VariantsModel::defaultOf(int row, int column) const {
  if (column == kStrategyColumn) return QString::fromStdString(core::strategyNames().front());
  if (column == kNodesColumn) return tr("all");
  if (column < kFirstSettingColumn) return {};
  const core::StrategyDescriptor* strategy = core::findStrategy(strategyOf(row));
  const core::SettingSchema* s =
      strategy != nullptr
          ? core::findSetting(strategy->settings, columns_[static_cast<std::size_t>(column)].key)
          : nullptr;
  if (s == nullptr) return {};
  if (!s->zeroMeans.empty() && s->defaultValue == core::SettingValue(int64_t{0}))
    return QString::fromStdString(s->zeroMeans);
  return displayOf(s->defaultValue);
}

QString VariantsModel::keyOf(int column) const {
  return column >= 0 && column < static_cast<int>(columns_.size())
             ? QString::fromStdString(columns_[static_cast<std::size_t>(column)].key)
             : QString();
}

int VariantsModel::columnOf(const QString& key) const {
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (QString::fromStdString(columns_[i].key) == key) return static_cast<int>(i);
  return -1;
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
  rows_.push_back({{"name", "variant " + std::to_string(row + 1)},
                   {"strategy", core::strategyNames().front()}});
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
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

QVariant VariantsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
  const Column& c = columns_[static_cast<std::size_t>(section)];
  if (role == Qt::DisplayRole) return c.header;
  if (role == Qt::ToolTipRole) return c.tip;
  return {};
}

std::string VariantsModel::strategyOf(int row) const {
  const nlohmann::json& v = rowAt(row);
  return v.contains("strategy") && v["strategy"].is_string() ? v["strategy"].get<std::string>()
                                                             : core::strategyNames().front();
}

bool VariantsModel::applies(int row, int column) const {
  if (row < 0 || row >= rowCount() || column < 0 || column >= columnCount()) return false;
  if (column < kFirstSettingColumn) return true;
  const core::StrategyDescriptor* strategy = core::findStrategy(strategyOf(row));
  const std::string& key = columns_[static_cast<std::size_t>(column)].key;
  if (strategy == nullptr || core::findSetting(strategy->settings, key) == nullptr) return false;
  const core::SettingValues values = valuesOf(rowAt(row), *strategy);
  return core::SettingsView(strategy->settings, values).applies(key);
}

void VariantsModel::dropInapplicable(int row) {
  nlohmann::json& v = rowAt(row);
  for (int column = kFirstSettingColumn; column < columnCount(); ++column)
    if (!applies(row, column)) v.erase(columns_[static_cast<std::size_t>(column)].key);
}

// Why a cell of `row` does not apply: the strategies that read it, or the condition that the
// row's own strategy sets on it.
QString VariantsModel::inapplicableTip(int row, int column) const {
  const std::string& key = columns_[static_cast<std::size_t>(column)].key;
  const core::StrategyDescriptor* strategy = core::findStrategy(strategyOf(row));
  const core::SettingSchema* own =
      strategy != nullptr ? core::findSetting(strategy->settings, key) : nullptr;
  if (own != nullptr && own->when)
    return tr("Only with %1 does %2 apply")
        .arg(QString::fromStdString(core::conditionText(*own->when)), QString::fromStdString(key));
  const std::string readers = core::strategyList([&](const core::StrategyDescriptor& d) {
    return core::findSetting(d.settings, key) != nullptr;
  });
  return tr("Only %1 reads %2").arg(QString::fromStdString(readers), QString::fromStdString(key));
}

// A cell's tooltip: the row's strategy's summary, or its own declaration of the setting (the
// help of a key that several strategies declare may differ between them: on_node_loss).
QString VariantsModel::tipOf(int row, int column) const {
  const Column& c = columns_[static_cast<std::size_t>(column)];
  const core::StrategyDescriptor* strategy = core::findStrategy(strategyOf(row));
  if (column == kStrategyColumn && strategy != nullptr)
    return QString::fromStdString(strategy->summary);
  const core::SettingSchema* own = strategy != nullptr && column >= kFirstSettingColumn
                                       ? core::findSetting(strategy->settings, c.key)
                                       : nullptr;
  if (own == nullptr) return c.tip;
  return QString::fromStdString(own->help + " (" + own->rangeText() + ")");
}

// Where a cell is documented: a setting and the strategy at the row's strategy's entry (a
// setting it does not read: that of the first strategy that does), a variant's nodes beside
// the heterogeneous clusters they serve, its name on the strategies' page.
QString VariantsModel::referenceOf(int row, int column) const {
  if (column == kNameColumn) return kStrategiesPage;
  if (column == kNodesColumn) return guideEntry("distributed-runs.md", "Heterogeneous nodes");
  const core::StrategyDescriptor* strategy = core::findStrategy(strategyOf(row));
  if (column == kStrategyColumn)
    return strategy != nullptr ? strategyEntry(strategy->name) : kStrategiesPage;
  const std::string& key = columns_[static_cast<std::size_t>(column)].key;
  if (strategy != nullptr && core::findSetting(strategy->settings, key) != nullptr)
    return strategyEntry(strategy->name);
  for (const core::StrategyDescriptor* d : core::strategies())
    if (core::findSetting(d->settings, key) != nullptr) return strategyEntry(d->name);
  return kStrategiesPage;
}

Qt::ItemFlags VariantsModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  if (!applies(index.row(), index.column())) return Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable | Qt::ItemNeverHasChildren;
}

QVariant VariantsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const int column = index.column();
  const bool applicable = applies(index.row(), column);
  switch (role) {
    case AppliesRole:
      return applicable;
    case ChoicesRole: {
      std::vector<std::string> names;
      if (column == kStrategyColumn) names = core::strategyNames();
      // The row's strategy's own choices (a parameter server offers no powersgd), else the
      // first declaration's.
      const std::string& key = columns_[std::size_t(column)].key;
      const core::StrategyDescriptor* strategy = core::findStrategy(strategyOf(index.row()));
      const core::SettingSchema* own =
          strategy != nullptr ? core::findSetting(strategy->settings, key) : nullptr;
      if (const core::SettingSchema* s = own != nullptr ? own : declarationOf(key))
        names = s->choices;
      QStringList choices;
      for (const std::string& name : names) choices << QString::fromStdString(name);
      return choices;
    }
    case Qt::ToolTipRole:
      if (applicable)
        return withReferenceLine(tipOf(index.row(), column), referenceOf(index.row(), column));
      return inapplicableTip(index.row(), column);
    case kReferenceEntryRole:
      return referenceOf(index.row(), column);
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
  const std::string& key = columns_[static_cast<std::size_t>(column)].key;
  if (!row.contains(key)) return defaultOf(index.row(), column);
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
  const std::string& key = columns_[static_cast<std::size_t>(column)].key;
  const Kind kind = static_cast<Kind>(columns_[static_cast<std::size_t>(column)].kind);
  const QString text = value.toString().trimmed();
  if (kind == Kind::kText || kind == Kind::kChoice) {
    row[key] = text.toStdString();
  } else if (text.isEmpty() ||
             (kind == Kind::kCount &&
              (text == defaultOf(index.row(), column).toString() || text == QLatin1String("0")))) {
    // Empty: back to the spec's default (a count's default is a word: "all" nodes, "auto").
    row.erase(key);
  } else {
    row[key] = numberOf(value, kind);
  }
  if (kind == Kind::kChoice) {
    // A strategy or another choice changes which fields the parser accepts: a field left
    // from the old choice would be refused, so it goes, and the row's cells change with it.
    dropInapplicable(index.row());
    emit dataChanged(this->index(index.row(), 0), this->index(index.row(), columnCount() - 1));
    return true;
  }
  emit dataChanged(index, index);
  return true;
}

}  // namespace dtlab::ui
