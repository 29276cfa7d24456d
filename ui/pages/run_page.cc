#include "ui/pages/run_page.h"

#include <qcustomplot.h>

#include <cmath>

#include <QtWidgets/QComboBox>
#include <QtWidgets/QHBoxLayout>
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
      events_(new QPlainTextEdit(this)),
      xAxis_(new QComboBox(this)) {
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.35);
  big.setBold(true);
  title_->setFont(big);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  facts_->setWordWrap(true);
  facts_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  chartNote_->setStyleSheet("color: #666;");

  chart_->setMinimumHeight(260);
  chart_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  chart_->xAxis->setLabel(tr("step"));
  chart_->yAxis->setLabel(tr("training loss"));
  chart_->yAxis2->setLabel(tr("test accuracy"));
  chart_->yAxis2->setVisible(true);
  chart_->legend->setVisible(true);
  // Loss falls to the bottom and accuracy rises to the top: the middle right stays free.
  chart_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignVCenter);
  // A crosshair that follows the mouse and lists every visible series' value under it.
  crossLine_ = new QCPItemStraightLine(chart_);
  crossLine_->setPen(QPen(QColor(0, 0, 0, 90), 1, Qt::DotLine));
  crossLine_->setVisible(false);
  crossText_ = new QCPItemText(chart_);
  crossText_->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  crossText_->position->setType(QCPItemPosition::ptAxisRectRatio);
  crossText_->position->setCoords(0.01, 0.01);
  crossText_->setTextAlignment(Qt::AlignLeft);
  crossText_->setBrush(QColor(255, 255, 255, 220));
  crossText_->setPadding(QMargins(4, 2, 4, 2));
  crossText_->setVisible(false);
  connect(chart_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) { moveCrosshair(e); });
  // A click on a legend entry hides or shows its series.
  connect(chart_, &QCustomPlot::legendClick, this,
          [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
            if (auto* entry = qobject_cast<QCPPlottableLegendItem*>(item))
              for (int g = 0; g < chart_->graphCount(); ++g)
                if (chart_->graph(g) == entry->plottable()) toggleSeries(g);
          });
  xAxis_->addItems({tr("x: step"), tr("x: wall time (s)")});
  connect(xAxis_, &QComboBox::currentIndexChanged, this,
          [this](int index) { setWallTimeAxis(index == 1); });

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
  chartBar->addStretch(1);
  chartBar->addWidget(xAxis_);
  topLayout->addLayout(chartBar);
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
  const bool wall = xAxis_->currentIndex() == 1;
  bool added = false;
  for (const LivePoint& p : points) {
    if (p.runId != runId_) continue;
    // Kept in the detail too, so that switching the x-axis redraws them.
    RunDetail::Curve* curve = nullptr;
    for (RunDetail::Curve& c : detail_.curves)
      if ((p.worker < 0 && c.key == core::metric::kTestAccuracy) ||
          (p.worker >= 0 && c.key == core::metric::kLoss && c.worker == p.worker))
        curve = &c;
    if (curve == nullptr) {
      RunDetail::Curve added;
      added.key = p.worker < 0 ? core::metric::kTestAccuracy : core::metric::kLoss;
      added.worker = p.worker < 0 ? -1 : p.worker;
      detail_.curves.push_back(std::move(added));
      curve = &detail_.curves.back();
    }
    if (static_cast<int>(curve->steps.size()) < kMaxLivePoints) {
      curve->steps.push_back(static_cast<double>(p.step));
      curve->seconds.push_back(p.wallMs / 1000.0);
      curve->values.push_back(p.value);
    }
    QCPGraph* graph = nullptr;
    for (int g = 0; g < chart_->graphCount(); ++g)
      if (chart_->graph(g)->property("worker").toInt() == p.worker) graph = chart_->graph(g);
    if (graph == nullptr) {
      // The first point of a worker (or of the accuracy) this page has seen.
      const bool accuracy = p.worker < 0;
      graph = chart_->addGraph(chart_->xAxis, accuracy ? chart_->yAxis2 : chart_->yAxis);
      QPen pen(seriesColour(static_cast<std::size_t>(chart_->graphCount() - 1)));
      pen.setWidthF(accuracy ? 2.0 : 1.0);  // wide lines of many points are slow to draw
      if (accuracy) pen.setStyle(Qt::DashLine);
      graph->setPen(pen);
      graph->setName(accuracy ? tr("test accuracy") : tr("loss, worker %1").arg(p.worker));
      graph->setProperty("worker", p.worker);
    }
    // Points arrive in order per worker: appending keeps the data sorted without a sort.
    graph->addData(wall ? p.wallMs / 1000.0 : static_cast<double>(p.step), p.value);
    if (graph->data()->size() > kMaxLivePoints)
      graph->data()->removeBefore(graph->data()->at(graph->data()->size() - kMaxLivePoints)->key);
    added = true;
  }
  if (!added) return;
  chart_->xAxis->rescale();
  chart_->yAxis->rescale();
  chart_->replot(QCustomPlot::rpQueuedReplot);
}

void RunPage::setWallTimeAxis(bool wall) {
  if ((xAxis_->currentIndex() == 1) != wall) {
    xAxis_->setCurrentIndex(wall ? 1 : 0);  // calls back here
    return;
  }
  drawChart();
}

void RunPage::toggleSeries(int graph) {
  if (graph < 0 || graph >= chart_->graphCount()) return;
  QCPGraph* g = chart_->graph(graph);
  g->setVisible(!g->visible());
  if (QCPPlottableLegendItem* item = chart_->legend->itemWithPlottable(g))
    item->setTextColor(g->visible() ? Qt::black : QColor(160, 160, 160));
  chart_->replot(QCustomPlot::rpQueuedReplot);
}

QString RunPage::valuesAt(double x) const {
  QStringList lines;
  for (int g = 0; g < chart_->graphCount(); ++g) {
    QCPGraph* graph = chart_->graph(g);
    if (!graph->visible() || graph->data()->isEmpty()) continue;
    // The last point at or before x.
    auto it = graph->data()->findEnd(x, false);
    if (it == graph->data()->constBegin()) continue;
    --it;
    lines << QString("%1: %2").arg(graph->name()).arg(it->value, 0, 'g', 5);
  }
  if (lines.isEmpty()) return {};
  const bool wall = xAxis_->currentIndex() == 1;
  return (wall ? tr("%1 s").arg(x, 0, 'f', 2) : tr("step %1").arg(std::llround(x))) + "\n" +
         lines.join("\n");
}

void RunPage::moveCrosshair(QMouseEvent* event) {
  const double x = chart_->xAxis->pixelToCoord(event->position().x());
  const QString text = valuesAt(x);
  crossLine_->setVisible(!text.isEmpty());
  crossText_->setVisible(!text.isEmpty());
  if (!text.isEmpty()) {
    crossLine_->point1->setCoords(x, 0);
    crossLine_->point2->setCoords(x, 1);
    crossText_->setText(text);
  }
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

  detail_ = d;
  drawChart();

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

// Curves and event markers of detail_, against steps or wall time.
void RunPage::drawChart() {
  const bool wall = xAxis_->currentIndex() == 1;
  chart_->clearGraphs();
  // Event markers are rebuilt; the crosshair items stay.
  for (int i = chart_->itemCount() - 1; i >= 0; --i) {
    QCPAbstractItem* item = chart_->item(i);
    if (item != crossLine_ && item != crossText_) chart_->removeItem(item);
  }
  bool downsampled = false;
  bool haveAccuracy = false;
  std::size_t colour = 0;
  for (const RunDetail::Curve& c : detail_.curves) {
    const bool accuracy = c.key == core::metric::kTestAccuracy;
    if (c.key == core::metric::kTestLoss) continue;  // the chart compares train loss and accuracy
    QCPGraph* g = chart_->addGraph(chart_->xAxis, accuracy ? chart_->yAxis2 : chart_->yAxis);
    const std::vector<double>& xs =
        wall && c.seconds.size() == c.steps.size() ? c.seconds : c.steps;
    g->setData(QVector<double>(xs.begin(), xs.end()),
               QVector<double>(c.values.begin(), c.values.end()), !wall);
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
  // What happened during the run (rebalances, switches, a node lost, a cancel), where it did.
  for (const core::RunEvent& e : detail_.events) {
    if (e.kind == "start" || e.kind == "finish") continue;
    const double x = wall ? e.wallMs / 1000.0 : static_cast<double>(e.step);
    auto* line = new QCPItemStraightLine(chart_);
    line->setPen(QPen(QColor(176, 32, 32, 160), 1, Qt::DashLine));
    line->point1->setCoords(x, 0);
    line->point2->setCoords(x, 1);
    auto* label = new QCPItemText(chart_);
    label->position->setTypeX(QCPItemPosition::ptPlotCoords);
    label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    label->position->setCoords(x, 0.02);  // from the top, where the loss has fallen away
    label->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    label->setRotation(-90);
    label->setColor(QColor(176, 32, 32));
    label->setText(QString::fromStdString(e.kind));
  }
  chart_->xAxis->setLabel(wall ? tr("wall time (s)") : tr("step"));
  chart_->rescaleAxes();
  if (haveAccuracy) chart_->yAxis2->setRange(0.0, 1.0);
  chart_->replot();
  chartNote_->setText(detail_.curves.empty() ? tr("No points recorded yet.")
                      : downsampled
                          ? tr("Long series are shown reduced to their minimum and maximum per "
                               "interval (downsampled by the store).")
                          : QString());
  chartNote_->setVisible(!chartNote_->text().isEmpty());
}

}  // namespace dtlab::ui
