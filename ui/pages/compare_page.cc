#include "ui/pages/compare_page.h"

#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QTimer>
#include <QtGui/QAction>
#include <QtGui/QClipboard>
#include <QtGui/QGuiApplication>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QScrollArea>
#include <QtWidgets/QScrollBar>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTabBar>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include <algorithm>
#include <iterator>
#include <map>

#include "core/store/project_store.h"
#include "ui/background.h"
#include "ui/charts/comparison_chart.h"
#include "ui/charts/comparison_panel.h"
#include "ui/charts/palette.h"
#include "ui/models/project_access.h"
#include "ui/models/run_comparison_model.h"
#include "ui/pages/execution_statistics.h"

namespace dtlab::ui {
namespace {

// A project opened here starts with its latest runs chosen, as many as there are colours.
constexpr std::size_t kDefaultRuns = std::size(kRunPalette);
constexpr int kMaxCharts = 8;
// A slider drag or a splitter drag is many changes: the layout is written once they pause.
constexpr int kSaveDelayMs = 500;
// What "Add chart" shows next, the first not on the page yet.
constexpr const char* kNextMetrics[] = {"loss",    "test_accuracy", "samples_per_s", "step_ms",
                                        "wait_ms", "utilization",   "staleness",     "comm_ms"};

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

// Sizes worth keeping: a splitter that was never laid out reports zeros.
std::vector<int> shownSizes(const QList<int>& sizes) {
  if (sizes.isEmpty() || std::any_of(sizes.begin(), sizes.end(), [](int s) { return s <= 0; }))
    return {};
  return {sizes.begin(), sizes.end()};
}

}  // namespace

ComparePage::ComparePage(QWidget* parent)
    : QWidget(parent),
      runs_(new RunComparisonModel(this)),
      sorted_(new RunComparisonSortModel(this)),
      runsView_(new QTableView(this)),
      split_(new QSplitter(Qt::Vertical, this)),
      charts_(new QSplitter(Qt::Vertical, this)),
      exportWidth_(new QSpinBox(this)),
      exportHeight_(new QSpinBox(this)),
      exportDpi_(new QSpinBox(this)),
      saveTimer_(new QTimer(this)) {
  auto* title = new QLabel(tr("Compare runs"), this);
  QFont big = title->font();
  big.setPointSizeF(big.pointSizeF() * 1.35);
  big.setBold(true);
  title->setFont(big);

  setUpRunsTable();
  QHBoxLayout* tableRow = buildTableExportRow();
  QHBoxLayout* chartRow = buildChartRow();
  buildSplitter(tableRow, chartRow);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title);
  layout->addWidget(split_, 1);

  saveTimer_->setSingleShot(true);
  saveTimer_->setInterval(kSaveDelayMs);
  connect(saveTimer_, &QTimer::timeout, this, [this] { saveLayout(); });

  ++applying_;
  addChart(ChartSettings{});
  --applying_;
  // Only height scrolls: the page is as wide as a chart's toolbar needs.
  chartScroll_->setMinimumWidth(charts_->minimumSizeHint().width() +
                                chartScroll_->verticalScrollBar()->sizeHint().width());
}

// The runs table, sortable by any column (numbers as numbers, unknowns last), with Ctrl+C and
// its context menu.
void ComparePage::setUpRunsTable() {
  sorted_->setSourceModel(runs_);
  runsView_->setModel(sorted_);
  // In run order until a header is clicked; the sorted column's title says which way (the
  // sort model's arrow, not Qt's indicator: see RunComparisonSortModel).
  QHeaderView* header = runsView_->horizontalHeader();
  header->setSortIndicator(-1, Qt::AscendingOrder);
  runsView_->setSortingEnabled(true);
  header->setSortIndicatorShown(false);
  connect(header, &QHeaderView::sortIndicatorChanged, this, [this] { layoutChanged(); });
  runsView_->verticalHeader()->hide();
  runsView_->verticalHeader()->setDefaultSectionSize(runsView_->fontMetrics().height() + 8);
  // The figures as wide as they need. The run's name gets room for a typical one whatever the
  // page's width (a table of figures nobody can attribute is no use; the table scrolls
  // sideways instead), elided beyond it (its tooltip has the whole name); the user may widen it.
  header->setSectionResizeMode(QHeaderView::ResizeToContents);
  header->setSectionResizeMode(RunComparisonModel::kRunColumn, QHeaderView::Interactive);
  header->resizeSection(
      RunComparisonModel::kRunColumn,
      runsView_->fontMetrics().horizontalAdvance(QStringLiteral("#00 modes_straggler/adaptive")) +
          48);
  // The outcome can be a long error: at least the width of a typical one, elided beyond (its
  // tooltip has it whole); it takes whatever room is left.
  header->setSectionResizeMode(RunComparisonModel::kOutcomeColumn, QHeaderView::Interactive);
  header->resizeSection(RunComparisonModel::kOutcomeColumn,
                        runsView_->fontMetrics().horizontalAdvance(tr("target not reached")) + 12);
  header->setStretchLastSection(RunComparisonModel::kOutcomeColumn ==
                                RunComparisonModel::kColumnCount - 1);
  runsView_->setTextElideMode(Qt::ElideMiddle);
  runsView_->setSelectionBehavior(QAbstractItemView::SelectRows);
  runsView_->setAlternatingRowColors(true);
  runsView_->setToolTip(
      tr("Check the runs to overlay in the charts and to export in the table. Ctrl+C copies the "
         "selected rows."));
  connect(runs_, &RunComparisonModel::chosenChanged, this, [this] {
    // Runs checked or unchecked by hand: the execution is no longer what is compared.
    if (execution_ && !choosesExecution(*execution_)) showExecution(std::nullopt);
    refreshPanels();
    layoutChanged();
  });
  auto* copy = new QAction(tr("&Copy rows"), runsView_);
  copy->setShortcut(QKeySequence::Copy);
  copy->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  copy->setToolTip(tr("The selected rows as tab-separated text, with a line of titles"));
  connect(copy, &QAction::triggered, this, [this] { copySelectedRows(); });
  runsView_->addAction(copy);
  runsView_->setContextMenuPolicy(Qt::ActionsContextMenu);
}

// The table's exports (CSV, Markdown) and the hint about Ctrl+C.
QHBoxLayout* ComparePage::buildTableExportRow() {
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
  tableRow->addWidget(caption(tr("Ctrl+C copies the selected rows"), this));
  return tableRow;
}

// The charts' splitter, and the row below them: Add chart and what the charts' exports share.
QHBoxLayout* ComparePage::buildChartRow() {
  charts_->setChildrenCollapsible(false);
  connect(charts_, &QSplitter::splitterMoved, this, [this] { layoutChanged(); });
  addButton_ = button(tr("Add chart"), QString(), this);
  connect(addButton_, &QPushButton::clicked, this, [this] { addChart(); });
  exportWidth_->setRange(100, 20000);
  exportHeight_->setRange(100, 20000);
  exportDpi_->setRange(48, 1200);
  exportWidth_->setSuffix(tr(" px"));
  exportHeight_->setSuffix(tr(" px"));
  exportDpi_->setSuffix(tr(" dpi"));
  exportDpi_->setToolTip(tr("PNG only: the image has size x DPI / 96 pixels"));
  setExportOptions({});
  auto* chartRow = new QHBoxLayout;
  chartRow->addWidget(addButton_);
  chartRow->addStretch(1);
  chartRow->addWidget(caption(tr("Chart exports (each chart's Export menu):"), this));
  chartRow->addWidget(exportWidth_);
  chartRow->addWidget(caption(QStringLiteral("\u00d7"), this));
  chartRow->addWidget(exportHeight_);
  chartRow->addWidget(exportDpi_);
  return chartRow;
}

// The table above the charts in the page's splitter; the charts scroll when they do not fit.
void ComparePage::buildSplitter(QHBoxLayout* tableRow, QHBoxLayout* chartRow) {
  auto* top = new QWidget(this);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  executionChoice_ = new QComboBox(this);
  executionChoice_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  executionChoice_->setToolTip(
      tr("An execution runs every variant of an experiment, repeated: compare it as a whole"));
  connect(executionChoice_, &QComboBox::activated, this, [this](int index) {
    const QVariant id = executionChoice_->itemData(index);
    showExecution(id.isValid() ? std::optional<int64_t>(id.toLongLong()) : std::nullopt);
  });
  bands_ = new QCheckBox(tr("Median and band per variant"), this);
  bands_->setChecked(true);
  bands_->setToolTip(
      tr("Each variant as the median of its repetitions at each step or second, with the "
         "range of the repetitions as a band and each repetition faint"));
  connect(bands_, &QCheckBox::toggled, this, [this] {
    refreshPanels();
    layoutChanged();
  });
  auto* executionRow = new QHBoxLayout;
  executionRow->addWidget(caption(tr("Compare:"), this));
  executionRow->addWidget(executionChoice_);
  executionRow->addWidget(bands_);
  executionRow->addStretch(1);
  topLayout->addLayout(executionRow);
  statistics_ = new ExecutionStatistics(this);
  connect(statistics_, &ExecutionStatistics::failed, this, &ComparePage::failed);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(runsView_, tr("Runs"));
  tabs_->addTab(statistics_, tr("Statistics"));
  tabs_->addTab(statistics_->seedPanel(), tr("Seed table"));
  tabs_->addTab(statistics_->yardstickPanel(), tr("Yardstick"));
  tabs_->setTabToolTip(3, tr("The scale simulator's time per step beside each run: as it ran, "
                             "and the ideal of its strategy (with the experiment's calibration)"));
  tabs_->setTabToolTip(2, tr("The seed article's comparison (consistency, efficiency, memory, "
                             "communication, debuggability, fault tolerance), measured"));
  topLayout->addWidget(tabs_, 1);
  topLayout->addLayout(tableRow);
  auto* bottom = new QWidget(this);
  auto* bottomLayout = new QVBoxLayout(bottom);
  bottomLayout->setContentsMargins(0, 0, 0, 0);
  // Eight charts do not fit every screen: past their minimum heights they scroll, rather than
  // make the window taller than the screen.
  auto* scroll = new QScrollArea(bottom);
  scroll->setWidget(charts_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  bottomLayout->addWidget(scroll, 1);
  chartScroll_ = scroll;
  bottomLayout->addLayout(chartRow);
  split_->addWidget(top);
  split_->addWidget(bottom);
  split_->setStretchFactor(0, 0);
  split_->setStretchFactor(1, 1);
  split_->setChildrenCollapsible(false);
  connect(split_, &QSplitter::splitterMoved, this, [this] { layoutChanged(); });
}

ComparePage::~ComparePage() {
  // A change not written yet is written still; nothing waits for it.
  if (!saveTimer_->isActive() || path_.empty()) return;
  const std::string text = compareLayoutToJson(compareLayout());
  if (text == saved_) return;
  writeProjectDetached(
      path_, [text](core::ProjectStore& store) { store.setMetadata(kCompareLayoutKey, text); });
}

// ----- charts

int ComparePage::chartCount() const {
  return charts_->count();
}

ComparisonPanel* ComparePage::panel(int index) const {
  return index >= 0 && index < charts_->count()
             ? static_cast<ComparisonPanel*>(charts_->widget(index))
             : nullptr;
}

ComparisonChart* ComparePage::chart() const {
  return panel(current_)->chart();
}

void ComparePage::wirePanel(ComparisonPanel* p) {
  connect(p, &ComparisonPanel::shown, this, [this] { checkShown(); });
  connect(p, &ComparisonPanel::failed, this, [this](const QString& message) {
    emit failed(message);
    checkShown();
  });
  connect(p, &ComparisonPanel::settingsChanged, this, [this] { layoutChanged(); });
  connect(p, &ComparisonPanel::activated, this,
          [this, p] { setCurrentChart(charts_->indexOf(p)); });
  connect(p, &ComparisonPanel::removeRequested, this,
          [this, p] { removeChart(charts_->indexOf(p)); });
  connect(p, &ComparisonPanel::exportRequested, this,
          [this, p](ChartFormat format) { exportChartAs(charts_->indexOf(p), format); });
}

int ComparePage::addChart(const ChartSettings& settings) {
  if (chartCount() >= kMaxCharts) return -1;
  auto* p = new ComparisonPanel(charts_);
  p->setSettings(settings);
  wirePanel(p);
  charts_->addWidget(p);
  // New charts share the height equally with the others.
  const int n = chartCount();
  const int total = std::max(charts_->height(), 200 * n);
  charts_->setSizes(QList<int>(n, total / n));
  syncChartButtons();
  p->setSource(path_, runs_->chosen());
  setCurrentChart(n - 1);
  layoutChanged();
  return n - 1;
}

int ComparePage::addChart() {
  ChartSettings settings =
      panel(current_) != nullptr ? panel(current_)->settings() : ChartSettings{};
  std::vector<std::string> shown;
  for (int i = 0; i < chartCount(); ++i) shown.push_back(panel(i)->settings().metric);
  for (const char* metric : kNextMetrics) {
    if (std::find(shown.begin(), shown.end(), metric) == shown.end()) {
      settings.metric = metric;
      break;
    }
  }
  return addChart(settings);
}

void ComparePage::removeChart(int index) {
  ComparisonPanel* p = panel(index);
  if (p == nullptr || chartCount() <= 1) return;
  p->hide();
  p->setParent(nullptr);  // out of the splitter now; deleted once its signal has returned
  p->deleteLater();
  syncChartButtons();
  setCurrentChart(
      std::min(current_ >= index && current_ > 0 ? current_ - 1 : current_, chartCount() - 1));
  layoutChanged();
  checkShown();
}

void ComparePage::syncChartButtons() {
  const int n = chartCount();
  for (int i = 0; i < n; ++i) panel(i)->setRemovable(n > 1);
  addButton_->setEnabled(n < kMaxCharts);
  addButton_->setToolTip(n < kMaxCharts ? tr("Another chart of the checked runs, below the others")
                                        : tr("At most %1 charts").arg(kMaxCharts));
}

void ComparePage::setCurrentChart(int index) {
  if (index < 0 || index >= chartCount()) return;
  const bool changed = index != current_;
  current_ = index;
  for (int i = 0; i < chartCount(); ++i) panel(i)->setCurrent(chartCount() > 1 && i == current_);
  if (changed) layoutChanged();
}

void ComparePage::refreshPanels() {
  const std::vector<int64_t> chosen = runs_->chosen();
  const std::vector<RunGroup> groups =
      execution_ && bands_->isChecked() ? groupsOf(*execution_) : std::vector<RunGroup>{};
  for (int i = 0; i < chartCount(); ++i) panel(i)->setSource(path_, chosen, groups);
}

void ComparePage::checkShown() {
  if (layoutPending_) return;
  for (int i = 0; i < chartCount(); ++i)
    if (!panel(i)->upToDate()) return;
  emit chartShown();
}

// ----- the project

void ComparePage::setSnapshot(const ProjectSnapshot& snapshot) {
  const bool sameProject = snapshot.path == path_;
  if (!sameProject && saveTimer_->isActive()) {
    saveTimer_->stop();
    saveLayout();  // the project being left keeps its last change
  }
  path_ = snapshot.path;
  snapshot_ = snapshot;
  runs_->setSnapshot(snapshot);
  if (sameProject) {
    // New points, perhaps new runs of the execution shown (it is still under way).
    if (execution_ && !choosesExecution(*execution_)) {
      ++applying_;
      runs_->setChosen(runsOf(*execution_));
      --applying_;
    }
    // Its statistics again once a run of it began or ended (not for every new point).
    if (execution_ && executionState(*execution_) != statisticsOf_) {
      statisticsOf_ = executionState(*execution_);
      statistics_->setExecution(path_, *execution_);
    }
    fillExecutionChoice();
    refreshPanels();
    return;
  }
  execution_.reset();
  // Another project: the default layout at once, then the one it keeps once read.
  applyCompareLayout(CompareLayout{});
  readLayout();
}

void ComparePage::chooseDefaultRuns() {
  // The latest execution, compared as a whole; else the latest runs.
  for (auto e = snapshot_.executions.rbegin(); e != snapshot_.executions.rend(); ++e)
    if (showExecution(e->id)) return;
  showExecution(std::nullopt);
  std::vector<int64_t> ids = runs_->runIds();
  if (ids.size() > kDefaultRuns)
    ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(kDefaultRuns));
  runs_->setChosen(ids);
}

void ComparePage::readLayout() {
  const quint64 id = ++layoutRead_;
  saved_.clear();
  asked_.clear();
  if (path_.empty()) {
    layoutPending_ = false;
    emit layoutRestored();
    return;
  }
  layoutPending_ = true;
  using Stored = std::optional<std::string>;
  readProject<Stored>(
      this, path_,
      [](core::ProjectStore& store) -> Stored {
        const std::map<std::string, std::string> metadata = store.metadata();
        const auto it = metadata.find(kCompareLayoutKey);
        return it == metadata.end() ? Stored() : Stored(it->second);
      },
      [this, id](const std::optional<Stored>& stored, const QString& error) {
        if (id != layoutRead_) return;  // another project was opened meanwhile
        layoutPending_ = false;
        const std::vector<std::function<void()>> asked = std::move(asked_);
        asked_.clear();
        if (!stored) {
          emit notice(tr("Cannot read the saved comparison layout: %1").arg(error));
        } else if (*stored) {
          saved_ = **stored;
          QStringList problems;
          const CompareLayout layout = parseCompareLayout(saved_, problems);
          applyCompareLayout(layout);
          if (!problems.isEmpty())
            emit notice(tr("The project's saved comparison layout (%1): %2")
                            .arg(kCompareLayoutKey, problems.join("; ")));
        }
        // What was asked while the layout was on its way wins over it, without being saved
        // for that alone (a screenshot from the command line leaves the project as it was).
        ++applying_;
        for (const auto& ask : asked) ask();
        --applying_;
        emit layoutRestored();
        checkShown();
      });
}

CompareLayout ComparePage::compareLayout() const {
  CompareLayout l;
  l.charts.clear();
  for (int i = 0; i < chartCount(); ++i) l.charts.push_back(panel(i)->settings());
  l.current = current_;
  l.runs = runs_->chosen();
  l.execution = execution_;
  l.bands = bands_->isChecked();
  l.splitter = shownSizes(split_->sizes());
  l.chartSplitter = shownSizes(charts_->sizes());
  const int column = runsView_->horizontalHeader()->sortIndicatorSection();
  if (column >= 0 && column < RunComparisonModel::kColumnCount) {
    l.sortColumn = RunComparisonModel::columnName(column).toStdString();
    l.sortDescending = runsView_->horizontalHeader()->sortIndicatorOrder() == Qt::DescendingOrder;
  }
  return l;
}

void ComparePage::applyCompareLayout(const CompareLayout& layout) {
  ++applying_;
  const auto wanted =
      static_cast<int>(std::clamp<std::size_t>(layout.charts.size(), 1, kMaxCharts));
  while (chartCount() > wanted) {
    ComparisonPanel* p = panel(chartCount() - 1);
    p->setParent(nullptr);
    p->deleteLater();
  }
  while (chartCount() < wanted) addChart(ChartSettings{});
  for (int i = 0; i < wanted; ++i) {
    panel(i)->setSettings(layout.charts.empty() ? ChartSettings{}
                                                : layout.charts[static_cast<std::size_t>(i)]);
  }
  syncChartButtons();
  current_ = -1;
  setCurrentChart(std::clamp(layout.current, 0, wanted - 1));

  bands_->setChecked(layout.bands);
  if (layout.execution && showExecution(layout.execution)) {
    // Its runs are chosen.
  } else if (layout.execution) {
    emit notice(tr("The saved comparison layout compares execution %1, which the project no "
                   "longer has")
                    .arg(*layout.execution));
    chooseDefaultRuns();
  } else if (layout.runs) {
    showExecution(std::nullopt);
    runs_->setChosen(*layout.runs);
  } else {
    chooseDefaultRuns();
  }

  if (layout.splitter.size() == 2)
    split_->setSizes({layout.splitter[0], layout.splitter[1]});
  else
    fitTableHeight();
  if (layout.chartSplitter.size() == static_cast<std::size_t>(wanted))
    charts_->setSizes(QList<int>(layout.chartSplitter.begin(), layout.chartSplitter.end()));
  else
    charts_->setSizes(QList<int>(wanted, std::max(charts_->height(), 200 * wanted) / wanted));

  QHeaderView* header = runsView_->horizontalHeader();
  const int column =
      layout.sortColumn.empty()
          ? -1
          : RunComparisonModel::columnNamed(QString::fromStdString(layout.sortColumn));
  if (!layout.sortColumn.empty() && column < 0)
    emit notice(tr("The saved comparison layout sorts by '%1', a column this DTLab does not "
                   "have: the table is in run order")
                    .arg(QString::fromStdString(layout.sortColumn)));
  header->setSortIndicator(column,
                           layout.sortDescending ? Qt::DescendingOrder : Qt::AscendingOrder);

  refreshPanels();
  --applying_;
}

bool ComparePage::layoutWritePending() const {
  return saveTimer_->isActive() || writesUnderWay_ > 0;
}

void ComparePage::layoutChanged() {
  if (applying_ > 0 || layoutPending_ || path_.empty()) return;
  saveTimer_->start();  // restarted by each change: one write once they pause
}

void ComparePage::saveLayout() {
  if (path_.empty()) return;
  const std::string text = compareLayoutToJson(compareLayout());
  if (text == saved_) return;
  saved_ = text;
  ++writesUnderWay_;
  writeProject<bool>(
      this, path_,
      [text](core::ProjectStore& store) {
        store.setMetadata(kCompareLayoutKey, text);
        return true;
      },
      [this](const std::optional<bool>& written, const QString& error) {
        --writesUnderWay_;
        if (!written) {
          saved_.clear();  // the next change tries again
          emit notice(tr("Cannot save the comparison layout in the project: %1").arg(error));
          return;
        }
        emit layoutSaved();
      });
}

// The table as high as its rows (up to kDefaultRuns of them), the charts the rest.
void ComparePage::fitTableHeight() {
  // An execution's statistics: its variants, then up to three ratios for each of the others,
  // with their headings and captions (four lines).
  const int variants = execution_ ? static_cast<int>(groupsOf(*execution_).size()) : 0;
  const int rows = execution_ ? std::clamp(variants + 3 * (variants - 1) + 4, 6, 18)
                              : std::clamp(runs_->rowCount(), 2, static_cast<int>(kDefaultRuns));
  const int table = runsView_->horizontalHeader()->sizeHint().height() +
                    rows * runsView_->verticalHeader()->defaultSectionSize() +
                    runsView_->horizontalScrollBar()->sizeHint().height() +
                    2 * runsView_->frameWidth();
  // Above the table the execution row and the tabs, below it the export row.
  const QLayout* around = split_->widget(0)->layout();
  const int top = table + around->itemAt(0)->sizeHint().height() +
                  tabs_->tabBar()->sizeHint().height() + around->itemAt(2)->sizeHint().height() +
                  3 * around->spacing() + 2 * tabs_->contentsMargins().top() + 8;
  const int total = std::max(split_->height(), 600);
  split_->setSizes({top, std::max(total - top, 300)});
}

// ----- setters for the command line and tests

// While the saved layout is on its way, a setter that changes what is shown is remembered and
// applied again over the restored layout; one that changes nothing (the command line passes
// its defaults, e.g. the metric loss, whether or not --chart was given) is not.
void ComparePage::setChosenRuns(const std::vector<int64_t>& runIds) {
  if (layoutPending_ && runIds != runs_->chosen())
    asked_.push_back([this, runIds] { runs_->setChosen(runIds); });
  runs_->setChosen(runIds);
  refreshPanels();
}

void ComparePage::setMetric(const QString& metric) {
  if (layoutPending_ && metric.toStdString() != panel(current_)->settings().metric)
    asked_.push_back([this, metric] { panel(current_)->setMetric(metric); });
  panel(current_)->setMetric(metric);
}

void ComparePage::setXAxis(ChartX x) {
  if (layoutPending_ && x != panel(current_)->settings().x)
    asked_.push_back([this, x] { panel(current_)->setXAxis(x); });
  panel(current_)->setXAxis(x);
}

void ComparePage::setReduction(MemberReduction reduction) {
  if (layoutPending_ && reduction != panel(current_)->settings().reduction)
    asked_.push_back([this, reduction] { panel(current_)->setReduction(reduction); });
  panel(current_)->setReduction(reduction);
}

void ComparePage::setSmoothing(double weight) {
  if (layoutPending_ && weight != panel(current_)->settings().smoothing)
    asked_.push_back([this, weight] { panel(current_)->setSmoothing(weight); });
  panel(current_)->setSmoothing(weight);
}

void ComparePage::setExportOptions(const ChartExportOptions& options) {
  exportWidth_->setValue(options.size.width());
  exportHeight_->setValue(options.size.height());
  exportDpi_->setValue(options.dpi);
}

ComparisonRequest ComparePage::request() const {
  return panel(current_)->request();
}

// ----- exports and the clipboard

void ComparePage::exportChartTo(const QString& path) {
  exportChartTo(current_, path);
}

void ComparePage::exportChartTo(int index, const QString& path) {
  ComparisonPanel* p = panel(index);
  if (p == nullptr) throw ExportError(QString("no chart %1").arg(index + 1).toStdString());
  exportChart(*p->chart(), path,
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

QString ComparePage::copySelectedRows() {
  QModelIndexList rows = runsView_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return {};
  std::sort(rows.begin(), rows.end(),
            [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  std::vector<int64_t> ids;
  for (const QModelIndex& row : rows)
    ids.push_back(row.data(RunComparisonModel::IdRole).toLongLong());
  const QString text = runs_->toTsv(ids);
  QGuiApplication::clipboard()->setText(text);
  return text;
}

QString ComparePage::suggestedName(const QString& fileName) const {
  if (path_.empty()) return fileName;
  return QFileInfo(QString::fromStdString(path_)).absoluteDir().filePath(fileName);
}

void ComparePage::exportChartAs(int index, ChartFormat format) {
  static const char* const kExtensions[] = {"png", "svg", "pdf", "csv"};
  static const char* const kFilters[] = {"PNG images (*.png)", "SVG drawings (*.svg)",
                                         "PDF documents (*.pdf)", "CSV files (*.csv)"};
  ComparisonPanel* p = panel(index);
  if (p == nullptr) return;
  const auto i = static_cast<std::size_t>(format);
  const QString extension = kExtensions[i];
  const ChartSettings settings = p->settings();
  const QString base =
      QString("%1_%2").arg(QString::fromStdString(settings.metric), toString(settings.x));
  QString path = QFileDialog::getSaveFileName(
      this, tr("Export chart"), suggestedName(base + '.' + extension), tr(kFilters[i]));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += '.' + extension;
  try {
    exportChartTo(index, path);
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
