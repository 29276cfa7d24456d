#include "ui/pages/experiment_page.h"

#include <algorithm>

#include <QtCore/QLocale>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QFormLayout>
#include <QtWidgets/QGroupBox>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QScrollArea>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QStyledItemDelegate>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include "core/nn/model_kinds.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/local_trainer.h"
#include "core/train/strategy_registry.h"
#include "ui/help/context_help.h"
#include "ui/models/variants_model.h"
#include "ui/pages/setting_rows.h"

namespace dtlab::ui {
namespace {

// The model as the user edits it: its shape, size, cost per sample and what a replica holds.
QString modelSummary(const core::ExperimentSpec& spec) {
  const core::ReplicaFootprint f = core::replicaFootprint(spec);
  const auto mib = [](int64_t bytes) {
    return QString::number(static_cast<double>(bytes) / (1 << 20), 'f', bytes < (10 << 20) ? 2 : 0);
  };
  const QString shape = QString::fromStdString(
      core::modelKindOf(spec.model).shape(spec.model, core::sampleShapeOf(spec.dataset)));
  QString text = QObject::tr(
                     "%1: %2 parameters, %3 MFLOP per sample forward; a replica holds %4 MiB "
                     "of parameters, gradients and optimizer state")
                     .arg(shape)
                     .arg(QLocale().toString(static_cast<qlonglong>(f.parameters)))
                     .arg(2.0 * static_cast<double>(f.forwardMacsPerSample) / 1e6, 0, 'g', 3)
                     .arg(mib(f.stateBytes()));
  if (f.activationFloatsPerSample)
    text += QObject::tr(" and %1 MiB of activations at its batch of %2")
                .arg(mib(f.activationBytes()))
                .arg(f.localBatch);
  return text;
}

// Cells that take one of a list of names (strategy, partition, policy) are edited with a combo box
// of exactly those names, from the spec.
class ChoiceDelegate final : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option,
                        const QModelIndex& index) const override {
    const QStringList choices = index.data(VariantsModel::ChoicesRole).toStringList();
    if (choices.isEmpty()) return QStyledItemDelegate::createEditor(parent, option, index);
    auto* box = new QComboBox(parent);
    box->addItems(choices);
    return box;
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    if (auto* box = qobject_cast<QComboBox*>(editor)) {
      box->setCurrentText(index.data(Qt::EditRole).toString());
      return;
    }
    QStyledItemDelegate::setEditorData(editor, index);
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model,
                    const QModelIndex& index) const override {
    if (auto* box = qobject_cast<QComboBox*>(editor)) {
      model->setData(index, box->currentText());
      return;
    }
    QStyledItemDelegate::setModelData(editor, model, index);
  }
};

const char* kAsStored = "(as stored in the experiment)";

QSpinBox* spin(QWidget* parent, int min, int max) {
  auto* box = new QSpinBox(parent);
  box->setRange(min, max);
  box->setGroupSeparatorShown(true);
  return box;
}

QDoubleSpinBox* real(QWidget* parent, double min, double max, int decimals) {
  auto* box = new QDoubleSpinBox(parent);
  box->setRange(min, max);
  box->setDecimals(decimals);
  return box;
}

// Sets j[a][b] (creating objects on the way).
void put(nlohmann::json& j, const char* section, const char* key, nlohmann::json value) {
  if (!j.contains(section) || !j[section].is_object()) j[section] = nlohmann::json::object();
  j[section][key] = std::move(value);
}

nlohmann::json get(const nlohmann::json& j, const char* section, const char* key) {
  if (!j.is_object() || !j.contains(section) || !j[section].is_object() ||
      !j[section].contains(key))
    return nullptr;
  return j[section][key];
}

}  // namespace

ExperimentPage::ExperimentPage(QWidget* parent)
    : QWidget(parent),
      name_(new QLineEdit(this)),
      seed_(spin(this, 0, 2'000'000'000)),
      repeats_(spin(this, 1, static_cast<int>(core::kMaxRepeats))),
      dataset_(new QComboBox(this)),
      topology_(new QComboBox(this)),
      modelKind_(new QComboBox(this)),
      hidden_(new QLineEdit(this)),
      hiddenLabel_(new QLabel(tr("hidden layers"), this)),
      activation_(new QComboBox(this)),
      optimizer_(new QComboBox(this)),
      lr_(real(this, -1000.0, 1000.0, 5)),
      momentum_(real(this, -10.0, 10.0, 3)),
      batch_(spin(this, 0, 10'000'000)),
      epochs_(spin(this, 0, 1'000'000)),
      maxSteps_(spin(this, 0, 2'000'000'000)),
      maxSeconds_(real(this, 0.0, 1e7, 1)),
      target_(real(this, 0.0, 1.0, 4)),
      evalInterval_(spin(this, 0, 10'000'000)),
      checkpointEvery_(spin(this, 0, 2'000'000'000)),
      dataPartition_(new QComboBox(this)),
      precision_(new QComboBox(this)),
      alpha_(real(this, 0.0, 1000.0, 3)),
      variants_(new VariantsModel(this)),
      variantsView_(new QTableView(this)),
      summary_(new QLabel(this)),
      generalError_(new QLabel(this)),
      save_(new QPushButton(tr("Save"), this)),
      run_(new QPushButton(tr("Run"), this)) {
  setUpFields();
  connectSignals(buildLayout());
  showModelKind(/*resetValues=*/true);
}

// The choices of the combo boxes with their tooltips, the fields' hints and the variants
// table's columns.
void ExperimentPage::setUpFields() {
  for (const core::ModelKindDescriptor* kind : core::modelKinds()) {
    modelKind_->addItem(QString::fromStdString(kind->name));
    modelKind_->setItemData(modelKind_->count() - 1, QString::fromStdString(kind->summary),
                            Qt::ToolTipRole);
  }
  activation_->addItems({"relu", "gelu", "tanh"});
  optimizer_->addItems({"sgd", "adam", "adamw", "adadelta"});
  // Where each worker draws its batches from: the whole set, a random shard of its own, or a
  // label-skewed (Dirichlet) one; the tooltips say which.
  dataPartition_->addItem(tr("shared"), "shared");
  dataPartition_->addItem(tr("iid shards"), "iid");
  dataPartition_->addItem(tr("Dirichlet shards (label skew)"), "dirichlet");
  dataPartition_->setItemData(0,
                              tr("Every worker draws its slice of each global batch from the "
                                 "whole training set"),
                              Qt::ToolTipRole);
  dataPartition_->setItemData(1, tr("Each worker draws only from its own random shard"),
                              Qt::ToolTipRole);
  dataPartition_->setItemData(2,
                              tr("Each worker draws only from its own shard, whose classes "
                                 "follow Dirichlet(alpha) proportions: smaller alpha, more skew"),
                              Qt::ToolTipRole);
  // Reduced precision is the GPU's: the parser refuses it on a CPU topology, next to this row.
  precision_->addItem(tr("fp32"), "fp32");
  precision_->addItem(tr("tf32 (GPU)"), "tf32");
  precision_->addItem(tr("bf16 (GPU)"), "bf16");
  precision_->setItemData(0, tr("IEEE single precision everywhere"), Qt::ToolTipRole);
  precision_->setItemData(1,
                          tr("Matrix products on tensor cores with TF32 inputs, FP32 "
                             "accumulation; needs a topology on GPUs"),
                          Qt::ToolTipRole);
  precision_->setItemData(2,
                          tr("Matrix products with BF16 inputs, FP32 accumulation, FP32 master "
                             "weights; needs a topology on GPUs"),
                          Qt::ToolTipRole);
  repeats_->setSuffix(tr(" times"));
  hidden_->setPlaceholderText(tr("widths of the hidden layers, e.g. 128, 128"));
  target_->setSpecialValueText(tr("none"));
  maxSteps_->setSpecialValueText(tr("no limit"));
  epochs_->setSpecialValueText(tr("no limit"));
  maxSeconds_->setSpecialValueText(tr("no limit"));
  checkpointEvery_->setSpecialValueText(tr("none"));
  setUpHelp();
  generalError_->setWordWrap(true);
  generalError_->setStyleSheet("color: #b02020;");
  summary_->setObjectName("summary");
  summary_->setWordWrap(true);
  summary_->setStyleSheet("color: #444;");
  variantsView_->setModel(variants_);
  variantsView_->setItemDelegate(new ChoiceDelegate(variantsView_));
  variantsView_->verticalHeader()->hide();
  // The other columns show their values whole; the variant's name keeps room for a typical
  // one (18 characters) however many settings columns there are (the table scrolls sideways rather
  // than squeeze the names to "..."), and the user may widen it.
  QHeaderView* variantsHeader = variantsView_->horizontalHeader();
  variantsHeader->setSectionResizeMode(QHeaderView::ResizeToContents);
  variantsHeader->setSectionResizeMode(VariantsModel::kNameColumn, QHeaderView::Interactive);
  variantsHeader->resizeSection(
      VariantsModel::kNameColumn,
      variantsView_->fontMetrics().horizontalAdvance(QString(18, QLatin1Char('n'))) + 16);
  variantsView_->setMinimumHeight(120);
}

// Each field's tooltip, ending with where the documentation explains it, which F1 on it opens:
// the model kind's entry for the model (showModelKind), the row's strategy's for a variant's
// cell (VariantsModel), the guide's pages for the fields the spec's parser reads by hand.
void ExperimentPage::setUpHelp() {
  const QString repetitions = guideEntry("user-guide.md", "Repetitions");
  const QString shards = guideEntry("distributed-runs.md", "Non-IID data");
  const QString optimizer = guideEntry(kSpecPage, "optimizer");
  const QString training = guideEntry(kSpecPage, "training");
  const QString model = guideEntry(kSpecPage, "model");
  setReferenceTip(name_, tr("The experiment's name in the project"),
                  guideEntry(kSpecPage, "Top level"));
  setReferenceTip(seed_,
                  tr("The seed of the initial weights, the data order and emulated stragglers "
                     "(and of the dataset, unless it has its own)"),
                  repetitions);
  setReferenceTip(repeats_,
                  tr("Run every variant this many times, each repetition on its own seed (initial "
                     "weights, data order, stragglers) shared by its variants; the comparison "
                     "then shows medians with 95% intervals"),
                  repetitions);
  setReferenceTip(dataset_,
                  tr("The data to train on: one of the project's datasets, or the one stored in "
                     "the experiment"),
                  kDatasetKindsPage);
  setReferenceTip(topology_,
                  tr("The nodes to run on: one of the project's topologies, or the cluster "
                     "stored in the experiment"),
                  "distributed-runs.md");
  setReferenceTip(hidden_,
                  tr("Widths of the hidden layers, comma-separated (128, 128); empty: a linear "
                     "model"),
                  model);
  setReferenceTip(activation_, tr("The activation after each hidden layer"), model);
  setReferenceTip(optimizer_, tr("How the weights are updated: SGD, Adam, AdamW or Adadelta"),
                  optimizer);
  setReferenceTip(lr_, tr("The learning rate (> 0)"), optimizer);
  setReferenceTip(momentum_, tr("SGD's momentum, in [0, 1); the other optimizers have none"),
                  optimizer);
  setReferenceTip(precision_,
                  tr("The arithmetic of the matrix products: fp32, or on GPUs tf32 or bf16 (each "
                     "choice's tooltip says what it does)"),
                  "gpu.md");
  setReferenceTip(batch_,
                  tr("The global batch: the samples of one step over all workers (at most the "
                     "dataset's training samples)"),
                  training);
  setReferenceTip(epochs_,
                  tr("Passes over the training set; no limit: 0 (epochs, steps or seconds must "
                     "limit the run)"),
                  training);
  setReferenceTip(maxSteps_, tr("Global steps at most; no limit: 0"), training);
  setReferenceTip(maxSeconds_, tr("Seconds of training at most; no limit: 0"), training);
  setReferenceTip(
      target_, tr("Stop when the test accuracy reaches this; none: train to the limits"), training);
  setReferenceTip(evalInterval_, tr("Steps between evaluations of test loss and accuracy"),
                  training);
  setReferenceTip(
      checkpointEvery_,
      tr("Keep a checkpoint of the run in the project every this many steps (%1): for Run > "
         "Resume Run, for a variant that restarts on a lost node, and to restore a lost "
         "parameter-server shard")
          .arg(QString::fromStdString(core::strategyList(
              [](const core::StrategyDescriptor& d) { return d.traits.keepsCheckpoints; }))),
      guideEntry("distributed-runs.md", "Checkpoints and resume"));
  setReferenceTip(dataPartition_,
                  tr("Where each worker draws its batches from (each choice's tooltip says)"),
                  shards);
  setReferenceTip(alpha_,
                  tr("Dirichlet concentration: smaller is more skewed (0.1: a few classes a "
                     "worker)"),
                  shards);
  // A cell names its row's strategy's entry (VariantsModel's kReferenceEntryRole).
  setReferenceEntry(variantsView_, kStrategiesPage);
}

// The chosen model kind's summary and settings rows (with resetValues, at their defaults),
// their tooltips and F1 at the kind's entry.
void ExperimentPage::showModelKind(bool resetValues) {
  const core::ModelKindDescriptor* kind =
      core::findModelKind(modelKind_->currentText().toStdString());
  const QString entry = kind != nullptr ? modelKindEntry(kind->name) : kModelKindsPage;
  setReferenceTip(modelKind_,
                  kind != nullptr ? QString::fromStdString(kind->summary)
                                  : tr("A model kind this build does not have"),
                  entry);
  modelSettings_->show(modelSchema(), resetValues, entry);
  const bool readsHidden = kind == nullptr || kind->readsHidden;
  hiddenLabel_->setVisible(readsHidden);
  hidden_->setVisible(readsHidden);
}

// The form's groups (experiment, model and optimizer, limits), the variants table with its
// buttons and error, and the summary with Save and Run.
ExperimentPage::VariantButtons ExperimentPage::buildLayout() {
  auto* what = new QFormLayout();
  addRow(what, tr("Name"), "name", name_);
  // The seed and how many repetitions it seeds, on one line (the form stays as tall as it was).
  auto* seeding = new QWidget(this);
  auto* seedingLayout = new QHBoxLayout(seeding);
  seedingLayout->setContentsMargins(0, 0, 0, 0);
  seedingLayout->addWidget(seed_, 1);
  seedingLayout->addWidget(new QLabel(tr("run each variant"), this));
  seedingLayout->addWidget(repeats_);
  addRow(what, tr("Seed"), "seed", seeding);
  seed_->setObjectName("seed");
  repeats_->setObjectName("repeats");
  fields_["seed"].first = seed_;
  fields_["repeats"] = {repeats_, fields_["seed"].second};
  addRow(what, tr("Dataset"), "dataset", dataset_);
  addRow(what, tr("Cluster (topology)"), "cluster", topology_);
  auto* model = new QFormLayout();
  // The kind and its dense layers on one line (the form stays as tall as it was).
  auto* shape = new QWidget(this);
  auto* shapeLayout = new QHBoxLayout(shape);
  shapeLayout->setContentsMargins(0, 0, 0, 0);
  shapeLayout->addWidget(modelKind_);
  shapeLayout->addWidget(hiddenLabel_);
  shapeLayout->addWidget(hidden_, 1);
  addRow(model, tr("Model"), "model.kind", shape);
  shape->setObjectName("model.shape");
  modelKind_->setObjectName("model.kind");
  hidden_->setObjectName("model.hidden");
  fields_["model.kind"].first = modelKind_;
  fields_["model.hidden"] = {hidden_, fields_["model.kind"].second};
  addRow(model, tr("Activation"), "model.activation", activation_);
  // A row per setting any model kind declares, shown for the chosen kind.
  std::vector<SettingRows::Schema> modelKinds;
  for (const core::ModelKindDescriptor* kind : core::modelKinds())
    modelKinds.push_back(kind->parameters);
  modelSettings_ = new SettingRows(this, model, modelKinds, [this] { formChanged(); });
  addRow(model, tr("Optimizer"), "optimizer.kind", optimizer_);
  addRow(model, tr("Learning rate"), "optimizer.lr", lr_);
  addRow(model, tr("Momentum (sgd)"), "optimizer.momentum", momentum_);
  addRow(model, tr("Precision"), "training.precision", precision_);
  auto* limits = new QFormLayout();
  addRow(limits, tr("Global batch"), "training.batch_size", batch_);
  addRow(limits, tr("Epochs"), "training.epochs", epochs_);
  addRow(limits, tr("Max steps"), "training.max_steps", maxSteps_);
  addRow(limits, tr("Max seconds"), "training.max_seconds", maxSeconds_);
  addRow(limits, tr("Target test accuracy"), "training.target_accuracy", target_);
  addRow(limits, tr("Evaluate every (steps)"), "training.eval_interval", evalInterval_);
  addRow(limits, tr("Checkpoint every (steps)"), "training.checkpoint_every", checkpointEvery_);
  addRow(limits, tr("Training data"), "training.data_partition.kind", dataPartition_);
  addRow(limits, tr("Dirichlet alpha"), "training.data_partition.alpha", alpha_);

  auto box = [this](const QString& title, QLayout* layout) {
    auto* group = new QGroupBox(title, this);
    group->setLayout(layout);
    return group;
  };
  auto* variantButtons = new QHBoxLayout();
  VariantButtons buttons;
  buttons.add = new QPushButton(tr("Add variant"), this);
  buttons.remove = new QPushButton(tr("Remove selected"), this);
  variantButtons->addWidget(buttons.add);
  variantButtons->addWidget(buttons.remove);
  variantButtons->addStretch(1);
  auto* variantLayout = new QVBoxLayout();
  variantLayout->addWidget(variantsView_);
  variantLayout->addLayout(variantButtons);
  auto* variantsError = new QLabel(this);
  variantsError->setWordWrap(true);
  variantsError->setStyleSheet("color: #b02020;");
  variantsError->hide();
  variantLayout->addWidget(variantsError);
  fields_["variants"] = {variantsView_, variantsError};

  auto* actions = new QHBoxLayout();
  actions->addWidget(summary_, 1);
  actions->addWidget(save_);
  actions->addWidget(run_);

  auto* columns = new QHBoxLayout();
  auto* left = new QVBoxLayout();
  left->addWidget(box(tr("Experiment"), what));
  left->addWidget(box(tr("Model and optimizer"), model));
  left->addStretch(1);
  auto* right = new QVBoxLayout();
  right->addWidget(box(tr("Limits"), limits));
  right->addStretch(1);
  columns->addLayout(left, 1);
  columns->addLayout(right, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(columns);
  // The variants get the page's width: a row holds a strategy and its every setting.
  layout->addWidget(box(tr("Strategy variants (the same data; each repetition starts every variant "
                           "from the same weights)"),
                        variantLayout),
                    1);
  layout->addWidget(generalError_);
  layout->addLayout(actions);
  return buttons;
}

// Every field's change checks the form again; the buttons add and remove variants, save and
// run.
void ExperimentPage::connectSignals(const VariantButtons& buttons) {
  for (QSpinBox* b : {seed_, repeats_, batch_, epochs_, maxSteps_, evalInterval_, checkpointEvery_})
    connect(b, &QSpinBox::valueChanged, this, [this] { formChanged(); });
  for (QDoubleSpinBox* b : {lr_, momentum_, maxSeconds_, target_, alpha_})
    connect(b, &QDoubleSpinBox::valueChanged, this, [this] { formChanged(); });
  for (QComboBox* b : {dataset_, topology_, activation_, optimizer_, dataPartition_, precision_})
    connect(b, &QComboBox::currentIndexChanged, this, [this] { formChanged(); });
  connect(modelKind_, &QComboBox::currentIndexChanged, this, [this] {
    // Another kind starts from its own settings' defaults.
    if (!loading_) showModelKind(/*resetValues=*/true);
    formChanged();
  });
  for (QLineEdit* e : {name_, hidden_})
    connect(e, &QLineEdit::textChanged, this, [this] { formChanged(); });
  connect(variants_, &QAbstractItemModel::dataChanged, this, [this] { formChanged(); });
  connect(variants_, &QAbstractItemModel::rowsInserted, this, [this] { formChanged(); });
  connect(variants_, &QAbstractItemModel::rowsRemoved, this, [this] { formChanged(); });
  connect(buttons.add, &QPushButton::clicked, this, [this] { variants_->addVariant(); });
  connect(buttons.remove, &QPushButton::clicked, this,
          [this] { variants_->removeVariant(variantsView_->currentIndex().row()); });
  connect(save_, &QPushButton::clicked, this, [this] {
    if (error_.isEmpty())
      emit saveRequested(id_, name_->text().trimmed(), QString::fromStdString(spec_.dump()));
  });
  connect(run_, &QPushButton::clicked, this, [this] {
    if (error_.isEmpty() && runBlocked_.isEmpty())
      emit runRequested(QString::fromStdString(spec_.dump()));
  });
}

void ExperimentPage::addRow(QFormLayout* form, const QString& label, const QString& path,
                            QWidget* widget) {
  auto* error = new QLabel(this);
  error->setWordWrap(true);
  error->setStyleSheet("color: #b02020;");
  error->hide();
  auto* cell = new QWidget(this);
  auto* layout = new QVBoxLayout(cell);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(widget);
  layout->addWidget(error);
  widget->setObjectName(path);
  form->addRow(label, cell);
  fields_[path] = {widget, error};
}

QWidget* ExperimentPage::field(const QString& path) const {
  const auto it = fields_.find(path);
  return it == fields_.end() ? nullptr : it->second.first;
}

void ExperimentPage::edit(qint64 id, const nlohmann::json& spec,
                          const std::vector<core::Entity>& datasets,
                          const std::vector<core::Entity>& topologies) {
  loading_ = true;
  editState_.loadStarted();
  id_ = id;
  spec_ = spec.is_object() ? spec : nlohmann::json::object();
  datasets_ = datasets;
  topologies_ = topologies;
  dataset_->clear();
  dataset_->addItem(tr(kAsStored));
  for (const core::Entity& e : datasets_) dataset_->addItem(QString::fromStdString(e.name));
  topology_->clear();
  topology_->addItem(tr(kAsStored));
  for (const core::Entity& e : topologies_) topology_->addItem(QString::fromStdString(e.name));

  name_->setText(QString::fromStdString(spec_.value("name", std::string("experiment"))));
  seed_->setValue(spec_.value("seed", 1));
  repeats_->setValue(spec_.contains("repeats") && spec_["repeats"].is_number_integer()
                         ? static_cast<int>(std::clamp<int64_t>(spec_["repeats"].get<int64_t>(), 1,
                                                                core::kMaxRepeats))
                         : 1);
  const nlohmann::json modelKind = get(spec_, "model", "kind");
  const QString kindName = modelKind.is_string()
                               ? QString::fromStdString(modelKind.get<std::string>())
                               : modelKind_->itemText(0);
  // A kind this build does not have (a plug-in's) stays as it is, so that the parser says so
  // rather than the model silently becoming another kind.
  if (modelKind_->findText(kindName) < 0) modelKind_->addItem(kindName);
  modelKind_->setCurrentText(kindName);
  showModelKind(/*resetValues=*/true);
  if (spec_.contains("model")) modelSettings_->load(spec_["model"], modelSchema());
  const nlohmann::json hidden = get(spec_, "model", "hidden");
  QStringList widths;
  for (const auto& w : hidden.is_array() ? hidden : nlohmann::json::array({128, 128}))
    widths << QString::fromStdString(w.dump());
  hidden_->setText(widths.join(", "));
  const nlohmann::json activation = get(spec_, "model", "activation");
  activation_->setCurrentText(
      activation.is_string() ? QString::fromStdString(activation.get<std::string>()) : "relu");
  const nlohmann::json kind = get(spec_, "optimizer", "kind");
  optimizer_->setCurrentText(kind.is_string() ? QString::fromStdString(kind.get<std::string>())
                                              : "sgd");
  auto number = [&](const char* section, const char* key, double fallback) {
    const nlohmann::json v = get(spec_, section, key);
    return v.is_number() ? v.get<double>() : fallback;
  };
  lr_->setValue(number("optimizer", "lr", 0.05));
  momentum_->setValue(number("optimizer", "momentum", 0.9));
  batch_->setValue(static_cast<int>(number("training", "batch_size", 128)));
  epochs_->setValue(static_cast<int>(number("training", "epochs", 5)));
  maxSteps_->setValue(static_cast<int>(number("training", "max_steps", 0)));
  maxSeconds_->setValue(number("training", "max_seconds", 0.0));
  target_->setValue(number("training", "target_accuracy", 0.0));
  evalInterval_->setValue(static_cast<int>(number("training", "eval_interval", 200)));
  checkpointEvery_->setValue(static_cast<int>(number("training", "checkpoint_every", 0)));
  const nlohmann::json precision = get(spec_, "training", "precision");
  precision_->setCurrentIndex(
      std::max(0, precision_->findData(precision.is_string()
                                           ? QString::fromStdString(precision.get<std::string>())
                                           : QString("fp32"))));
  const nlohmann::json partition = get(spec_, "training", "data_partition");
  const std::string partitionKind =
      partition.is_object() && partition.value("kind", nlohmann::json()).is_string()
          ? partition["kind"].get<std::string>()
          : "shared";
  dataPartition_->setCurrentIndex(
      std::max(0, dataPartition_->findData(QString::fromStdString(partitionKind))));
  alpha_->setValue(partition.is_object() && partition.value("alpha", nlohmann::json()).is_number()
                       ? partition["alpha"].get<double>()
                       : 0.5);
  variants_->setVariants(spec_.contains("variants") ? spec_["variants"]
                                                    : nlohmann::json::array({{{"name", "sync"}}}));
  loading_ = false;
  formChanged();
}

std::span<const core::SettingSchema> ExperimentPage::modelSchema() const {
  const core::ModelKindDescriptor* kind =
      core::findModelKind(modelKind_->currentText().toStdString());
  return kind != nullptr ? std::span<const core::SettingSchema>(kind->parameters)
                         : std::span<const core::SettingSchema>();
}

void ExperimentPage::setRunBlocked(const QString& why) {
  if (why == runBlocked_) return;
  runBlocked_ = why;
  validate();
}

void ExperimentPage::formChanged() {
  if (loading_) return;
  spec_["name"] = name_->text().trimmed().toStdString();
  spec_["seed"] = seed_->value();
  spec_["repeats"] = repeats_->value();
  if (dataset_->currentIndex() > 0)
    spec_["dataset"] = datasets_[static_cast<std::size_t>(dataset_->currentIndex() - 1)].config;
  if (topology_->currentIndex() > 0)
    spec_["cluster"] = topologies_[static_cast<std::size_t>(topology_->currentIndex() - 1)].config;
  nlohmann::json widths = nlohmann::json::array();
  for (const QString& part : hidden_->text().split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const qint64 w = part.trimmed().toLongLong(&ok);
    // Not a number: passed on as text, so the spec's parser names the field.
    widths.push_back(ok ? nlohmann::json(w) : nlohmann::json(part.trimmed().toStdString()));
  }
  put(spec_, "model", "kind", modelKind_->currentText().toStdString());
  // Only the chosen kind's settings: the parser refuses another kind's.
  for (const core::ModelKindDescriptor* kind : core::modelKinds())
    for (const core::SettingSchema& s : kind->parameters) spec_["model"].erase(s.key);
  modelSettings_->write(spec_["model"], modelSchema());
  modelSettings_->updateVisibility(modelSchema());
  put(spec_, "model", "hidden", widths);
  put(spec_, "model", "activation", activation_->currentText().toStdString());
  put(spec_, "optimizer", "kind", optimizer_->currentText().toStdString());
  put(spec_, "optimizer", "lr", lr_->value());
  if (optimizer_->currentText() == "sgd") {
    put(spec_, "optimizer", "momentum", momentum_->value());
  } else if (spec_["optimizer"].contains("momentum")) {
    spec_["optimizer"].erase("momentum");
  }
  momentum_->setEnabled(optimizer_->currentText() == "sgd");
  put(spec_, "training", "batch_size", batch_->value());
  put(spec_, "training", "epochs", epochs_->value());
  put(spec_, "training", "max_steps", maxSteps_->value());
  put(spec_, "training", "max_seconds", maxSeconds_->value());
  if (target_->value() > 0.0) {
    put(spec_, "training", "target_accuracy", target_->value());
  } else if (spec_["training"].contains("target_accuracy")) {
    spec_["training"].erase("target_accuracy");
  }
  put(spec_, "training", "eval_interval", evalInterval_->value());
  put(spec_, "training", "checkpoint_every", checkpointEvery_->value());
  put(spec_, "training", "precision", precision_->currentData().toString().toStdString());
  // "alpha" only for Dirichlet shards: the parser refuses a field the kind does not read.
  const std::string partitionKind = dataPartition_->currentData().toString().toStdString();
  nlohmann::json partition = {{"kind", partitionKind}};
  if (partitionKind == "dirichlet") partition["alpha"] = alpha_->value();
  put(spec_, "training", "data_partition", partition);
  alpha_->setEnabled(partitionKind == "dirichlet");
  spec_["variants"] = variants_->variants();
  validate();
  if (editState_.update(content())) emit modifiedChanged(editState_.modified());
}

void ExperimentPage::validate() {
  error_.clear();
  errorField_.clear();
  core::ExperimentSpec parsed;
  QString where;  // the field path of a SpecError
  try {
    parsed = core::parseExperimentSpec(spec_);
  } catch (const core::SpecError& e) {
    error_ = QString::fromUtf8(e.what());
    where = QString::fromStdString(e.path());
  } catch (const std::exception& e) {
    error_ = QString::fromUtf8(e.what());
  }
  // A field's error goes next to the closest field the form has ("training.batch_size" to the
  // batch, "variants[1].name" to the variants); any other under the form.
  for (auto& [path, widgets] : fields_) widgets.second->hide();
  if (!where.isEmpty()) {
    QString best;
    for (const auto& [path, widgets] : fields_)
      if ((where == path || where.startsWith(path + ".") || where.startsWith(path + "[")) &&
          path.size() > best.size())
        best = path;
    if (!best.isEmpty()) {
      errorField_ = best;
      fields_[best].second->setText(error_);
      fields_[best].second->show();
    }
  }
  generalError_->setText(errorField_.isEmpty() ? error_ : QString());
  generalError_->setVisible(errorField_.isEmpty() && !error_.isEmpty());

  save_->setEnabled(error_.isEmpty());
  save_->setToolTip(error_.isEmpty() ? tr("Store this experiment in the project") : error_);
  const QString whyNot = !error_.isEmpty() ? error_ : runBlocked_;
  run_->setEnabled(whyNot.isEmpty());
  run_->setText(repeats_->value() > 1 ? tr("Run %1 times").arg(repeats_->value()) : tr("Run"));
  run_->setToolTip(whyNot.isEmpty() ? tr("Run every variant on the experiment's cluster") : whyNot);
  if (error_.isEmpty()) {
    const int64_t stepsPerEpoch =
        parsed.dataset.trainSize / std::max<int64_t>(1, parsed.training.batchSize);
    const int64_t steps = core::plannedSteps(parsed, stepsPerEpoch);
    const auto count = [](int64_t n, const char* one, const char* many) {
      return QString("%1 %2").arg(n).arg(n == 1 ? one : many);
    };
    summary_->setText(
        tr("%1 on %2 training samples, %3, %4, %5")
            .arg(QString::fromStdString(parsed.dataset.kind))
            .arg(parsed.dataset.trainSize)
            .arg((parsed.cluster.remote()
                      ? count(parsed.cluster.localNodes, "remote node", "remote nodes")
                      : count(parsed.cluster.localNodes, "local node", "local nodes")) +
                 (parsed.cluster.device == "cuda"
                      ? tr(" on GPUs (%1)").arg(core::toString(parsed.training.precision))
                      : QString()))
            .arg(count(static_cast<int64_t>(parsed.variants.size()), "variant", "variants") +
                 (parsed.repeats > 1 ? tr(" x %1 repetitions").arg(parsed.repeats) : QString()))
            .arg(steps > 0 ? tr("up to %1 steps each").arg(steps)
                           : tr("no step limit (time or target ends it)")) +
        "\n" + modelSummary(parsed));
  } else {
    summary_->clear();
  }
  emit validated();
}

QString ExperimentPage::content() const {
  return QString::fromStdString(spec_.dump());
}

void ExperimentPage::markUnmodified() {
  editState_.loadStarted();
  if (editState_.update(content())) emit modifiedChanged(false);
}

}  // namespace dtlab::ui
