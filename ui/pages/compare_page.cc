#include "ui/pages/compare_page.h"

#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QSortFilterProxyModel>
#include <QtCore/QTimer>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QScrollBar>
#include <QtWidgets/QSlider>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "ui/background.h"
#include "ui/charts/comparison_chart.h"
#include "ui/charts/palette.h"
#include "ui/models/run_comparison_model.h"

namespace dtlab::ui {
namespace {

// A project opened here starts with its latest runs chosen, as many as there are colours.
constexpr std::size_t kDefaultRuns = std::size(kRunPalette);
constexpr int kSmoothingSteps = 100;  // the slider's steps over [0, 1)

QString fromView(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

QLabel* caption(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setStyleSheet("color: #444;");
  return label;
}

QPushButton* button(const QString& text, const QString& tip, QWidget* parent) {
  auto* b = new QPushButton(text, parent);
  b->setToolTip(tip);
  b->setAutoDefault(false);
  return b;
}

}  // namespace

ComparePage::ComparePage(QWidget* parent)
    : QWidget(parent),
      runs_(new RunComparisonModel(this)),
      runsView_(new QTableView(this)),
      split_(new QSplitter(Qt::Vertical, this)),
      metric_(new QComboBox(this)),
      reduction_(new QComboBox(this)),
      xAxis_(new QComboBox(this)),
      smoothing_(new QSlider(Qt::Horizontal, this)),
      smoothingValue_(new QLabel(this)),
      chart_(new ComparisonChart(this)),
      exportWidth_(new QSpinBox(this)),
      exportHeight_(new QSpinBox(this)),
      exportDpi_(new QSpinBox(this)) {
  auto* title = new QLabel(tr("Compare runs"), this);
  QFont big = title->font();
  big.setPointSizeF(big.pointSizeF() * 1.35);
  big.setBold(true);
  title->setFont(big);

  // The runs table, sortable by any column (numbers as numbers).
  auto* sorted = new QSortFilterProxyModel(this);
  sorted->setSourceModel(runs_);
  sorted->setSortRole(RunComparisonModel::SortRole);
  runsView_->setModel(sorted);
  // In run order until a header is clicked. Qt widens every column for a sort indicator while
  // one is shown, which would cost the table its last columns beside the explorer: it is
  // shown once the user sorts.
  QHeaderView* header = runsView_->horizontalHeader();
  header->setSortIndicator(-1, Qt::AscendingOrder);
  runsView_->setSortingEnabled(true);  // shows the indicator, too
  header->setSortIndicatorShown(false);
  connect(header, &QHeaderView::sortIndicatorChanged, this,
          [header](int section) { header->setSortIndicatorShown(section >= 0); });
  runsView_->verticalHeader()->hide();
  runsView_->verticalHeader()->setDefaultSectionSize(runsView_->fontMetrics().height() + 8);
  runsView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  runsView_->horizontalHeader()->setStretchLastSection(true);
  runsView_->setSelectionBehavior(QAbstractItemView::SelectRows);
  runsView_->setAlternatingRowColors(true);
  runsView_->setToolTip(tr("Check the runs to overlay in the chart and to export in the table."));
  connect(runs_, &RunComparisonModel::chosenChanged, this, [this] { scheduleRead(); });

  auto* tableCsv = button(tr("CSV..."), tr("The checked runs' figures as CSV"), this);
  auto* tableMd =
      button(tr("Markdown..."), tr("The checked runs' figures as a Markdown table"), this);
  connect(tableCsv, &QPushButton::clicked, this, [this] { exportTableAs(false); });
  connect(tableMd, &QPushButton::clicked, this, [this] { exportTableAs(true); });
  auto* tableRow = new QHBoxLayout;
  tableRow->addWidget(caption(tr("Export table:"), this));
  tableRow->addWidget(tableCsv);
  tableRow->addWidget(tableMd);
  tableRow->addStretch(1);

  // What to draw.
  for (const core::MetricInfo& m : core::kMetricTable) {
    const QString name = fromView(m.name);
    metric_->addItem(m.unit.empty() ? name : QString("%1 (%2)").arg(name, fromView(m.unit)), name);
    metric_->setItemData(
        metric_->count() - 1,
        QString("%1 (per %2)").arg(fromView(m.description), core::toString(m.scope)),
        Qt::ToolTipRole);
  }
  metric_->setCurrentIndex(metric_->findData(QString(core::metric::kLoss)));
  metric_->setMaxVisibleItems(static_cast<int>(core::kMetricTable.size()));
  reduction_->addItem(QString(), static_cast<int>(MemberReduction::kMean));
  reduction_->addItem(QString(), static_cast<int>(MemberReduction::kFirst));
  reduction_->setToolTip(tr("How the series of a run's workers (or nodes) become one curve"));
  xAxis_->addItem(tr("step"), static_cast<int>(ChartX::kStep));
  xAxis_->addItem(tr("wall time (s)"), static_cast<int>(ChartX::kWallSeconds));
  smoothing_->setRange(0, kSmoothingSteps - 1);
  smoothing_->setToolTip(
      tr("Exponential moving average, debiased (as TensorBoard smooths); 0 draws the raw values"));
  smoothing_->setMinimumWidth(120);
  smoothingValue_->setMinimumWidth(smoothingValue_->fontMetrics().horizontalAdvance("0.000"));
  syncReductionChoice();
  connect(metric_, &QComboBox::currentIndexChanged, this, [this] {
    syncReductionChoice();
    scheduleRead();
  });
  connect(reduction_, &QComboBox::currentIndexChanged, this, [this] { scheduleRead(); });
  connect(xAxis_, &QComboBox::currentIndexChanged, this, [this] { scheduleRead(); });
  connect(smoothing_, &QSlider::valueChanged, this, [this](int step) {
    const double weight = static_cast<double>(step) / kSmoothingSteps;
    smoothingValue_->setText(QString::number(weight, 'f', 2));
    chart_->setSmoothing(weight);  // the points are at hand: no read
  });
  auto* controls = new QHBoxLayout;
  controls->addWidget(caption(tr("Metric"), this));
  controls->addWidget(metric_);
  controls->addSpacing(8);
  controls->addWidget(caption(tr("Workers"), this));
  controls->addWidget(reduction_);
  controls->addSpacing(8);
  controls->addWidget(caption(tr("X axis"), this));
  controls->addWidget(xAxis_);
  controls->addSpacing(8);
  controls->addWidget(caption(tr("Smoothing"), this));
  controls->addWidget(smoothing_, 1);
  controls->addWidget(smoothingValue_);

  // Export of the chart.
  exportWidth_->setRange(100, 20000);
  exportHeight_->setRange(100, 20000);
  exportDpi_->setRange(48, 1200);
  exportWidth_->setSuffix(tr(" px"));
  exportHeight_->setSuffix(tr(" px"));
  exportDpi_->setSuffix(tr(" dpi"));
  exportDpi_->setToolTip(tr("PNG only: the image has size x DPI / 96 pixels"));
  setExportOptions({});
  auto* chartRow = new QHBoxLayout;
  chartRow->addWidget(caption(tr("Export chart:"), this));
  chartRow->addWidget(exportWidth_);
  chartRow->addWidget(caption(QStringLiteral("\u00d7"), this));
  chartRow->addWidget(exportHeight_);
  chartRow->addWidget(exportDpi_);
  const struct {
    const char* text;
    ChartFormat format;
    const char* tip;
  } formats[] = {{"PNG...", ChartFormat::kPng, "A picture at the size and DPI on the left"},
                 {"SVG...", ChartFormat::kSvg, "Vectors, for editing and the web"},
                 {"PDF...", ChartFormat::kPdf, "One page, vectors, fonts embedded"},
                 {"CSV...", ChartFormat::kCsv, "The plotted points: run, x, value, smoothed"}};
  for (const auto& f : formats) {
    auto* b = button(tr(f.text), tr(f.tip), this);
    const ChartFormat format = f.format;
    connect(b, &QPushButton::clicked, this, [this, format] { exportChartAs(format); });
    chartRow->addWidget(b);
  }
  chartRow->addStretch(1);

  auto* top = new QWidget(this);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  topLayout->addWidget(runsView_, 1);
  topLayout->addLayout(tableRow);
  auto* bottom = new QWidget(this);
  auto* bottomLayout = new QVBoxLayout(bottom);
  bottomLayout->setContentsMargins(0, 0, 0, 0);
  bottomLayout->addLayout(controls);
  bottomLayout->addWidget(chart_, 1);
  bottomLayout->addLayout(chartRow);
  split_->addWidget(top);
  split_->addWidget(bottom);
  split_->setStretchFactor(0, 0);
  split_->setStretchFactor(1, 1);
  split_->setChildrenCollapsible(false);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title);
  layout->addWidget(split_, 1);

  setSmoothing(0.6);  // TensorBoard's default
}

void ComparePage::syncReductionChoice() {
  const core::MetricInfo* m = core::findMetric(metric_->currentData().toString().toStdString());
  const bool nodes = m != nullptr && m->scope == core::MetricScope::kNode;
  const bool run = m != nullptr && m->scope == core::MetricScope::kRun;
  reduction_->setItemText(0, run     ? tr("(the run's own)")
                             : nodes ? tr("mean over nodes")
                                     : tr("mean over workers"));
  reduction_->setItemText(1, run ? tr("(the run's own)") : nodes ? tr("node 0") : tr("worker 0"));
  reduction_->setEnabled(!run);
}

void ComparePage::setSnapshot(const ProjectSnapshot& snapshot) {
  const bool sameProject = snapshot.path == path_;
  path_ = snapshot.path;
  runs_->setSnapshot(snapshot);
  if (!sameProject) {
    std::vector<int64_t> ids = runs_->runIds();
    if (ids.size() > kDefaultRuns)
      ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(kDefaultRuns));
    runs_->setChosen(ids);
    fitTableHeight();
  }
  scheduleRead();
}

// The table as high as its rows (up to kDefaultRuns of them), the chart the rest.
void ComparePage::fitTableHeight() {
  const int rows = std::clamp(runs_->rowCount(), 2, static_cast<int>(kDefaultRuns));
  const int table = runsView_->horizontalHeader()->sizeHint().height() +
                    rows * runsView_->verticalHeader()->defaultSectionSize() +
                    runsView_->horizontalScrollBar()->sizeHint().height() +
                    2 * runsView_->frameWidth();
  const int top = table + split_->widget(0)->layout()->itemAt(1)->sizeHint().height() +
                  split_->widget(0)->layout()->spacing();
  const int total = std::max(split_->height(), 600);
  split_->setSizes({top, std::max(total - top, 300)});
}

void ComparePage::setChosenRuns(const std::vector<int64_t>& runIds) {
  runs_->setChosen(runIds);
  scheduleRead();
}

void ComparePage::setMetric(const QString& metric) {
  const int index = metric_->findData(metric);
  if (index >= 0) metric_->setCurrentIndex(index);
}

void ComparePage::setXAxis(ChartX x) {
  xAxis_->setCurrentIndex(xAxis_->findData(static_cast<int>(x)));
}

void ComparePage::setReduction(MemberReduction reduction) {
  reduction_->setCurrentIndex(reduction_->findData(static_cast<int>(reduction)));
}

void ComparePage::setSmoothing(double weight) {
  {
    const QSignalBlocker block(smoothing_);
    smoothing_->setValue(static_cast<int>(std::lround(weight * kSmoothingSteps)));
  }
  smoothingValue_->setText(QString::number(weight, 'f', 2));
  chart_->setSmoothing(weight);
}

void ComparePage::setExportOptions(const ChartExportOptions& options) {
  exportWidth_->setValue(options.size.width());
  exportHeight_->setValue(options.size.height());
  exportDpi_->setValue(options.dpi);
}

ComparisonRequest ComparePage::request() const {
  ComparisonRequest r;
  r.metric = metric_->currentData().toString().toStdString();
  r.runIds = runs_->chosen();
  r.x = static_cast<ChartX>(xAxis_->currentData().toInt());
  r.reduction = static_cast<MemberReduction>(reduction_->currentData().toInt());
  return r;
}

void ComparePage::scheduleRead() {
  // Several changes in one go (a new snapshot that also changes the choice) make one read.
  if (readScheduled_) return;
  readScheduled_ = true;
  QTimer::singleShot(0, this, [this] {
    readScheduled_ = false;
    read();
  });
}

void ComparePage::read() {
  const quint64 request = ++request_;
  const ComparisonRequest what = this->request();
  if (path_.empty() || what.runIds.empty()) {
    chart_->setData({what, {}});
    emit chartShown();
    return;
  }
  runInBackground<ComparisonData>(
      this, [path = path_, what] { return readComparison(path, what); },
      [this, request](const std::optional<ComparisonData>& data, const QString& error) {
        if (request != request_) return;  // the choice changed meanwhile
        if (!data) {
          emit failed(tr("Cannot read the chart: %1").arg(error));
          return;
        }
        chart_->setData(*data);
        emit chartShown();
      });
}

void ComparePage::exportChartTo(const QString& path) {
  exportChart(*chart_, path,
              {QSize(exportWidth_->value(), exportHeight_->value()), exportDpi_->value()});
}

void ComparePage::exportTableTo(const QString& path) {
  if (runs_->chosen().empty()) throw ExportError("no runs are checked: nothing to export");
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == "csv")
    writeTextFile(path, runs_->toCsv());
  else if (suffix == "md" || suffix == "markdown")
    writeTextFile(path, runs_->toMarkdown());
  else
    throw ExportError(QString("%1: tables export as .csv or .md").arg(path).toStdString());
}

QString ComparePage::suggestedName(const QString& fileName) const {
  if (path_.empty()) return fileName;
  return QFileInfo(QString::fromStdString(path_)).absoluteDir().filePath(fileName);
}

void ComparePage::exportChartAs(ChartFormat format) {
  static const char* const kExtensions[] = {"png", "svg", "pdf", "csv"};
  static const char* const kFilters[] = {"PNG images (*.png)", "SVG drawings (*.svg)",
                                         "PDF documents (*.pdf)", "CSV files (*.csv)"};
  const auto i = static_cast<std::size_t>(format);
  const QString extension = kExtensions[i];
  const QString base = QString("%1_%2").arg(metric_->currentData().toString(),
                                            xAxis_->currentIndex() == 0 ? "step" : "wall");
  QString path = QFileDialog::getSaveFileName(
      this, tr("Export chart"), suggestedName(base + '.' + extension), tr(kFilters[i]));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += '.' + extension;
  try {
    exportChartTo(path);
  } catch (const std::exception& e) {
    emit failed(QString::fromUtf8(e.what()));
  }
}

void ComparePage::exportTableAs(bool markdown) {
  const QString extension = markdown ? "md" : "csv";
  QString path =
      QFileDialog::getSaveFileName(this, tr("Export table"), suggestedName("runs." + extension),
                                   markdown ? tr("Markdown (*.md)") : tr("CSV files (*.csv)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += '.' + extension;
  try {
    exportTableTo(path);
  } catch (const std::exception& e) {
    emit failed(QString::fromUtf8(e.what()));
  }
}

}  // namespace dtlab::ui
