#pragma once

#include <optional>

#include <QtCore/QSize>
#include <QtCore/QString>

#include "core/analysis/experiment_report.h"
#include "ui/report/report_charts.h"

namespace dtlab::ui {

// The experiment report as one self-contained file (core/analysis/experiment_report.h says what
// it holds): HTML that opens in a browser without a network (styles inline, charts inline
// SVG), or PDF (A4 landscape, text and vector charts). `dtlab-cli report` and the workbench's
// File > Export Report both call exportReport.
enum class ReportFormat { kHtml, kPdf };
// By the file's extension (any case): .html/.htm or .pdf.
std::optional<ReportFormat> reportFormatOf(const QString& path);
inline constexpr const char* kReportExtensions = ".html or .pdf";

struct ReportOptions {
  QSize chartSize{960, 420};      // each chart's layout size in the HTML (pixels at 96 DPI)
  QSize pdfChartSize{1000, 300};  // in the PDF: two to an A4 landscape page
};

// Writes the report (read with its charts' series: readReportContent, report_charts.h) to
// `path` (replaced only once all of it is written); reads no project. Throws ExportError
// (ui/charts/chart_export.h) naming the file for an unknown extension or a file that cannot
// be written. Needs a QApplication (the charts are QCustomPlot widgets, never shown).
void exportReport(const ReportContent& content, const QString& path,
                  const ReportOptions& options = {});

// The report's HTML, as exportReport writes it.
QString reportHtml(const ReportContent& content, const ReportOptions& options = {});

}  // namespace dtlab::ui
