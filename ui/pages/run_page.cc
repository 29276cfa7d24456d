#include "ui/pages/run_page.h"

#include <qcustomplot.h>

#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include "ui/charts/palette.h"
#include "ui/models/run_metrics_model.h"

namespace dtlab::ui {
namespace {

QString number(const nlohmann::json& j, const char* key, int decimals) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return QStringLiteral("-");
  return QString::number(j[key].get<double>(), 'f', decimals);
}

}  // namespace

RunPage::RunPage(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      facts_(new QLabel(this)),
      chartNote_(new QLabel(this)),
      chart_(new QCustomPlot(this)),
      metrics_(new RunMetricsModel(this)),
      metricsView_(new QTableView(this)),
      events_(new QPlainTextEdit(this)) {
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.35);
  big.setBold(true);
  title_->setFont(big);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  facts_->setWordWrap(true);
  facts_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  chartNote_->setStyleSheet("color: #666;");

  chart_->setMinimumHeight(260);
  chart_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom | QCP::iSelectLegend);
  chart_->xAxis->setLabel(tr("step"));
  chart_->yAxis->setLabel(tr("training loss"));
  chart_->yAxis2->setLabel(tr("test accuracy"));
  chart_->yAxis2->setVisible(true);
  chart_->legend->setVisible(true);
  // Loss falls to the bottom and accuracy rises to the top: the middle right stays free.
  chart_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignVCenter);

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
  topLayout->addWidget(chart_, 1);
  topLayout->addWidget(chartNote_);
  split->addWidget(top);
  split->addWidget(lower);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(facts_);
  layout->addWidget(split, 1);
}

QString RunPage::headline() const {
  return title_->text();
}

void RunPage::appendLive(const std::vector<LivePoint>& points) {
  bool added = false;
  for (const LivePoint& p : points) {
    if (p.runId != runId_) continue;
    QCPGraph* graph = nullptr;
    for (int g = 0; g < chart_->graphCount(); ++g)
      if (chart_->graph(g)->property("worker").toInt() == p.worker) graph = chart_->graph(g);
    if (graph == nullptr) {
      // The first point of a worker (or of the accuracy) this page has seen.
      const bool accuracy = p.worker < 0;
      graph = chart_->addGraph(chart_->xAxis, accuracy ? chart_->yAxis2 : chart_->yAxis);
      QPen pen(seriesColour(chart_->graphCount()));
      pen.setWidthF(accuracy ? 2.0 : 1.0);  // wide lines of many points are slow to draw
      if (accuracy) pen.setStyle(Qt::DashLine);
      graph->setPen(pen);
      graph->setName(accuracy ? tr("test accuracy") : tr("loss, worker %1").arg(p.worker));
      graph->setProperty("worker", p.worker);
    }
    // Steps arrive in order per worker: appending keeps the data sorted without a sort.
    graph->addData(static_cast<double>(p.step), p.value);
    if (graph->data()->size() > kMaxLivePoints)
      graph->data()->removeBefore(graph->data()->at(graph->data()->size() - kMaxLivePoints)->key);
    added = true;
  }
  if (!added) return;
  chart_->xAxis->rescale();
  chart_->yAxis->rescale();
  chart_->replot(QCustomPlot::rpQueuedReplot);
}

void RunPage::showRun(const RunDetail& d) {
  const core::RunRecord& r = d.run;
  runId_ = r.id;
  title_->setText(QString("Run #%1: %2").arg(r.id).arg(QString::fromStdString(r.name)));
  QString facts = QString("<b>%1</b> &middot; %2 &middot; seed %3")
                      .arg(QString::fromStdString(r.strategy).toHtmlEscaped(),
                           QString::fromStdString(r.status).toHtmlEscaped())
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

  chart_->clearGraphs();
  bool downsampled = false;
  bool haveAccuracy = false;
  int colour = 0;
  for (const RunDetail::Curve& c : d.curves) {
    const bool accuracy = c.key == core::metric::kTestAccuracy;
    if (c.key == core::metric::kTestLoss) continue;  // the chart compares train loss and accuracy
    QCPGraph* g = chart_->addGraph(chart_->xAxis, accuracy ? chart_->yAxis2 : chart_->yAxis);
    g->setData(QVector<double>(c.steps.begin(), c.steps.end()),
               QVector<double>(c.values.begin(), c.values.end()), true);
    QPen pen(seriesColour(colour++));
    pen.setWidthF(accuracy ? 2.0 : 1.0);  // wide lines of many points are slow to draw
    if (accuracy) {
      pen.setStyle(Qt::DashLine);
      g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
      haveAccuracy = true;
    }
    g->setPen(pen);
    g->setName(accuracy ? tr("test accuracy") : tr("loss, worker %1").arg(c.worker));
    g->setProperty("worker", accuracy ? -1 : c.worker);
    downsampled = downsampled || c.downsampled;
  }
  chart_->rescaleAxes();
  if (haveAccuracy) chart_->yAxis2->setRange(0.0, 1.0);
  chart_->replot();
  chartNote_->setText(d.curves.empty() ? tr("No points recorded yet.")
                      : downsampled
                          ? tr("Long series are shown reduced to their minimum and maximum per "
                               "interval (downsampled by the store).")
                          : QString());
  chartNote_->setVisible(!chartNote_->text().isEmpty());

  metrics_->setMetrics(d.metrics);
  QString text;
  for (const core::RunEvent& e : d.events)
    text += QString("step %1  %2 ms  %3  %4\n")
                .arg(e.step, 6)
                .arg(e.wallMs, 9, 'f', 1)
                .arg(QString::fromStdString(e.kind), -10)
                .arg(QString::fromStdString(e.detail));
  events_->setPlainText(text);
}

}  // namespace dtlab::ui
