#include "ui/models/topology_model.h"

namespace dtlab::ui {

TopologyModel::TopologyModel(QObject* parent) : QAbstractTableModel(parent) {}

void TopologyModel::setCluster(const nlohmann::json& c) {
  beginResetModel();
  rest_ = c.is_object() ? c : nlohmann::json::object();
  const int count = rest_.contains("local_nodes") && rest_["local_nodes"].is_number_integer()
                        ? std::max(1, rest_["local_nodes"].get<int>())
                        : 1;
  const nlohmann::json list = rest_.contains("nodes") ? rest_["nodes"] : nlohmann::json::array();
  rest_.erase("local_nodes");
  rest_.erase("nodes");
  nodes_.assign(static_cast<std::size_t>(count), Node{});
  for (int i = 0; i < count && list.is_array() && !list.empty(); ++i) {
    // One entry applies to every node; otherwise entry i is node i.
    const nlohmann::json& n =
        list.size() == 1 ? list[0] : list[std::min<std::size_t>(i, list.size() - 1)];
    Node& node = nodes_[static_cast<std::size_t>(i)];
    node.speed = n.value("speed", 1.0);
    node.bandwidthMbps = n.value("bandwidth_mbps", 0.0);
    node.latencyMs = n.value("latency_ms", 0.0);
  }
  endResetModel();
}

nlohmann::json TopologyModel::cluster() const {
  nlohmann::json c = rest_;
  c["local_nodes"] = nodes_.size();
  nlohmann::json list = nlohmann::json::array();
  for (const Node& n : nodes_)
    list.push_back(
        {{"speed", n.speed}, {"bandwidth_mbps", n.bandwidthMbps}, {"latency_ms", n.latencyMs}});
  c["nodes"] = list;
  return c;
}

void TopologyModel::addNodes(int count) {
  if (count <= 0) return;
  const int first = rowCount();
  beginInsertRows({}, first, first + count - 1);
  nodes_.insert(nodes_.end(), static_cast<std::size_t>(count), Node{});
  endInsertRows();
}

void TopologyModel::removeNode(int row) {
  if (row < 0 || row >= rowCount() || rowCount() == 1) return;  // a cluster keeps one node
  beginRemoveRows({}, row, row);
  nodes_.erase(nodes_.begin() + row);
  endRemoveRows();
}

void TopologyModel::setFound(int row, const QString& text) {
  if (row < 0 || row >= rowCount()) return;
  nodes_[static_cast<std::size_t>(row)].found = text;
  const QModelIndex cell = index(row, kFoundColumn);
  emit dataChanged(cell, cell);
}

int TopologyModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(nodes_.size());
}

int TopologyModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant TopologyModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kNodeColumn:
      return tr("Node");
    case kSpeedColumn:
      return tr("Speed (x real)");
    case kBandwidthColumn:
      return tr("Bandwidth (Mbit/s, 0 = unlimited)");
    case kLatencyColumn:
      return tr("Latency (ms)");
    case kFoundColumn:
      return tr("Connection test");
    default:
      return {};
  }
}

Qt::ItemFlags TopologyModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() >= kSpeedColumn && index.column() <= kLatencyColumn) f |= Qt::ItemIsEditable;
  return f;
}

QVariant TopologyModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Node& n = nodes_[static_cast<std::size_t>(index.row())];
  if (role == Qt::TextAlignmentRole && index.column() >= kSpeedColumn &&
      index.column() <= kLatencyColumn)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  switch (index.column()) {
    case kNodeColumn:
      return tr("local node %1").arg(index.row());
    case kSpeedColumn:
      return n.speed;
    case kBandwidthColumn:
      return n.bandwidthMbps;
    case kLatencyColumn:
      return n.latencyMs;
    case kFoundColumn:
      return n.found;
    default:
      return {};
  }
}

bool TopologyModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole || !(flags(index) & Qt::ItemIsEditable))
    return false;
  bool ok = false;
  const double v = value.toDouble(&ok);
  // The spec's parser checks the ranges and says what is wrong; here only numbers pass.
  if (!ok) return false;
  Node& n = nodes_[static_cast<std::size_t>(index.row())];
  if (index.column() == kSpeedColumn) n.speed = v;
  if (index.column() == kBandwidthColumn) n.bandwidthMbps = v;
  if (index.column() == kLatencyColumn) n.latencyMs = v;
  emit dataChanged(index, index);
  return true;
}

}  // namespace dtlab::ui
