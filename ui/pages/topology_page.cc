#include "ui/pages/topology_page.h"

#include <algorithm>
#include <string>
#include <vector>

#include <QtCore/QFile>
#include <QtCore/QTimer>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QFormLayout>
#include <QtWidgets/QGroupBox>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QStyledItemDelegate>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include "core/spec/experiment_spec.h"
#include "core/spec/hostfile.h"
#include "core/spec/spec_json.h"
#include "ui/background.h"
#include "ui/controller/experiment_controller.h"
#include "ui/help/context_help.h"
#include "ui/models/node_secrets.h"
#include "ui/models/topology_model.h"

namespace dtlab::ui {
namespace {

// The token cell's editor: typed blind, starts empty (a stored token is never shown), and an
// empty entry forgets the token.
class TokenDelegate final : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&,
                        const QModelIndex&) const override {
    auto* editor = new QLineEdit(parent);
    editor->setEchoMode(QLineEdit::Password);
    editor->setPlaceholderText(QObject::tr("token (empty: none)"));
    return editor;
  }
  void setEditorData(QWidget* editor, const QModelIndex&) const override {
    static_cast<QLineEdit*>(editor)->clear();
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model,
                    const QModelIndex& index) const override {
    model->setData(index, static_cast<QLineEdit*>(editor)->text());
  }
};

// One line of what a node's GetInfo said. A remote node's own emulation flags are only its
// default: the topology's values apply to the jobs it runs from here.
QString describe(const NodeInfo& n, bool remoteRow) {
  QStringList devices;
  for (const std::string& d : n.devices) devices << QString::fromStdString(d);
  QString text = QObject::tr("dtlab-node %1 on %2: %3, %4 worker threads, %5 cores, ")
                     .arg(QString::fromStdString(n.programVersion),
                          QString::fromStdString(n.hostname), devices.join(", "))
                     .arg(n.workerThreads)
                     .arg(n.cores);
  if (!remoteRow) text += QObject::tr("speed %1, ").arg(n.speed);
  if (!n.busy)
    text += QObject::tr("idle");
  else if (n.jobRun.empty())
    text += QObject::tr("busy");
  else if (n.jobOwner.empty())
    text += QObject::tr("busy with run '%1'").arg(QString::fromStdString(n.jobRun));
  else
    text += QObject::tr("busy with %1's run '%2'")
                .arg(QString::fromStdString(n.jobOwner), QString::fromStdString(n.jobRun));
  if (n.waitingRuns > 0) text += QObject::tr(", %n run(s) waiting", nullptr, n.waitingRuns);
  if (remoteRow && (n.speed != 1.0 || n.bandwidthMbps > 0.0 || n.latencyMs > 0.0))
    text += QObject::tr(" (its own flags: speed %1, %2 Mbit/s, %3 ms; this topology's apply)")
                .arg(n.speed)
                .arg(n.bandwidthMbps)
                .arg(n.latencyMs);
  return text;
}

}  // namespace

TopologyPage::TopologyPage(QWidget* parent)
    : QWidget(parent),
      model_(new TopologyModel(this)),
      name_(new QLineEdit(this)),
      threads_(new QSpinBox(this)),
      device_(new QComboBox(this)),
      wait_(new QSpinBox(this)),
      addCount_(new QSpinBox(this)),
      table_(new QTableView(this)),
      error_(new QLabel(this)),
      save_(new QPushButton(tr("Save to project"), this)),
      test_(new QPushButton(tr("Test connection"), this)),
      addRemote_(new QPushButton(tr("Add remote node"), this)),
      import_(new QPushButton(tr("Import hostfile..."), this)),
      export_(new QPushButton(tr("Export hostfile..."), this)),
      tlsBox_(new QGroupBox(tr("Mutual TLS to the remote nodes"), this)),
      tlsCert_(new QLineEdit(tlsBox_)),
      tlsKey_(new QLineEdit(tlsBox_)),
      tlsCa_(new QLineEdit(tlsBox_)) {
  name_->setObjectName("name");
  threads_->setObjectName("threads_per_node");
  threads_->setRange(1, 256);
  device_->setObjectName("device");
  device_->addItem(tr("CPU"), "cpu");
  device_->addItem(tr("GPU (CUDA)"), "cuda");
  device_->setItemData(0, tr("Workers train on the nodes' CPUs (Gloo collectives)"),
                       Qt::ToolTipRole);
  device_->setItemData(1,
                       tr("Each node's worker trains on its GPU: local nodes get one GPU each, "
                          "remote daemons the one they were started with (--devices cuda:N)"),
                       Qt::ToolTipRole);
  wait_->setObjectName("wait_seconds");
  wait_->setRange(0, static_cast<int>(core::kMaxWaitSeconds));
  wait_->setSuffix(tr(" s"));
  wait_->setSpecialValueText(tr("do not wait"));
  wait_->setValue(static_cast<int>(core::kDefaultWaitSeconds));
  addCount_->setRange(1, 64);
  addCount_->setValue(1);
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #b02020;");
  table_->setModel(model_);
  table_->setItemDelegateForColumn(TopologyModel::kTokenColumn, new TokenDelegate(table_));
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  test_->setToolTip(
      tr("Start the local daemons on this machine, reach the remote ones, and ask "
         "each node what it is"));
  addRemote_->setToolTip(
      tr("A dtlab-node already running on another machine: type its host:port and its token "
         "into the new row"));

  auto* form = new QFormLayout();
  form->addRow(tr("Name"), name_);
  form->addRow(tr("Workers train on"), device_);
  form->addRow(tr("CPU threads per local node"), threads_);
  form->addRow(tr("Wait for busy nodes"), wait_);
  auto* add = new QPushButton(tr("Add local nodes"), this);
  auto* remove = new QPushButton(tr("Remove selected node"), this);
  auto* buttons = new QHBoxLayout();
  buttons->addWidget(addCount_);
  buttons->addWidget(add);
  buttons->addWidget(addRemote_);
  buttons->addWidget(remove);
  buttons->addWidget(import_);
  buttons->addWidget(export_);
  buttons->addStretch(1);
  buttons->addWidget(test_);
  buttons->addWidget(save_);

  // TLS: one set for the topology's remote daemons (a cluster has one CA), kept with the
  // tokens (NodeSecrets) under each of their addresses.
  auto* tlsForm = new QFormLayout(tlsBox_);
  const auto fileRow = [this, tlsForm](QLineEdit* edit, const QString& label,
                                       const QString& placeholder, const char* name) {
    edit->setObjectName(name);
    edit->setPlaceholderText(placeholder);
    auto* browse = new QPushButton(tr("Choose..."), tlsBox_);
    auto* row = new QHBoxLayout();
    row->addWidget(edit, 1);
    row->addWidget(browse);
    tlsForm->addRow(label, row);
    connect(browse, &QPushButton::clicked, this, [this, edit, label] {
      const QString file = QFileDialog::getOpenFileName(
          this, label, edit->text(), tr("PEM files (*.pem *.key *.crt);;All files (*)"));
      if (!file.isEmpty()) edit->setText(file);
    });
    connect(edit, &QLineEdit::textChanged, this, [this] { validate(); });
  };
  fileRow(tlsCert_, tr("Client certificate"), tr("e.g. certs/client.pem"), "tls_cert");
  fileRow(tlsKey_, tr("Client key"), tr("e.g. certs/client.key"), "tls_key");
  fileRow(tlsCa_, tr("Cluster CA"), tr("e.g. certs/ca.pem"), "tls_ca");
  // Each field's tooltip ends with where the documentation explains it, which F1 on it opens
  // (threads and wait: validate(), as their tooltips change with the nodes).
  const QString guide = "user-guide.md";
  const QString remote = guideEntry("distributed-runs.md", "Mutual TLS and tokens");
  setReferenceTip(name_, tr("The topology's name in the project"), guide);
  setReferenceTip(device_,
                  tr("Where the workers train: the nodes' CPUs, or a GPU each (each choice's "
                     "tooltip says)"),
                  "gpu.md");
  setReferenceTip(addCount_, tr("How many nodes Add local nodes adds"), guide);
  setReferenceTip(
      tlsCert_, tr("This computer's client certificate (PEM), signed by the cluster's CA"), remote);
  setReferenceTip(tlsKey_, tr("The client certificate's private key (PEM)"), remote);
  setReferenceTip(tlsCa_,
                  tr("The CA that signed the daemons' certificates (dtlab-node gen-certs makes "
                     "it)"),
                  remote);
  // The nodes' cells have the model's tooltips; F1 on one opens the guide's topology editor.
  setReferenceEntry(table_, guide);
  tlsBox_->setToolTip(
      tr("For daemons started with --tls-cert/--tls-key/--tls-ca: this computer's client "
         "certificate and key and the cluster's CA (dtlab-node gen-certs DIR --hosts ... makes "
         "them). Kept with the nodes' tokens, never in the project. Empty: plain text."));

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(table_, 1);
  layout->addWidget(tlsBox_);
  layout->addWidget(error_);

  connect(add, &QPushButton::clicked, this, [this] { addNodes(addCount_->value()); });
  connect(addRemote_, &QPushButton::clicked, this, [this] {
    addRemoteNode();
    // Straight to typing the address.
    const QModelIndex address =
        model_->index(model_->rowCount() - 1, TopologyModel::kAddressColumn);
    table_->setCurrentIndex(address);
    table_->edit(address);
  });
  connect(remove, &QPushButton::clicked, this, [this] {
    model_->removeNode(table_->currentIndex().row());
    validate();
  });
  connect(model_, &QAbstractItemModel::rowsRemoved, this, [this] { validate(); });
  connect(model_, &QAbstractItemModel::dataChanged, this, [this] {
    validate();
    tellWhereSecretsGo();  // after a token was set
  });
  // Rows that move make a running test's answers land on the wrong rows: drop them.
  for (auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved})
    connect(model_, signal, this, [this] {
      ++testGeneration_;
      testsPending_ = 0;
    });
  connect(threads_, &QSpinBox::valueChanged, this, [this] { validate(); });
  connect(wait_, &QSpinBox::valueChanged, this, [this] { validate(); });
  connect(device_, &QComboBox::currentIndexChanged, this, [this] {
    if (!loading_) unknownDevice_.clear();
    validate();
  });
  connect(name_, &QLineEdit::textChanged, this, [this] { validate(); });
  connect(test_, &QPushButton::clicked, this, [this] { testConnection(); });
  import_->setToolTip(
      tr("Read the nodes from a hostfile: one running dtlab-node a line, \"HOST[:PORT] slots=1 "
         "[speed=F] [bandwidth_mbps=F] [latency_ms=F]\" (the table's rows are replaced)"));
  connect(import_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import hostfile"));
    if (path.isEmpty()) return;
    const QString problem = importHostfile(path);
    if (!problem.isEmpty()) QMessageBox::warning(this, tr("Import hostfile"), problem);
  });
  connect(export_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export hostfile"), "hostfile");
    if (path.isEmpty()) return;
    QString note;
    const QString problem = exportHostfile(path, &note);
    if (!problem.isEmpty())
      QMessageBox::warning(this, tr("Export hostfile"), problem);
    else if (!note.isEmpty())
      QMessageBox::information(this, tr("Export hostfile"), note);
  });
  connect(save_, &QPushButton::clicked, this, [this] {
    if (error().isEmpty())
      emit saveRequested(id_, name(), QString::fromStdString(cluster().dump()));
  });
}

void TopologyPage::edit(qint64 id, const QString& name, const nlohmann::json& cluster) {
  id_ = id;
  ++testGeneration_;
  testsPending_ = 0;
  loading_ = true;  // the setters below validate; the form is complete only after them
  name_->setText(name);
  model_->setCluster(cluster);
  threads_->setValue(cluster.is_object() ? cluster.value("threads_per_node", 1) : 1);
  const nlohmann::json wait =
      cluster.is_object() ? cluster.value("wait_seconds", nlohmann::json()) : nlohmann::json();
  wait_->setValue(wait.is_number_integer() ? wait.get<int>()
                                           : static_cast<int>(core::kDefaultWaitSeconds));
  const std::string device =
      cluster.is_object() && cluster.value("device", nlohmann::json("cpu")).is_string()
          ? cluster.value("device", std::string("cpu"))
          : std::string("cpu");
  // A device this page does not offer stays in the JSON's place: the parser names it.
  device_->setCurrentIndex(std::max(0, device_->findData(QString::fromStdString(device))));
  unknownDevice_ = device_->findData(QString::fromStdString(device)) < 0 ? device : "";
  // The TLS this user keeps for the first remote node (the page stores one set for all).
  TlsPaths tls;
  for (const TopologyModel::Node& node : model_->nodes())
    if (node.remote && !node.address.isEmpty()) {
      tls = node_tls::paths(node.address);
      break;
    }
  setTls(tls);
  loading_ = false;
  editState_.loadStarted();
  validate();
}

QString TopologyPage::nodeToken(const QString& address) {
  return node_tokens::token(address);
}

TlsPaths TopologyPage::nodeTls(const QString& address) {
  return node_tls::paths(address);
}

TlsPaths TopologyPage::tls() const {
  return {tlsCert_->text().trimmed(), tlsKey_->text().trimmed(), tlsCa_->text().trimmed()};
}

void TopologyPage::setTls(const TlsPaths& paths) {
  tlsCert_->setText(paths.cert);
  tlsKey_->setText(paths.key);
  tlsCa_->setText(paths.ca);
}

void TopologyPage::storeTls() {
  const TlsPaths paths = tls();
  for (const TopologyModel::Node& node : model_->nodes())
    if (node.remote) node_tls::setPaths(node.address, paths);
  tellWhereSecretsGo();
}

void TopologyPage::tellWhereSecretsGo() {
  NodeSecrets& secrets = NodeSecrets::instance();
  if (secrets.asking()) {  // inside a keyring call's event loop: once it is over
    QTimer::singleShot(20, this, [this] { tellWhereSecretsGo(); });
    return;
  }
  const QString notice = secrets.takeNotice();
  if (notice.isEmpty()) return;
  // Not modal to the application: the page stays usable, and scripted runs are not held up.
  auto* box = new QMessageBox(QMessageBox::Information, tr("Node tokens"), notice,
                              QMessageBox::NoButton, this);
  box->setObjectName("secretsNotice");
  box->setAttribute(Qt::WA_DeleteOnClose);
  if (secrets.where() == NodeSecrets::Where::kSession) {
    QPushButton* file =
        box->addButton(tr("Keep them in a file only I can read"), QMessageBox::AcceptRole);
    file->setObjectName("keepInFile");
    box->addButton(tr("This session only"), QMessageBox::RejectRole);
    connect(file, &QPushButton::clicked, this, [this] {
      const QString error = NodeSecrets::instance().keepInFile();
      if (!error.isEmpty()) QMessageBox::warning(this, tr("Node tokens"), error);
    });
  } else {
    box->addButton(QMessageBox::Ok);
  }
  box->open();
}

QString TopologyPage::name() const {
  return name_->text().trimmed();
}

nlohmann::json TopologyPage::cluster() const {
  nlohmann::json c = model_->cluster();
  c["threads_per_node"] = threads_->value();
  // The default is left out, so that a topology saved unchanged stays as it was written.
  if (wait_->value() == static_cast<int>(core::kDefaultWaitSeconds))
    c.erase("wait_seconds");
  else
    c["wait_seconds"] = wait_->value();
  c["device"] =
      unknownDevice_.empty() ? device_->currentData().toString().toStdString() : unknownDevice_;
  return c;
}

QString TopologyPage::importHostfile(const QString& path) {
  std::vector<core::NodeConfig> nodes;
  try {
    nodes = core::nodesOf(core::loadHostfile(path.toStdString()));
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  nlohmann::json cluster = this->cluster();
  cluster.erase("local_nodes");
  nlohmann::json list = nlohmann::json::array();
  for (const core::NodeConfig& n : nodes) list.push_back(core::toJson(n));
  cluster["nodes"] = list;
  model_->setCluster(cluster);
  validate();
  return {};
}

QString TopologyPage::exportHostfile(const QString& path, QString* note) const {
  std::vector<core::HostfileNode> nodes;  // slots left out: each daemon's own count
  bool leftOut = false;
  for (std::size_t i = 0; i < model_->nodes().size(); ++i) {
    const TopologyModel::Node& row = model_->nodes()[i];
    if (!row.remote || row.address.trimmed().isEmpty())
      return tr("node %1 is a local node (or has no address): a hostfile lists running "
                "daemons, host:port each")
          .arg(i);
    core::HostfileNode entry;
    entry.node.address = row.address.trimmed().toStdString();
    entry.node.speed = row.speed;
    entry.node.bandwidthMbps = row.bandwidthMbps;
    entry.node.latencyMs = row.latencyMs;
    nodes.push_back(std::move(entry));
    leftOut = leftOut || !row.speedSchedule.is_null() || !row.straggler.is_null();
  }
  if (nodes.empty()) return tr("the topology has no nodes");
  QFile file(path);
  const QByteArray text = QByteArray::fromStdString(core::formatHostfile(nodes));
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(text) != text.size())
    return tr("%1: cannot write: %2").arg(path, file.errorString());
  if (note != nullptr)
    *note = leftOut ? tr("Speed schedules and stragglers have no hostfile keys: they were not "
                         "written (the topology in the project keeps them).")
                    : QString();
  return {};
}

QString TopologyPage::error() const {
  return error_->text();
}

void TopologyPage::addNodes(int count) {
  model_->addNodes(count);
  validate();
}

void TopologyPage::addRemoteNode(const QString& address) {
  model_->addRemoteNode(address);
  validate();
}

// The spec's parser is the judge: its message names the field (cluster.nodes[1].speed: ...).
void TopologyPage::validate() {
  QString problem;
  try {
    core::parseExperimentSpec({{"cluster", cluster()}});
  } catch (const std::exception& e) {
    problem = QString::fromUtf8(e.what());
  }
  if (problem.isEmpty() && name().isEmpty()) problem = tr("name: must not be empty");
  const TlsPaths paths = tls();
  if (problem.isEmpty() && model_->hasRemoteNodes() && !paths.isEmpty() &&
      (paths.cert.isEmpty() || paths.key.isEmpty() || paths.ca.isEmpty()))
    problem = tr("TLS: give the client certificate, its key and the cluster's CA, or none");
  tlsBox_->setVisible(model_->hasRemoteNodes());
  export_->setEnabled(model_->hasRemoteNodes());
  export_->setToolTip(model_->hasRemoteNodes()
                          ? tr("Write the remote nodes as a hostfile, for dtlab-cli run --hostfile")
                          : tr("A hostfile lists running daemons: add remote nodes, or import a "
                               "hostfile"));
  // What the page shows holds for every remote node, also one added after the TLS fields.
  if (!loading_) storeTls();
  error_->setText(problem);
  error_->setVisible(!problem.isEmpty());
  save_->setEnabled(problem.isEmpty());
  save_->setToolTip(problem.isEmpty() ? tr("Store this topology in the project") : problem);
  test_->setEnabled(problem.isEmpty() && testsPending_ == 0 && controller_ != nullptr);
  // Remote daemons run with their own --threads.
  const bool local = !model_->hasRemoteNodes();
  threads_->setEnabled(local);
  setReferenceTip(threads_,
                  local ? tr("CPU threads of each local node's worker")
                        : tr("Remote daemons use their own --threads (Test connection shows it)"),
                  guideEntry(kSpecPage, "cluster"));
  // Local daemons are started for each run and are never busy with someone else's.
  wait_->setEnabled(!local);
  setReferenceTip(
      wait_,
      local ? tr("Local nodes are started for each run: nobody else's run can hold them")
            : tr("Nodes shared with other people's runs: each run reserves all of its nodes at "
                 "once and waits in their queues this long (Cancel leaves the queue); 0 fails a "
                 "run at once, naming the node and whose run holds it"),
      guideEntry("distributed-runs.md", "Nodes shared by several people"));
  if (!loading_ && editState_.update(content())) emit modifiedChanged(editState_.modified());
}

void TopologyPage::finishTest(int generation, bool ok) {
  if (generation != testGeneration_) return;
  testOk_ = testOk_ && ok;
  if (--testsPending_ > 0) return;
  validate();  // enables the button again
  emit connectionTested(testOk_);
}

void TopologyPage::testConnection() {
  const core::ExperimentSpec spec = core::parseExperimentSpec({{"cluster", cluster()}});
  const int generation = ++testGeneration_;
  testOk_ = true;
  test_->setEnabled(false);

  // Every question counted and every remote row's token read before the first is asked: an
  // event loop may run meanwhile (the keyring's, a cell's refresh) and deliver an answer,
  // which must not find the count short.
  std::vector<std::string> tokens;
  bool anyLocal = false;
  for (const TopologyModel::Node& node : model_->nodes()) {
    tokens.push_back(node.remote ? node_tokens::token(node.address).toStdString() : "");
    if (node.remote) ++testsPending_;
    anyLocal = anyLocal || !node.remote;
  }
  if (anyLocal) ++testsPending_;
  // Remote rows: one GetInfo each, in parallel, so one unreachable node neither fails nor
  // delays the others' answers.
  std::vector<int> localRows;
  for (int row = 0; row < model_->rowCount(); ++row) {
    const TopologyModel::Node& node = model_->nodes()[static_cast<std::size_t>(row)];
    if (!node.remote) {
      localRows.push_back(row);
      model_->setFound(row, tr("starting..."));
      continue;
    }
    model_->setFound(row, tr("asking..."));
    const std::string address = node.address.toStdString();
    const std::string token = tokens[static_cast<std::size_t>(row)];
    const TlsPaths tls = this->tls();
    const ExperimentController* controller = controller_;
    runInBackground<NodeInfo>(
        this,
        [controller, address, token, tls] { return controller->queryNode(address, token, tls); },
        [this, row, generation](const std::optional<NodeInfo>& found, const QString& error) {
          if (generation != testGeneration_) return;
          model_->setFound(row, found ? describe(*found, true) : error, !found);
          finishTest(generation, found.has_value());
        });
  }
  if (localRows.empty()) return;

  // Local rows: the daemons a run would start, started for real and asked.
  const ExperimentController* controller = controller_;
  runInBackground<std::vector<NodeInfo>>(
      this, [controller, spec] { return controller->queryLocalNodes(spec.cluster); },
      [this, localRows, generation](const std::optional<std::vector<NodeInfo>>& found,
                                    const QString& error) {
        if (generation != testGeneration_) return;
        for (std::size_t i = 0; i < localRows.size(); ++i) {
          if (found && i < found->size()) {
            model_->setFound(localRows[i], describe((*found)[i], false));
          } else {
            model_->setFound(localRows[i], error, true);
          }
        }
        finishTest(generation, found.has_value());
      });
}

void TopologyPage::setController(ExperimentController* controller) {
  controller_ = controller;
  validate();
}

QString TopologyPage::content() const {
  return name() + '\n' + QString::fromStdString(cluster().dump());
}

void TopologyPage::markUnmodified() {
  editState_.loadStarted();
  if (editState_.update(content())) emit modifiedChanged(false);
}

}  // namespace dtlab::ui
