#include "ui/charts/run_dashboard.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QtCore/QDateTime>

#include "core/metrics/metric_table.h"
#include "ui/charts/palette.h"
#include "ui/charts/smoothing.h"

namespace dtlab::ui {
namespace {

using Chart = RunDashboard::Chart;

// The fixed charts and the rows of the metric table each shows (the last chart shows the
// row the user picks). A metric may also be chosen for the last chart: it is then drawn twice.
struct Placement {
  std::string_view key;
  Chart chart;
  bool rightAxis;
};
constexpr Placement kPlacements[] = {
    {core::metric::kLoss, RunDashboard::kLossChart, false},
    {core::metric::kTestLoss, RunDashboard::kLossChart, false},
    {core::metric::kTestAccuracy, RunDashboard::kLossChart, true},
    {core::metric::kSamplesPerS, RunDashboard::kThroughputChart, false},
    {core::metric::kComputeMs, RunDashboard::kStepTimeChart, false},
    {core::metric::kCommMs, RunDashboard::kStepTimeChart, false},
    {core::metric::kWaitMs, RunDashboard::kStepTimeChart, false},
    {core::metric::kTailMs, RunDashboard::kStepTimeChart, false},
    {"cpu_util", RunDashboard::kUtilisationChart, false},
    {core::metric::kBatchShare, RunDashboard::kScheduleChart, false},
    {core::metric::kStaleness, RunDashboard::kScheduleChart, true},
};

// Charts whose legend has one entry per metric, for every worker: the step-time chart's
// components and the schedule chart's share and staleness (a worker's colour is its colour on
// the other charts).
bool groupedByMetric(Chart chart) {
  return chart == RunDashboard::kStepTimeChart || chart == RunDashboard::kScheduleChart;
}

QString text(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

double scaleOf(const core::MetricInfo& m) {
  return m.unit == "bytes" ? 1.0 / (1024.0 * 1024.0) : 1.0;
}

// How a metric is drawn: resident bytes in MiB (the raw numbers have nine digits), every
// other metric in the unit of the table.
struct Display {
  double scale = 1.0;
  QString unit;
};
Display displayOf(const core::MetricInfo& m) {
  return {scaleOf(m), m.unit == "bytes" ? QStringLiteral("MiB") : text(m.unit)};
}

QString axisLabel(const QString& quantity, const QString& unit) {
  return unit.isEmpty() ? quantity : QString("%1 (%2)").arg(quantity, unit);
}

const core::MetricInfo& row(int metric) {
  return core::kMetricTable[static_cast<std::size_t>(metric)];
}

int rowOf(std::string_view key) {
  const core::MetricInfo* m = core::findMetric(key);
  return m == nullptr ? -1 : static_cast<int>(m - core::kMetricTable.data());
}

// The components of a step have a colour each; a worker's line on that chart is in its
// component's colour (the crosshair names the worker).
// Waits are drawn lighter: they are often the largest and noisiest, and would hide the rest.
QColor componentColour(std::string_view key) {
  if (key == core::metric::kComputeMs) return QColor(0, 158, 115);
  if (key == core::metric::kCommMs) return QColor(0, 114, 178, 210);
  if (key == core::metric::kTailMs) return QColor(204, 121, 167, 230);  // the wait's tail
  return QColor(213, 94, 0, 130);                                       // wait
}

// The last chart's metric for a run nobody chose one for: one the fixed charts do not show
// that tells this run's story (divergence of an asynchronous run, GPU use), else memory.
// Shares and staleness have their own chart.
std::string defaultChoice(const std::vector<core::RunMetric>& metrics) {
  const auto find = [&](std::string_view key) -> const core::RunMetric* {
    for (const core::RunMetric& m : metrics)
      if (m.key == key) return &m;
    return nullptr;
  };
  if (const auto* m = find(core::metric::kDivergence); m && m->maxValue > 0)
    return core::metric::kDivergence;
  if (const auto* m = find(core::metric::kGpuUtil); m && m->maxValue > 0)
    return core::metric::kGpuUtil;
  if (find("mem_bytes") != nullptr) return "mem_bytes";
  return core::metric::kStepMs;
}

// A chart title that gives way: its column is a third of the page whatever it says (a metric's
// description can be long), and a title wider than its chart ends in "…".
class ElidedTitle final : public QCPTextElement {
 public:
  ElidedTitle(QCustomPlot* plot, const QString& text, const QFont& font)
      : QCPTextElement(plot, text, font) {}

 protected:
  QSize minimumOuterSizeHint() const override {
    QSize hint = QCPTextElement::minimumOuterSizeHint();
    hint.setWidth(std::min(hint.width(), 60));
    return hint;
  }
  void draw(QCPPainter* painter) override {
    const QString full = mText;
    mText = QFontMetrics(mainFont()).elidedText(full, Qt::ElideRight, mRect.width());
    QCPTextElement::draw(painter);
    mText = full;
  }
};

}  // namespace

RunDashboard::RunDashboard(QWidget* parent) : QCustomPlot(parent), settle_(new QTimer(this)) {
  chosen_ = core::metric::kStepMs;
  setAutoAddPlottableToLegend(false);
  setNoAntialiasingOnDrag(true);
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  setMouseTracking(true);  // the crosshair follows the mouse without a button held
  buildLayout();
  settle_->setSingleShot(true);
  settle_->setInterval(400);
  connect(settle_, &QTimer::timeout, this, [this] {
    setNotAntialiasedElements(QCP::aeNone);
    replot(rpQueuedReplot);
  });
  connect(this, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) { moveCrosshair(e); });
  connect(this, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) { resetView(); });
  connect(this, &QCustomPlot::legendClick, this,
          [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
            if (auto* entry = qobject_cast<QCPPlottableLegendItem*>(item))
              toggleSeries(qobject_cast<QCPGraph*>(entry->plottable()));
          });
  rebuild();
}

void RunDashboard::buildLayout() {
  plotLayout()->clear();  // the default axis rect and legend
  auto* top = new QCPLayoutGrid;
  auto* bottom = new QCPLayoutGrid;
  plotLayout()->addElement(0, 0, top);
  plotLayout()->addElement(1, 0, bottom);

  QFont titleFont = font();
  titleFont.setBold(true);
  QFont small = font();
  small.setPointSizeF(font().pointSizeF() * 0.85);
  const std::array<QString, kChartCount> titles = {
      tr("Loss per worker; test loss and accuracy"),
      tr("Throughput per worker"),
      tr("Step time per worker: compute, comm., wait, tail"),
      tr("CPU use per node"),
      tr("Batch share and staleness per worker"),
      QString()};
  // Edges that line up: the charts of a column, in both rows.
  std::array<QCPMarginGroup*, 3> lefts{}, rights{};
  for (std::size_t column = 0; column < 3; ++column) {
    lefts[column] = new QCPMarginGroup(this);
    rights[column] = new QCPMarginGroup(this);
  }
  for (int c = 0; c < kChartCount; ++c) {
    Panel& p = panels_[static_cast<std::size_t>(c)];
    auto* cell = new QCPLayoutGrid;
    if (c < 3)
      top->addElement(0, c, cell);
    else
      bottom->addElement(0, c - 3, cell);
    p.title = new ElidedTitle(this, titles[static_cast<std::size_t>(c)], titleFont);
    p.rect = new QCPAxisRect(this);
    // Title, legend, chart: the legend above the curves covers none of them.
    p.legend = new QCPLegend;
    cell->addElement(0, 0, p.title);
    cell->addElement(1, 0, p.legend);
    cell->addElement(2, 0, p.rect);
    cell->setRowSpacing(0);
    cell->setRowStretchFactors({0.001, 0.001, 1.0});
    for (QCPAxis* axis : p.rect->axes()) {
      axis->setLabelFont(small);
      axis->setTickLabelFont(small);
    }
    p.rect->setupFullAxesBox();  // a frame; the right axis of the loss chart is accuracy
    p.rect->axis(QCPAxis::atTop)->setTickLabels(false);
    // Right axes with a scale of their own: accuracy, staleness.
    p.rect->axis(QCPAxis::atRight)->setTickLabels(c == kLossChart || c == kScheduleChart);
    QCPAxis* x = p.rect->axis(QCPAxis::atBottom);
    p.rect->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    p.rect->setRangeDragAxes(x, p.rect->axis(QCPAxis::atLeft));
    p.rect->setRangeZoom(Qt::Horizontal);
    p.rect->setRangeZoomAxes(x, nullptr);
    // Linked x ranges: a drag or zoom on one chart moves every chart.
    connect(
        x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
        [this, c](const QCPRange& range) {
          if (linking_) return;
          linking_ = true;
          for (int o = 0; o < kChartCount; ++o)
            if (o != c)
              panels_[static_cast<std::size_t>(o)].rect->axis(QCPAxis::atBottom)->setRange(range);
          linking_ = false;
          following_ = false;
          fitTimeFormat(range);
        });
    p.rect->setMarginGroup(QCP::msLeft, lefts[static_cast<std::size_t>(c % 3)]);
    p.rect->setMarginGroup(QCP::msRight, rights[static_cast<std::size_t>(c % 3)]);

    p.legend->setLayer(QStringLiteral("legend"));
    p.legend->setFont(small);
    p.legend->setBrush(Qt::NoBrush);
    p.legend->setBorderPen(Qt::NoPen);
    p.legend->setFillOrder(QCPLegend::foColumnsFirst);
    p.legend->setWrap(c == kLossChart ? 3 : 4);
    p.legend->setRowSpacing(0);
    p.legend->setColumnSpacing(4);
    p.legend->setMargins(QMargins(4, 0, 4, 0));
    p.legend->setIconSize(16, 8);

    // The crosshair lives on the buffered overlay layer: moving it redraws that layer only.
    p.cursor = new QCPItemStraightLine(this);
    p.cursor->setLayer(QStringLiteral("overlay"));
    p.cursor->setClipAxisRect(p.rect);
    p.cursor->point1->setAxes(x, p.rect->axis(QCPAxis::atLeft));
    p.cursor->point2->setAxes(x, p.rect->axis(QCPAxis::atLeft));
    p.cursor->setPen(QPen(QColor(40, 40, 40, 160), 1));  // solid: the grid is dotted
    p.cursor->setVisible(false);
    p.cursorText = new QCPItemText(this);
    p.cursorText->setLayer(QStringLiteral("overlay"));
    p.cursorText->setClipAxisRect(p.rect);
    p.cursorText->position->setType(QCPItemPosition::ptAxisRectRatio);
    p.cursorText->position->setAxisRect(p.rect);
    p.cursorText->position->setCoords(0.01, 0.01);
    p.cursorText->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    p.cursorText->setTextAlignment(Qt::AlignLeft);
    p.cursorText->setFont(font());
    p.cursorText->setBrush(QColor(255, 255, 255, 230));
    p.cursorText->setPen(QPen(QColor(0, 0, 0, 60)));
    p.cursorText->setPadding(QMargins(4, 2, 4, 2));
    p.cursorText->setVisible(false);
    p.note = new QCPItemText(this);
    p.note->setClipAxisRect(p.rect);
    p.note->position->setType(QCPItemPosition::ptAxisRectRatio);
    p.note->position->setAxisRect(p.rect);
    p.note->position->setCoords(0.5, 0.5);
    p.note->setColor(QColor(110, 110, 110));
    p.note->setVisible(false);
  }
  // Staleness counts versions: whole numbers.
  auto versions = QSharedPointer<QCPAxisTickerFixed>::create();
  versions->setTickStep(1.0);
  versions->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  panels_[kScheduleChart].rect->axis(QCPAxis::atRight)->setTicker(versions);
  layer(QStringLiteral("overlay"))->setMode(QCPLayer::lmBuffered);
}

double RunDashboard::keyOf(const Series& s, std::size_t i) const {
  switch (xMode_) {
    case RunXAxis::kStep:
      return s.steps[i];
    case RunXAxis::kSeconds:
      return s.seconds[i];
    case RunXAxis::kWallClock:
      return startS_ + s.seconds[i];
  }
  return s.steps[i];
}

double RunDashboard::lastKeyOf(const Series& s) const {
  const double kept = keyOf(s, s.values.size() - 1);
  if (!s.newest) return kept;
  const double seconds = s.newest->wallMs / 1000.0;
  switch (xMode_) {
    case RunXAxis::kStep:
      return std::max(kept, static_cast<double>(s.newest->step));
    case RunXAxis::kSeconds:
      return std::max(kept, seconds);
    case RunXAxis::kWallClock:
      return std::max(kept, startS_ + seconds);
  }
  return kept;
}

QString RunDashboard::seriesName(const Series& s) const {
  const core::MetricInfo& m = row(s.metric);
  switch (m.scope) {
    case core::MetricScope::kWorker:
      return tr("%1, worker %2").arg(text(m.name)).arg(s.owner);
    case core::MetricScope::kNode:
      return tr("%1, node %2").arg(text(m.name)).arg(s.owner);
    case core::MetricScope::kRun:
      break;
  }
  return text(m.name);
}

std::string RunDashboard::hiddenKey(const QCPGraph* graph) {
  return QString("%1:%2:%3")
      .arg(graph->property("chart").toInt())
      .arg(graph->property("metric").toInt())
      .arg(graph->property("owner").toInt())
      .toStdString();
}

std::size_t RunDashboard::seriesFor(int metric, int owner) {
  const auto found = seriesIndex_.find({metric, owner});
  if (found != seriesIndex_.end()) return found->second;
  Series s;
  s.metric = metric;
  s.owner = owner;
  series_.push_back(std::move(s));
  const std::size_t index = series_.size() - 1;
  seriesIndex_[{metric, owner}] = index;
  placeSeries(index);
  updateNotes();
  return index;
}

void RunDashboard::placeSeries(std::size_t index) {
  const std::string_view key = row(series_[index].metric).name;
  for (const Placement& p : kPlacements)
    if (p.key == key) addSeriesGraph(index, p.chart, p.rightAxis);
  if (key == chosen_) addSeriesGraph(index, kChosenChart, false);
}

void RunDashboard::addSeriesGraph(std::size_t index, Chart chart, bool rightAxis) {
  Series& s = series_[index];
  Panel& p = panels_[chart];
  const core::MetricInfo& m = row(s.metric);
  const Display display = displayOf(m);
  QCPGraph* g = QCustomPlot::addGraph(p.rect->axis(QCPAxis::atBottom),
                                      p.rect->axis(rightAxis ? QCPAxis::atRight : QCPAxis::atLeft));
  QVector<double> keys(static_cast<qsizetype>(s.values.size()));
  for (std::size_t i = 0; i < s.values.size(); ++i) keys[static_cast<qsizetype>(i)] = keyOf(s, i);
  g->setData(keys, drawnValues(s), xMode_ == RunXAxis::kStep);

  const bool stepTime = chart == kStepTimeChart;
  const bool grouped = groupedByMetric(chart);
  QPen pen(s.owner < 0
               ? (m.name == core::metric::kTestLoss ? QColor(120, 120, 120) : QColor(0, 0, 0))
           : stepTime ? componentColour(m.name)
                      : seriesColour(static_cast<std::size_t>(s.owner)));
  pen.setWidthF(1.0);  // wide lines of many points are slow to draw
  // On the schedule chart a worker has its colour twice: its share is the thick line (steps
  // that a rebalance moves), its staleness the thin, lighter one (noisy, on the right axis).
  if (chart == kScheduleChart && m.name == core::metric::kBatchShare) pen.setWidthF(2.2);
  if (chart == kScheduleChart && m.name == core::metric::kStaleness) {
    QColor light = pen.color();
    light.setAlpha(150);
    pen.setColor(light);
  }
  if (m.scope == core::MetricScope::kRun) {
    pen.setWidthF(1.6);  // a few evaluations, not thousands of steps
    pen.setStyle(m.name == core::metric::kTestLoss ? Qt::DotLine : Qt::DashLine);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
  }
  g->setPen(pen);
  g->setName(grouped ? text(m.name) : seriesName(s));
  g->setProperty("fullName", seriesName(s));
  g->setProperty("unit", display.unit);
  g->setProperty("smoothed", smoothed(s));
  g->setProperty("series", static_cast<qulonglong>(index));
  g->setProperty("chart", static_cast<int>(chart));
  g->setProperty("metric", s.metric);
  g->setProperty("owner", s.owner);
  // A legend entry per series; on the step-time chart one per component, on the schedule chart
  // one per metric, for all workers.
  const QString group = grouped ? text(m.name) : seriesName(s);
  g->setProperty("group", group);
  bool first = true;
  for (QCPGraph* other : p.rect->graphs())
    if (other != g && other->property("group").toString() == group) first = false;
  if (first) {
    // Shorter in the legend: the chart's title says what is drawn.
    if (chart == kScheduleChart)
      g->setName(rightAxis ? tr("%1 (thin, right axis)").arg(text(m.name))
                           : tr("%1 (thick)").arg(text(m.name)));
    if (!grouped && m.scope != core::MetricScope::kRun)
      g->setName(m.scope == core::MetricScope::kWorker ? tr("worker %1").arg(s.owner)
                                                       : tr("node %1").arg(s.owner));
    g->addToLegend(p.legend);
    // Room below the text: an underscore of a metric name sits under the baseline.
    p.legend->itemWithPlottable(g)->setMargins(QMargins(2, 1, 2, 3));
  }
  if (hidden_.count(hiddenKey(g)) != 0) {
    g->setVisible(false);
    if (QCPPlottableLegendItem* item = p.legend->itemWithPlottable(g))
      item->setTextColor(QColor(160, 160, 160));
  }
  s.graphs.push_back(g);
}

void RunDashboard::setRun(const RunDetail& detail) {
  const bool sameRun = detail.run.id == runId_;
  runId_ = detail.run.id;
  startS_ = static_cast<double>(detail.run.startedMs) / 1000.0;
  events_ = detail.events;
  series_.clear();
  seriesIndex_.clear();
  for (const RunDetail::Curve& c : detail.curves) {
    const int metric = rowOf(c.key);
    if (metric < 0 || c.values.empty()) continue;
    const core::MetricScope scope = row(metric).scope;
    Series s;
    s.metric = metric;
    s.owner = scope == core::MetricScope::kWorker ? c.worker
              : scope == core::MetricScope::kNode ? c.node
                                                  : -1;
    if (seriesIndex_.count({metric, s.owner}) != 0) continue;
    s.steps = c.steps;
    s.seconds = c.seconds;
    s.values = c.values;
    s.downsampled = c.downsampled;
    const auto [lo, hi] = std::minmax_element(s.values.begin(), s.values.end());
    s.minValue = *lo;
    s.maxValue = *hi;
    updateBounds(s);
    restartSmoothing(s);
    seriesIndex_[{metric, s.owner}] = series_.size();
    series_.push_back(std::move(s));
  }
  if (!sameRun) {
    hidden_.clear();
    following_ = true;
  }
  if (!userChose_) chosen_ = defaultChoice(detail.metrics);
  // A run re-read while another process records it: the redraw waits for the event loop,
  // like a live batch's.
  rebuild(sameRun ? rpQueuedReplot : rpRefreshHint);
}

void RunDashboard::rebuild(RefreshPriority refresh) {
  hideCrosshair();
  for (Panel& p : panels_) p.legend->clearItems();  // before their graphs go
  clearGraphs();
  for (Series& s : series_) s.graphs.clear();
  // In the order of kPlacements (compute, comm, wait), then the chosen metric's series.
  for (const Placement& p : kPlacements)
    for (std::size_t i = 0; i < series_.size(); ++i)
      if (row(series_[i].metric).name == p.key) addSeriesGraph(i, p.chart, p.rightAxis);
  for (std::size_t i = 0; i < series_.size(); ++i)
    if (row(series_[i].metric).name == chosen_) addSeriesGraph(i, kChosenChart, false);

  const core::MetricInfo* chosen = core::findMetric(chosen_);
  const Display chosenDisplay = chosen ? displayOf(*chosen) : Display{};
  panels_[kChosenChart].title->setText(
      chosen ? QString("%1: %2").arg(text(chosen->name), text(chosen->description)) : QString());
  const QString x = xMode_ == RunXAxis::kStep      ? tr("step")
                    : xMode_ == RunXAxis::kSeconds ? tr("time since the run started (s)")
                                                   : tr("wall-clock time (hh:mm:ss)");
  QSharedPointer<QCPAxisTicker> ticker;
  if (xMode_ == RunXAxis::kWallClock) {
    auto dateTime = QSharedPointer<QCPAxisTickerDateTime>::create();
    dateTime->setDateTimeFormat(QStringLiteral("hh:mm:ss"));
    ticker = dateTime;
  } else {
    ticker = QSharedPointer<QCPAxisTicker>::create();
  }
  const auto unitOf = [](std::string_view key) { return displayOf(*core::findMetric(key)).unit; };
  const std::array<QString, kChartCount> yLabels = {
      axisLabel(tr("loss"), unitOf(core::metric::kLoss)),
      axisLabel(tr("throughput"), unitOf(core::metric::kSamplesPerS)),
      axisLabel(tr("time per step"), unitOf(core::metric::kComputeMs)),
      axisLabel(tr("cpu_util (share of all cores)"), unitOf("cpu_util")),
      tr("batch_share (of the global batch)"),
      chosen ? axisLabel(text(chosen->name), chosenDisplay.unit) : QString()};
  for (int c = 0; c < kChartCount; ++c) {
    Panel& p = panels_[static_cast<std::size_t>(c)];
    p.rect->axis(QCPAxis::atBottom)->setTicker(ticker);
    p.rect->axis(QCPAxis::atBottom)->setLabel(x);
    p.rect->axis(QCPAxis::atLeft)->setLabel(yLabels[static_cast<std::size_t>(c)]);
  }
  panels_[kLossChart]
      .rect->axis(QCPAxis::atRight)
      ->setLabel(axisLabel(text(core::metric::kTestAccuracy), unitOf(core::metric::kTestAccuracy)));
  panels_[kScheduleChart]
      .rect->axis(QCPAxis::atRight)
      ->setLabel(axisLabel(text(core::metric::kStaleness), unitOf(core::metric::kStaleness)));
  drawMarkers();
  updateNotes();
  if (following_)
    fitView();
  else
    fitTimeFormat(xRange());
  replot(refresh);
}

void RunDashboard::updateBounds(Series& s) {
  if (s.values.empty()) return;
  std::vector<double> sorted = s.values;
  const auto at = [&](double q) {
    const auto k = static_cast<std::ptrdiff_t>(q * static_cast<double>(sorted.size() - 1));
    std::nth_element(sorted.begin(), sorted.begin() + k, sorted.end());
    return sorted[static_cast<std::size_t>(k)];
  };
  s.lowValue = at(0.01);
  s.highValue = at(0.99);
}

bool RunDashboard::smoothed(const Series& s) const {
  // A batch share is a decision, not a noisy measurement: its steps are drawn as they are.
  return smoothing_ > 0.0 && row(s.metric).scope == core::MetricScope::kWorker &&
         row(s.metric).name != std::string_view(core::metric::kBatchShare);
}

void RunDashboard::restartSmoothing(Series& s) const {
  s.ema = 0.0;
  s.emaDecay = 1.0;
  for (double v : s.values) {
    if (!std::isfinite(v)) continue;
    s.ema = smoothing_ * s.ema + (1.0 - smoothing_) * v;
    s.emaDecay *= smoothing_;
  }
}

QVector<double> RunDashboard::drawnValues(const Series& s) const {
  const double scale = scaleOf(row(s.metric));
  const std::vector<double> smooth =
      smoothed(s) ? smoothEma(s.values, smoothing_) : std::vector<double>();
  const std::vector<double>& from = smoothed(s) ? smooth : s.values;
  QVector<double> out(static_cast<qsizetype>(from.size()));
  for (std::size_t i = 0; i < from.size(); ++i) out[static_cast<qsizetype>(i)] = from[i] * scale;
  return out;
}

void RunDashboard::setSmoothing(double weight) {
  weight = std::clamp(weight, 0.0, 0.99);
  if (weight == smoothing_) return;
  smoothing_ = weight;
  for (Series& s : series_) restartSmoothing(s);
  const QCPRange x = xRange();
  const bool following = following_;
  rebuild();
  if (!following) {
    following_ = false;
    linking_ = true;
    for (Panel& p : panels_) p.rect->axis(QCPAxis::atBottom)->setRange(x);
    linking_ = false;
    replot();
  }
}

void RunDashboard::updateNotes() {
  for (int c = 0; c < kChartCount; ++c) {
    Panel& p = panels_[static_cast<std::size_t>(c)];
    QString note;
    if (p.rect->graphs().isEmpty()) {
      if (c == kChosenChart && core::findMetric(chosen_) != nullptr)
        note = tr("%1: not recorded in this run").arg(QString::fromStdString(chosen_));
      else
        note = runId_ < 0 ? tr("No run shown.") : tr("Not recorded in this run (yet).");
    }
    p.note->setText(note);
    p.note->setVisible(!note.isEmpty());
  }
}

QString RunDashboard::note(Chart chart) const {
  const Panel& p = panels_[chart];
  return p.note->visible() ? p.note->text() : QString();
}

bool RunDashboard::downsampled() const {
  return std::any_of(series_.begin(), series_.end(), [](const Series& s) { return s.downsampled; });
}

void RunDashboard::fitView() {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const Series& s : series_) {
    if (s.values.empty()) continue;
    // Points are in step order; their times rise with the steps.
    lo = std::min(lo, keyOf(s, 0));
    hi = std::max(hi, lastKeyOf(s));
  }
  if (!(lo <= hi)) {
    lo = xMode_ == RunXAxis::kWallClock ? startS_ : 0.0;
    hi = lo + 1.0;
  }
  if (hi - lo < 1e-9) hi = lo + 1.0;
  linking_ = true;
  fitTimeFormat(QCPRange(lo, hi));
  for (Panel& p : panels_) {
    p.rect->axis(QCPAxis::atBottom)->setRange(lo, hi);
    for (QCPAxis* axis : {p.rect->axis(QCPAxis::atLeft), p.rect->axis(QCPAxis::atRight)}) {
      double ylo = std::numeric_limits<double>::infinity(), yhi = -ylo;
      bool accuracy = false;
      for (QCPGraph* g : p.rect->graphs()) {
        if (g->valueAxis() != axis || !g->visible()) continue;
        const Series& s = series_[g->property("series").toULongLong()];
        if (s.values.empty()) continue;
        const double scale = scaleOf(row(s.metric));
        const std::string_view unit = row(s.metric).unit;
        const bool robust = unit == "ms" || unit == "samples/s" || unit == "versions";
        ylo = std::min(ylo, (robust ? s.lowValue : s.minValue) * scale);
        yhi = std::max(yhi, (robust ? s.highValue : s.maxValue) * scale);
        accuracy = accuracy || row(s.metric).name == core::metric::kTestAccuracy;
      }
      if (accuracy) {
        axis->setRange(0.0, 1.0);
        continue;
      }
      if (!(ylo <= yhi)) {
        if (axis == p.rect->axis(QCPAxis::atLeft)) axis->setRange(0.0, 1.0);
        continue;
      }
      // Every metric of the table is >= 0: from zero, so that sizes compare at a glance.
      if (ylo >= 0.0) ylo = 0.0;
      const double span = yhi - ylo;
      yhi += span > 0 ? 0.06 * span : std::max(1.0, std::abs(yhi) * 0.1);
      axis->setRange(ylo, yhi);
    }
  }
  linking_ = false;
}

void RunDashboard::fitTimeFormat(const QCPRange& range) {
  // Ticks of a few seconds' span fall on fractions of a second: show them.
  auto ticker = panels_[kLossChart]
                    .rect->axis(QCPAxis::atBottom)
                    ->ticker()
                    .dynamicCast<QCPAxisTickerDateTime>();
  if (ticker != nullptr)
    ticker->setDateTimeFormat(range.size() < 8.0 ? QStringLiteral("hh:mm:ss.zzz")
                                                 : QStringLiteral("hh:mm:ss"));
}

void RunDashboard::resetView() {
  following_ = true;
  fitView();
  replot(rpQueuedReplot);
}

void RunDashboard::setXAxis(RunXAxis axis) {
  if (axis == xMode_) return;
  xMode_ = axis;
  following_ = true;  // a range of steps means nothing in seconds
  rebuild();
}

void RunDashboard::chooseMetric(const std::string& key) {
  if (core::findMetric(key) == nullptr) return;
  userChose_ = true;
  if (key == chosen_) return;
  chosen_ = key;
  const QCPRange x = xRange();
  const bool following = following_;
  rebuild();
  if (!following) {
    // The other charts keep their zoom: the new chart joins it.
    fitView();
    following_ = false;
    linking_ = true;
    for (Panel& p : panels_) p.rect->axis(QCPAxis::atBottom)->setRange(x);
    linking_ = false;
    replot();
  }
  emit chosenMetricChanged(QString::fromStdString(key));
}

void RunDashboard::appendLive(const std::vector<LivePoint>& points) {
  bool added = false;
  bool events = false;
  for (const LivePoint& p : points) {
    if (p.runId == runId_ && p.event != nullptr) {
      events_.push_back(*p.event);
      events = added = true;
      continue;
    }
    if (p.runId != runId_ || p.metric < 0 ||
        p.metric >= static_cast<int>(core::kMetricTable.size()))
      continue;
    const core::MetricScope scope = row(p.metric).scope;
    const int owner = scope == core::MetricScope::kWorker ? p.worker
                      : scope == core::MetricScope::kNode ? p.node
                                                          : -1;
    Series& s = series_[seriesFor(p.metric, owner)];
    // Points the store had already given when the page was shown come again: skip them.
    if (!s.steps.empty() && static_cast<double>(p.step) < s.steps.back()) continue;
    s.newest = p;
    added = true;  // drawn or not, it moves a view that follows the run
    LivePoint point = p;
    if (s.stride > 1) {
      // Thinned: of each `stride` new points, the one farthest from the last point kept, so
      // that a spike survives.
      const double last = s.values.back();
      if (s.pending == 0 || std::abs(p.value - last) > std::abs(s.candidate.value - last))
        s.candidate = p;
      if (++s.pending < s.stride) continue;
      s.pending = 0;
      point = s.candidate;
    }
    if (s.values.empty()) {
      s.minValue = s.maxValue = point.value;
    } else {
      s.minValue = std::min(s.minValue, point.value);
      s.maxValue = std::max(s.maxValue, point.value);
    }
    s.steps.push_back(static_cast<double>(point.step));
    s.seconds.push_back(point.wallMs / 1000.0);
    s.values.push_back(point.value);
    // Percentiles again at every power of two, then every 1024 points (they move slowly).
    const std::size_t n = s.values.size();
    if ((n & (n - 1)) == 0 || n % 1024 == 0) updateBounds(s);
    const double key = keyOf(s, s.values.size() - 1);
    double value = point.value;
    if (smoothed(s)) {
      s.ema = smoothing_ * s.ema + (1.0 - smoothing_) * point.value;
      s.emaDecay *= smoothing_;
      value = s.ema / (1.0 - s.emaDecay);
    }
    value *= scaleOf(row(point.metric));
    for (QCPGraph* g : s.graphs) g->addData(key, value);
    added = true;
    if (static_cast<int>(s.values.size()) < kMaxLivePoints) continue;
    // The bound: of every two points so far the one farther from the point kept before it,
    // and from now on one of every `stride` new ones.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < s.values.size(); i += 2, ++kept) {
      std::size_t pick = i;
      if (i + 1 < s.values.size() && kept > 0 &&
          std::abs(s.values[i + 1] - s.values[kept - 1]) >
              std::abs(s.values[i] - s.values[kept - 1]))
        pick = i + 1;
      s.steps[kept] = s.steps[pick];
      s.seconds[kept] = s.seconds[pick];
      s.values[kept] = s.values[pick];
    }
    s.steps.resize(kept);
    s.seconds.resize(kept);
    s.values.resize(kept);
    restartSmoothing(s);
    s.stride *= 2;
    s.downsampled = true;
    QVector<double> keys(static_cast<qsizetype>(kept));
    for (std::size_t i = 0; i < kept; ++i) keys[static_cast<qsizetype>(i)] = keyOf(s, i);
    const QVector<double> values = drawnValues(s);
    for (QCPGraph* g : s.graphs) g->setData(keys, values, true);
  }
  if (!added) return;
  if (events) drawMarkers();
  if (following_) fitView();
  setNotAntialiasedElements(QCP::aePlottables);
  settle_->start();
  replot(rpQueuedReplot);
}

}  // namespace dtlab::ui
