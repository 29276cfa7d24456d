#include "ui/pages/predict_page.h"

#include <qcustomplot.h>

#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTableWidget>
#include <QtWidgets/QTextBrowser>
#include <QtWidgets/QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/analysis/comparison.h"
#include "core/analysis/run_calibration.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "ui/background.h"
#include "ui/charts/palette.h"
#include "ui/models/project_access.h"

namespace dtlab::ui {

struct PredictPage::Outcome {
  std::string experiment;
  std::optional<int64_t> calibrationId;
  core::sim::Calibration calibration;
  std::vector<core::VariantPrediction> predictions;
  std::vector<core::MeasuredPoint> measured;
  std::string missing;
  std::string topology;  // what the prediction is for, when not the spec's cluster
  std::string hosts;     // where the nodes run (core::hostAssumption)
};

namespace {

struct FigureInfo {
  PredictPage::Figure figure;
  const char* label;
  bool logarithmic;
};
constexpr FigureInfo kFigures[] = {
    {PredictPage::Figure::kStepMs, "Time per step (ms)", true},
    {PredictPage::Figure::kSamplesPerS, "Samples per second", true},
    {PredictPage::Figure::kUtilization, "Utilisation (compute / wall)", false},
    {PredictPage::Figure::kStaleness, "Mean staleness (pushes)", false},
    {PredictPage::Figure::kTimeToTarget, "Time to target (s)", true},
};

std::optional<double> predicted(const core::ScalePoint& s, PredictPage::Figure f) {
  if (s.stepMs <= 0.0) return std::nullopt;
  switch (f) {
    case PredictPage::Figure::kStepMs:
      return s.stepMs;
    case PredictPage::Figure::kSamplesPerS:
      return s.samplesPerS;
    case PredictPage::Figure::kUtilization:
      return s.utilization;
    case PredictPage::Figure::kStaleness:
      return s.meanStaleness;
    case PredictPage::Figure::kTimeToTarget:
      return s.timeToTargetS;
  }
  return std::nullopt;
}

std::optional<double> measuredFigure(const core::MeasuredPoint& m, PredictPage::Figure f) {
  switch (f) {
    case PredictPage::Figure::kStepMs:
      return m.stepMs > 0.0 ? std::optional(m.stepMs) : std::nullopt;
    case PredictPage::Figure::kSamplesPerS:
      return m.samplesPerS > 0.0 ? std::optional(m.samplesPerS) : std::nullopt;
    case PredictPage::Figure::kUtilization:
      return m.utilization;
    case PredictPage::Figure::kStaleness:
      return m.meanStaleness;
    case PredictPage::Figure::kTimeToTarget:
      if (m.stepsToTarget) return static_cast<double>(*m.stepsToTarget) * m.stepMs * 1e-3;
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

PredictPage::PredictPage(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      nodesEdit_(new QLineEdit(this)),
      figure_(new QComboBox(this)),
      throughputOnly_(new QCheckBox(tr("Throughput only"), this)),
      nodesPerHost_(new QSpinBox(this)),
      predictButton_(new QPushButton(tr("Predict"), this)),
      calibrateButton_(new QPushButton(tr("Calibrate from Runs"), this)),
      topologyButton_(new QPushButton(tr("Topology..."), this)),
      topologyLabel_(new QLabel(tr("the spec's cluster"), this)),
      chart_(new QCustomPlot(this)),
      table_(new QTableWidget(this)),
      notes_(new QTextBrowser(this)) {
  title_->setWordWrap(true);
  title_->setTextFormat(Qt::RichText);
  nodesEdit_->setText("16,64,256,1024,4096");
  nodesEdit_->setToolTip(tr("Node counts to predict, comma-separated"));
  nodesEdit_->setMaximumWidth(260);
  for (const FigureInfo& f : kFigures) figure_->addItem(tr(f.label));
  throughputOnly_->setToolTip(
      tr("Predict throughput only: no convergence model, no time to "
         "target"));
  nodesPerHost_->setRange(0, 1 << 20);
  nodesPerHost_->setSpecialValueText(tr("auto"));
  nodesPerHost_->setToolTip(
      tr("Nodes to a host, sharing its cores (as many as the calibrated hosts had). auto: the "
         "spec's cluster size where the calibrated runs' nodes all shared one host, else 1; "
         "1: each node a machine of its own"));
  calibrateButton_->setToolTip(
      tr("Fit the simulator to this experiment's completed runs and store the calibration in "
         "the project (dtlab-cli calibrate)"));

  // What to predict, and for which cluster (a row each).
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Nodes:"), this));
  controls->addWidget(nodesEdit_);
  controls->addWidget(new QLabel(tr("Figure:"), this));
  controls->addWidget(figure_);
  controls->addWidget(throughputOnly_);
  controls->addStretch(1);
  controls->addWidget(calibrateButton_);
  controls->addWidget(predictButton_);
  auto* cluster = new QHBoxLayout;
  cluster->addWidget(new QLabel(tr("Cluster:"), this));
  cluster->addWidget(topologyButton_);
  cluster->addWidget(topologyLabel_, 1);
  cluster->addWidget(new QLabel(tr("Nodes per host:"), this));
  cluster->addWidget(nodesPerHost_);

  chart_->setMinimumHeight(260);
  chart_->legend->setVisible(true);
  chart_->legend->setFont(font());
  chart_->xAxis->setLabel(tr("Nodes"));
  chart_->xAxis->setScaleType(QCPAxis::stLogarithmic);
  QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
  ticker->setLogBase(2);
  chart_->xAxis->setTicker(ticker);
  // The legend beside the plot, not over it.
  auto* legendRect = new QCPLayoutGrid;
  chart_->plotLayout()->addElement(0, 1, legendRect);
  legendRect->addElement(0, 0, chart_->legend);
  legendRect->addElement(1, 0, new QCPLayoutElement(chart_));  // takes the height left
  legendRect->setMargins(QMargins(0, 8, 8, 0));
  legendRect->setRowStretchFactor(0, 0.001);
  legendRect->setRowStretchFactor(1, 1);
  chart_->plotLayout()->setColumnStretchFactor(1, 0.001);

  const QStringList headers = {tr("Variant"),   tr("Strategy"),     tr("Nodes"), tr("Step (ms)"),
                               tr("Band (ms)"), tr("Samples/s"),    tr("Util"),  tr("Staleness"),
                               tr("Shared"),    tr("To target (s)")};
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  notes_->setOpenLinks(false);

  auto* lower = new QSplitter(Qt::Horizontal, this);
  lower->addWidget(table_);
  lower->addWidget(notes_);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(chart_);
  split->addWidget(lower);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addLayout(controls);
  layout->addLayout(cluster);
  layout->addWidget(split, 1);

  connect(predictButton_, &QPushButton::clicked, this, [this] { start(false); });
  connect(nodesEdit_, &QLineEdit::returnPressed, this, [this] { start(false); });
  connect(calibrateButton_, &QPushButton::clicked, this, [this] { calibrate(); });
  topologyButton_->setToolTip(
      tr("Predict for another cluster: a JSON file of switch levels (fanout, bandwidth_mbps, "
         "oversubscription, latency_ms) and node speed shares; cancel to go back to the "
         "spec's cluster"));
  connect(topologyButton_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Topology"), QString(),
                                                      tr("Topologies (*.json);;All files (*)"));
    const QString error = setTopologyFile(path);
    if (!error.isEmpty()) emit failed(error);
  });
  connect(throughputOnly_, &QCheckBox::toggled, this, [this] { start(false); });
  connect(nodesPerHost_, &QSpinBox::editingFinished, this, [this] { start(false); });
  connect(figure_, &QComboBox::currentIndexChanged, this, [this] { draw(); });
}

void PredictPage::showExperiment(const std::string& path, const std::string& experiment,
                                 bool calibrateFirst) {
  path_ = path;
  experiment_ = experiment;
  start(calibrateFirst);
}

void PredictPage::calibrate() {
  start(true);
}

void PredictPage::setNodes(const std::vector<int>& nodes) {
  QStringList text;
  for (int n : nodes) text << QString::number(n);
  nodesEdit_->setText(text.join(','));
}

void PredictPage::setNodesPerHost(int nodes) {
  nodesPerHost_->setValue(nodes);
  start(false);
}

QString PredictPage::setTopologyFile(const QString& path) {
  if (path.isEmpty()) {
    topology_.reset();
    topologyLabel_->setText(tr("the spec's cluster"));
  } else {
    try {
      topology_ = core::sim::Topology::fromFile(path.toStdString());
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
    topologyLabel_->setText(QString::fromStdString(topology_->describe()));
  }
  start(false);
  return {};
}

void PredictPage::setFigure(Figure figure) {
  for (std::size_t i = 0; i < std::size(kFigures); ++i)
    if (kFigures[i].figure == figure) figure_->setCurrentIndex(static_cast<int>(i));
}

std::vector<int> PredictPage::nodesAsked(QString* error) const {
  std::vector<int> nodes;
  for (const QString& item : nodesEdit_->text().split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const int n = item.trimmed().toInt(&ok);
    if (!ok || n < 1 || n > (1 << 20)) {
      *error = tr("Nodes: '%1' is not a node count (1 to 1048576)").arg(item.trimmed());
      return {};
    }
    nodes.push_back(n);
  }
  if (nodes.empty()) *error = tr("Nodes: give at least one node count, e.g. 16,64,256");
  return nodes;
}

void PredictPage::start(bool calibrateFirst) {
  if (path_.empty() || busy_) return;
  QString error;
  const std::vector<int> nodes = nodesAsked(&error);
  if (!error.isEmpty()) {
    emit failed(error);
    return;
  }
  nodes_ = nodes;
  busy_ = true;
  predictButton_->setEnabled(false);
  calibrateButton_->setEnabled(false);
  title_->setText(calibrateFirst ? tr("Calibrating from the experiment's runs...")
                                 : tr("Predicting..."));
  const std::string path = path_;
  const std::string name = experiment_;
  const bool throughputOnly = throughputOnly_->isChecked();
  const int nodesPerHost = nodesPerHost_->value();
  const std::optional<core::sim::Topology> topology = topology_;
  // Calibrating writes the calibration into the project; predicting only reads it.
  const auto work = [name, nodes, throughputOnly, nodesPerHost, topology,
                     calibrateFirst](core::ProjectStore& opened) -> Outcome {
    core::ProjectStore* store = &opened;
    const core::Entity entity =
        core::experimentNamedOrLatest(*store, name.empty() ? std::nullopt : std::optional(name));
    const core::ExperimentSpec spec = core::parseExperimentSpecText(entity.config.dump());
    if (calibrateFirst) store->saveCalibration(core::calibrateRuns(*store, {}, spec.name).toJson());
    Outcome o;
    o.experiment = spec.name;
    o.measured = core::measuredPoints(*store, spec.name);
    const auto found = core::calibrationOf(*store, spec.name);
    if (!found) {
      o.missing =
          "No calibration of this experiment yet. <b>Calibrate from Runs</b> fits one from "
          "its completed runs (runs of 1 and 2 nodes of each strategy, at more than one "
          "batch size, let it tell the model's terms apart).";
      return o;
    }
    o.calibrationId = found->first;
    o.calibration = found->second;
    core::PredictOptions options;
    options.nodes = nodes;
    options.throughputOnly = throughputOnly;
    options.nodesPerHost = nodesPerHost;
    options.topology = topology;
    if (topology) o.topology = topology->describe();
    for (const core::MeasuredPoint& m : o.measured)
      if (std::find(options.nodes.begin(), options.nodes.end(), m.nodes) == options.nodes.end())
        options.nodes.push_back(m.nodes);
    std::sort(options.nodes.begin(), options.nodes.end());
    o.predictions = core::predictScale(spec, o.calibration, options, o.measured);
    o.hosts = core::hostAssumption(spec, o.calibration, options);
    return o;
  };
  const auto done = [this](const std::optional<Outcome>& outcome, const QString& error) {
    busy_ = false;
    predictButton_->setEnabled(true);
    calibrateButton_->setEnabled(true);
    if (!outcome) {
      title_->setText(tr("<b>No prediction</b>: %1").arg(error.toHtmlEscaped()));
      emit failed(error);
      return;
    }
    take(*outcome);
    emit shown();
  };
  if (calibrateFirst)
    writeProject<Outcome>(this, path, work, done);
  else
    readProject<Outcome>(this, path, work, done);
}

void PredictPage::take(const Outcome& o) {
  experiment_ = o.experiment;
  calibrationId_ = o.calibrationId;
  calibration_ = o.calibration;
  predictions_ = o.predictions;
  measured_ = o.measured;
  missing_ = o.missing;
  onTopology_ = o.topology;
  hosts_ = o.hosts;
  const QString name = QString::fromStdString(experiment_).toHtmlEscaped();
  if (!missing_.empty()) {
    title_->setText(tr("<b>%1</b> at scale: %2").arg(name, QString::fromStdString(missing_)));
  } else {
    QStringList runs;
    for (int64_t r : calibration_.runs) runs << QString::number(r);
    title_->setText(tr("<b>%1</b> at scale, simulated with calibration %2 (runs %3)%4")
                        .arg(name)
                        .arg(*calibrationId_)
                        .arg(runs.join(", "))
                        .arg(onTopology_.empty()
                                 ? QString()
                                 : tr(", on a tree of switches: %1 (its runs ran on the spec's "
                                      "cluster: not drawn)")
                                       .arg(QString::fromStdString(onTopology_).toHtmlEscaped())));
  }
  draw();
  fillTable();
  // The calibration's fits and notes, the convergence models, the checks against runs.
  QString notes;
  if (!missing_.empty()) {
    notes = tr("%1 measured run(s) of this experiment.").arg(measured_.size());
  } else {
    notes += "<b>" + tr("Hosts") + "</b>: " + QString::fromStdString(hosts_).toHtmlEscaped() +
             tr(" (the Shared column: by how much)") + "<br>";
    notes += "<b>" + tr("Calibration") + "</b><br>";
    for (const QString& line : QString::fromStdString(calibration_.describe()).split('\n'))
      if (!line.isEmpty()) notes += line.toHtmlEscaped() + "<br>";
    std::set<std::string> models;
    for (const core::VariantPrediction& p : predictions_)
      if (!p.convergence.empty()) models.insert(p.convergence);
    if (!models.empty()) notes += "<b>" + tr("Convergence model") + "</b><br>";
    for (const std::string& m : models) notes += QString::fromStdString(m).toHtmlEscaped() + "<br>";
    bool header = false;
    for (const core::MeasuredPoint& m :
         onTopology_.empty() ? measured_ : std::vector<core::MeasuredPoint>{})
      for (const core::VariantPrediction& p : predictions_) {
        if (!p.covers(m.variant)) continue;
        for (const core::ScalePoint& s : p.points) {
          if (s.nodes != m.nodes || s.stepMs <= 0.0 || m.stepMs <= 0.0) continue;
          if (!header) notes += "<b>" + tr("Measured runs against the simulator") + "</b><br>";
          header = true;
          notes += tr("run %1 (%2, %3 nodes): %4 ms a step, predicted %5 (%6%)<br>")
                       .arg(m.runId)
                       .arg(QString::fromStdString(m.variant).toHtmlEscaped())
                       .arg(m.nodes)
                       .arg(m.stepMs, 0, 'f', 3)
                       .arg(s.stepMs, 0, 'f', 3)
                       .arg(100.0 * (s.stepMs / m.stepMs - 1.0), 0, 'f', 1);
        }
      }
  }
  notes_->setHtml(notes);
}

void PredictPage::draw() {
  chart_->clearGraphs();
  const FigureInfo& info = kFigures[std::max(0, figure_->currentIndex())];
  chart_->yAxis->setLabel(tr(info.label));
  chart_->yAxis->setScaleType(info.logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (info.logarithmic)
    chart_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  else
    chart_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  double low = std::numeric_limits<double>::infinity(), high = 0.0;
  int maxNodes = 1;
  const auto extend = [&](double y) {
    if (!(y > 0.0) && info.logarithmic) return;
    low = std::min(low, y);
    high = std::max(high, y);
  };
  std::size_t colour = 0;
  bool anyMeasured = false;
  for (const core::VariantPrediction& p : predictions_) {
    const QColor c = seriesColour(colour++);
    if (!p.unmodelled.empty()) continue;
    QVector<double> x, y, bandLow, bandHigh;
    for (const core::ScalePoint& s : p.points) {
      const std::optional<double> v = predicted(s, info.figure);
      if (!v || (info.logarithmic && !(*v > 0.0))) continue;
      x << s.nodes;
      y << *v;
      bandLow << s.lowMs;
      bandHigh << s.highMs;
      extend(*v);
      maxNodes = std::max(maxNodes, s.nodes);
    }
    if (x.isEmpty()) continue;
    if (info.figure == Figure::kStepMs) {
      // The band: between the slower and faster simulations, filled.
      QCPGraph* lower = chart_->addGraph();
      lower->setData(x, bandLow, true);
      lower->setPen(Qt::NoPen);
      lower->removeFromLegend();
      QCPGraph* upper = chart_->addGraph();
      upper->setData(x, bandHigh, true);
      upper->setPen(Qt::NoPen);
      QColor fill = c;
      fill.setAlpha(30);
      upper->setBrush(fill);
      upper->setChannelFillGraph(lower);
      upper->removeFromLegend();
      for (double b : bandLow) extend(b);
      for (double b : bandHigh) extend(b);
    }
    QCPGraph* line = chart_->addGraph();
    line->setName(QString::fromStdString(p.variant));
    line->setData(x, y, true);
    line->setPen(QPen(c, 2));
    line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c, Qt::white, 6));
    // The variant's measured runs, on the same axes.
    QVector<double> mx, my;
    for (const core::MeasuredPoint& m : measured_) {
      if (!p.covers(m.variant) || !onTopology_.empty()) continue;
      const std::optional<double> v = measuredFigure(m, info.figure);
      if (!v || (info.logarithmic && !(*v > 0.0))) continue;
      mx << m.nodes;
      my << *v;
      extend(*v);
    }
    if (!mx.isEmpty()) {
      QCPGraph* runs = chart_->addGraph();
      runs->setData(mx, my);
      runs->setLineStyle(QCPGraph::lsNone);
      runs->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, QPen(c, 2), QBrush(), 11));
      runs->removeFromLegend();
      anyMeasured = true;
    }
  }
  if (anyMeasured) {  // one legend entry says what the crosses are
    QCPGraph* key = chart_->addGraph();
    key->setName(tr("measured runs"));
    key->setLineStyle(QCPGraph::lsNone);
    key->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCross, QPen(Qt::darkGray, 2), QBrush(), 11));
  }
  chart_->xAxis->setRange(0.8, std::max(2.0, maxNodes * 1.25));
  if (high > 0.0) {
    if (info.logarithmic)
      chart_->yAxis->setRange(low / 1.3, high * 1.3);
    else
      chart_->yAxis->setRange(std::min(0.0, low), high * 1.1 + 1e-9);
  }
  chart_->replot();
}

void PredictPage::fillTable() {
  table_->setRowCount(0);
  table_->clearSpans();
  const auto add = [this](const QStringList& cells) {
    const int row = table_->rowCount();
    table_->insertRow(row);
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c >= 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(row, c, item);
    }
    // A row that says why there is no figure says it across the figures' columns.
    if (cells.size() < table_->columnCount()) {
      table_->setSpan(row, cells.size() - 1, 1, table_->columnCount() - cells.size() + 1);
      table_->item(row, cells.size() - 1)->setTextAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    }
  };
  for (const core::VariantPrediction& p : predictions_) {
    const QString variant = QString::fromStdString(p.variant);
    const QString strategy = QString::fromStdString(p.strategy);
    if (!p.unmodelled.empty()) {
      add({variant, strategy, "–",
           tr("no prediction: %1").arg(QString::fromStdString(p.unmodelled))});
      continue;
    }
    for (const core::ScalePoint& s : p.points) {
      if (std::find(nodes_.begin(), nodes_.end(), s.nodes) == nodes_.end()) continue;
      if (s.stepMs <= 0.0) {
        add({variant, strategy, QString::number(s.nodes), tr("a node without a sample")});
        continue;
      }
      add({variant, strategy, QString::number(s.nodes), QString::number(s.stepMs, 'f', 3),
           QString("%1 – %2").arg(s.lowMs, 0, 'f', 3).arg(s.highMs, 0, 'f', 3),
           QString::number(s.samplesPerS, 'f', 0), QString::number(s.utilization, 'f', 2),
           QString::number(s.meanStaleness, 'f', 2), QString("x%1").arg(s.hostStretch, 0, 'f', 2),
           s.timeToTargetS ? QString::number(*s.timeToTargetS, 'f', 1) : QString("–")});
    }
  }
}

}  // namespace dtlab::ui
