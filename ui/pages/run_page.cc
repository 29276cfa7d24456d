#include "ui/pages/run_page.h"

#include <algorithm>
#include <cmath>

#include <QtCore/QSettings>
#include <QtGui/QFontDatabase>
#include <QtGui/QHelpEvent>
#include <QtGui/QTextBlock>
#include <QtGui/QTextCursor>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTableView>
#include <QtWidgets/QToolTip>
#include <QtWidgets/QVBoxLayout>

#include <QtWidgets/QDialog>
#include <QtWidgets/QDialogButtonBox>
#include <QtWidgets/QFileDialog>

#include <chrono>
#include <fstream>

#include "core/analysis/run_replay.h"
#include "core/metrics/metric_table.h"
#include "core/nn/model.h"
#include "core/store/project_store.h"
#include "core/train/strategy_registry.h"
#include "ui/background.h"
#include "ui/models/project_access.h"
#include "ui/models/run_metrics_model.h"

namespace dtlab::ui {
namespace {

QString number(const nlohmann::json& j, const char* key, int decimals) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return QStringLiteral("-");
  return QString::number(j[key].get<double>(), 'f', decimals);
}

constexpr const char* kSplitterKey = "runPage/splitter";
constexpr const char* kLowerSplitterKey = "runPage/lowerSplitter";
constexpr const char* kFollowKey = "runPage/followRunningRun";

QString eventLine(const core::RunEvent& e) {
  return QString("step %1 %2 s  %3  %4")
      .arg(e.step, 5)
      .arg(e.wallMs / 1000.0, 7, 'f', 2)
      .arg(QString::fromStdString(e.kind), -10)
      .arg(QString::fromStdString(e.detail).replace('\n', ' '));  // one line an event
}

// The series a point or a curve belongs to, as the dashboard names it: the worker of a
// worker-scope metric, the node of a node-scope one, -1 for the run's.
int ownerOf(int metric, int worker, int node) {
  const core::MetricScope scope = core::kMetricTable[static_cast<std::size_t>(metric)].scope;
  return scope == core::MetricScope::kWorker ? worker
         : scope == core::MetricScope::kNode ? node
                                             : -1;
}

// A caption above a panel of the lower half, the panel below it.
QWidget* captioned(const QString& caption, QWidget* panel, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* label = new QLabel(caption, box);
  label->setStyleSheet("color: #444; font-weight: bold;");
  layout->addWidget(label);
  layout->addWidget(panel, 1);
  return box;
}

// What a replay in the background hands back to the page.
struct ReplayOutcome {
  std::string named;
  int world = 0;
  core::PsReplayResult result;
  double seconds = 0.0;
};

QString versions(const std::vector<int64_t>& v) {
  return QString::fromStdString(core::versionList(v));
}

// The replay's report: where the server stood, the update applied there, the pushes in flight.
QString replayReport(const ReplayOutcome& o, qint64 step) {
  const core::PsReplayResult& r = o.result;
  QString text = QString("%1 replayed to global step %2 (%3 pushes of %4 workers) in %5 s.\n")
                     .arg(QString::fromStdString(o.named))
                     .arg(step)
                     .arg(r.pushesApplied)
                     .arg(o.world)
                     .arg(o.seconds, 0, 'f', 2);
  text +=
      QString("The server's blocks at versions %1; parameters %2.\n\n")
          .arg(versions(r.versions), QString::fromStdString(core::paramChecksum(r.serverParams)));
  if (const auto& u = r.update) {
    text += QString(
                "The update applied there: worker %1's push %2, computed from versions %3 and "
                "applied at %4 (staleness %5).\n")
                .arg(u->push.worker)
                .arg(u->push.clock)
                .arg(versions(u->push.basedOn), versions(u->push.appliedTo))
                .arg(u->staleness);
    text += QString("Test loss before it %1, after it %2")
                .arg(u->lossBefore, 0, 'f', 5)
                .arg(u->lossAfter, 0, 'f', 5);
    if (!std::isnan(u->accuracyAfter))
      text += QString(" (test accuracy %1 -> %2)")
                  .arg(u->accuracyBefore, 0, 'f', 4)
                  .arg(u->accuracyAfter, 0, 'f', 4);
    text += ".\n\n";
  } else {
    text += "No push was applied before this step: the server holds the initial weights.\n\n";
  }
  text += QString("%1 pushes in flight then (computed before the step, applied after it)%2\n")
              .arg(r.pending.size())
              .arg(r.pending.empty() ? "." : ":");
  for (const core::PushRecord& p : r.pending) {
    text +=
        QString("  worker %1's push %2: computed from versions %3, applied at %4 (staleness %5)\n")
            .arg(p.worker)
            .arg(p.clock)
            .arg(versions(p.basedOn), versions(p.appliedTo))
            .arg(core::pushStaleness(p));
  }
  if (!r.divergence.empty()) text += "\nDiverged: " + QString::fromStdString(r.divergence) + "\n";
  return text;
}

}  // namespace

RunPage::RunPage(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      facts_(new QLabel(this)),
      chartNote_(new QLabel(this)),
      dashboard_(new RunDashboard(this)),
      metrics_(new RunMetricsModel(this)),
      metricsView_(new QTableView(this)),
      events_(new QPlainTextEdit(this)),
      xAxis_(new QComboBox(this)),
      metricChoice_(new QComboBox(this)),
      follow_(new QCheckBox(tr("Follow the running run"), this)),
      split_(new QSplitter(Qt::Vertical, this)),
      lower_(new QSplitter(Qt::Horizontal, this)) {
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.35);
  big.setBold(true);
  title_->setFont(big);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  facts_->setWordWrap(true);
  facts_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  chartNote_->setStyleSheet("color: #666;");
  chartNote_->setWordWrap(true);

  dashboard_->setMinimumHeight(380);
  xAxis_->addItems({tr("x: step"), tr("x: time since start (s)"), tr("x: wall-clock time")});
  xAxis_->setToolTip(tr("What the x-axis of every chart counts"));
  connect(xAxis_, &QComboBox::currentIndexChanged, this,
          [this](int index) { dashboard_->setXAxis(static_cast<RunXAxis>(index)); });
  // Every metric of the table can be chosen; the ones this run has no points of say so.
  for (const core::MetricInfo& m : core::kMetricTable) {
    const QString name = QString::fromUtf8(m.name.data(), static_cast<qsizetype>(m.name.size()));
    const QString unit = QString::fromUtf8(m.unit.data(), static_cast<qsizetype>(m.unit.size()));
    metricChoice_->addItem(unit.isEmpty() ? name : QString("%1 (%2)").arg(name, unit), name);
    metricChoice_->setItemData(
        metricChoice_->count() - 1,
        QString("%1, per %2: %3")
            .arg(name, core::toString(m.scope),
                 QString::fromUtf8(m.description.data(),
                                   static_cast<qsizetype>(m.description.size()))),
        Qt::ToolTipRole);
  }
  metricChoice_->setToolTip(tr("The metric of the last chart (any metric of the metric table)"));
  connect(metricChoice_, &QComboBox::activated, this, [this](int index) {
    dashboard_->chooseMetric(metricChoice_->itemData(index).toString().toStdString());
  });
  connect(dashboard_, &RunDashboard::chosenMetricChanged, this, [this](const QString& key) {
    metricChoice_->setCurrentIndex(metricChoice_->findData(key));
  });
  auto* smoothing = new QDoubleSpinBox(this);
  smoothing->setRange(0.0, 0.99);
  smoothing->setSingleStep(0.1);
  smoothing->setDecimals(2);
  smoothing->setValue(dashboard_->smoothing());
  smoothing->setPrefix(tr("smoothing "));
  smoothing->setToolTip(
      tr("Moving average of each worker's per-step series (TensorBoard's, debiased); 0: raw"));
  connect(smoothing, &QDoubleSpinBox::valueChanged, dashboard_, &RunDashboard::setSmoothing);
  auto* reset = new QPushButton(tr("Reset view"), this);
  reset->setToolTip(tr("Show the whole run on every chart (or double-click a chart)"));
  connect(reset, &QPushButton::clicked, dashboard_, &RunDashboard::resetView);
  connect(dashboard_, &RunDashboard::replayRequested, this, &RunPage::replayTo);

  metricsView_->setModel(metrics_);
  metricsView_->verticalHeader()->hide();
  metricsView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  metricsView_->horizontalHeader()->setStretchLastSection(true);
  metricsView_->setSelectionBehavior(QAbstractItemView::SelectRows);
  metricsView_->setAlternatingRowColors(true);
  metricsView_->verticalHeader()->setDefaultSectionSize(metricsView_->fontMetrics().height() + 8);
  // One event a line, wrapped at the panel's width (a detail is never cut off), in a fixed
  // font so that steps, times and kinds line up; the whole event in the tooltip.
  events_->setReadOnly(true);
  events_->setMaximumBlockCount(2000);
  events_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  events_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  events_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  events_->setPlaceholderText(tr("No events yet"));
  events_->viewport()->installEventFilter(this);

  follow_->setToolTip(
      tr("When a run of an experiment executed from this window starts (the next variant), "
         "show it. Off: the run on screen stays; the new run is listed in the explorer."));
  QSettings settings;
  follow_->setChecked(settings.value(kFollowKey, true).toBool());
  connect(follow_, &QCheckBox::toggled, this,
          [](bool on) { QSettings().setValue(kFollowKey, on); });

  lower_->setObjectName("runPageLowerSplitter");
  lower_->addWidget(captioned(tr("Metrics (over all workers and nodes)"), metricsView_, lower_));
  lower_->addWidget(captioned(tr("Events"), events_, lower_));
  lower_->setStretchFactor(0, 1);
  lower_->setStretchFactor(1, 1);
  lower_->setChildrenCollapsible(false);
  split_->setObjectName("runPageSplitter");
  auto* top = new QWidget(split_);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  auto* chartBar = new QHBoxLayout();
  auto* hint = new QLabel(
      tr("Drag to pan, wheel to zoom: every chart follows. Click a legend entry to hide its "
         "series."),
      this);
  hint->setWordWrap(true);
  hint->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the page
  hint->setStyleSheet("color: #666;");
  chartBar->addWidget(hint, 1);
  chartBar->addWidget(new QLabel(tr("Sixth chart:"), this));
  chartBar->addWidget(metricChoice_);
  chartBar->addWidget(xAxis_);
  chartBar->addWidget(smoothing);
  chartBar->addWidget(reset);
  topLayout->addLayout(chartBar);
  topLayout->addWidget(dashboard_, 1);
  topLayout->addWidget(chartNote_);
  split_->addWidget(top);
  split_->addWidget(lower_);
  split_->setStretchFactor(0, 2);
  split_->setStretchFactor(1, 1);
  split_->setChildrenCollapsible(false);
  // Until the user moves them: the charts two thirds of the height, the table and the events
  // the rest, side by side in halves (at 1600 pixels the table's columns just fit; the
  // events' lines wrap).
  if (!split_->restoreState(settings.value(kSplitterKey).toByteArray()))
    split_->setSizes({2000, 1000});
  if (!lower_->restoreState(settings.value(kLowerSplitterKey).toByteArray()))
    lower_->setSizes({1000, 1000});

  auto* titleRow = new QHBoxLayout();
  titleRow->addWidget(title_, 1);
  titleRow->addWidget(follow_, 0, Qt::AlignRight | Qt::AlignVCenter);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(titleRow);
  layout->addWidget(facts_);
  layout->addWidget(split_, 1);
}

bool RunPage::followsRunningRun() const {
  return follow_->isChecked();
}

void RunPage::setFollowsRunningRun(bool follow) {
  follow_->setChecked(follow);
}

void RunPage::saveLayout() const {
  QSettings settings;
  settings.setValue(kSplitterKey, split_->saveState());
  settings.setValue(kLowerSplitterKey, lower_->saveState());
}

QString RunPage::eventToolTip(const QPoint& viewportPos) const {
  QTextCursor end(events_->document());
  end.movePosition(QTextCursor::End);
  if (viewportPos.y() > events_->cursorRect(end).bottom()) return {};  // below the last line
  const QTextBlock block = events_->cursorForPosition(viewportPos).block();
  // Each line's event: its index in the dashboard's list (older lines may have been dropped).
  const int index = block.userState();
  if (index < 0 || static_cast<std::size_t>(index) >= dashboard_->events().size()) return {};
  const core::RunEvent& e = dashboard_->events()[static_cast<std::size_t>(index)];
  return QString(
             "<p style='white-space:pre-wrap'><b>%1</b> at step %2, %3 s after the "
             "start</p><p>%4</p>")
      .arg(QString::fromStdString(e.kind).toHtmlEscaped())
      .arg(e.step)
      .arg(e.wallMs / 1000.0, 0, 'f', 3)
      .arg(QString::fromStdString(e.detail).toHtmlEscaped());
}

bool RunPage::eventFilter(QObject* watched, QEvent* event) {
  if (watched == events_->viewport() && event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString tip = eventToolTip(help->pos());
    if (tip.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), tip, events_->viewport());
    return true;
  }
  return QWidget::eventFilter(watched, event);
}

// Lists events[from...] below the lines there are, each line knowing its event.
void RunPage::appendEvents(const std::vector<core::RunEvent>& events, std::size_t from) {
  if (from >= events.size()) return;
  QStringList lines;
  for (std::size_t i = from; i < events.size(); ++i) lines << eventLine(events[i]);
  events_->appendPlainText(lines.join('\n'));  // one layout, not one per event
  // Numbered from the end: the list may have dropped its oldest lines (maximumBlockCount).
  // Every other event on a shaded background, as the table's rows: a wrapped event reads as
  // one.
  QTextBlockFormat shaded;
  shaded.setBackground(events_->palette().alternateBase());
  QTextBlock block = events_->document()->lastBlock();
  for (std::size_t i = events.size(); i > from && block.isValid(); --i, block = block.previous()) {
    block.setUserState(static_cast<int>(i - 1));
    if ((i - 1) % 2 == 1) QTextCursor(block).setBlockFormat(shaded);
  }
}

QString RunPage::headline() const {
  return title_->text();
}

QString RunPage::chartNote() const {
  return chartNote_->text();
}

void RunPage::appendLive(const std::vector<LivePoint>& points) {
  const bool before = dashboard_->downsampled();
  const std::size_t events = dashboard_->events().size();
  dashboard_->appendLive(points);
  appendEvents(dashboard_->events(), events);  // events that came live join the list too
  std::vector<RunMetricsModel::Point> measured;
  measured.reserve(points.size());
  for (const LivePoint& p : points) {
    if (p.runId != runId_ || p.event != nullptr || p.metric < 0 ||
        p.metric >= static_cast<int>(core::kMetricTable.size()) || std::isnan(p.value))
      continue;  // NaN: not measured, and not stored either
    if (!storedUpTo_.empty()) {
      const auto it = storedUpTo_.find({p.metric, ownerOf(p.metric, p.worker, p.node)});
      if (it != storedUpTo_.end()) {
        if (p.step <= it->second) continue;
        storedUpTo_.erase(it);
      }
    }
    measured.push_back(
        {core::kMetricTable[static_cast<std::size_t>(p.metric)].name, p.step, p.wallMs, p.value});
  }
  const int rows = metrics_->rowCount();
  metrics_->addPoints(measured);
  if (metrics_->rowCount() != rows) updateChooser();
  if (dashboard_->downsampled() != before) updateNote();
}

void RunPage::replayTo(qint64 step) {
  if (projectPath_.empty() || runId_ < 0 || step < 0) return;
  const std::string path = projectPath_;
  const qint64 run = runId_;
  const QString title = tr("Replay of run #%1 to step %2").arg(run).arg(step);
  replayWeights_.clear();
  showReplay(title, tr("Replaying run #%1 to step %2 from its record...").arg(run).arg(step));
  readProject<ReplayOutcome>(
      this, path,
      [run, step](core::ProjectStore& store) {
        const core::StoredRunReplay stored = core::loadStoredRunReplay(store, run);
        const auto start = std::chrono::steady_clock::now();
        ReplayOutcome o{stored.named, stored.world, core::replayStoredRun(stored, step), 0.0};
        o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return o;
      },
      [this, title, step](const std::optional<ReplayOutcome>& o, const QString& error) {
        if (!o) {
          showReplay(title, tr("The replay to step %1 failed: %2").arg(step).arg(error));
          return;
        }
        replayWeights_ = o->result.serverParams;
        showReplay(title, replayReport(*o, step));
      });
}

void RunPage::showReplay(const QString& title, const QString& text) {
  if (replayDialog_ == nullptr) {
    replayDialog_ = new QDialog(this);
    replayDialog_->resize(760, 420);
    replayView_ = new QPlainTextEdit(replayDialog_);
    replayView_->setReadOnly(true);
    replayView_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, replayDialog_);
    saveWeights_ = buttons->addButton(tr("Save weights..."), QDialogButtonBox::ActionRole);
    saveWeights_->setToolTip(
        tr("Writes the server's parameters at this step as float32 (little-endian), in the "
           "model's layer order, as dtlab-cli replay --until STEP --weights FILE does"));
    connect(buttons, &QDialogButtonBox::rejected, replayDialog_, &QDialog::hide);
    connect(saveWeights_, &QPushButton::clicked, this, [this] {
      const QString file = QFileDialog::getSaveFileName(this, tr("Save weights"), {},
                                                        tr("Raw float32 (*.f32 *.bin)"));
      if (!file.isEmpty() && !saveReplayWeights(file))
        replayView_->appendPlainText(tr("Could not write %1").arg(file));
    });
    auto* layout = new QVBoxLayout(replayDialog_);
    layout->addWidget(replayView_, 1);
    layout->addWidget(buttons);
  }
  replayDialog_->setWindowTitle(title);
  replayView_->setPlainText(text);
  saveWeights_->setEnabled(!replayWeights_.empty());
  replayDialog_->show();
  replayDialog_->raise();
  emit replayShown(text);
}

QString RunPage::replayText() const {
  return replayView_ != nullptr ? replayView_->toPlainText() : QString();
}

bool RunPage::saveReplayWeights(const QString& path) const {
  if (replayWeights_.empty()) return false;
  std::ofstream out(path.toStdString(), std::ios::binary);
  out.write(reinterpret_cast<const char*>(replayWeights_.data()),
            static_cast<std::streamsize>(replayWeights_.size() * sizeof(float)));
  out.close();
  return static_cast<bool>(out);
}

void RunPage::setXAxis(RunXAxis axis) {
  if (xAxis_->currentIndex() != static_cast<int>(axis))
    xAxis_->setCurrentIndex(static_cast<int>(axis));  // calls the dashboard
}

void RunPage::chooseMetric(const QString& key) {
  dashboard_->chooseMetric(key.toStdString());
}

void RunPage::toggleSeries(int graph) {
  if (graph >= 0 && graph < dashboard_->graphCount())
    dashboard_->toggleSeries(dashboard_->graph(graph));
}

QString RunPage::valuesAt(double x, RunDashboard::Chart chart) const {
  return dashboard_->valuesAt(chart, x);
}

void RunPage::updateNote() {
  chartNote_->setText(
      dashboard_->downsampled()
          ? tr("Long series are drawn reduced (from the store: each interval's minimum and "
               "maximum; live, past %1 points a series: one point of every few). Axes of "
               "timings and rates span their 1st to 99th percentile.")
                .arg(kMaxLivePoints)
          : QString());
  chartNote_->setVisible(!chartNote_->text().isEmpty());
}

void RunPage::showRun(const RunDetail& d) {
  const core::RunRecord& r = d.run;
  title_->setText(QString("Run #%1: %2").arg(r.id).arg(QString::fromStdString(r.name)));
  QString facts = QString("<b>%1</b> &middot; %2 &middot; seed %3")
                      .arg(QString::fromStdString(r.strategy).toHtmlEscaped(),
                           QString::fromUtf8(core::toString(r.status)).toHtmlEscaped())
                      .arg(r.seed);
  const nlohmann::json& s = d.summary;
  if (s.is_object()) {
    facts += QString(" &middot; %1 steps in %2 s &middot; %3 samples/s &middot; test accuracy %4")
                 .arg(s.value("steps", 0))
                 .arg(number(s, "wall_s", 1), number(s, "samples_per_s", 0),
                      number(s, "final_test_accuracy", 4));
    if (s.contains("time_to_target_s") && s["time_to_target_s"].is_number())
      facts += QString(" &middot; target reached after %1 s").arg(number(s, "time_to_target_s", 2));
    facts += QString(" &middot; utilisation %1, waiting %2")
                 .arg(number(s, "mean_utilization", 2), number(s, "mean_wait_fraction", 2));
  }
  if (!r.error.empty())
    facts += "<br><span style='color:#b02020'>" + QString::fromStdString(r.error).toHtmlEscaped() +
             "</span>";
  facts_->setText(facts);

  // The events listed before, when the run is shown again (re-read while it is recorded):
  // only the new ones are added, so the list keeps its scroll position.
  const std::vector<core::RunEvent> listed =
      r.id == runId_ ? dashboard_->events() : std::vector<core::RunEvent>();
  const bool sameStart = listed.size() <= d.events.size() &&
                         std::equal(listed.begin(), listed.end(), d.events.begin(),
                                    [](const core::RunEvent& a, const core::RunEvent& b) {
                                      return a.step == b.step && a.wallMs == b.wallMs &&
                                             a.kind == b.kind && a.detail == b.detail;
                                    });
  const bool sameRun = r.id == runId_;
  runId_ = r.id;
  status_ = r.status;
  projectPath_ = d.path;
  const core::StrategyDescriptor* strategy = core::findStrategy(r.strategy);
  const bool replays = strategy != nullptr && strategy->traits.replaysFromRecord;
  const int64_t lastStep = d.summary.is_object() ? d.summary.value("steps", int64_t{0}) : 0;
  if (!replays)
    dashboard_->setReplayable(false, 0,
                              tr("%1 runs are not replayed from a record: their workers "
                                 "agree on every step, so the same spec and seed "
                                 "repeat them")
                                  .arg(QString::fromStdString(r.strategy)));
  else if (r.status == core::RunStatus::kRunning)
    dashboard_->setReplayable(false, 0, tr("The run is still being recorded"));
  else
    dashboard_->setReplayable(!d.path.empty(), lastStep,
                              tr("The run was not read from a project file"));
  dashboard_->setRun(d);
  updateNote();
  metrics_->setMetrics(d.metrics);
  updateChooser();
  metricChoice_->setCurrentIndex(
      metricChoice_->findData(QString::fromStdString(dashboard_->chosenMetric())));
  storedUpTo_.clear();
  for (const RunDetail::Curve& c : d.curves) {
    const core::MetricInfo* row = core::findMetric(c.key);
    if (row == nullptr || c.steps.empty()) continue;
    const int metric = static_cast<int>(row - core::kMetricTable.data());
    storedUpTo_[{metric, ownerOf(metric, c.worker, c.node)}] = static_cast<qint64>(c.steps.back());
  }

  if (sameRun && sameStart && !events_->document()->isEmpty()) {
    appendEvents(d.events, listed.size());
    return;
  }
  events_->clear();
  appendEvents(d.events, 0);
}

void RunPage::updateChooser() {
  // The chooser says which metrics this run has points of.
  const std::vector<core::RunMetric>& recorded = metrics_->metrics();
  for (int i = 0; i < metricChoice_->count(); ++i) {
    const std::string key = metricChoice_->itemData(i).toString().toStdString();
    const bool has = std::any_of(recorded.begin(), recorded.end(),
                                 [&](const core::RunMetric& m) { return m.key == key; });
    metricChoice_->setItemData(i, has ? QVariant() : QVariant(QColor(150, 150, 150)),
                               Qt::ForegroundRole);
  }
}

}  // namespace dtlab::ui
