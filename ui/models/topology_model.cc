#include "ui/models/topology_model.h"

#include <QtCore/QTimer>
#include <QtGui/QBrush>
#include <QtGui/QColor>

#include <algorithm>

#include "ui/help/context_help.h"
#include "ui/models/node_secrets.h"

namespace dtlab::ui {
namespace {

QString number(const nlohmann::json& v) {
  return v.is_number() ? QString::number(v.get<double>(), 'g', 6)
                       : QString::fromStdString(v.dump());
}

// "30:0.25, 100:1" for [{"at_step": 30, "speed": 0.25}, {"at_step": 100, "speed": 1}].
QString scheduleText(const nlohmann::json& schedule) {
  if (schedule.is_null()) return {};
  if (!schedule.is_array()) return QString::fromStdString(schedule.dump());
  QStringList parts;
  for (const nlohmann::json& c : schedule)
    parts << (c.is_object() ? number(c.value("at_step", nlohmann::json())) + ":" +
                                  number(c.value("speed", nlohmann::json()))
                            : QString::fromStdString(c.dump()));
  return parts.join(", ");
}

// The text back to the spec's list; what is not STEP:SPEED is passed on as it is, so that the
// spec's parser names the entry.
nlohmann::json parseScheduleText(const QString& text) {
  if (text.isEmpty()) return nullptr;
  nlohmann::json list = nlohmann::json::array();
  for (const QString& part : text.split(',', Qt::SkipEmptyParts)) {
    const QStringList pair = part.trimmed().split(':');
    bool stepOk = false, speedOk = false;
    const qint64 step = pair.size() == 2 ? pair[0].trimmed().toLongLong(&stepOk) : 0;
    const double speed = pair.size() == 2 ? pair[1].trimmed().toDouble(&speedOk) : 0.0;
    if (stepOk && speedOk)
      list.push_back({{"at_step", step}, {"speed", speed}});
    else
      list.push_back(part.trimmed().toStdString());
  }
  return list;
}

// "0.05:200" for {"probability": 0.05, "pause_ms": 200}.
QString stragglerText(const nlohmann::json& straggler) {
  if (straggler.is_null()) return {};
  if (!straggler.is_object()) return QString::fromStdString(straggler.dump());
  return number(straggler.value("probability", nlohmann::json(0))) + ":" +
         number(straggler.value("pause_ms", nlohmann::json(0)));
}

// What the cells show: "step 100 → 0.3, step 300 → 1" and "5% × 200 ms" (the edit text when
// the value is not of that shape: the spec's message then says what is wrong).
QString scheduleDisplay(const nlohmann::json& schedule) {
  if (!schedule.is_array()) return scheduleText(schedule);
  QStringList parts;
  for (const nlohmann::json& c : schedule) {
    if (!c.is_object()) return scheduleText(schedule);
    parts << QString("step %1 \u2192 %2")
                 .arg(number(c.value("at_step", nlohmann::json())),
                      number(c.value("speed", nlohmann::json())));
  }
  return parts.join(", ");
}

QString stragglerDisplay(const nlohmann::json& straggler) {
  if (!straggler.is_object() || !straggler.value("probability", nlohmann::json()).is_number() ||
      !straggler.value("pause_ms", nlohmann::json()).is_number())
    return stragglerText(straggler);
  return QString("%1% \u00d7 %2 ms")
      .arg(QString::number(straggler["probability"].get<double>() * 100.0, 'g', 4),
           number(straggler["pause_ms"]));
}

nlohmann::json parseStragglerText(const QString& text) {
  if (text.isEmpty()) return nullptr;
  const QStringList pair = text.split(':');
  bool pOk = false, msOk = false;
  const double p = pair.size() == 2 ? pair[0].trimmed().toDouble(&pOk) : 0.0;
  const double ms = pair.size() == 2 ? pair[1].trimmed().toDouble(&msOk) : 0.0;
  if (pOk && msOk) return {{"probability", p}, {"pause_ms", ms}};
  return text.toStdString();  // the spec's parser says what is wrong with it
}

}  // namespace

void TopologyModel::loadToken(const QString& address) {
  NodeSecrets& secrets = NodeSecrets::instance();
  if (secrets.asking()) {  // from inside another keyring call's event loop: after it
    QTimer::singleShot(20, this, [this, address] { loadToken(address); });
    return;
  }
  secrets.token(address);
  for (int row = 0; row < rowCount(); ++row)
    if (nodes_[static_cast<std::size_t>(row)].address == address)
      emit dataChanged(index(row, kTokenColumn), index(row, kTokenColumn));
}

namespace node_tokens {

QString token(const QString& address) {
  return NodeSecrets::instance().token(address);
}

void setToken(const QString& address, const QString& token) {
  NodeSecrets::instance().setToken(address, token);
}

}  // namespace node_tokens

namespace node_tls {

TlsPaths paths(const QString& address) {
  return NodeSecrets::instance().tls(address);
}

void setPaths(const QString& address, const TlsPaths& paths) {
  NodeSecrets::instance().setTls(address, paths);
}

}  // namespace node_tls

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
    if (n.contains("speed_schedule")) node.speedSchedule = n["speed_schedule"];
    if (n.contains("straggler")) node.straggler = n["straggler"];
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
    if (!n.speedSchedule.is_null()) node["speed_schedule"] = n.speedSchedule;
    if (!n.straggler.is_null()) node["straggler"] = n.straggler;
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
  // Rows are numbered as the spec's messages number them (cluster.nodes[i]); ranks go node by
  // node, one per worker slot. The number is only in the header: a row's cells stay the same
  // when a row above it goes.
  if (orientation == Qt::Vertical) {
    if (role == Qt::DisplayRole) return QString::number(section);
    if (role == Qt::ToolTipRole)
      return tr("cluster.nodes[%1]: its ranks follow those of the nodes above, one per worker "
                "slot (one, unless its dtlab-node was started with --devices cpu:N or several "
                "GPUs)")
          .arg(section);
    return {};
  }
  if (role == Qt::ToolTipRole && section == kBandwidthColumn)
    return tr("Emulated link bandwidth; 0 = unlimited");
  if (role == Qt::ToolTipRole && section == kLatencyColumn)
    return tr("Emulated link latency, per message step; 0 = none");
  if (role == Qt::ToolTipRole && section == kScheduleColumn)
    return tr("The node's speed from a step on, as step:speed, ... (e.g. 100:0.3, 300:1)");
  if (role == Qt::ToolTipRole && section == kStragglerColumn)
    return tr(
        "Random pauses, as probability:pause ms (e.g. 0.05:200: a 200 ms stall in 5% of "
        "the steps)");
  if (role == Qt::ToolTipRole && section == kTokenColumn)
    return tr("A remote daemon's --token, %1 (per address), never in the project or the "
              "settings file")
        .arg(NodeSecrets::instance().whereText());
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
      return tr("Bandwidth (Mbit/s)");
    case kLatencyColumn:
      return tr("Latency (ms)");
    case kScheduleColumn:
      return tr("Speed schedule");
    case kStragglerColumn:
      return tr("Straggler");
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
  if (index.column() >= kSpeedColumn && index.column() <= kStragglerColumn) f |= Qt::ItemIsEditable;
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
  if (role == Qt::ToolTipRole || role == kReferenceEntryRole) {
    // The spec's node fields, the guide's daemons and their tokens, the guide's test.
    const QString reference = column == kTokenColumn
                                  ? guideEntry("distributed-runs.md", "Mutual TLS and tokens")
                              : column == kFoundColumn ? QString("user-guide.md")
                                                       : guideEntry(kSpecPage, "cluster.nodes[i]");
    if (role == kReferenceEntryRole) return reference;
    QString tip;
    if (column == kTokenColumn && n.remote)
      tip = tr("Double-click to enter this daemon's token; it is %1, not in the project")
                .arg(NodeSecrets::instance().whereText());
    else if (column == kAddressColumn && n.remote)
      tip = tr("host:port of a running dtlab-node");
    else if (column == kFoundColumn && !n.found.isEmpty())
      return n.found;  // what the test found, alone
    else if (column == kSpeedColumn || column == kBandwidthColumn || column == kLatencyColumn ||
             column == kScheduleColumn || column == kStragglerColumn)
      tip = headerData(column, Qt::Horizontal, Qt::ToolTipRole).toString();
    if (tip.isEmpty()) return {};
    return withReferenceLine(tip, reference);
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
      // Never a keyring call while a view paints (it runs an event loop): asked from the
      // event loop, the cell then shows the answer.
      const std::optional<QString> token = NodeSecrets::instance().cachedToken(n.address);
      if (!token) {
        auto* self = const_cast<TopologyModel*>(this);  // data() is const; the signal is not
        QTimer::singleShot(0, self, [self, address = n.address] { self->loadToken(address); });
        return tr("...");
      }
      return token->isEmpty() ? tr("none") : tr("\u2022\u2022\u2022\u2022 set");
    }
    case kSpeedColumn:
      return n.speed;
    case kBandwidthColumn:
      return n.bandwidthMbps;
    case kLatencyColumn:
      return n.latencyMs;
    case kScheduleColumn:
      return edit ? scheduleText(n.speedSchedule) : scheduleDisplay(n.speedSchedule);
    case kStragglerColumn:
      return edit ? stragglerText(n.straggler) : stragglerDisplay(n.straggler);
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
  if (index.column() == kScheduleColumn || index.column() == kStragglerColumn) {
    const QString text = value.toString().trimmed();
    nlohmann::json& field = index.column() == kScheduleColumn ? n.speedSchedule : n.straggler;
    field = index.column() == kScheduleColumn ? parseScheduleText(text) : parseStragglerText(text);
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
