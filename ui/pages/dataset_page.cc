#include "ui/pages/dataset_page.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include <QtCore/QTimer>
#include <QtGui/QFontDatabase>
#include <QtGui/QPainter>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QFormLayout>
#include <QtWidgets/QGroupBox>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QVBoxLayout>

#include "core/data/dataset_kinds.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "ui/background.h"
#include "ui/charts/palette.h"
#include "ui/help/context_help.h"
#include "ui/pages/setting_rows.h"

namespace dtlab::ui {
namespace {

QSpinBox* spin(QWidget* parent, int min, int max, int value) {
  auto* box = new QSpinBox(parent);
  box->setRange(min, max);
  box->setValue(value);
  box->setGroupSeparatorShown(true);
  return box;
}

int intOf(const nlohmann::json& c, const char* key, int fallback) {
  return c.is_object() && c.contains(key) && c[key].is_number() ? c[key].get<int>() : fallback;
}

int clampedInt(double v) {
  return static_cast<int>(std::clamp(v, double{std::numeric_limits<int>::min()},
                                     double{std::numeric_limits<int>::max()}));
}

// A sequence kind's samples as text: per sample its input tokens over its targets, aligned
// token under token, cut at kShownTokens; the floor the kind states above them.
constexpr std::size_t kShownTokens = 20;

QString tokenLine(const std::vector<float>& tokens, int width) {
  QStringList cells;
  for (std::size_t t = 0; t < std::min(tokens.size(), kShownTokens); ++t)
    cells << QString::number(static_cast<int>(tokens[t])).rightJustified(width);
  if (tokens.size() > kShownTokens) cells << QStringLiteral("... (%1)").arg(tokens.size());
  return cells.join(' ');
}

QString tokenText(const DatasetPreview& p) {
  const int width = static_cast<int>(QString::number(std::max<int64_t>(p.classes - 1, 0)).size());
  QStringList lines;
  lines << QObject::tr("Test samples as token ids (vocabulary of %1): inputs, then targets")
               .arg(p.classes);
  if (p.lossFloor)
    lines << QObject::tr("No model can do better than %1 nats per token (perplexity %2)")
                 .arg(*p.lossFloor, 0, 'f', 3)
                 .arg(std::exp(*p.lossFloor), 0, 'f', 2);
  for (std::size_t i = 0; i < p.sequences.size(); ++i) {
    lines << QString();
    const QString in = QStringLiteral("#%1 in  ").arg(i);
    lines << in + tokenLine(p.sequences[i].inputs, width);
    lines << QStringLiteral("out ").rightJustified(in.size()) +
                 tokenLine(p.sequences[i].targets, width);
  }
  return lines.join('\n');
}

}  // namespace

DatasetPage::DatasetPage(QWidget* parent)
    : QWidget(parent),
      name_(new QLineEdit(this)),
      kind_(new QComboBox(this)),
      summary_(new QLabel(this)),
      trainSize_(spin(this, 0, 50'000'000, 20000)),
      testSize_(spin(this, 0, 10'000'000, 2000)),
      classes_(spin(this, 1, 4096, 10)),
      features_(spin(this, 1, 65536, 32)),
      seed_(spin(this, 0, 2'000'000'000, 1)),
      workers_(spin(this, 1, 64, 4)),
      partition_(new QComboBox(this)),
      alpha_(new QDoubleSpinBox(this)),
      error_(new QLabel(this)),
      images_(new QLabel(this)),
      tokens_(new QLabel(this)),
      shardNote_(new QLabel(this)),
      save_(new QPushButton(tr("Save to project"), this)),
      scatter_(new QCustomPlot(this)),
      histogram_(new QCustomPlot(this)),
      debounce_(new QTimer(this)) {
  // Object names let tests and screen readers find the fields (a parameter's is its key).
  const std::pair<QWidget*, const char*> names[] = {
      {name_, "name"},          {kind_, "kind"},       {trainSize_, "train_size"},
      {testSize_, "test_size"}, {classes_, "classes"}, {features_, "features"},
      {seed_, "seed"},          {workers_, "workers"}, {partition_, "partition"},
      {alpha_, "alpha"}};
  for (const auto& [widget, objectName] : names) widget->setObjectName(objectName);
  for (const core::DatasetKindDescriptor* kind : core::datasetKinds()) {
    kind_->addItem(QString::fromStdString(kind->name));
    kind_->setItemData(kind_->count() - 1, QString::fromStdString(kind->summary), Qt::ToolTipRole);
  }
  partition_->addItem("iid");
  partition_->addItem("dirichlet");
  alpha_->setRange(0.01, 100.0);
  alpha_->setValue(0.5);
  // Each field's tooltip ends with where the documentation explains it, which F1 on it opens;
  // the kind's own (kind, classes, features, its parameters) follow the kind (showKind).
  setReferenceTip(name_, tr("The dataset's name in the project"), "user-guide.md");
  setReferenceTip(trainSize_,
                  tr("Samples generated for training (a global batch may not exceed them)"),
                  kDatasetKindsPage);
  setReferenceTip(testSize_,
                  tr("Samples generated for testing: a run's test loss and accuracy are "
                     "measured on them"),
                  kDatasetKindsPage);
  setReferenceTip(seed_, tr("The generator's seed: the same seed makes the same samples"),
                  kDatasetKindsPage);
  const QString shards = guideEntry("distributed-runs.md", "Non-IID data");
  setReferenceTip(workers_,
                  tr("Workers whose shards the preview shows (the preview's only: a run has a "
                     "worker per node of its cluster)"),
                  shards);
  setReferenceTip(partition_,
                  tr("How the preview divides the training set among the workers: random "
                     "shards (iid), or shards whose classes follow Dirichlet(alpha) proportions "
                     "(an experiment's training.data_partition)"),
                  shards);
  setReferenceTip(alpha_,
                  tr("Dirichlet concentration: smaller is more skewed (0.1: a few classes a "
                     "worker)"),
                  shards);
  for (QLabel* note : {summary_, shardNote_}) {
    note->setWordWrap(true);
    note->setStyleSheet("color: #666;");
  }
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #b02020;");

  auto* left = new QVBoxLayout();
  left->addWidget(buildFields());
  left->addWidget(error_);
  left->addWidget(save_);
  left->addWidget(buildShardForm());
  left->addStretch(1);
  auto* layout = new QHBoxLayout(this);
  layout->addLayout(left, 2);
  layout->addLayout(buildPreview(), 5);
  connectFields();
  showKind(/*resetValues=*/true);
}

QWidget* DatasetPage::buildFields() {
  form_ = new QFormLayout();
  form_->addRow(tr("Name"), name_);
  form_->addRow(tr("Kind"), kind_);
  form_->addRow(QString(), summary_);
  form_->addRow(tr("Training samples"), trainSize_);
  form_->addRow(tr("Test samples"), testSize_);
  form_->addRow(tr("Classes"), classes_);
  form_->addRow(tr("Features"), features_);
  // One row per parameter key (and type) any kind declares; showKind() shows those of the
  // chosen kind with its label, range and help.
  std::vector<SettingRows::Schema> kinds;
  for (const core::DatasetKindDescriptor* kind : core::datasetKinds())
    kinds.push_back(kind->parameters);
  parameters_ = new SettingRows(this, form_, kinds, [this] { changed(); });
  form_->addRow(tr("Seed"), seed_);
  auto* fields = new QGroupBox(tr("Dataset"), this);
  fields->setLayout(form_);
  return fields;
}

QWidget* DatasetPage::buildShardForm() {
  auto* shardForm = new QFormLayout();
  shardForm->addRow(tr("Workers"), workers_);
  shardForm->addRow(tr("Partition"), partition_);
  shardForm->addRow(tr("Dirichlet alpha"), alpha_);
  auto* shards = new QGroupBox(tr("Preview of the workers' shards"), this);
  shards->setLayout(shardForm);
  return shards;
}

QLayout* DatasetPage::buildPreview() {
  scatter_->setMinimumSize(360, 260);
  scatter_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  scatter_->plotLayout()->insertRow(0);
  scatter_->plotLayout()->addElement(
      0, 0,
      new QCPTextElement(scatter_, tr("Test samples"), QFont(font().family(), -1, QFont::Bold)));
  histogram_->setMinimumSize(360, 200);
  histogram_->plotLayout()->insertRow(0);
  histogram_->plotLayout()->addElement(
      0, 0,
      new QCPTextElement(histogram_, tr("Classes in each worker's training shard"),
                         QFont(font().family(), -1, QFont::Bold)));
  histogram_->xAxis->setLabel(tr("worker"));
  histogram_->yAxis->setLabel(tr("samples"));
  auto* right = new QVBoxLayout();
  right->addWidget(scatter_, 3);
  right->addWidget(images_);
  tokens_->setObjectName("tokenPreview");
  tokens_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  tokens_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  tokens_->setVisible(false);
  right->addWidget(tokens_, 3);
  right->addWidget(histogram_, 2);
  right->addWidget(shardNote_);
  return right;
}

void DatasetPage::connectFields() {
  debounce_->setSingleShot(true);
  debounce_->setInterval(150);
  connect(debounce_, &QTimer::timeout, this, [this] { computePreview(); });
  for (QSpinBox* box : {trainSize_, testSize_, classes_, features_, seed_, workers_})
    connect(box, &QSpinBox::valueChanged, this, [this] { changed(); });
  connect(alpha_, &QDoubleSpinBox::valueChanged, this, [this] { changed(); });
  connect(kind_, &QComboBox::currentIndexChanged, this, [this] {
    // A new kind starts from its own defaults (two spirals: 2 arms and 2 features).
    showKind(/*resetValues=*/!loading_);
    changed();
  });
  connect(partition_, &QComboBox::currentIndexChanged, this, [this] { changed(); });
  connect(name_, &QLineEdit::textChanged, this, [this] { changed(); });
  connect(save_, &QPushButton::clicked, this, [this] {
    if (!error().isEmpty()) return;
    emit saveRequested(id_, name(), QString::fromStdString(config().dump()));
  });
}

const core::DatasetKindDescriptor& DatasetPage::kind() const {
  const core::DatasetKindDescriptor* kind =
      core::findDatasetKind(kind_->currentText().toStdString());
  return kind != nullptr ? *kind : *core::findDatasetKind({});
}

void DatasetPage::showKind(bool resetValues) {
  const core::DatasetKindDescriptor& k = kind();
  const QSignalBlocker blockClasses(classes_);
  const QSignalBlocker blockFeatures(features_);
  summary_->setText(QString::fromStdString(k.summary));
  if (resetValues || k.classes.fixed()) classes_->setValue(clampedInt(k.classes.defaultValue));
  if (resetValues || k.features.fixed) features_->setValue(clampedInt(k.features.defaultValue));
  const QString entry = datasetKindEntry(k.name);
  const QString kindName = QString::fromStdString(k.name);
  setReferenceTip(kind_, QString::fromStdString(k.summary), entry);
  classes_->setEnabled(!k.classes.fixed());
  setReferenceTip(classes_,
                  k.classes.fixed() ? tr("Fixed at %1 for %2").arg(k.classes.minimum).arg(kindName)
                                    : tr("%1 to %2").arg(k.classes.minimum).arg(k.classes.maximum),
                  entry);
  features_->setEnabled(!k.features.fixed);
  setReferenceTip(features_,
                  k.features.fixed
                      ? tr("Fixed at %1 for %2").arg(k.features.defaultValue).arg(kindName)
                      : tr("Features of each sample: any number, %1 by default for %2")
                            .arg(k.features.defaultValue)
                            .arg(kindName),
                  entry);
  // A sequence kind's classes are its vocabulary and its features the tokens of a sample.
  if (auto* label = qobject_cast<QLabel*>(form_->labelForField(classes_)))
    label->setText(k.tokens ? tr("Vocabulary") : tr("Classes"));
  if (auto* label = qobject_cast<QLabel*>(form_->labelForField(features_)))
    label->setText(k.tokens ? tr("Tokens a sample") : tr("Features"));
  parameters_->show(k.parameters, resetValues, entry);
}

void DatasetPage::edit(qint64 id, const QString& name, const nlohmann::json& c) {
  loading_ = true;
  editState_.loadStarted();
  id_ = id;
  name_->setText(name);
  const std::string kindName = c.is_object() && c.contains("kind") && c["kind"].is_string()
                                   ? c["kind"].get<std::string>()
                                   : kind_->itemText(0).toStdString();
  // A kind this build does not have (a plug-in's) stays as it is, so the form says so and
  // Save is refused, rather than the dataset silently becoming another kind.
  if (kind_->findText(QString::fromStdString(kindName)) < 0)
    kind_->addItem(QString::fromStdString(kindName));
  kind_->setCurrentText(QString::fromStdString(kindName));
  showKind(/*resetValues=*/true);  // what the config leaves out reads as the kind's default
  trainSize_->setValue(intOf(c, "train_size", 20000));
  testSize_->setValue(intOf(c, "test_size", 2000));
  classes_->setValue(intOf(c, "classes", classes_->value()));
  features_->setValue(intOf(c, "features", features_->value()));
  seed_->setValue(intOf(c, "seed", 1));
  parameters_->load(c, kind().parameters);
  loading_ = false;
  changed();
}

QString DatasetPage::name() const {
  return name_->text().trimmed();
}

nlohmann::json DatasetPage::config() const {
  const core::DatasetKindDescriptor& k = kind();
  nlohmann::json c = {{"kind", kind_->currentText().toStdString()},
                      {"train_size", trainSize_->value()},
                      {"test_size", testSize_->value()},
                      {"seed", seed_->value()}};
  // Fields a kind fixes are left out, so the parser does not refuse them.
  if (!k.features.fixed) c["features"] = features_->value();
  if (!k.classes.fixed()) c["classes"] = classes_->value();
  parameters_->write(c, k.parameters);
  return c;
}

QString DatasetPage::error() const {
  return error_->text();
}

void DatasetPage::changed() {
  if (loading_) return;
  alpha_->setEnabled(partition_->currentText() == "dirichlet");
  // A parameter that applies only while another holds some value shows only then.
  parameters_->updateVisibility(kind().parameters);
  // Checked here, at once, so that Save (and the window's unsaved-changes question) never
  // offers a form the parser refuses; the preview follows when it is computed.
  QString problem;
  std::string path;
  try {
    core::parseExperimentSpec({{"dataset", config()}});
  } catch (const core::SpecError& e) {
    problem = QString::fromUtf8(e.what());
    path = e.path();
  } catch (const std::exception& e) {
    problem = QString::fromUtf8(e.what());
  }
  markField(path);
  showError(problem);
  if (editState_.update(content())) emit modifiedChanged(editState_.modified());
  debounce_->start();
}

void DatasetPage::markField(const std::string& path) {
  constexpr std::string_view kSection = "dataset.";
  QWidget* editor = nullptr;
  if (path.starts_with(kSection))
    editor = findChild<QWidget*>(QString::fromStdString(path.substr(kSection.size())));
  if (editor != nullptr && !editor->isVisibleTo(this)) editor = nullptr;
  errorField_ = editor != nullptr ? QString::fromStdString(path) : QString();
  if (marked_ == editor) return;
  if (marked_ != nullptr) marked_->setStyleSheet({});
  marked_ = editor;
  if (marked_ != nullptr) marked_->setStyleSheet("border: 1px solid #b02020;");
}

void DatasetPage::showError(QString problem) {
  if (problem.isEmpty() && name().isEmpty()) problem = tr("name: must not be empty");
  error_->setText(problem);
  error_->setVisible(!problem.isEmpty());
  save_->setEnabled(problem.isEmpty());
  save_->setToolTip(problem.isEmpty() ? tr("Store this dataset in the project") : problem);
}

void DatasetPage::computePreview() {
  const quint64 request = ++request_;
  const nlohmann::json c = config();
  const int workers = workers_->value();
  core::PartitionConfig partition;
  partition.kind = partition_->currentText() == "dirichlet" ? core::PartitionKind::kDirichlet
                                                            : core::PartitionKind::kIid;
  partition.alpha = alpha_->value();
  partition.seed = static_cast<uint64_t>(seed_->value());
  runInBackground<DatasetPreview>(
      this, [c, workers, partition] { return computeDatasetPreview(c, workers, partition); },
      [this, request](const std::optional<DatasetPreview>& p, const QString& error) {
        if (request != request_) return;  // the form changed again meanwhile
        DatasetPreview shown = p ? *p : DatasetPreview{};
        if (!p) shown.error = error.toStdString();
        showPreview(shown);
      });
}

void DatasetPage::showPreview(const DatasetPreview& p) {
  preview_ = p;
  showError(QString::fromStdString(p.error));

  scatter_->clearGraphs();
  if (p.error.empty()) {
    if (p.classification) {
      for (int64_t k = 0; k < p.classes; ++k) {
        QVector<double> xs, ys;
        for (std::size_t i = 0; i < p.label.size(); ++i) {
          if (p.label[i] != k) continue;
          xs.push_back(p.x[i]);
          ys.push_back(p.y[i]);
        }
        QCPGraph* g = scatter_->addGraph();
        g->setData(xs, ys);
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssDisc, seriesColour(static_cast<std::size_t>(k)), 4));
        g->setName(tr("class %1").arg(k));
      }
    } else {
      QCPGraph* g = scatter_->addGraph();
      g->setData(QVector<double>(p.x.begin(), p.x.end()), QVector<double>(p.y.begin(), p.y.end()));
      g->setLineStyle(QCPGraph::lsNone);
      g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, seriesColour(0), 4));
      g->setName(tr("samples"));
    }
    scatter_->xAxis->setLabel(tr("feature 0"));
    scatter_->yAxis->setLabel(p.features > 1 ? tr("feature 1") : tr("target"));
    if (p.features > 2)
      scatter_->xAxis->setLabel(tr("feature 0 (of %1; the first two are shown)").arg(p.features));
    scatter_->legend->setVisible(p.classification && p.classes <= 10);
    scatter_->rescaleAxes();
  }
  scatter_->replot();

  images_->setVisible(!p.images.empty());
  if (!p.images.empty()) {
    const int kSide = static_cast<int>(p.imageSide);
    constexpr int kScale = 2, kGap = 6;
    const int n = static_cast<int>(p.images.size());
    QImage canvas(n * (kSide * kScale + kGap), kSide * kScale + 16, QImage::Format_RGB32);
    canvas.fill(palette().window().color());
    QPainter painter(&canvas);
    for (int i = 0; i < n; ++i) {
      QImage image(kSide, kSide, QImage::Format_Grayscale8);
      for (int r = 0; r < kSide; ++r)
        for (int c = 0; c < kSide; ++c) {
          const float v =
              std::clamp(p.images[static_cast<std::size_t>(i)][r * kSide + c], 0.0f, 1.0f);
          image.setPixel(c, r, qRgb(int(v * 255), int(v * 255), int(v * 255)));
        }
      const int left = i * (kSide * kScale + kGap);
      painter.drawImage(QRect(left, 0, kSide * kScale, kSide * kScale), image);
      painter.drawText(QRect(left, kSide * kScale, kSide * kScale, 16), Qt::AlignCenter,
                       tr("class %1").arg(p.imageLabels[static_cast<std::size_t>(i)]));
    }
    images_->setPixmap(QPixmap::fromImage(canvas));
  }

  scatter_->setVisible(p.sequences.empty());
  tokens_->setVisible(!p.sequences.empty());
  if (!p.sequences.empty()) tokens_->setText(tokenText(p));

  histogram_->clearPlottables();
  QCPBars* below = nullptr;
  const auto& counts = p.shardClassCounts;
  for (std::size_t k = 0; !counts.empty() && k < counts.front().size(); ++k) {
    auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
    QVector<double> keys, values;
    for (std::size_t w = 0; w < counts.size(); ++w) {
      keys.push_back(static_cast<double>(w));
      values.push_back(static_cast<double>(counts[w][k]));
    }
    bars->setData(keys, values);
    bars->setWidth(0.7);
    bars->setBrush(seriesColour(k));
    bars->setPen(Qt::NoPen);
    bars->setName(tr("class %1").arg(k));
    if (below != nullptr) bars->moveAbove(below);
    below = bars;
  }
  QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
  ticker->setTickStep(1.0);
  histogram_->xAxis->setTicker(ticker);
  histogram_->rescaleAxes();
  histogram_->xAxis->setRange(-0.6,
                              std::max<double>(0.6, static_cast<double>(counts.size()) - 0.4));
  histogram_->replot();
  shardNote_->setText(QString::fromStdString(p.shardNote));
  shardNote_->setVisible(!p.shardNote.empty());
  emit previewShown();
}

QString DatasetPage::content() const {
  return name() + '\n' + QString::fromStdString(config().dump());
}

void DatasetPage::markUnmodified() {
  editState_.loadStarted();
  if (editState_.update(content())) emit modifiedChanged(false);
}

}  // namespace dtlab::ui
