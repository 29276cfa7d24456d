#pragma once

#include <QtCore/QAbstractTableModel>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::ui {

// The strategy variants of an experiment, one row each, edited in place: name, strategy, the
// nodes it runs on (the cluster's first N, for a baseline), then one column per setting that
// any registered strategy declares (core/train/strategy_registry.h: bucket size, partition,
// parameter-server shards, staleness, period, the hybrid's policy, ...), in registration
// order, with the descriptor's label, help, choices and default. The spec's parser judges the
// values; the model only keeps them, as the JSON the spec holds.
//
// A cell's tooltip is its row's strategy's own words (its summary, its declaration of the
// setting) with the line naming that strategy's entry in the reference, which F1 on the cell
// opens (kReferenceEntryRole, ui/help/context_help.h).
//
// The parser refuses a setting that the variant's strategy would ignore, so a cell that does
// not apply to its row (staleness of an async_ps variant, or a setting whose condition on
// another setting does not hold) is grey, empty and not editable, and a change of a choice
// (the strategy, a partition, a policy) drops the settings that no longer apply.
class VariantsModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Columns {
    kNameColumn,
    kStrategyColumn,
    kNodesColumn,         // the first N nodes only; "all" when absent
    kFirstSettingColumn,  // then the strategies' settings, columnOf(key)
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
  // The spec key a column edits ("ps_shards"), and the column of a key (-1: none).
  QString keyOf(int column) const;
  int columnOf(const QString& key) const;
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
  // One column: a common field (name, strategy, nodes) or a strategy setting.
  struct Column {
    std::string key;
    QString header;
    QString tip;
    int kind;  // how an edit is read (variants_model.cc)
  };
  std::string strategyOf(int row) const;
  QVariant defaultOf(int row, int column) const;
  QString inapplicableTip(int row, int column) const;
  QString tipOf(int row, int column) const;
  // The documentation's entry of a cell (ui/help/context_help.h), under kReferenceEntryRole;
  // an applicable cell's tooltip ends with it.
  QString referenceOf(int row, int column) const;
  nlohmann::json& rowAt(int row) { return rows_[static_cast<std::size_t>(row)]; }
  const nlohmann::json& rowAt(int row) const { return rows_[static_cast<std::size_t>(row)]; }
  // Removes the fields that no longer apply to the row's strategy, partition and policy.
  void dropInapplicable(int row);
  std::vector<Column> columns_;
  nlohmann::json rows_ = nlohmann::json::array();
};

}  // namespace dtlab::ui
