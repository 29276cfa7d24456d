#include "ui/report/report_export.h"

#include <QtCore/QBuffer>
#include <QtCore/QFileInfo>
#include <QtCore/QRegularExpression>
#include <QtCore/QSaveFile>
#include <QtGui/QAbstractTextDocumentLayout>
#include <QtGui/QPageLayout>
#include <QtGui/QPageSize>
#include <QtGui/QPainter>
#include <QtGui/QPdfWriter>
#include <QtGui/QPicture>
#include <QtGui/QTextCursor>
#include <QtGui/QTextDocument>
#include <QtGui/QTextObjectInterface>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/common/config.h"
#include "ui/charts/chart_export.h"
#include "ui/report/report_charts.h"

namespace dtlab::ui {
namespace {

[[noreturn]] void fail(const QString& message) {
  throw ExportError(message.toStdString());
}

QString text(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

// Styles both a browser and Qt's rich text (the PDF) understand.
constexpr const char* kCss = R"(
body { font-family: "DejaVu Sans", Arial, sans-serif; font-size: 10pt; color: #1a1a1a; }
h1 { font-size: 18pt; margin-bottom: 2pt; }
h2 { font-size: 13pt; margin-top: 16pt; margin-bottom: 4pt; color: #0b3d62; }
p.meta { color: #555555; margin-top: 0; }
p.caption { color: #555555; font-size: 8.5pt; margin-bottom: 3pt; }
table { border-collapse: collapse; margin-bottom: 6pt; }
th { background-color: #e8eef4; font-weight: bold; text-align: left; }
td, th { font-size: 8.5pt; }
td.label { font-weight: bold; white-space: nowrap; }
)";
// Only a browser reads these; Qt's rich text ignores them.
constexpr const char* kBrowserCss = R"(
body { max-width: 1200px; margin: 24px auto; padding: 0 16px; }
td, th { border: 1px solid #c8d0d8; padding: 3px 6px; vertical-align: top; }
figure { margin: 12px 0 20px 0; }
figure svg { width: 100%; height: auto; max-width: 960px; }
figcaption { color: #555555; font-size: 9pt; }
)";

// The table with its rows and columns swapped: the first column becomes the header (a
// variant per column), each other column a row (a figure per row).
core::StatisticsTable transposed(const core::StatisticsTable& t) {
  core::StatisticsTable out;
  out.caption = t.caption;
  out.header.push_back(t.header.empty() ? "" : t.header.front());
  for (const auto& row : t.rows) out.header.push_back(row.empty() ? "" : row.front());
  out.textColumns.assign(out.header.size(), false);
  out.textColumns[0] = true;
  for (std::size_t c = 1; c < t.header.size(); ++c) {
    std::vector<std::string> row = {t.header[c]};
    std::vector<std::string> tips = {""};
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      row.push_back(c < t.rows[r].size() ? t.rows[r][c] : "");
      tips.push_back(r < t.tooltips.size() && c < t.tooltips[r].size() ? t.tooltips[r][c] : "");
    }
    out.rows.push_back(std::move(row));
    out.tooltips.push_back(std::move(tips));
  }
  return out;
}

// A table; the first column's cells as labels, figures aligned right, tooltips as titles.
// `textRows`: rows of text (a transposed table's), else the table's text columns say.
QString tableHtml(const core::StatisticsTable& t, bool firstColumnLabels,
                  const std::vector<bool>& textRows = {}) {
  QString out = "<p class=\"caption\">" + text(t.caption) + "</p>\n";
  out += "<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\">\n<tr>";
  for (const std::string& h : t.header) out += "<th>" + text(h) + "</th>";
  out += "</tr>\n";
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    out += "<tr>";
    for (std::size_t c = 0; c < t.rows[r].size(); ++c) {
      const bool isText =
          (c == 0 && firstColumnLabels) ||
          (r < textRows.size() ? textRows[r] : c < t.textColumns.size() && t.textColumns[c]);
      QString cell = "<td";
      if (c == 0 && firstColumnLabels) cell += " class=\"label\"";
      if (!isText) cell += " align=\"right\"";
      if (r < t.tooltips.size() && c < t.tooltips[r].size() && !t.tooltips[r][c].empty())
        cell += " title=\"" + text(t.tooltips[r][c]) + "\"";
      out += cell + ">" + text(t.rows[r][c]) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

QString factsHtml(const std::vector<core::SpecFact>& facts) {
  QString out = "<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\">\n";
  for (const core::SpecFact& f : facts)
    out += "<tr><td class=\"label\">" + text(f.label) + "</td><td>" + text(f.text) + "</td></tr>\n";
  return out + "</table>\n";
}

QString seconds(double ms) {
  return QString::number(ms / 1000.0, 'f', 2) + " s";
}

QString eventsHtml(const core::ExperimentReport& r) {
  if (r.events.empty())
    return "<p>Nothing happened while training that DTLab records as an event (no rebalance, "
           "strategy switch, lost node or contention).</p>\n";
  QString out =
      "<p class=\"caption\">per variant and kind of event: in how many of its runs, how often in "
      "all, the first (its repetition, step and time since the run began) and the last</p>\n"
      "<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\">\n<tr><th>variant</th><th>event</th>"
      "<th>runs</th><th>count</th><th>first</th><th>last</th></tr>\n";
  for (const core::ReportEvents& e : r.events) {
    const QString first = QString("repetition %1, step %2, %3: %4")
                              .arg(e.firstRepetition + 1)
                              .arg(e.first.step)
                              .arg(seconds(e.first.wallMs), text(e.first.detail));
    const QString lastDetail =
        e.last.detail == e.first.detail ? QString("as the first") : text(e.last.detail);
    const QString last = e.count == 1 ? QString("&ndash;")
                                      : QString("repetition %1, step %2, %3: %4")
                                            .arg(e.lastRepetition + 1)
                                            .arg(e.last.step)
                                            .arg(seconds(e.last.wallMs), lastDetail);
    out += "<tr><td class=\"label\">" + text(e.variant) + "</td><td>" + text(e.kind) +
           "</td><td align=\"right\">" + QString("%1 of %2").arg(e.runs).arg(e.runsOf) +
           "</td><td align=\"right\">" + QString::number(e.count) + "</td><td>" + first +
           "</td><td>" + last + "</td></tr>\n";
  }
  return out + "</table>\n";
}

// The document, with a marker comment where each chart goes (kChartMarker + its index).
constexpr const char* kChartMarker = "<!--dtlab-chart:";

QString bodyHtml(const core::ExperimentReport& r) {
  const std::size_t variants = r.groups.size();
  QString meta = QString("DTLab experiment report of project %1").arg(text(r.project));
  if (r.executionId) meta += QString(", execution %1").arg(*r.executionId);
  meta += QString(": %1 variant%2").arg(variants).arg(variants == 1 ? "" : "s");
  if (r.repeats > 1) meta += QString(" &times; %1 repetitions").arg(r.repeats);
  meta += QString(", %1 run%2").arg(r.runCount).arg(r.runCount == 1 ? "" : "s");
  if (!r.when.empty()) meta += ", " + text(r.when);
  QString out = "<h1>" + text(r.experiment) + "</h1>\n<p class=\"meta\">" + meta + ".</p>\n";

  out += "<h2>The experiment</h2>\n";
  out += r.description.empty() ? "<p>" + text(r.specNote) + ".</p>\n" : factsHtml(r.description);

  std::vector<bool> textRows(r.variants.textColumns.begin() + 1, r.variants.textColumns.end());
  out += "<h2>Comparison</h2>\n" + tableHtml(transposed(r.variants), true, textRows);
  if (!r.ratios.rows.empty()) out += tableHtml(r.ratios, false);

  out += "<h2>The seed table</h2>\n" + tableHtml(r.seed, true);

  out += "<h2>Charts</h2>\n";
  if (r.charts.empty()) out += "<p>No run of this execution recorded a metric to chart.</p>\n";
  for (std::size_t i = 0; i < r.charts.size(); ++i)
    out += QString(kChartMarker) + QString::number(i) + "-->\n";

  out += "<h2>Events that mattered</h2>\n" + eventsHtml(r);
  out += "<h2>Machine and versions</h2>\n" + factsHtml(r.machine);
  return out;
}

QByteArray chartSvg(QCustomPlot& plot, QSize size, const QString& title) {
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  if (!writeSvg(plot, buffer, size, title)) fail("cannot draw the chart " + title);
  QByteArray svg = buffer.data();
  svg = svg.mid(std::max<qsizetype>(0, svg.indexOf("<svg")));  // no XML declaration inline
  // The page sizes it (CSS): drop the fixed width and height, keep the viewBox.
  static const QRegularExpression fixed(QStringLiteral("\\s(width|height)=\"[^\"]*\""));
  const qsizetype tagEnd = svg.indexOf('>');
  QString tag = QString::fromUtf8(svg.left(tagEnd));
  tag.remove(fixed);
  return tag.toUtf8() + svg.mid(tagEnd);
}

QString figureHtml(const ReportContent& content, std::size_t chart, QSize size) {
  const std::unique_ptr<QCustomPlot> plot = reportChart(content, chart, size);
  const QString title = QString::fromStdString(content.report.charts.at(chart).title);
  return "<figure>\n" + QString::fromUtf8(chartSvg(*plot, size, title)) + "\n<figcaption>" +
         title.toHtmlEscaped() + "</figcaption>\n</figure>\n";
}

// A chart in the PDF: its drawing recorded as a QPicture (vector commands), replayed where the
// text layout puts it.
constexpr int kChartObject = QTextFormat::UserObject + 1;
constexpr int kPictureProperty = 1;
constexpr int kSizeProperty = 2;  // the chart's layout size; the picture is drawn into it

class ChartObject final : public QObject, public QTextObjectInterface {
  Q_OBJECT
  Q_INTERFACES(QTextObjectInterface)
 public:
  using QObject::QObject;
  // The chart's size, narrowed to the text's width where it is wider.
  QSizeF intrinsicSize(QTextDocument* doc, int, const QTextFormat& format) override {
    const QSizeF size = format.property(kSizeProperty).toSizeF();
    const qreal width =
        doc->textWidth() > 0 ? doc->textWidth() - 2 * doc->documentMargin() : size.width();
    const qreal scale = std::min<qreal>(1.0, width / size.width());
    return size * scale;
  }
  void drawObject(QPainter* painter, const QRectF& rect, QTextDocument*, int,
                  const QTextFormat& format) override {
    QPicture picture = format.property(kPictureProperty).value<QPicture>();
    const QSizeF size = format.property(kSizeProperty).toSizeF();
    painter->save();
    painter->translate(rect.topLeft());
    painter->scale(rect.width() / size.width(), rect.height() / size.height());
    picture.play(painter);
    painter->restore();
  }
};

void writePdf(const ReportContent& content, const QString& body, const QString& path, QSize size) {
  const core::ExperimentReport& r = content.report;
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly))
    fail(QString("cannot write %1: %2").arg(path, file.errorString()));
  QPdfWriter writer(&file);
  writer.setTitle(QString::fromStdString("DTLab report: " + r.experiment));
  writer.setCreator(QStringLiteral("DTLab " DTLAB_VERSION));
  // Device units of 1/96 inch, those of the text layout and the charts: fonts given in points
  // then come out at their size (a painter scaled to a finer resolution would enlarge them).
  writer.setResolution(96);
  writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Landscape,
                                   QMarginsF(12, 12, 12, 12), QPageLayout::Millimeter));

  QTextDocument doc;
  doc.setDefaultStyleSheet(QString::fromUtf8(kCss));
  ChartObject handler;
  doc.documentLayout()->registerHandler(kChartObject, &handler);
  QTextCursor cursor(&doc);
  // The body up to each chart marker as rich text, then the chart.
  qsizetype from = 0;
  for (std::size_t i = 0;; ++i) {
    const qsizetype marker = body.indexOf(kChartMarker, from);
    cursor.insertHtml(body.mid(from, marker < 0 ? -1 : marker - from));
    if (marker < 0) break;
    const std::unique_ptr<QCustomPlot> plot = reportChart(content, i, size);
    QPicture picture;
    if (!drawVectors(*plot, picture, size))
      fail("cannot draw the chart " + QString::fromStdString(r.charts[i].title));
    QTextCharFormat format;
    format.setObjectType(kChartObject);
    format.setProperty(kPictureProperty, QVariant::fromValue(picture));
    format.setProperty(kSizeProperty, QSizeF(size));
    cursor.insertBlock();
    cursor.insertText(QString(QChar::ObjectReplacementCharacter), format);
    cursor.insertBlock();
    cursor.insertHtml("<p class=\"caption\">" +
                      QString::fromStdString(r.charts[i].title).toHtmlEscaped() + "</p>");
    from = body.indexOf("-->", marker) + 3;
  }
  // Laid out in pages of the writer's paint area, each numbered at its foot.
  const QRectF area = writer.pageLayout().paintRectPixels(writer.resolution());
  const QSizeF page(area.width(), area.height() - 18.0);
  doc.setPageSize(page);
  QPainter painter;
  if (!painter.begin(&writer)) fail(QString("cannot write %1").arg(path));
  const int pages = doc.pageCount();
  for (int i = 0; i < pages; ++i) {
    if (i > 0) writer.newPage();
    painter.save();
    painter.translate(0, -i * page.height());
    doc.drawContents(&painter, QRectF(QPointF(0, i * page.height()), page));
    painter.restore();
    painter.setPen(QColor(110, 110, 110));
    QFont small = doc.defaultFont();
    small.setPointSizeF(7.5);
    painter.setFont(small);
    painter.drawText(
        QRectF(0, page.height(), page.width(), 18.0), Qt::AlignRight | Qt::AlignBottom,
        QString("%1 · %2 / %3").arg(QString::fromStdString(r.experiment)).arg(i + 1).arg(pages));
  }
  painter.end();
  if (!file.commit()) fail(QString("cannot write %1: %2").arg(path, file.errorString()));
}

}  // namespace

std::optional<ReportFormat> reportFormatOf(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == "html" || suffix == "htm") return ReportFormat::kHtml;
  if (suffix == "pdf") return ReportFormat::kPdf;
  return std::nullopt;
}

QString reportHtml(const ReportContent& content, const ReportOptions& options) {
  const core::ExperimentReport& r = content.report;
  QString body = bodyHtml(r);
  for (std::size_t i = 0; i < r.charts.size(); ++i)
    body.replace(QString(kChartMarker) + QString::number(i) + "-->",
                 figureHtml(content, i, options.chartSize));
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>DTLab "
         "report: " +
         text(r.experiment) + "</title>\n<style>" + kCss + kBrowserCss +
         "</style>\n</head>\n<body>\n" + body + "</body>\n</html>\n";
}

void exportReport(const ReportContent& content, const QString& path, const ReportOptions& options) {
  const std::optional<ReportFormat> format = reportFormatOf(path);
  if (!format)
    fail(QString("%1: unknown file type '.%2' (a report is written as %3)")
             .arg(path, QFileInfo(path).suffix(), kReportExtensions));
  if (*format == ReportFormat::kHtml)
    writeTextFile(path, reportHtml(content, options));
  else
    writePdf(content, bodyHtml(content.report), path, options.pdfChartSize);
}

}  // namespace dtlab::ui

#include "report_export.moc"
