// `dtlab-cli report` as a user meets it: an experiment of three variants on two heterogeneous
// local nodes, two repetitions, run into a project; its report written as HTML and as PDF and
// looked at as a reader would: the HTML rendered by headless Chromium (a Debian package, no
// network) to a screenshot, the PDF rendered to PNG pages by pdftoppm; what they say checked
// against the project; and the errors for a wrong file name, experiment or execution.
#include <QtCore/QRegularExpression>
#include <QtCore/QStandardPaths>
#include <QtGui/QImage>
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include "core/common/config.h"
#include "core/spec/spec_json.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;

namespace {

using e2e::cli;
using e2e::Outcome;

// Two nodes, the second at half speed behind an emulated link; sync with the equal split,
// sync with the speed-proportional split, and the parameter server (staleness).
core::ExperimentSpec heteroSpec() {
  core::ExperimentSpec spec = core::parseExperimentSpec(nlohmann::json::parse(R"({
    "name": "hetero_report", "seed": 11, "repeats": 2,
    "dataset": {"kind": "gaussian_blobs", "train_size": 2048, "test_size": 256, "features": 8,
                "classes": 3},
    "model": {"hidden": [16]},
    "training": {"batch_size": 32, "epochs": 0, "max_steps": 40, "eval_interval": 10,
                 "target_accuracy": 0.5},
    "cluster": {"local_nodes": 2,
                "nodes": [{"speed": 1.0}, {"speed": 0.5, "bandwidth_mbps": 800,
                                           "latency_ms": 0.5}]},
    "variants": [{"name": "equal", "strategy": "sync_allreduce"},
                 {"name": "proportional", "strategy": "sync_allreduce",
                  "partition": "speed_proportional", "rebalance_every": 10},
                 {"name": "ps", "strategy": "async_ps"}]})"));
  return spec;
}

// Pixels of `image` that are neither white nor nearly so, and of them those of a strong
// colour (the charts' curves and bands; text is black or grey).
struct Ink {
  int64_t inked = 0;
  int64_t coloured = 0;
};
Ink inkOf(const QImage& image) {
  Ink ink;
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < rgb.height(); ++y)
    for (int x = 0; x < rgb.width(); ++x) {
      const QColor c = QColor::fromRgb(rgb.pixel(x, y));
      if (c.lightness() < 235) ++ink.inked;
      if (c.hsvSaturation() > 90 && c.value() > 60) ++ink.coloured;
    }
  return ink;
}

QString tool(const char* name) {
  const QString path = QStandardPaths::findExecutable(name);
  if (path.isEmpty() && qEnvironmentVariableIsSet("CI"))
    qFatal("%s is missing: installer/dev.sh deps installs it", name);
  return path;
}

}  // namespace

class TestReport : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString project_;

 private slots:
  void initTestCase() {
    project_ = dir_.filePath("hetero.dtlab");
    const Outcome run =
        cli({"run", e2e::writeSpec(dir_, heteroSpec()), "--quiet", "--project", project_}, 300000);
    QVERIFY2(run.exitCode == 0, qPrintable(run.err));
  }

  // The HTML: one file, everything inline, every section saying what the project holds.
  void htmlSaysWhatTheProjectHolds() {
    const QString path = dir_.filePath("report.html");
    const Outcome o = cli({"report", project_, "-o", path});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    QVERIFY2(o.err.contains("hetero_report, execution 1 (6 runs"), qPrintable(o.err));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(file.readAll());

    // Self-contained: no script, stylesheet, image or font fetched from anywhere.
    for (const char* outside : {"<script", "<link", "<img", "src=", "url(", "@import"})
      QVERIFY2(!html.contains(outside), outside);
    static const QRegularExpression address(QStringLiteral("https?://(?!www\\.w3\\.org/)"));
    QVERIFY2(!html.contains(address), qPrintable(address.match(html).captured()));

    // The experiment in words: dataset, model, cluster with node speeds and links, variants.
    for (const char* said :
         {"gaussian_blobs", "2,048 training and 256 test samples", "MLP 8-16-3", "2 local nodes",
          "node 0: speed 1, link not emulated", "node 1: speed 0.5, 800 Mbit/s, 0.5 ms latency",
          "Variant proportional", "partition speed_proportional", "rebalance_every 10",
          "Variant ps", "async_ps", "6 runs", "&times; 2 repetitions"})
      QVERIFY2(html.contains(said), said);
    // The comparison with its intervals and ratios, the seed table, events and machines.
    QVERIFY(html.contains("medians of the completed runs"));
    QVERIFY(html.contains("ratios of medians, paired by repetition"));
    QVERIFY(html.contains("<th>proportional</th>"));
    QVERIFY(html.contains("consistency"));
    QVERIFY(html.contains("fault tolerance"));
    QVERIFY2(html.contains("rebalance"), "the proportional split's rebalances are events");
    static const QRegularExpression nodes(QStringLiteral("Nodes? node0[^<]*</td><td>host "));
    QVERIFY2(html.contains(nodes), "each node as its daemon described itself");
    QVERIFY(html.contains("DTLab " DTLAB_VERSION));

    // A chart per standard figure the runs recorded, each an inline SVG with its title.
    const int charts = static_cast<int>(html.count("<svg"));
    QCOMPARE(charts, static_cast<int>(html.count("<figcaption>")));
    QVERIFY2(charts >= 8, qPrintable(QString::number(charts)));
    for (const char* title :
         {"Training loss against time", "Test accuracy against steps", "Throughput",
          "Staleness of the gradients applied", "Communication per sample"})
      QVERIFY2(html.contains(QString("<figcaption>%1").arg(title)), title);
    // The staleness chart draws each variant as its median with a band of its repetitions.
    QVERIFY(html.contains("equal (median of 2, band: range)"));

    // In a browser: Chromium renders it headless (no network needed: file://) to an image
    // with text and coloured curves.
    const QString chromium = tool("chromium");
    if (chromium.isEmpty()) QSKIP("chromium is not installed (installer/dev.sh deps installs it)");
    const QString shot = dir_.filePath("report.png");
    QProcess browser;
    browser.start(chromium, {"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                             "--no-first-run", "--user-data-dir=" + dir_.filePath("chromium"),
                             "--window-size=1300,5000", "--screenshot=" + shot,
                             QUrl::fromLocalFile(path).toString()});
    QVERIFY(browser.waitForFinished(120000));
    QImage image(shot);
    QVERIFY2(!image.isNull(), browser.readAllStandardError().constData());
    const Ink ink = inkOf(image);
    QVERIFY2(ink.inked > image.width() * image.height() / 50, "the page is blank");
    QVERIFY2(ink.coloured > 20000, "no chart drawn in the browser");
  }

  // The PDF: A4 pages with the same sections, charts as vectors (no image in it), rendered
  // page by page.
  void pdfRendersAsPagesWithVectorCharts() {
    const QString path = dir_.filePath("report.pdf");
    const Outcome o = cli({"report", project_, "hetero_report", "--execution", "1", "-o", path});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.read(5) == "%PDF-");

    const QString pdftoppm = tool("pdftoppm");
    if (pdftoppm.isEmpty()) QSKIP("poppler-utils is not installed (installer/dev.sh deps)");
    QProcess images;
    images.start(tool("pdfimages"), {"-list", path});
    QVERIFY(images.waitForFinished(60000));
    const QStringList listed =
        QString::fromUtf8(images.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(listed.size(), 2);  // the header of the list alone: no raster image

    QProcess text;
    text.start(tool("pdftotext"), {"-layout", path, "-"});
    QVERIFY(text.waitForFinished(60000));
    const QString words = QString::fromUtf8(text.readAllStandardOutput());
    for (const char* said : {"hetero_report", "The experiment", "Comparison", "The seed table",
                             "Charts", "Events that mattered", "Machine and versions",
                             "proportional", "Training loss against time"})
      QVERIFY2(words.contains(said), said);

    QProcess render;
    render.start(pdftoppm, {"-r", "40", "-png", path, dir_.filePath("page")});
    QVERIFY(render.waitForFinished(120000));
    QDir pages(dir_.path(), "page-*.png");
    QVERIFY2(pages.count() >= 3, qPrintable(QString::number(pages.count())));
    int64_t coloured = 0;
    for (const QString& page : pages.entryList()) {
      const QImage image(pages.filePath(page));
      QVERIFY(!image.isNull());
      QVERIFY(image.width() > image.height());  // landscape
      const Ink ink = inkOf(image);
      QVERIFY2(ink.inked > 0, qPrintable(page + " is blank"));
      coloured += ink.coloured;
    }
    QVERIFY2(coloured > 5000, "no chart drawn in the PDF");
  }

  void badRequestsSayWhatIsWrong() {
    const Outcome extension = cli({"report", project_, "-o", dir_.filePath("report.docx")});
    QCOMPARE(extension.exitCode, 2);
    QVERIFY2(extension.err.contains("a report is written as .html or .pdf"),
             qPrintable(extension.err));
    const Outcome noOutput = cli({"report", project_});
    QCOMPARE(noOutput.exitCode, 2);
    QVERIFY(noOutput.err.contains("-o REPORT.html|pdf"));
    const Outcome experiment = cli({"report", project_, "nope", "-o", dir_.filePath("x.html")});
    QCOMPARE(experiment.exitCode, 1);
    QVERIFY2(
        experiment.err.contains("no experiment 'nope'") && experiment.err.contains("hetero_report"),
        qPrintable(experiment.err));
    const Outcome execution =
        cli({"report", project_, "--execution", "9", "-o", dir_.filePath("x.html")});
    QCOMPARE(execution.exitCode, 1);
    QVERIFY2(execution.err.contains("9"), qPrintable(execution.err));
    const Outcome unwritable =
        cli({"report", project_, "-o", dir_.filePath("missing/dir/report.html")});
    QCOMPARE(unwritable.exitCode, 1);
    QVERIFY2(unwritable.err.contains("missing/dir/report.html"), qPrintable(unwritable.err));
    QVERIFY(!QFile::exists(dir_.filePath("x.html")));
  }
};

QTEST_GUILESS_MAIN(TestReport)
#include "test_report.moc"
