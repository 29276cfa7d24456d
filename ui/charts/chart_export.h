#pragma once

#include <optional>

#include <QtCore/QSize>
#include <QtCore/QString>

#include "core/common/check.h"

class QCustomPlot;
class QIODevice;
class QPaintDevice;

namespace dtlab::ui {

class ComparisonChart;

// Writing a chart or a table failed (a bad name, size, or a file that cannot be written); the
// message says which and why.
class ExportError : public Error {
 public:
  using Error::Error;
};

enum class ChartFormat { kPng, kSvg, kPdf, kCsv };
// The format a file name asks for by its extension (any case), or nullopt.
std::optional<ChartFormat> chartFormatOf(const QString& path);
inline constexpr const char* kChartExtensions = ".png, .svg, .pdf or .csv";

struct ChartExportOptions {
  QSize size{1200, 700};  // the chart's layout size in pixels (in points for PDF)
  int dpi = 96;           // PNG only: rendered at size x dpi / 96 pixels, tagged with this DPI
};

// The one way the chart leaves DTLab, for the GUI's Export buttons and for
// `dtlab --chart ... --export` alike: PNG (QCustomPlot::savePng at scale dpi / 96), SVG
// (QSvgGenerator, drawn as vectors), PDF (QCustomPlot::savePdf: one page, vectors, fonts
// embedded), or CSV of the plotted points (chartCsv), by the file's extension. Throws
// ExportError naming the file.
void exportChart(ComparisonChart& chart, const QString& path, const ChartExportOptions& options);

// The chart's points as CSV: a header `run,name,<step|wall_s>,<metric>[,<metric>_smoothed]`,
// then one row per plotted point, runs in the chart's order, values in the metric table's
// unit (bytes stay bytes though the axis says MiB).
QString chartCsv(const ComparisonChart& chart);

// Draws the plot at `size` onto `device` as vector commands (no cached pixmaps): what the SVG
// and the report's PDF charts are made of. False when the device cannot be painted on.
bool drawVectors(QCustomPlot& plot, QPaintDevice& device, QSize size);

// The plot as SVG (vectors, fonts at the screen's 96 DPI) at `size`, written to `device`; the
// one SVG writer of the chart exports and the experiment report. False when it cannot write.
bool writeSvg(QCustomPlot& plot, QIODevice& device, QSize size, const QString& title);

// Writes `text` as UTF-8, replacing the file only once all of it is written.
void writeTextFile(const QString& path, const QString& text);

// A CSV field, quoted when it must be.
QString csvField(const QString& text);

}  // namespace dtlab::ui
