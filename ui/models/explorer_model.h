#pragma once

#include <QtCore/QAbstractItemModel>

#include <cstddef>
#include <vector>

#include "ui/models/project_snapshot.h"

namespace dtlab::ui {

// The project explorer: four groups (datasets, topologies, experiments, runs) and their
// items, from a ProjectSnapshot; under each experiment, its executions (newest first). Replacing
// the snapshot resets the model; the view keeps the selection by (kind, id) through the roles
// below.
class ExplorerModel final : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Columns { kNameColumn, kDetailColumn, kWhenColumn, kColumnCount };
  enum class Group { kDatasets, kTopologies, kExperiments, kRuns };
  static constexpr int kGroupCount = 4;
  enum Roles {
    // What a row is: "group", "dataset", "topology", "experiment", "execution" or "run".
    KindRole = Qt::UserRole + 1,
    // The entity, execution or run id (items only).
    IdRole,
    // Runs: "running", "completed", "cancelled", "failed" or "interrupted".
    StatusRole,
  };

  explicit ExplorerModel(QObject* parent = nullptr);

  void setSnapshot(ProjectSnapshot snapshot);
  const ProjectSnapshot& snapshot() const { return snapshot_; }
  // The index of an item by kind ("run", "dataset", "execution", ...) and id; invalid if absent.
  QModelIndex find(const QString& kind, qint64 id) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  // internalId: 0 for group rows, 1 + group for items (so parent() knows the group), and
  // 1 + kGroupCount + the experiment's row for the executions under an experiment.
  int itemCount(Group group) const;
  QVariant executionData(int experimentRow, int row, int column, int role) const;
  QVariant groupData(Group group, int column, int role) const;
  QVariant leafData(Group group, int row, int column, int role) const;

  ProjectSnapshot snapshot_;
  // Per experiment row: its executions' indices into snapshot_.executions, newest first.
  std::vector<std::vector<std::size_t>> executionsOf_;
};

}  // namespace dtlab::ui
