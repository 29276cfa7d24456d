#pragma once

#include <QtCore/QAbstractTableModel>

#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::ui {

// The nodes of a local topology, one row each, editable in place: emulated compute speed,
// link bandwidth and latency (the spec's cluster.nodes), and what a connection test found.
class TopologyModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Columns {
    kNodeColumn,
    kSpeedColumn,
    kBandwidthColumn,
    kLatencyColumn,
    kFoundColumn,
    kColumnCount
  };

  struct Node {
    double speed = 1.0;
    double bandwidthMbps = 0.0;  // 0: unlimited
    double latencyMs = 0.0;
    QString found;  // the last connection test's answer ("" before one)
  };

  explicit TopologyModel(QObject* parent = nullptr);

  // From / to the spec's "cluster" object (local_nodes and nodes; other fields kept).
  void setCluster(const nlohmann::json& cluster);
  nlohmann::json cluster() const;
  void addNodes(int count);
  void removeNode(int row);
  void setFound(int row, const QString& text);
  const std::vector<Node>& nodes() const { return nodes_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<Node> nodes_;
  nlohmann::json rest_;  // fields of the cluster object this model does not edit
};

}  // namespace dtlab::ui
