#include "ui/pages/run_page.h"

#include <algorithm>

#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include "core/metrics/metric_table.h"
#include "ui/models/run_metrics_model.h"

namespace dtlab::ui {
namespace {

QString number(const nlohmann::json& j, const char* key, int decimals) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return QStringLiteral("-");
  return QString::number(j[key].get<double>(), 'f', decimals);
}

QString eventLine(const core::RunEvent& e) {
  return QString("step %1  %2 ms  %3  %4\n")
      .arg(e.step, 6)
      .arg(e.wallMs, 9, 'f', 1)
      .arg(QString::fromStdString(e.kind), -10)
      .arg(QString::fromStdString(e.detail));
}

}  // namespace

RunPage::RunPage(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      facts_(new QLabel(this)),
      chartNote_(new QLabel(this)),
      dashboard_(new RunDashboard(this)),
      metrics_(new RunMetricsModel(this)),
      metricsView_(new QTableView(this)),
      events_(new QPlainTextEdit(this)),
      xAxis_(new QComboBox(this)),
      metricChoice_(new QComboBox(this)) {
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.35);
  big.setBold(true);
  title_->setFont(big);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  facts_->setWordWrap(true);
  facts_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  chartNote_->setStyleSheet("color: #666;");
  chartNote_->setWordWrap(true);

  dashboard_->setMinimumHeight(380);
  xAxis_->addItems({tr("x: step"), tr("x: time since start (s)"), tr("x: wall-clock time")});
  xAxis_->setToolTip(tr("What the x-axis of every chart counts"));
  connect(xAxis_, &QComboBox::currentIndexChanged, this,
          [this](int index) { dashboard_->setXAxis(static_cast<RunXAxis>(index)); });
  // Every metric of the table can be chosen; the ones this run has no points of say so.
  for (const core::MetricInfo& m : core::kMetricTable) {
    const QString name = QString::fromUtf8(m.name.data(), static_cast<qsizetype>(m.name.size()));
    const QString unit = QString::fromUtf8(m.unit.data(), static_cast<qsizetype>(m.unit.size()));
    metricChoice_->addItem(unit.isEmpty() ? name : QString("%1 (%2)").arg(name, unit), name);
    metricChoice_->setItemData(
        metricChoice_->count() - 1,
        QString("%1, per %2: %3")
            .arg(name, core::toString(m.scope),
                 QString::fromUtf8(m.description.data(),
                                   static_cast<qsizetype>(m.description.size()))),
        Qt::ToolTipRole);
  }
  metricChoice_->setToolTip(tr("The metric of the last chart (any metric of the metric table)"));
  connect(metricChoice_, &QComboBox::activated, this, [this](int index) {
    dashboard_->chooseMetric(metricChoice_->itemData(index).toString().toStdString());
  });
  connect(dashboard_, &RunDashboard::chosenMetricChanged, this, [this](const QString& key) {
    metricChoice_->setCurrentIndex(metricChoice_->findData(key));
  });
  auto* smoothing = new QDoubleSpinBox(this);
  smoothing->setRange(0.0, 0.99);
  smoothing->setSingleStep(0.1);
  smoothing->setDecimals(2);
  smoothing->setValue(dashboard_->smoothing());
  smoothing->setPrefix(tr("smoothing "));
  smoothing->setToolTip(
      tr("Moving average of each worker's per-step series (TensorBoard's, debiased); 0: raw"));
  connect(smoothing, &QDoubleSpinBox::valueChanged, dashboard_, &RunDashboard::setSmoothing);
  auto* reset = new QPushButton(tr("Reset view"), this);
  reset->setToolTip(tr("Show the whole run on every chart (or double-click a chart)"));
  connect(reset, &QPushButton::clicked, dashboard_, &RunDashboard::resetView);

  metricsView_->setModel(metrics_);
  metricsView_->verticalHeader()->hide();
  metricsView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  metricsView_->horizontalHeader()->setStretchLastSection(true);
  metricsView_->setSelectionBehavior(QAbstractItemView::SelectRows);
  metricsView_->setAlternatingRowColors(true);
  metricsView_->verticalHeader()->setDefaultSectionSize(metricsView_->fontMetrics().height() + 8);
  events_->setReadOnly(true);
  events_->setMaximumBlockCount(2000);
  events_->setLineWrapMode(QPlainTextEdit::NoWrap);

  auto* lower = new QSplitter(Qt::Horizontal, this);
  lower->addWidget(metricsView_);
  lower->addWidget(events_);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 2);
  auto* split = new QSplitter(Qt::Vertical, this);
  auto* top = new QWidget(split);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  auto* chartBar = new QHBoxLayout();
  auto* hint = new QLabel(
      tr("Drag to pan, wheel to zoom: every chart follows. Click a legend entry to hide its "
         "series."),
      this);
  hint->setWordWrap(true);
  hint->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the page
  hint->setStyleSheet("color: #666;");
  chartBar->addWidget(hint, 1);
  chartBar->addWidget(new QLabel(tr("Sixth chart:"), this));
  chartBar->addWidget(metricChoice_);
  chartBar->addWidget(xAxis_);
  chartBar->addWidget(smoothing);
  chartBar->addWidget(reset);
  topLayout->addLayout(chartBar);
  topLayout->addWidget(dashboard_, 1);
  topLayout->addWidget(chartNote_);
  split->addWidget(top);
  split->addWidget(lower);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(facts_);
  layout->addWidget(split, 1);
}

QString RunPage::headline() const {
  return title_->text();
}

QString RunPage::chartNote() const {
  return chartNote_->text();
}

void RunPage::appendLive(const std::vector<LivePoint>& points) {
  const bool before = dashboard_->downsampled();
  const std::size_t events = dashboard_->events().size();
  dashboard_->appendLive(points);
  // Events that came live join the list too.
  for (std::size_t i = events; i < dashboard_->events().size(); ++i)
    events_->appendPlainText(eventLine(dashboard_->events()[i]).trimmed());
  if (dashboard_->downsampled() != before) updateNote();
}

void RunPage::setXAxis(RunXAxis axis) {
  if (xAxis_->currentIndex() != static_cast<int>(axis))
    xAxis_->setCurrentIndex(static_cast<int>(axis));  // calls the dashboard
}

void RunPage::chooseMetric(const QString& key) {
  dashboard_->chooseMetric(key.toStdString());
}

void RunPage::toggleSeries(int graph) {
  if (graph >= 0 && graph < dashboard_->graphCount())
    dashboard_->toggleSeries(dashboard_->graph(graph));
}

QString RunPage::valuesAt(double x, RunDashboard::Chart chart) const {
  return dashboard_->valuesAt(chart, x);
}

void RunPage::updateNote() {
  chartNote_->setText(
      dashboard_->downsampled()
          ? tr("Long series are drawn reduced (from the store: each interval's minimum and "
               "maximum; live, past %1 points a series: one point of every few). Axes of "
               "timings and rates span their 1st to 99th percentile.")
                .arg(kMaxLivePoints)
          : QString());
  chartNote_->setVisible(!chartNote_->text().isEmpty());
}

void RunPage::showRun(const RunDetail& d) {
  const core::RunRecord& r = d.run;
  runId_ = r.id;
  title_->setText(QString("Run #%1: %2").arg(r.id).arg(QString::fromStdString(r.name)));
  QString facts = QString("<b>%1</b> &middot; %2 &middot; seed %3")
                      .arg(QString::fromStdString(r.strategy).toHtmlEscaped(),
                           QString::fromUtf8(core::toString(r.status)).toHtmlEscaped())
                      .arg(r.seed);
  const nlohmann::json& s = d.summary;
  if (s.is_object()) {
    facts += QString(" &middot; %1 steps in %2 s &middot; %3 samples/s &middot; test accuracy %4")
                 .arg(s.value("steps", 0))
                 .arg(number(s, "wall_s", 1), number(s, "samples_per_s", 0),
                      number(s, "final_test_accuracy", 4));
    if (s.contains("time_to_target_s") && s["time_to_target_s"].is_number())
      facts += QString(" &middot; target reached after %1 s").arg(number(s, "time_to_target_s", 2));
    facts += QString(" &middot; utilisation %1, waiting %2")
                 .arg(number(s, "mean_utilization", 2), number(s, "mean_wait_fraction", 2));
  }
  if (!r.error.empty())
    facts += "<br><span style='color:#b02020'>" + QString::fromStdString(r.error).toHtmlEscaped() +
             "</span>";
  facts_->setText(facts);

  dashboard_->setRun(d);
  updateNote();
  // The chooser says which metrics this run has points of.
  for (int i = 0; i < metricChoice_->count(); ++i) {
    const std::string key = metricChoice_->itemData(i).toString().toStdString();
    const bool recorded = std::any_of(d.metrics.begin(), d.metrics.end(),
                                      [&](const core::RunMetric& m) { return m.key == key; });
    metricChoice_->setItemData(i, recorded ? QVariant() : QVariant(QColor(150, 150, 150)),
                               Qt::ForegroundRole);
  }
  metricChoice_->setCurrentIndex(
      metricChoice_->findData(QString::fromStdString(dashboard_->chosenMetric())));

  metrics_->setMetrics(d.metrics);
  QString text;
  for (const core::RunEvent& e : d.events) text += eventLine(e);
  events_->setPlainText(text);
}

}  // namespace dtlab::ui
