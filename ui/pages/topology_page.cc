#include "ui/pages/topology_page.h"

#include <QtWidgets/QFormLayout>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include "core/spec/experiment_spec.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"
#include "ui/background.h"
#include "ui/models/topology_model.h"

namespace dtlab::ui {

TopologyPage::TopologyPage(QWidget* parent)
    : QWidget(parent),
      model_(new TopologyModel(this)),
      name_(new QLineEdit(this)),
      threads_(new QSpinBox(this)),
      addCount_(new QSpinBox(this)),
      table_(new QTableView(this)),
      error_(new QLabel(this)),
      save_(new QPushButton(tr("Save to project"), this)),
      test_(new QPushButton(tr("Test connection"), this)) {
  name_->setObjectName("name");
  threads_->setObjectName("threads_per_node");
  threads_->setRange(1, 256);
  addCount_->setRange(1, 64);
  addCount_->setValue(1);
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #b02020;");
  table_->setModel(model_);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  test_->setToolTip(tr("Start these daemons on this machine and ask each what it is"));

  auto* form = new QFormLayout();
  form->addRow(tr("Name"), name_);
  form->addRow(tr("CPU threads per node"), threads_);
  auto* add = new QPushButton(tr("Add local nodes"), this);
  auto* remove = new QPushButton(tr("Remove selected node"), this);
  auto* buttons = new QHBoxLayout();
  buttons->addWidget(addCount_);
  buttons->addWidget(add);
  buttons->addWidget(remove);
  buttons->addStretch(1);
  buttons->addWidget(test_);
  buttons->addWidget(save_);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(table_, 1);
  layout->addWidget(error_);

  connect(add, &QPushButton::clicked, this, [this] { addNodes(addCount_->value()); });
  connect(remove, &QPushButton::clicked, this, [this] {
    model_->removeNode(table_->currentIndex().row());
    validate();
  });
  connect(model_, &QAbstractItemModel::dataChanged, this, [this] { validate(); });
  connect(threads_, &QSpinBox::valueChanged, this, [this] { validate(); });
  connect(name_, &QLineEdit::textChanged, this, [this] { validate(); });
  connect(test_, &QPushButton::clicked, this, [this] { testConnection(); });
  connect(save_, &QPushButton::clicked, this, [this] {
    if (error().isEmpty())
      emit saveRequested(id_, name(), QString::fromStdString(cluster().dump()));
  });
}

void TopologyPage::edit(qint64 id, const QString& name, const nlohmann::json& cluster) {
  id_ = id;
  loading_ = true;  // the setters below validate; the form is complete only after them
  name_->setText(name);
  model_->setCluster(cluster);
  threads_->setValue(cluster.is_object() ? cluster.value("threads_per_node", 1) : 1);
  loading_ = false;
  editState_.loadStarted();
  validate();
}

QString TopologyPage::name() const {
  return name_->text().trimmed();
}

nlohmann::json TopologyPage::cluster() const {
  nlohmann::json c = model_->cluster();
  c["threads_per_node"] = threads_->value();
  return c;
}

QString TopologyPage::error() const {
  return error_->text();
}

void TopologyPage::addNodes(int count) {
  model_->addNodes(count);
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
  error_->setText(problem);
  error_->setVisible(!problem.isEmpty());
  save_->setEnabled(problem.isEmpty());
  save_->setToolTip(problem.isEmpty() ? tr("Store this topology in the project") : problem);
  test_->setEnabled(problem.isEmpty());
  if (!loading_ && editState_.update(name() + '\n' + QString::fromStdString(cluster().dump())))
    emit modifiedChanged(editState_.modified());
}

void TopologyPage::testConnection() {
  test_->setEnabled(false);
  for (int row = 0; row < model_->rowCount(); ++row) model_->setFound(row, tr("starting..."));
  const core::ExperimentSpec spec = core::parseExperimentSpec({{"cluster", cluster()}});
  runInBackground<std::vector<remote::NodeSummary>>(
      this,
      [spec] {
        std::vector<remote::LocalNodeOptions> options;
        for (int64_t i = 0; i < spec.cluster.localNodes; ++i) {
          const core::NodeConfig node =
              spec.cluster.nodes.empty() ? core::NodeConfig{} : spec.cluster.node(i);
          options.push_back(
              {node.speed, node.bandwidthMbps, node.latencyMs, spec.cluster.threadsPerNode});
        }
        remote::LocalCluster cluster(remote::defaultNodeBinary(), options);
        remote::Coordinator coordinator(cluster.addresses(), {});
        return coordinator.connect();
      },
      [this](const std::optional<std::vector<remote::NodeSummary>>& found, const QString& error) {
        test_->setEnabled(true);
        if (!found) {
          for (int row = 0; row < model_->rowCount(); ++row) model_->setFound(row, error);
          emit connectionTested(false);
          return;
        }
        for (std::size_t i = 0; i < found->size(); ++i) {
          const remote::NodeSummary& n = (*found)[i];
          model_->setFound(static_cast<int>(i), tr("dtlab-node %1 on %2, %3 cores, speed %4, %5")
                                                    .arg(QString::fromStdString(n.programVersion),
                                                         QString::fromStdString(n.hostname))
                                                    .arg(n.cores)
                                                    .arg(n.speed)
                                                    .arg(n.busy ? tr("busy") : tr("idle")));
        }
        emit connectionTested(true);
      });
}

}  // namespace dtlab::ui
