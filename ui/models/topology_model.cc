#include "ui/models/topology_model.h"

#include <QtCore/QSettings>
#include <QtGui/QBrush>
#include <QtGui/QColor>

#include <algorithm>

namespace dtlab::ui {

namespace node_tokens {

namespace {
constexpr const char* kGroup = "node_tokens";
}  // namespace

QString token(const QString& address) {
  if (address.isEmpty()) return {};
  QSettings settings;
  settings.beginGroup(kGroup);
  return settings.value(address).toString();
}

void setToken(const QString& address, const QString& token) {
  if (address.isEmpty()) return;
  QSettings settings;
  settings.beginGroup(kGroup);
  if (token.isEmpty()) {
    settings.remove(address);
  } else {
    settings.setValue(address, token);
  }
}

}  // namespace node_tokens

TopologyModel::TopologyModel(QObject* parent) : QAbstractTableModel(parent) {}

void TopologyModel::setCluster(const nlohmann::json& c) {
  beginResetModel();
  rest_ = c.is_object() ? c : nlohmann::json::object();
  const nlohmann::json list = rest_.contains("nodes") ? rest_["nodes"] : nlohmann::json::array();
  const bool remote =
      list.is_array() && !list.empty() && list[0].is_object() && list[0].contains("address");
  int count = rest_.contains("local_nodes") && rest_["local_nodes"].is_number_integer()
                  ? std::max(1, rest_["local_nodes"].get<int>())
                  : 1;
  // A remote cluster is as large as its list of daemons.
  if (remote) count = static_cast<int>(list.size());
  rest_.erase("local_nodes");
  rest_.erase("nodes");
  nodes_.assign(static_cast<std::size_t>(count), Node{});
  for (int i = 0; i < count && list.is_array() && !list.empty(); ++i) {
    // One entry applies to every node; otherwise entry i is node i.
    const nlohmann::json& n =
        list.size() == 1 ? list[0] : list[std::min<std::size_t>(i, list.size() - 1)];
    if (!n.is_object()) continue;
    Node& node = nodes_[static_cast<std::size_t>(i)];
    if (n.contains("address") && n["address"].is_string()) {
      node.remote = true;
      node.address = QString::fromStdString(n["address"].get<std::string>());
    }
    node.speed = n.value("speed", 1.0);
    node.bandwidthMbps = n.value("bandwidth_mbps", 0.0);
    node.latencyMs = n.value("latency_ms", 0.0);
  }
  endResetModel();
}

nlohmann::json TopologyModel::cluster() const {
  nlohmann::json c = rest_;
  // Only a local cluster has a local node count; the rows of a remote one are its daemons.
  if (!std::all_of(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.remote; }))
    c["local_nodes"] = nodes_.size();
  nlohmann::json list = nlohmann::json::array();
  for (const Node& n : nodes_) {
    nlohmann::json node = {
        {"speed", n.speed}, {"bandwidth_mbps", n.bandwidthMbps}, {"latency_ms", n.latencyMs}};
    // An empty address stays in: the spec then says that it is missing, on this row.
    if (n.remote) node["address"] = n.address.trimmed().toStdString();
    list.push_back(node);
  }
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

void TopologyModel::addRemoteNode(const QString& address) {
  const int row = rowCount();
  beginInsertRows({}, row, row);
  Node node;
  node.remote = true;
  node.address = address.trimmed();
  nodes_.push_back(node);
  endInsertRows();
}

void TopologyModel::removeNode(int row) {
  if (row < 0 || row >= rowCount() || rowCount() == 1) return;  // a cluster keeps one node
  beginRemoveRows({}, row, row);
  nodes_.erase(nodes_.begin() + row);
  endRemoveRows();
}

void TopologyModel::setFound(int row, const QString& text, bool error) {
  if (row < 0 || row >= rowCount()) return;
  Node& node = nodes_[static_cast<std::size_t>(row)];
  node.found = text;
  node.foundError = error;
  const QModelIndex cell = index(row, kFoundColumn);
  emit dataChanged(cell, cell);
}

bool TopologyModel::hasRemoteNodes() const {
  return std::any_of(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.remote; });
}

int TopologyModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(nodes_.size());
}

int TopologyModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant TopologyModel::headerData(int section, Qt::Orientation orientation, int role) const {
  // Rows are numbered as the spec's messages number them (cluster.nodes[i]), which is also
  // the node's rank. The number is only in the header: a row's cells stay the same when a
  // row above it goes.
  if (orientation == Qt::Vertical) {
    if (role == Qt::DisplayRole) return QString::number(section);
    if (role == Qt::ToolTipRole) return tr("cluster.nodes[%1]: the node of rank %1").arg(section);
    return {};
  }
  if (role == Qt::ToolTipRole && section == kTokenColumn)
    return tr(
        "A remote daemon's --token, kept in your settings on this computer (per address), "
        "never in the project file");
  if (role == Qt::ToolTipRole && section == kSpeedColumn)
    return tr("Emulated compute speed; remote daemons apply the topology's value per job");
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case kNodeColumn:
      return tr("Node");
    case kAddressColumn:
      return tr("Address");
    case kTokenColumn:
      return tr("Token");
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
  const bool remote = nodes_[static_cast<std::size_t>(index.row())].remote;
  if (index.column() >= kSpeedColumn && index.column() <= kLatencyColumn) f |= Qt::ItemIsEditable;
  if (remote && index.column() == kAddressColumn) f |= Qt::ItemIsEditable;
  // A token is stored under the address: none can be given before the address.
  if (remote && index.column() == kTokenColumn &&
      !nodes_[static_cast<std::size_t>(index.row())].address.isEmpty())
    f |= Qt::ItemIsEditable;
  return f;
}

QVariant TopologyModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Node& n = nodes_[static_cast<std::size_t>(index.row())];
  const int column = index.column();
  if (role == Qt::TextAlignmentRole && column >= kSpeedColumn && column <= kLatencyColumn)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ForegroundRole) {
    if (column == kFoundColumn && n.foundError) return QBrush(QColor(0xb0, 0x20, 0x20));
    // Cells that say what a local row lacks, and remote rows' blanks to fill in.
    if (!n.remote && (column == kAddressColumn || column == kTokenColumn))
      return QBrush(QColor(0x80, 0x80, 0x80));
    if (n.remote && column == kAddressColumn && n.address.isEmpty())
      return QBrush(QColor(0xb0, 0x20, 0x20));
    return {};
  }
  if (role == Qt::ToolTipRole) {
    if (column == kTokenColumn && n.remote)
      return tr(
          "Double-click to enter this daemon's token; it is kept in your settings on this "
          "computer, not in the project");
    if (column == kAddressColumn && n.remote) return tr("host:port of a running dtlab-node");
    if (column == kFoundColumn && !n.found.isEmpty()) return n.found;
    return {};
  }
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const bool edit = role == Qt::EditRole;
  switch (column) {
    case kNodeColumn:
      return n.remote ? tr("remote") : tr("local");
    case kAddressColumn:
      if (n.remote) return edit || !n.address.isEmpty() ? n.address : tr("(enter host:port)");
      return edit ? QString() : tr("started on this machine");
    case kTokenColumn: {
      if (edit) return QString();  // never shown again, not even to its editor
      if (!n.remote) return tr("not needed");
      return node_tokens::token(n.address).isEmpty() ? tr("none")
                                                     : tr("\u2022\u2022\u2022\u2022 set");
    }
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
  Node& n = nodes_[static_cast<std::size_t>(index.row())];
  if (index.column() == kAddressColumn) {
    n.address = value.toString().trimmed();
    // The token cell shows the new address's token (or none), and becomes editable.
    emit dataChanged(index, this->index(index.row(), kTokenColumn));
    return true;
  }
  if (index.column() == kTokenColumn) {
    node_tokens::setToken(n.address, value.toString());
    emit dataChanged(index, index);
    return true;
  }
  bool ok = false;
  const double v = value.toDouble(&ok);
  // The spec's parser checks the ranges and says what is wrong; here only numbers pass.
  if (!ok) return false;
  if (index.column() == kSpeedColumn) n.speed = v;
  if (index.column() == kBandwidthColumn) n.bandwidthMbps = v;
  if (index.column() == kLatencyColumn) n.latencyMs = v;
  emit dataChanged(index, index);
  return true;
}

}  // namespace dtlab::ui
