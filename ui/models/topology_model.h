#pragma once

#include <QtCore/QAbstractTableModel>

#include <vector>

#include <nlohmann/json.hpp>

#include "ui/controller/experiment_controller.h"

namespace dtlab::ui {

// The tokens of node daemons, kept per address where only this user can read them
// (NodeSecrets, ui/models/node_secrets.h: the desktop's keyring), never in a spec, a project
// or the settings file: projects are shared with colleagues, tokens are not.
namespace node_tokens {
QString token(const QString& address);
// An empty token forgets the address's one.
void setToken(const QString& address, const QString& token);
}  // namespace node_tokens

// The client certificate, key and CA for daemons that serve mutual TLS, kept per address with
// the tokens (NodeSecrets) and never in a project. The
// topology page sets one set for all the remote nodes of a topology: a cluster has one CA.
namespace node_tls {
TlsPaths paths(const QString& address);
// Empty paths forget the address's.
void setPaths(const QString& address, const TlsPaths& paths);
}  // namespace node_tls

// The nodes of a topology, one row each, editable in place. A row is a local node (a
// dtlab-node the run starts on this machine) or a remote one (a running daemon at an
// address, with a token kept in NodeSecrets); either way its emulated compute speed,
// link bandwidth and latency (the spec's cluster.nodes), and what a connection test found.
// The spec's parser judges the result: a table mixing local and remote rows, or a remote
// row without a usable address, is reported there.
class TopologyModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Columns {
    kNodeColumn,
    kAddressColumn,
    kTokenColumn,
    kSpeedColumn,
    kBandwidthColumn,
    kLatencyColumn,
    kScheduleColumn,   // the speed_schedule, as text "STEP:SPEED, ..."
    kStragglerColumn,  // the straggler, as text "PROBABILITY:PAUSE_MS"
    kFoundColumn,
    kColumnCount
  };

  struct Node {
    bool remote = false;
    QString address;  // remote rows: "host:port"
    double speed = 1.0;
    double bandwidthMbps = 0.0;  // 0: unlimited
    double latencyMs = 0.0;
    // As the spec has them (null when absent); the spec's parser judges them.
    nlohmann::json speedSchedule;
    nlohmann::json straggler;
    QString found;  // the last connection test's answer ("" before one)
    bool foundError = false;
  };

  explicit TopologyModel(QObject* parent = nullptr);

  // From / to the spec's "cluster" object (local_nodes and nodes; other fields kept). A
  // cluster of remote rows is written without local_nodes (its size is its list).
  void setCluster(const nlohmann::json& cluster);
  nlohmann::json cluster() const;
  void addNodes(int count);
  // Adds a remote row for the daemon at `address` (may be empty: to be typed in the table).
  void addRemoteNode(const QString& address = {});
  void removeNode(int row);
  void setFound(int row, const QString& text, bool error = false);
  const std::vector<Node>& nodes() const { return nodes_; }
  bool hasRemoteNodes() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  // The token column stores the value in NodeSecrets, under the row's address; its
  // EditRole reads as "" (a token is never shown again).
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  // Asks NodeSecrets for the address's token (outside any paint), then refreshes its cells.
  void loadToken(const QString& address);
  std::vector<Node> nodes_;
  nlohmann::json rest_;  // fields of the cluster object this model does not edit
};

}  // namespace dtlab::ui
