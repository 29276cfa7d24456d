#include "ui/models/explorer_model.h"

#include <map>

#include <QtCore/QDateTime>
#include <QtCore/QStringList>
#include <QtGui/QBrush>
#include <QtGui/QColor>

namespace dtlab::ui {
namespace {

using Group = ExplorerModel::Group;

const char* groupTitle(Group g) {
  switch (g) {
    case Group::kDatasets:
      return "Datasets";
    case Group::kTopologies:
      return "Topologies";
    case Group::kExperiments:
      return "Experiments";
    case Group::kRuns:
      return "Runs";
  }
  return "";
}

const char* itemKind(Group g) {
  switch (g) {
    case Group::kDatasets:
      return "dataset";
    case Group::kTopologies:
      return "topology";
    case Group::kExperiments:
      return "experiment";
    case Group::kRuns:
      return "run";
  }
  return "";
}

QString when(int64_t epochMs) {
  if (epochMs <= 0) return {};
  return QDateTime::fromMSecsSinceEpoch(epochMs).toString("yyyy-MM-dd hh:mm");
}

QString str(const nlohmann::json& j, const char* key, const char* fallback = "") {
  if (j.is_object() && j.contains(key) && j[key].is_string())
    return QString::fromStdString(j[key].get<std::string>());
  return fallback;
}

qint64 integer(const nlohmann::json& j, const char* key, qint64 fallback = 0) {
  if (j.is_object() && j.contains(key) && j[key].is_number_integer()) return j[key].get<qint64>();
  return fallback;
}

// One line that says what an entity is, from its JSON config.
QString entityDetail(Group g, const nlohmann::json& c) {
  switch (g) {
    case Group::kDatasets:
      return QString("%1, %2 train / %3 test")
          .arg(str(c, "kind", "?"))
          .arg(integer(c, "train_size"))
          .arg(integer(c, "test_size"));
    case Group::kTopologies: {
      // A remote topology lists its daemons by address and has no local node count.
      const bool remote = c.is_object() && c.contains("nodes") && c["nodes"].is_array() &&
                          !c["nodes"].empty() && c["nodes"][0].is_object() &&
                          c["nodes"][0].contains("address");
      const qint64 nodes =
          remote ? static_cast<qint64>(c["nodes"].size()) : integer(c, "local_nodes", 1);
      return QString("%1 %2 node%3")
          .arg(nodes)
          .arg(remote ? "remote" : "local")
          .arg(nodes == 1 ? "" : "s");
    }
    case Group::kExperiments: {
      const auto variants = c.is_object() && c.contains("variants") && c["variants"].is_array()
                                ? static_cast<int>(c["variants"].size())
                                : 0;
      const nlohmann::json dataset =
          c.is_object() && c.contains("dataset") ? c["dataset"] : nullptr;
      return QString("%1, %2 variant%3")
          .arg(str(dataset, "kind", "?"))
          .arg(variants)
          .arg(variants == 1 ? "" : "s");
    }
    case Group::kRuns:
      break;
  }
  return {};
}

QString runDetail(const core::RunRecord& r, const nlohmann::json& summary) {
  QString text =
      QString::fromStdString(r.strategy) + ", " + QString::fromUtf8(core::toString(r.status));
  if (summary.is_object() && summary.contains("final_test_accuracy") &&
      summary["final_test_accuracy"].is_number())
    text += QString(", accuracy %1").arg(summary["final_test_accuracy"].get<double>(), 0, 'f', 4);
  return text;
}

QColor statusColor(core::RunStatus status) {
  switch (status) {
    case core::RunStatus::kFailed:
      return QColor(0xb0, 0x20, 0x20);
    case core::RunStatus::kInterrupted:
      return QColor(0xb0, 0x70, 0x20);
    case core::RunStatus::kRunning:
      return QColor(0x20, 0x60, 0xb0);
    case core::RunStatus::kCancelled:
    case core::RunStatus::kUnknown:
      return QColor(0x80, 0x80, 0x80);
    case core::RunStatus::kCompleted:
      break;
  }
  return {};
}

}  // namespace

ExplorerModel::ExplorerModel(QObject* parent) : QAbstractItemModel(parent) {}

void ExplorerModel::setSnapshot(ProjectSnapshot snapshot) {
  beginResetModel();
  snapshot_ = std::move(snapshot);
  executionsOf_.assign(snapshot_.experiments.size(), {});
  for (std::size_t e = 0; e < snapshot_.experiments.size(); ++e)
    for (std::size_t x = snapshot_.executions.size(); x-- > 0;)
      if (snapshot_.executions[x].experimentId == snapshot_.experiments[e].id)
        executionsOf_[e].push_back(x);
  endResetModel();
}

namespace {

constexpr quintptr kExperimentsId = quintptr{1} + static_cast<quintptr>(Group::kExperiments);
constexpr quintptr kFirstExecutionId = quintptr{1} + ExplorerModel::kGroupCount;

}  // namespace

int ExplorerModel::itemCount(Group g) const {
  switch (g) {
    case Group::kDatasets:
      return static_cast<int>(snapshot_.datasets.size());
    case Group::kTopologies:
      return static_cast<int>(snapshot_.topologies.size());
    case Group::kExperiments:
      return static_cast<int>(snapshot_.experiments.size());
    case Group::kRuns:
      return static_cast<int>(snapshot_.runs.size());
  }
  return 0;
}

QModelIndex ExplorerModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= kColumnCount) return {};
  if (!parent.isValid())
    return row < kGroupCount ? createIndex(row, column, quintptr{0}) : QModelIndex();
  if (parent.column() != 0) return {};
  if (parent.internalId() == kExperimentsId) {  // an experiment: its executions
    if (row >= rowCount(parent)) return {};
    return createIndex(row, column, kFirstExecutionId + static_cast<quintptr>(parent.row()));
  }
  if (parent.internalId() != 0) return {};  // runs, executions, ... have no children
  const auto g = static_cast<Group>(parent.row());
  if (row >= itemCount(g)) return {};
  return createIndex(row, column, quintptr{1} + static_cast<quintptr>(parent.row()));
}

QModelIndex ExplorerModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == 0) return {};
  if (child.internalId() >= kFirstExecutionId)
    return createIndex(static_cast<int>(child.internalId() - kFirstExecutionId), 0, kExperimentsId);
  return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr{0});
}

int ExplorerModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return kGroupCount;
  if (parent.column() != 0) return 0;
  if (parent.internalId() == kExperimentsId) {
    const auto e = static_cast<std::size_t>(parent.row());
    return e < executionsOf_.size() ? static_cast<int>(executionsOf_[e].size()) : 0;
  }
  if (parent.internalId() != 0) return 0;
  return itemCount(static_cast<Group>(parent.row()));
}

int ExplorerModel::columnCount(const QModelIndex&) const {
  return kColumnCount;
}

QVariant ExplorerModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kNameColumn:
      return tr("Name");
    case kDetailColumn:
      return tr("Detail");
    case kWhenColumn:
      return tr("Updated / started");
    default:
      return {};
  }
}

QVariant ExplorerModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  if (index.internalId() == 0)
    return groupData(static_cast<Group>(index.row()), index.column(), role);
  if (index.internalId() >= kFirstExecutionId)
    return executionData(static_cast<int>(index.internalId() - kFirstExecutionId), index.row(),
                         index.column(), role);
  return leafData(static_cast<Group>(index.internalId() - 1), index.row(), index.column(), role);
}

QVariant ExplorerModel::groupData(Group g, int column, int role) const {
  if (role == KindRole) return QStringLiteral("group");
  if (role == Qt::DisplayRole && column == kNameColumn)
    return QString("%1 (%2)").arg(tr(groupTitle(g))).arg(itemCount(g));
  return {};
}

QVariant ExplorerModel::leafData(Group g, int row, int column, int role) const {
  const auto r = static_cast<std::size_t>(row);
  if (role == KindRole) return QString(itemKind(g));
  if (g == Group::kRuns) {
    const core::RunRecord& run = snapshot_.runs.at(r);
    const nlohmann::json& summary = snapshot_.summaries.at(r);
    if (role == IdRole) return QVariant::fromValue<qint64>(run.id);
    if (role == StatusRole) return QString::fromUtf8(core::toString(run.status));
    if (role == Qt::ForegroundRole && column == kDetailColumn) {
      const QColor c = statusColor(run.status);
      return c.isValid() ? QVariant(QBrush(c)) : QVariant();
    }
    if (role == Qt::ToolTipRole)
      return run.error.empty() ? tr("started %1").arg(when(run.startedMs))
                               : QString::fromStdString(run.error);
    if (role != Qt::DisplayRole) return {};
    switch (column) {
      case kNameColumn:
        return QString("#%1 %2").arg(run.id).arg(QString::fromStdString(run.name));
      case kDetailColumn:
        return runDetail(run, summary);
      case kWhenColumn:
        return when(run.startedMs);
    }
    return {};
  }
  const std::vector<core::Entity>& list = g == Group::kDatasets     ? snapshot_.datasets
                                          : g == Group::kTopologies ? snapshot_.topologies
                                                                    : snapshot_.experiments;
  const core::Entity& e = list.at(r);
  if (role == IdRole) return QVariant::fromValue<qint64>(e.id);
  if (role == Qt::ToolTipRole) return tr("updated %1").arg(when(e.updatedMs));
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case kNameColumn:
      return QString::fromStdString(e.name);
    case kDetailColumn:
      return entityDetail(g, e.config);
    case kWhenColumn:
      return when(e.updatedMs);
  }
  return {};
}

QVariant ExplorerModel::executionData(int experimentRow, int row, int column, int role) const {
  const core::ExecutionRecord& x = snapshot_.executions.at(
      executionsOf_.at(static_cast<std::size_t>(experimentRow)).at(static_cast<std::size_t>(row)));
  if (role == KindRole) return QStringLiteral("execution");
  if (role == IdRole) return QVariant::fromValue<qint64>(x.id);
  // Its runs, and how they ended.
  int runs = 0;
  std::map<core::RunStatus, int> ended;
  for (const core::RunRecord& r : snapshot_.runs) {
    if (r.executionId != x.id) continue;
    ++runs;
    ++ended[r.status];
  }
  QStringList statuses;
  for (const auto& [status, count] : ended)
    statuses << QString("%1 %2").arg(count).arg(QString::fromUtf8(core::toString(status)));
  const nlohmann::json& spec = x.spec;
  const int variants = spec.is_object() && spec.contains("variants") && spec["variants"].is_array()
                           ? static_cast<int>(spec["variants"].size())
                           : 0;
  if (role == Qt::ToolTipRole)
    return tr("Execution %1: every variant %2 times (seeds from %3); %4. Open it to compare its "
              "variants with medians and intervals.")
        .arg(x.id)
        .arg(x.repeats)
        .arg(x.seed)
        .arg(statuses.join(", "));
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case kNameColumn:
      return tr("execution #%1").arg(x.id);
    case kDetailColumn:
      return tr("%1 variant%2 x %3, %4 run%5: %6")
          .arg(variants)
          .arg(variants == 1 ? "" : "s")
          .arg(x.repeats)
          .arg(runs)
          .arg(runs == 1 ? "" : "s")
          .arg(statuses.join(", "));
    case kWhenColumn:
      return when(x.startedMs);
  }
  return {};
}

QModelIndex ExplorerModel::find(const QString& kind, qint64 id) const {
  if (kind == "execution") {
    const QModelIndex experiments = index(static_cast<int>(Group::kExperiments), 0);
    for (int e = 0; e < rowCount(experiments); ++e) {
      const QModelIndex experiment = index(e, 0, experiments);
      for (int row = 0; row < rowCount(experiment); ++row) {
        const QModelIndex item = index(row, 0, experiment);
        if (item.data(IdRole).toLongLong() == id) return item;
      }
    }
    return {};
  }
  for (int g = 0; g < kGroupCount; ++g) {
    if (kind != itemKind(static_cast<Group>(g))) continue;
    const QModelIndex group = index(g, 0);
    for (int row = 0; row < rowCount(group); ++row) {
      const QModelIndex item = index(row, 0, group);
      if (item.data(IdRole).toLongLong() == id) return item;
    }
  }
  return {};
}

}  // namespace dtlab::ui
