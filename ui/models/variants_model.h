#pragma once

#include <QtCore/QAbstractTableModel>

#include <nlohmann/json.hpp>

namespace dtlab::ui {

// The strategy variants of an experiment, one row each, edited in place: name, strategy, the
// nodes it runs on (the cluster's first N, for a baseline), gradient bucket size, and every
// strategy's own settings (partition and rebalance period of sync_allreduce, parameter-server
// shards, ssp staleness, local_sgd period, the hybrid's policy and its switch point or
// straggler ratio and window). The spec's parser judges the values; the model only keeps them,
// as the JSON the spec holds.
//
// The parser refuses a field that the variant's strategy would ignore, so a cell that does not
// apply to its row (staleness of an async_ps variant) is empty and not editable, and a change
// of strategy, partition or policy drops the fields that no longer apply.
class VariantsModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Columns {
    kNameColumn,
    kStrategyColumn,
    kNodesColumn,  // the first N nodes only; "all" when absent
    kBucketColumn,
    kPartitionColumn,       // sync_allreduce only
    kRebalanceColumn,       // speed_proportional only
    kPsShardsColumn,        // async_ps, ssp, hybrid; "all" when absent
    kStalenessColumn,       // ssp
    kPeriodColumn,          // local_sgd
    kPolicyColumn,          // hybrid
    kSwitchAtColumn,        // hybrid, sync_then_async
    kStragglerRatioColumn,  // hybrid, adaptive
    kWindowColumn,          // hybrid, adaptive
    kColumnCount
  };
  enum Roles {
    // The values a cell may take (QStringList; empty: free), for a combo-box editor.
    ChoicesRole = Qt::UserRole + 1,
    // Whether the cell's field means something to its row's strategy (bool).
    AppliesRole,
  };

  explicit VariantsModel(QObject* parent = nullptr);
  void setVariants(const nlohmann::json& variants);  // the spec's "variants" array
  nlohmann::json variants() const;
  void addVariant();
  void removeVariant(int row);
  // The spec key a column edits ("ps_shards").
  static const char* keyOf(int column);
  // Whether `column`'s field applies to the variant `row` (the spec's own rule).
  bool applies(int row, int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::string textOf(int row, const char* key, const char* fallback) const;
  nlohmann::json& rowAt(int row) { return rows_[static_cast<std::size_t>(row)]; }
  const nlohmann::json& rowAt(int row) const { return rows_[static_cast<std::size_t>(row)]; }
  // Removes the fields that no longer apply to the row's strategy, partition and policy.
  void dropInapplicable(int row);
  nlohmann::json rows_ = nlohmann::json::array();
};

}  // namespace dtlab::ui
