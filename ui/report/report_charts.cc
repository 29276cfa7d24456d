#include "ui/report/report_charts.h"

#include <algorithm>
#include <vector>

#include "ui/charts/comparison_chart.h"
#include "ui/charts/comparison_data.h"
#include "ui/charts/palette.h"

namespace dtlab::ui {
namespace {

// The series a curve chart draws: its metric over the execution's runs, grouped by variant.
ComparisonRequest curveRequest(const core::ExperimentReport& report,
                               const core::ReportChart& chart) {
  ComparisonRequest request;
  request.metric = chart.metric;
  request.x = chart.wallClock ? ChartX::kWallSeconds : ChartX::kStep;
  for (const core::ReportGroup& g : report.groups) {
    request.groups.push_back({g.variant, g.runIds});
    request.runIds.insert(request.runIds.end(), g.runIds.begin(), g.runIds.end());
  }
  return request;
}

std::unique_ptr<QCustomPlot> curveChart(const ComparisonData& data, QSize size) {
  auto plot = std::make_unique<ComparisonChart>();
  plot->resize(size);
  plot->fitToSize(size);
  plot->setData(data);
  return plot;
}

std::unique_ptr<QCustomPlot> barChart(const core::ExperimentReport& report,
                                      const core::ReportChart& chart, QSize size) {
  auto plot = std::make_unique<QCustomPlot>();
  plot->resize(size);
  const core::ComparisonColumn* column = nullptr;
  for (const core::ComparisonColumn& c : core::comparisonColumns())
    if (chart.metric == c.key) column = &c;
  auto* title = new QCPTextElement(plot.get());
  QFont titleFont = plot->font();
  titleFont.setPointSizeF(titleFont.pointSizeF() * 1.15);
  titleFont.setBold(true);
  title->setFont(titleFont);
  const bool repeated =
      std::any_of(report.statistics.variants.begin(), report.statistics.variants.end(),
                  [](const core::VariantStatistics& v) { return v.completed > 1; });
  title->setText(
      QString::fromStdString(chart.title) +
      (repeated ? QObject::tr(": median per variant, whisker the 95% interval") : QString()));
  plot->plotLayout()->insertRow(0);
  plot->plotLayout()->addElement(0, 0, title);

  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  double top = 0.0;
  const double scale = column != nullptr && column->scale > 0 ? column->scale : 1.0;
  for (std::size_t i = 0; i < report.statistics.variants.size(); ++i) {
    const core::VariantStatistics& v = report.statistics.variants[i];
    const double x = static_cast<double>(i + 1);
    ticker->addTick(x, QString::fromStdString(v.variant));
    const core::FigureStatistics* f = v.figure(chart.metric);
    if (f == nullptr) continue;  // not measured: no bar (the tables say why)
    const core::Interval& in = f->interval;
    auto* bar = new QCPBars(plot->xAxis, plot->yAxis);
    const QColor colour = seriesColour(i);
    bar->setPen(QPen(colour.darker(130)));
    bar->setBrush(QColor(colour.red(), colour.green(), colour.blue(), 170));
    bar->setWidth(0.6);
    bar->addData(x, in.estimate / scale);
    if (in.n > 1 && in.high > in.low) {
      auto* whisker = new QCPErrorBars(plot->xAxis, plot->yAxis);
      whisker->setDataPlottable(bar);
      whisker->setPen(QPen(QColor(40, 40, 40), 1.5));
      whisker->addData((in.estimate - in.low) / scale, (in.high - in.estimate) / scale);
    }
    top = std::max(top, in.high / scale);
  }
  plot->xAxis->setTicker(ticker);
  plot->xAxis->setRange(0.4, static_cast<double>(report.statistics.variants.size()) + 0.6);
  plot->xAxis->grid()->setVisible(false);
  plot->yAxis->setRange(0.0, top > 0.0 ? top * 1.1 : 1.0);
  plot->yAxis->setLabel(column != nullptr && column->title != nullptr
                            ? QString::fromUtf8(column->title)
                            : QString::fromStdString(chart.metric));
  plot->replot();
  return plot;
}

}  // namespace

ReportContent readReportContent(core::ProjectStore& store, core::ExperimentReport report) {
  ReportContent content;
  for (const core::ReportChart& chart : report.charts)
    content.curves.push_back(chart.kind == core::ReportChart::Kind::kCurve
                                 ? std::optional(readComparison(store, curveRequest(report, chart)))
                                 : std::nullopt);
  content.report = std::move(report);
  return content;
}

std::unique_ptr<QCustomPlot> reportChart(const ReportContent& content, std::size_t chart,
                                         QSize size) {
  const std::optional<ComparisonData>& curves = content.curves.at(chart);
  return curves ? curveChart(*curves, size)
                : barChart(content.report, content.report.charts.at(chart), size);
}

}  // namespace dtlab::ui
