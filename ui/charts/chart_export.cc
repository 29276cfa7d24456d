#include "ui/charts/chart_export.h"

#include <QtCore/QBuffer>
#include <QtCore/QFileInfo>
#include <QtCore/QRegularExpression>
#include <QtCore/QSaveFile>
#include <QtSvg/QSvgGenerator>

#include "core/common/config.h"
#include "ui/charts/comparison_chart.h"

namespace dtlab::ui {
namespace {

constexpr int kMinSide = 100;
constexpr int kMaxSide = 20000;
constexpr int kScreenDpi = 96;  // QCustomPlot's and Qt's logical DPI: scale 1 means 96 DPI

[[noreturn]] void fail(const QString& message) {
  throw ExportError(message.toStdString());
}

void saveSvg(ComparisonChart& chart, const QString& path, QSize size) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly))
    fail(QString("cannot write %1: %2").arg(path, file.errorString()));
  if (!writeSvg(chart, file, size, chart.title()) || !file.commit())
    fail(QString("cannot write %1").arg(path));
}

QString number(double v) {
  return QString::number(v, 'g', 10);
}

}  // namespace

bool drawVectors(QCustomPlot& plot, QPaintDevice& device, QSize size) {
  QCPPainter painter;
  if (!painter.begin(&device)) return false;
  painter.setMode(QCPPainter::pmVectorized);
  painter.setMode(QCPPainter::pmNoCaching);
  plot.toPainter(&painter, size.width(), size.height());
  return painter.end();
}

bool writeSvg(QCustomPlot& plot, QIODevice& device, QSize size, const QString& title) {
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setSize(size);
  svg.setViewBox(QRect(QPoint(0, 0), size));
  // Fonts are sized in points: at the screen's DPI the SVG looks as the chart on screen does.
  svg.setResolution(kScreenDpi);
  svg.setTitle(title);
  svg.setDescription(QStringLiteral("DTLab " DTLAB_VERSION " chart"));
  if (!drawVectors(plot, svg, size)) return false;
  // Qt names fontconfig's families ("Sans Serif"), which browsers do not know: a generic
  // family after each keeps the chart's sans-serif text where the named one is missing.
  static const QRegularExpression family(QStringLiteral("font-family=\"([^\"]*)\""));
  QString text = QString::fromUtf8(buffer.data());
  text.replace(family, QStringLiteral("font-family=\"\\1, sans-serif\""));
  const QByteArray bytes = text.toUtf8();
  return device.write(bytes) == bytes.size();
}

std::optional<ChartFormat> chartFormatOf(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == "png") return ChartFormat::kPng;
  if (suffix == "svg") return ChartFormat::kSvg;
  if (suffix == "pdf") return ChartFormat::kPdf;
  if (suffix == "csv") return ChartFormat::kCsv;
  return std::nullopt;
}

QString csvField(const QString& text) {
  if (!text.contains(',') && !text.contains('"') && !text.contains('\n') && !text.contains('\r'))
    return text;
  QString quoted = text;
  quoted.replace('"', "\"\"");
  return '"' + quoted + '"';
}

void writeTextFile(const QString& path, const QString& text) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly))
    fail(QString("cannot write %1: %2").arg(path, file.errorString()));
  const QByteArray bytes = text.toUtf8();
  if (file.write(bytes) != bytes.size() || !file.commit())
    fail(QString("cannot write %1: %2").arg(path, file.errorString()));
}

QString chartCsv(const ComparisonChart& chart) {
  const ComparisonRequest& request = chart.data().request;
  const QString metric = QString::fromStdString(request.metric);
  const bool smoothed = chart.smoothing() > 0.0;
  QString out =
      QString("run,name,%1,%2").arg(request.x == ChartX::kStep ? "step" : "wall_s", metric);
  if (smoothed) out += ',' + metric + "_smoothed";
  out += '\n';
  for (std::size_t r = 0; r < chart.curves().size(); ++r) {
    const ComparisonChart::Curve& c = chart.curves()[r];
    const QString run = QString("%1,%2,").arg(c.runId).arg(
        csvField(QString::fromStdString(chart.data().series[r].runName)));
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      out += run + number(c.x[i]) + ',' + number(c.values[i]);
      if (smoothed) out += ',' + number(c.smoothed[i]);
      out += '\n';
    }
  }
  return out;
}

void exportChart(ComparisonChart& chart, const QString& path, const ChartExportOptions& options) {
  const std::optional<ChartFormat> format = chartFormatOf(path);
  if (!format)
    fail(QString("%1: unknown file type '.%2' (charts export as %3)")
             .arg(path, QFileInfo(path).suffix(), kChartExtensions));
  const QSize size = options.size;
  if (size.width() < kMinSide || size.height() < kMinSide || size.width() > kMaxSide ||
      size.height() > kMaxSide)
    fail(QString("size %1x%2 out of range (%3 to %4 pixels a side)")
             .arg(size.width())
             .arg(size.height())
             .arg(kMinSide)
             .arg(kMaxSide));
  if (options.dpi < 48 || options.dpi > 1200)
    fail(QString("DPI %1 out of range (48 to 1200)").arg(options.dpi));
  // The export lays the chart out at its own size; afterwards, lay it out for the screen again.
  struct Relayout {
    ComparisonChart& chart;
    ~Relayout() {
      chart.fitToSize(chart.size());
      chart.replot(QCustomPlot::rpQueuedReplot);
    }
  } relayout{chart};
  chart.fitToSize(size);
  bool ok = true;
  switch (*format) {
    case ChartFormat::kPng:
      ok = chart.savePng(path, size.width(), size.height(),
                         static_cast<double>(options.dpi) / kScreenDpi, -1, options.dpi);
      break;
    case ChartFormat::kSvg:
      saveSvg(chart, path, size);
      break;
    case ChartFormat::kPdf:
      ok = chart.savePdf(path, size.width(), size.height(), QCP::epAllowCosmetic,
                         QStringLiteral("DTLab " DTLAB_VERSION), chart.title());
      break;
    case ChartFormat::kCsv:
      writeTextFile(path, chartCsv(chart));
      break;
  }
  if (!ok) fail(QString("cannot write %1").arg(path));
}

}  // namespace dtlab::ui
