#pragma once

#include <QtCore/QAbstractTableModel>

#include <nlohmann/json.hpp>

namespace dtlab::ui {

// The strategy variants of an experiment, one row each, edited in place: name, strategy,
// partition (with its rebalance period for speed_proportional), gradient bucket size, and
// the nodes it runs on (the cluster's first N, for a baseline). The spec's
// parser judges the values (unknown strategy, duplicate names); the model only keeps them, as the
// JSON the spec holds.
class VariantsModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Columns {
    kNameColumn,
    kStrategyColumn,
    kPartitionColumn,
    kBucketColumn,
    kRebalanceColumn,  // speed_proportional only
    kNodesColumn,      // the first N nodes only; "all" when absent
    kColumnCount
  };
  enum Roles {
    // The values a cell may take (QStringList; empty: free), for a combo-box editor.
    ChoicesRole = Qt::UserRole + 1,
  };

  explicit VariantsModel(QObject* parent = nullptr);
  void setVariants(const nlohmann::json& variants);  // the spec's "variants" array
  nlohmann::json variants() const;
  void addVariant();
  void removeVariant(int row);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  static const char* keyOf(int column);
  bool speedProportional(int row) const;
  nlohmann::json rows_ = nlohmann::json::array();
};

}  // namespace dtlab::ui
