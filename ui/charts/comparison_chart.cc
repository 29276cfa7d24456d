#include "ui/charts/comparison_chart.h"

#include <algorithm>
#include <cmath>

#include "ui/charts/palette.h"
#include "ui/charts/smoothing.h"

namespace dtlab::ui {
namespace {

constexpr int kLegendMargin = 8;
// Below this height the y-axis is too short for a two-line label: its second line (what was
// done with the members' series) moves into the title.
constexpr int kCompactHeight = 330;

QString fromView(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

// Bytes are drawn in MiB (an axis of 1.3e8 says little); everything else in its own unit.
double displayScale(const core::MetricInfo& m) {
  return m.unit == "bytes" ? 1.0 / (1024.0 * 1024.0) : 1.0;
}
QString displayUnit(const core::MetricInfo& m) {
  return m.unit == "bytes" ? QStringLiteral("MiB") : fromView(m.unit);
}

QString memberWord(core::MetricScope scope, int count) {
  if (scope == core::MetricScope::kNode) return count == 1 ? "node" : "nodes";
  return count == 1 ? "worker" : "workers";
}

QString legendLabel(const ComparisonSeries& s, const ComparisonRequest& request,
                    const core::MetricInfo& metric) {
  QString label = QString("#%1 %2 (%3")
                      .arg(s.runId)
                      .arg(QString::fromStdString(s.runName), QString::fromStdString(s.strategy));
  if (s.status != core::RunStatus::kCompleted)
    label += ", " + QString::fromUtf8(core::toString(s.status));
  if (metric.scope != core::MetricScope::kRun && request.reduction == MemberReduction::kMean &&
      s.members > 1)
    label += QString(", %1 %2").arg(s.members).arg(memberWord(metric.scope, s.members));
  if (s.values.empty()) label += ", no points";
  return label + ")";
}

QString runList(const std::vector<int64_t>& ids) {
  QStringList parts;
  for (const int64_t id : ids) parts << QString("#%1").arg(id);
  return parts.join(", ");
}

}  // namespace

QString describeValues(const ComparisonRequest& request) {
  const core::MetricInfo* metric = core::findMetric(request.metric);
  if (metric == nullptr) return QString::fromStdString(request.metric);
  QString text = fromView(metric->name);
  if (!metric->unit.empty()) text += QString(" (%1)").arg(displayUnit(*metric));
  if (metric->scope == core::MetricScope::kRun) return text;
  const bool mean = request.reduction == MemberReduction::kMean;
  // On a second line: a long label would outgrow a short axis.
  if (metric->scope == core::MetricScope::kWorker)
    return text + (mean ? "\nmean over workers at each step" : "\nworker 0");
  return text + (mean ? "\nmean over nodes per sample" : "\nnode 0");
}

ComparisonChart::ComparisonChart(QWidget* parent)
    : QCustomPlot(parent), title_(new QCPTextElement(this)), note_(new QCPTextElement(this)) {
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  setMinimumHeight(240);

  QFont titleFont = font();
  titleFont.setPointSizeF(titleFont.pointSizeF() * 1.15);
  titleFont.setBold(true);
  title_->setFont(titleFont);
  plotLayout()->insertRow(0);
  plotLayout()->addElement(0, 0, title_);

  // The legend sits in a row of its own below the axis rect: it never hides a curve, and it
  // grows by rows as runs are added.
  auto* legendRow = new QCPLayoutGrid;
  plotLayout()->addElement(2, 0, legendRow);
  axisRect()->insetLayout()->take(legend);
  legendRow->addElement(0, 0, legend);
  legendRow->setMargins(QMargins(kLegendMargin, 0, kLegendMargin, 4));
  legend->setVisible(true);
  legend->setBorderPen(Qt::NoPen);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plotLayout()->setRowStretchFactor(0, 0.001);
  plotLayout()->setRowStretchFactor(2, 0.001);

  QFont noteFont = font();
  noteFont.setPointSizeF(noteFont.pointSizeF() * 0.92);
  note_->setFont(noteFont);
  note_->setTextColor(QColor(90, 90, 90));
  note_->setMargins(QMargins(8, 2, 8, 6));
  note_->setVisible(false);  // in the layout only while there is something to say

  setData({});
}

QString ComparisonChart::title() const {
  return title_->text();
}

QString ComparisonChart::note() const {
  return note_->text();
}

void ComparisonChart::fitLegend(int width) {
  int widest = 0;
  // itemCount() counts the grid's cells, and a grid of n items wrapped in columns has empty
  // ones.
  for (int i = 0; i < legend->itemCount(); ++i)
    if (const QCPAbstractLegendItem* item = legend->item(i))
      widest = std::max(widest, item->minimumOuterSizeHint().width());
  const QMargins margins = legend->margins();
  const int available = width - kLegendMargin * 2 - margins.left() - margins.right();
  const int spacing = legend->columnSpacing();
  const int columns = widest > 0 ? std::max(1, (available + spacing) / (widest + spacing)) : 1;
  if (columns == legend->wrap()) return;
  legend->setWrap(columns);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, /*rearrange=*/true);
}

void ComparisonChart::fitToSize(QSize size) {
  fitLegend(size.width());
  const bool compact = size.height() < kCompactHeight;
  if (compact == compact_) return;
  compact_ = compact;
  setLabels();
}

void ComparisonChart::resizeEvent(QResizeEvent* event) {
  fitToSize(event->size());
  QCustomPlot::resizeEvent(event);
}

void ComparisonChart::setData(ComparisonData data) {
  data_ = std::move(data);
  redraw();
}

void ComparisonChart::setSmoothing(double weight) {
  smoothing_ = std::clamp(weight, 0.0, 0.999);
  redraw();
}

void ComparisonChart::setNote(const QString& text) {
  note_->setText(text);
  const bool placed = note_->layout() == plotLayout();
  note_->setVisible(!text.isEmpty());
  if (text.isEmpty() && placed) {
    plotLayout()->take(note_);
    plotLayout()->simplify();
  } else if (!text.isEmpty() && !placed) {
    const int row = plotLayout()->rowCount();
    plotLayout()->addElement(row, 0, note_);
    plotLayout()->setRowStretchFactor(row, 0.001);
  }
}

void ComparisonChart::setLabels() {
  const core::MetricInfo* metric = core::findMetric(data_.request.metric);
  if (metric == nullptr || data_.series.empty()) return;
  const QString values = describeValues(data_.request);
  QString title = QString("%1: %2").arg(fromView(metric->name), fromView(metric->description));
  if (compact_ && values.contains('\n')) {
    title += QString(" (%1)").arg(values.section('\n', 1));
    yAxis->setLabel(values.section('\n', 0, 0));
  } else {
    yAxis->setLabel(values);
  }
  title_->setText(title);
  replot(QCustomPlot::rpQueuedReplot);
}

void ComparisonChart::redraw() {
  clearGraphs();
  curves_.clear();
  const ComparisonRequest& request = data_.request;
  const core::MetricInfo* metric = core::findMetric(request.metric);
  xAxis->setLabel(request.x == ChartX::kStep ? tr("step") : tr("wall time (s)"));
  if (metric == nullptr || data_.series.empty()) {
    title_->setText(tr("No runs chosen"));
    yAxis->setLabel(metric != nullptr ? describeValues(request) : QString());
    setNote(tr("Choose runs to overlay."));
    xAxis->setRange(0, 1);
    yAxis->setRange(0, 1);
    replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  setLabels();
  const double scale = displayScale(*metric);
  const bool smooth = smoothing_ > 0.0;

  std::vector<int64_t> downsampled, empty;
  for (const ComparisonSeries& s : data_.series) {
    Curve c;
    c.runId = s.runId;
    c.label = legendLabel(s, request, *metric);
    c.x = s.x;
    c.values = s.values;
    if (smooth) c.smoothed = smoothEma(c.values, smoothing_);
    if (s.downsampled) downsampled.push_back(s.runId);
    if (s.values.empty()) empty.push_back(s.runId);

    const QColor colour = runColour(s.runId);
    const QVector<double> keys(c.x.begin(), c.x.end());
    auto scaled = [scale](const std::vector<double>& v) {
      QVector<double> out(static_cast<qsizetype>(v.size()));
      for (std::size_t i = 0; i < v.size(); ++i) out[static_cast<qsizetype>(i)] = v[i] * scale;
      return out;
    };
    QCPGraph* raw = addGraph();
    raw->setData(keys, scaled(c.values), true);
    QPen rawPen(smooth ? QColor(colour.red(), colour.green(), colour.blue(), 60) : colour);
    // One pixel wide: Qt's raster engine strokes wider antialiased lines through its slow
    // path (measured with `dtlab --bench`: 8 curves of 2,000 points replot in 52 ms at 1.6 px,
    // 1.6 ms at 1 px).
    rawPen.setWidthF(1.0);
    raw->setPen(rawPen);
    raw->setName(c.label);
    // A run-scope metric has a point per evaluation: markers show where they are.
    if (metric->scope == core::MetricScope::kRun && c.x.size() < 200)
      raw->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, smooth ? 3 : 5));
    c.graph = raw;
    if (smooth) {
      raw->removeFromLegend();
      c.rawGraph = raw;
      QCPGraph* line = addGraph();
      line->setData(keys, scaled(c.smoothed), true);
      QPen pen(colour);
      pen.setWidthF(1.0);  // see rawPen; the raw curve behind it is faint, so this one stands out
      line->setPen(pen);
      line->setName(c.label);
      c.graph = line;
    }
    curves_.push_back(std::move(c));
  }

  QStringList notes;
  if (smooth)
    notes << tr("Smoothed: exponential moving average, weight %1, debiased; raw values faint.")
                 .arg(smoothing_, 0, 'f', 2);
  if (!downsampled.empty())
    notes << tr("Downsampled by the store: %1 drawn as the minimum and maximum of each of "
                "%2 intervals%3.")
                 .arg(runList(downsampled))
                 .arg(request.buckets)
                 .arg(metric->scope != core::MetricScope::kRun &&
                              request.reduction == MemberReduction::kMean
                          ? tr(", averaged over the members")
                          : QString());
  if (!empty.empty())
    notes << tr("No %1 points in %2.").arg(fromView(metric->name), runList(empty));
  setNote(notes.join('\n'));

  fitLegend(width());
  rescaleAxes();
  // Keep curves off the frame: a flat line on the edge is hard to see.
  const QCPRange y = yAxis->range();
  const double pad = y.size() > 0.0 ? y.size() * 0.05 : std::max(1e-3, std::fabs(y.lower) * 0.05);
  yAxis->setRange(y.lower - pad, y.upper + pad);
  if (xAxis->range().size() <= 0.0)
    xAxis->setRange(xAxis->range().lower - 1, xAxis->range().upper + 1);
  replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace dtlab::ui
