#include "ui/charts/comparison_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "ui/charts/palette.h"
#include "ui/charts/smoothing.h"

namespace dtlab::ui {
namespace {

constexpr int kLegendMargin = 8;
// Below this height the y-axis is too short for a two-line label: its second line (what was
// done with the members' series) moves into the title.
constexpr int kCompactHeight = 330;
// A group's band: at most this many points (bandOf's grid), its fill and its runs' alpha.
constexpr std::size_t kBandGridPoints = 400;
constexpr int kBandAlpha = 50;
constexpr int kMemberAlpha = 70;

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

// "sync_allreduce (median of 5, band: range)": what the median curve stands for, and how many
// of the group's runs it has (runs without points count in the group, not in the median).
QString groupLabel(const QString& name, int runs, int withPoints) {
  const QString runWord = runs == 1 ? QStringLiteral("run") : QStringLiteral("runs");
  if (runs == 0) return name + " (no runs)";
  if (withPoints == 0) return QString("%1 (%2 %3, no points)").arg(name).arg(runs).arg(runWord);
  if (runs == 1) return name + " (1 run)";
  if (withPoints == 1) return QString("%1 (1 of %2 runs has points)").arg(name).arg(runs);
  QString label = QString("%1 (median of %2, band: range").arg(name).arg(withPoints);
  if (withPoints < runs)
    label += QString("; %1 of %2 runs without points").arg(runs - withPoints).arg(runs);
  return label + ")";
}

QColor withAlpha(QColor colour, int alpha) {
  colour.setAlpha(alpha);
  return colour;
}

QVector<double> scaled(const std::vector<double>& v, double scale) {
  QVector<double> out(static_cast<qsizetype>(v.size()));
  for (std::size_t i = 0; i < v.size(); ++i) out[static_cast<qsizetype>(i)] = v[i] * scale;
  return out;
}

// A band's curve as drawn: scaled, with a NaN point where grid points that no run covers were
// left out (runs in wall time that do not overlap), which QCustomPlot draws as a gap instead
// of a line or a fill across it. Kept points lie on an even grid, so the smallest step between
// them is the grid's, and a step half again as long skipped some.
void setBandData(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& v,
                 double scale) {
  double step = std::numeric_limits<double>::infinity();
  for (std::size_t i = 1; i < x.size(); ++i) step = std::min(step, x[i] - x[i - 1]);
  QVector<double> keys, values;
  keys.reserve(static_cast<qsizetype>(x.size()));
  values.reserve(static_cast<qsizetype>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i > 0 && x[i] - x[i - 1] > 1.5 * step) {
      keys << (x[i] + x[i - 1]) / 2.0;
      values << std::numeric_limits<double>::quiet_NaN();
    }
    keys << x[i];
    values << v[i] * scale;
  }
  graph->setData(keys, values, true);
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
  bands_.clear();
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
  const bool grouped = !request.groups.empty();
  if (grouped)
    drawGroups(*metric);
  else
    drawRuns(*metric);

  std::vector<int64_t> downsampled, empty;
  for (const ComparisonSeries& s : data_.series) {
    if (s.downsampled) downsampled.push_back(s.runId);
    if (s.values.empty()) empty.push_back(s.runId);
  }
  QStringList notes;
  if (grouped)
    notes << tr("Each variant: the median of its repetitions at each %1, band: their range "
                "(minimum to maximum); repetitions faint.")
                 .arg(request.x == ChartX::kStep ? tr("step") : tr("time"));
  if (smoothing_ > 0.0)
    notes << (grouped ? tr("Smoothed: exponential moving average, weight %1, debiased; each "
                           "repetition smoothed before the median and band are taken.")
                      : tr("Smoothed: exponential moving average, weight %1, debiased; raw "
                           "values faint."))
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

ComparisonChart::Curve ComparisonChart::curveOf(const ComparisonSeries& s,
                                                const core::MetricInfo& metric) const {
  Curve c;
  c.runId = s.runId;
  c.label = legendLabel(s, data_.request, metric);
  c.x = s.x;
  c.values = s.values;
  if (smoothing_ > 0.0) c.smoothed = smoothEma(c.values, smoothing_);
  return c;
}

void ComparisonChart::drawRuns(const core::MetricInfo& metric) {
  const double scale = displayScale(metric);
  const bool smooth = smoothing_ > 0.0;
  for (const ComparisonSeries& s : data_.series) {
    Curve c = curveOf(s, metric);

    const QColor colour = runColour(s.runId);
    const QVector<double> keys(c.x.begin(), c.x.end());
    QCPGraph* raw = addGraph();
    raw->setData(keys, scaled(c.values, scale), true);
    QPen rawPen(smooth ? QColor(colour.red(), colour.green(), colour.blue(), 60) : colour);
    // One pixel wide: Qt's raster engine strokes wider antialiased lines through its slow
    // path (measured with `dtlab --bench`: 8 curves of 2,000 points replot in 52 ms at 1.6 px,
    // 1.6 ms at 1 px).
    rawPen.setWidthF(1.0);
    raw->setPen(rawPen);
    raw->setName(c.label);
    // A run-scope metric has a point per evaluation: markers show where they are.
    if (metric.scope == core::MetricScope::kRun && c.x.size() < 200)
      raw->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, smooth ? 3 : 5));
    c.graph = raw;
    if (smooth) {
      raw->removeFromLegend();
      c.rawGraph = raw;
      QCPGraph* line = addGraph();
      line->setData(keys, scaled(c.smoothed, scale), true);
      QPen pen(colour);
      pen.setWidthF(1.0);  // see rawPen; the raw curve behind it is faint, so this one stands out
      line->setPen(pen);
      line->setName(c.label);
      c.graph = line;
    }
    curves_.push_back(std::move(c));
  }
}

void ComparisonChart::drawGroups(const core::MetricInfo& metric) {
  const ComparisonRequest& request = data_.request;
  const double scale = displayScale(metric);
  const bool smooth = smoothing_ > 0.0;

  // Every run's curve once, in the data's order; groups refer to them by index.
  std::map<int64_t, std::size_t> indexOf;
  for (const ComparisonSeries& s : data_.series) {
    Curve c = curveOf(s, metric);
    indexOf.emplace(s.runId, curves_.size());
    curves_.push_back(std::move(c));
  }

  // The groups as asked, then a group of its own for each run no group names.
  std::vector<std::pair<QString, std::vector<std::size_t>>> groups;
  std::vector<bool> named(curves_.size(), false);
  for (const RunGroup& g : request.groups) {
    std::vector<std::size_t> members;
    for (const int64_t id : g.runIds) {
      const auto it = indexOf.find(id);
      if (it == indexOf.end()) continue;  // not read: nothing to draw
      members.push_back(it->second);
      named[it->second] = true;
    }
    groups.emplace_back(QString::fromStdString(g.label), std::move(members));
  }
  for (std::size_t i = 0; i < curves_.size(); ++i)
    if (!named[i])
      groups.emplace_back(QString("#%1 %2")
                              .arg(curves_[i].runId)
                              .arg(QString::fromStdString(data_.series[i].runName)),
                          std::vector<std::size_t>{i});

  // Drawn in layers, so no group's band hides another's median: every band, then every run,
  // then the medians (which also puts the legend in the groups' order).
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& [name, members] = groups[gi];
    Band b;
    std::vector<CurveView> views;
    std::size_t longest = 0;
    int withPoints = 0;
    for (const std::size_t m : members) {
      const Curve& c = curves_[m];
      b.runIds.push_back(c.runId);
      views.push_back({c.x, smooth ? c.smoothed : c.values});
      longest = std::max(longest, c.x.size());
      withPoints += c.values.empty() ? 0 : 1;
    }
    // As many grid points as the longest run has, so runs that record the same steps are
    // compared at exactly those steps, but at most kBandGridPoints: a few hundred points are
    // finer than the chart's pixels.
    const int grid = static_cast<int>(std::clamp<std::size_t>(longest, 2, kBandGridPoints));
    b.band = bandOf(views, grid);
    b.label = groupLabel(name, static_cast<int>(members.size()), withPoints);

    const QColor colour = seriesColour(gi);
    b.low = addGraph();
    setBandData(b.low, b.band.x, b.band.low, scale);
    b.low->setPen(Qt::NoPen);
    b.low->removeFromLegend();
    b.high = addGraph();
    setBandData(b.high, b.band.x, b.band.high, scale);
    b.high->setPen(Qt::NoPen);
    b.high->setBrush(withAlpha(colour, kBandAlpha));
    b.high->setChannelFillGraph(b.low);
    b.high->removeFromLegend();
    bands_.push_back(std::move(b));
  }
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const QColor colour = seriesColour(gi);
    for (const std::size_t m : groups[gi].second) {
      Curve& c = curves_[m];
      QCPGraph* member = addGraph();
      member->setData(QVector<double>(c.x.begin(), c.x.end()),
                      scaled(smooth ? c.smoothed : c.values, scale), true);
      QPen pen(withAlpha(colour, kMemberAlpha));
      pen.setWidthF(1.0);
      member->setPen(pen);
      if (metric.scope == core::MetricScope::kRun && c.x.size() < 200)
        member->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 3));
      member->setName(c.label);
      member->removeFromLegend();
      if (c.graph == nullptr) c.graph = member;
      bands_[gi].members.push_back(member);
    }
  }
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    Band& b = bands_[gi];
    b.median = addGraph();
    setBandData(b.median, b.band.x, b.band.median, scale);
    // 2 px, though wider lines take Qt's slow path (drawRuns): the medians are what the chart
    // is read by, there is one per variant, and each has at most kBandGridPoints points.
    QPen pen(seriesColour(gi));
    pen.setWidthF(2.0);
    b.median->setPen(pen);
    b.median->setName(b.label);
  }
}

}  // namespace dtlab::ui
