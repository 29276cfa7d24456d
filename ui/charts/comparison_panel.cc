#include "ui/charts/comparison_panel.h"

#include <QtCore/QEvent>
#include <QtCore/QTimer>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QMenu>
#include <QtWidgets/QSlider>
#include <QtWidgets/QToolButton>
#include <QtWidgets/QVBoxLayout>

#include <cmath>

#include "ui/background.h"
#include "ui/charts/comparison_chart.h"
#include "ui/models/project_access.h"

namespace dtlab::ui {
namespace {

constexpr int kSmoothingSteps = 100;  // the slider's steps over [0, 1)

QString fromView(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

QLabel* caption(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setStyleSheet("color: #444;");
  return label;
}

}  // namespace

ComparisonPanel::ComparisonPanel(QWidget* parent)
    : QFrame(parent),
      metric_(new QComboBox(this)),
      reduction_(new QComboBox(this)),
      xAxis_(new QComboBox(this)),
      smoothing_(new QSlider(Qt::Horizontal, this)),
      smoothingValue_(new QLabel(this)),
      export_(new QToolButton(this)),
      remove_(new QToolButton(this)),
      chart_(new ComparisonChart(this)) {
  setFrameShape(QFrame::StyledPanel);
  setCurrent(false);

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
  metric_->setToolTip(tr("The metric this chart overlays for the checked runs"));
  reduction_->addItem(QString(), static_cast<int>(MemberReduction::kMean));
  reduction_->addItem(QString(), static_cast<int>(MemberReduction::kFirst));
  reduction_->setToolTip(tr("How the series of a run's workers (or nodes) become one curve"));
  xAxis_->addItem(tr("step"), static_cast<int>(ChartX::kStep));
  xAxis_->addItem(tr("wall time (s)"), static_cast<int>(ChartX::kWallSeconds));
  smoothing_->setRange(0, kSmoothingSteps - 1);
  smoothing_->setToolTip(
      tr("Exponential moving average, debiased (as TensorBoard smooths); 0 draws the raw values"));
  // Narrow at least: the toolbar sets the page's minimum width, and the window's (a 1000 px
  // window must still fit the explorer beside it).
  smoothing_->setMinimumWidth(50);
  smoothingValue_->setMinimumWidth(smoothingValue_->fontMetrics().horizontalAdvance("0.000"));
  syncReductionChoice();

  export_->setText(tr("Export"));
  export_->setToolTip(tr("Write this chart as a picture, a document or its points"));
  export_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(export_);
  const struct {
    const char* text;
    ChartFormat format;
    const char* tip;
  } formats[] = {{"PNG...", ChartFormat::kPng, "A picture at the page's export size and DPI"},
                 {"SVG...", ChartFormat::kSvg, "Vectors, for editing and the web"},
                 {"PDF...", ChartFormat::kPdf, "One page, vectors, fonts embedded"},
                 {"CSV...", ChartFormat::kCsv, "The plotted points: run, x, value, smoothed"}};
  for (const auto& f : formats) {
    QAction* action = menu->addAction(tr(f.text));
    action->setToolTip(tr(f.tip));
    const ChartFormat format = f.format;
    connect(action, &QAction::triggered, this, [this, format] {
      emit activated();
      emit exportRequested(format);
    });
  }
  menu->setToolTipsVisible(true);
  export_->setMenu(menu);
  remove_->setText(QStringLiteral("\u2715"));
  remove_->setToolTip(tr("Remove this chart"));
  remove_->setAutoRaise(true);
  connect(remove_, &QToolButton::clicked, this, [this] { emit removeRequested(); });

  connect(metric_, &QComboBox::currentIndexChanged, this, [this] {
    syncReductionChoice();
    scheduleRead();
    emit settingsChanged();
  });
  for (QComboBox* box : {reduction_, xAxis_})
    connect(box, &QComboBox::currentIndexChanged, this, [this] {
      scheduleRead();
      emit settingsChanged();
    });
  connect(smoothing_, &QSlider::valueChanged, this, [this](int step) {
    showSmoothing(static_cast<double>(step) / kSmoothingSteps);  // the points are at hand
    emit settingsChanged();
  });

  auto* bar = new QHBoxLayout;
  bar->setSpacing(4);
  bar->addWidget(caption(tr("Metric"), this));
  bar->addWidget(metric_);
  bar->addSpacing(4);
  bar->addWidget(caption(tr("Workers"), this));
  bar->addWidget(reduction_);
  bar->addSpacing(4);
  bar->addWidget(caption(tr("X axis"), this));
  bar->addWidget(xAxis_);
  bar->addSpacing(4);
  bar->addWidget(caption(tr("Smoothing"), this));
  bar->addWidget(smoothing_, 1);
  bar->addWidget(smoothingValue_);
  bar->addSpacing(4);
  bar->addWidget(export_);
  bar->addWidget(remove_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 2);
  layout->setSpacing(2);
  layout->addLayout(bar);
  layout->addWidget(chart_, 1);
  chart_->setMinimumHeight(180);

  // Any press on the chart or a control makes this the chart the page's controls act on.
  for (QWidget* w :
       std::initializer_list<QWidget*>{chart_, metric_, reduction_, xAxis_, smoothing_, export_})
    w->installEventFilter(this);

  showSmoothing(ChartSettings{}.smoothing);
}

bool ComparisonPanel::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::MouseButtonPress || event->type() == QEvent::FocusIn)
    emit activated();
  return QFrame::eventFilter(watched, event);
}

void ComparisonPanel::setCurrent(bool current) {
  // Only this frame, not its children: a style sheet on the panel would cascade into them.
  setObjectName("comparisonPanel");
  setStyleSheet(current ? "#comparisonPanel { border: 2px solid palette(highlight); }"
                        : "#comparisonPanel { border: 2px solid palette(midlight); }");
}

void ComparisonPanel::setRemovable(bool removable) {
  remove_->setEnabled(removable);
  remove_->setToolTip(removable ? tr("Remove this chart") : tr("The last chart stays"));
}

void ComparisonPanel::syncReductionChoice() {
  const core::MetricInfo* m = core::findMetric(metric_->currentData().toString().toStdString());
  const bool nodes = m != nullptr && m->scope == core::MetricScope::kNode;
  const bool run = m != nullptr && m->scope == core::MetricScope::kRun;
  reduction_->setItemText(0, run     ? tr("(the run's own)")
                             : nodes ? tr("mean over nodes")
                                     : tr("mean over workers"));
  reduction_->setItemText(1, run ? tr("(the run's own)") : nodes ? tr("node 0") : tr("worker 0"));
  reduction_->setEnabled(!run);
}

ChartSettings ComparisonPanel::settings() const {
  ChartSettings s;
  s.metric = metric_->currentData().toString().toStdString();
  s.x = static_cast<ChartX>(xAxis_->currentData().toInt());
  s.reduction = static_cast<MemberReduction>(reduction_->currentData().toInt());
  s.smoothing = chart_->smoothing();
  return s;
}

void ComparisonPanel::setSettings(const ChartSettings& settings) {
  setMetric(QString::fromStdString(settings.metric));
  setXAxis(settings.x);
  setReduction(settings.reduction);
  setSmoothing(settings.smoothing);
}

void ComparisonPanel::setMetric(const QString& metric) {
  const int index = metric_->findData(metric);
  if (index >= 0) metric_->setCurrentIndex(index);
}

void ComparisonPanel::setXAxis(ChartX x) {
  xAxis_->setCurrentIndex(xAxis_->findData(static_cast<int>(x)));
}

void ComparisonPanel::setReduction(MemberReduction reduction) {
  reduction_->setCurrentIndex(reduction_->findData(static_cast<int>(reduction)));
}

void ComparisonPanel::setSmoothing(double weight) {
  const int step = static_cast<int>(std::lround(weight * kSmoothingSteps));
  const bool changed =
      step != smoothing_->value() || std::fabs(weight - chart_->smoothing()) > 1e-9;
  {
    const QSignalBlocker block(smoothing_);
    smoothing_->setValue(step);
  }
  showSmoothing(weight);
  if (changed) emit settingsChanged();
}

void ComparisonPanel::showSmoothing(double weight) {
  smoothingValue_->setText(QString::number(weight, 'f', 2));
  chart_->setSmoothing(weight);
}

void ComparisonPanel::setSource(const std::string& path, const std::vector<int64_t>& runIds,
                                const std::vector<RunGroup>& groups) {
  path_ = path;
  runIds_ = runIds;
  groups_ = groups;
  scheduleRead();
}

ComparisonRequest ComparisonPanel::request() const {
  ComparisonRequest r;
  const ChartSettings s = settings();
  r.metric = s.metric;
  r.runIds = runIds_;
  r.groups = groups_;
  r.x = s.x;
  r.reduction = s.reduction;
  return r;
}

void ComparisonPanel::scheduleRead() {
  // Several changes in one go (a restored layout, a new snapshot) make one read.
  if (readScheduled_) return;
  readScheduled_ = true;
  QTimer::singleShot(0, this, [this] {
    readScheduled_ = false;
    read();
  });
}

void ComparisonPanel::read() {
  const quint64 request = ++request_;
  const ComparisonRequest what = this->request();
  if (path_.empty() || what.runIds.empty()) {
    reading_ = false;
    chart_->setData({what, {}});
    emit shown();
    return;
  }
  reading_ = true;
  readProject<ComparisonData>(
      this, path_, [what](core::ProjectStore& store) { return readComparison(store, what); },
      [this, request](const std::optional<ComparisonData>& data, const QString& error) {
        if (request != request_) return;  // the choice changed meanwhile
        reading_ = false;
        if (!data) {
          emit failed(tr("Cannot read the chart: %1").arg(error));
          return;
        }
        chart_->setData(*data);
        emit shown();
      });
}

}  // namespace dtlab::ui
