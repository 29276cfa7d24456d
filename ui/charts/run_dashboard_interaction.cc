// RunDashboard's answers to the mouse: a legend click hides a series group, the crosshair
// lists the values under it. Part of run_dashboard.cc's class, kept apart for size.
#include <QtWidgets/QMenu>

#include <algorithm>
#include <cmath>

#include "ui/charts/run_dashboard.h"

namespace dtlab::ui {

void RunDashboard::toggleSeries(QCPGraph* graph) {
  if (graph == nullptr) return;
  const QString group = graph->property("group").toString();
  const bool visible = !graph->visible();
  QCPAxisRect* rect = graph->keyAxis()->axisRect();
  for (QCPGraph* g : rect->graphs()) {
    if (g->property("group").toString() != group) continue;
    g->setVisible(visible);
    if (visible)
      hidden_.erase(hiddenKey(g));
    else
      hidden_.insert(hiddenKey(g));
  }
  for (Panel& p : panels_)
    if (p.rect == rect)
      for (int i = 0; i < p.legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(p.legend->item(i)))
          item->setTextColor(item->plottable()->visible() ? Qt::black : QColor(160, 160, 160));
  if (following_) fitView();
  replot(rpQueuedReplot);
}

QString RunDashboard::valuesAt(Chart chart, double x) const {
  QStringList lines;
  for (QCPGraph* g : panels_[chart].rect->graphs()) {
    if (!g->visible() || g->data()->isEmpty()) continue;
    auto it = g->data()->findEnd(x, false);  // the last point at or before x
    if (it == g->data()->constBegin()) continue;
    --it;
    const QString unit = g->property("unit").toString();
    lines << QString("%1: %2%3%4")
                 .arg(g->property("fullName").toString())
                 .arg(it->value, 0, 'g', 5)
                 .arg(unit.isEmpty() ? QString() : " " + unit)
                 .arg(g->property("smoothed").toBool() ? tr(" (smoothed)") : QString());
  }
  if (lines.isEmpty()) return {};
  QString head;
  switch (xMode_) {
    case RunXAxis::kStep:
      head = tr("step %1").arg(std::llround(x));
      break;
    case RunXAxis::kSeconds:
      head = tr("%1 s").arg(x, 0, 'f', 2);
      break;
    case RunXAxis::kWallClock:
      head = QDateTime::fromMSecsSinceEpoch(std::llround(x * 1000.0)).toString("hh:mm:ss.zzz");
      break;
  }
  return head + "\n" + lines.join("\n");
}

void RunDashboard::moveCrosshair(QMouseEvent* event) {
  QCPAxisRect* under = axisRectAt(event->position());
  int hovered = -1;
  for (int c = 0; c < kChartCount; ++c)
    if (panels_[static_cast<std::size_t>(c)].rect == under) hovered = c;
  if (hovered < 0) {
    hideCrosshair();
    return;
  }
  const double x = under->axis(QCPAxis::atBottom)->pixelToCoord(event->position().x());
  for (int c = 0; c < kChartCount; ++c) {
    Panel& p = panels_[static_cast<std::size_t>(c)];
    p.cursor->point1->setCoords(x, 0);
    p.cursor->point2->setCoords(x, 1);
    p.cursor->setVisible(true);
    const QString values = c == hovered ? valuesAt(static_cast<Chart>(c), x) : QString();
    p.cursorText->setVisible(!values.isEmpty());
    if (!values.isEmpty()) p.cursorText->setText(values);
  }
  layer(QStringLiteral("overlay"))->replot();
}

void RunDashboard::hideCrosshair() {
  bool shown = false;
  for (Panel& p : panels_) {
    shown = shown || p.cursor->visible();
    p.cursor->setVisible(false);
    p.cursorText->setVisible(false);
  }
  if (shown) layer(QStringLiteral("overlay"))->replot();
}

int64_t RunDashboard::stepAt(double x) const {
  if (xMode_ == RunXAxis::kStep) return std::max<int64_t>(0, std::llround(x));
  // Time on the axis: the step measured nearest it, from the run's own series with the most
  // points (evaluations count the run's global steps; an asynchronous worker's steps are its
  // own), or from any series when the run has none.
  const Series* densest = nullptr;
  for (bool runScope : {true, false}) {
    for (const Series& s : series_)
      if (!s.values.empty() && (!runScope || s.owner < 0) &&
          (densest == nullptr || s.values.size() > densest->values.size()))
        densest = &s;
    if (densest != nullptr) break;
  }
  if (densest == nullptr) return -1;
  const double seconds = xMode_ == RunXAxis::kWallClock ? x - startS_ : x;
  const auto& times = densest->seconds;
  const auto at = std::lower_bound(times.begin(), times.end(), seconds);
  std::size_t i = static_cast<std::size_t>(at - times.begin());
  if (i == times.size() || (i > 0 && seconds - times[i - 1] < times[i] - seconds)) --i;
  return static_cast<int64_t>(densest->steps[i]);
}

void RunDashboard::setReplayable(bool replayable, int64_t lastStep, const QString& whyNot) {
  replayable_ = replayable;
  replayLastStep_ = lastStep;
  notReplayable_ = whyNot;
}

QMenu* RunDashboard::contextMenuAt(const QPoint& pos) {
  auto* menu = new QMenu(this);
  menu->setAttribute(Qt::WA_DeleteOnClose);
  QCPAxisRect* under = axisRectAt(pos);
  int64_t step =
      under != nullptr ? stepAt(under->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())) : -1;
  // An asynchronous worker's own steps run past the run's global steps (a fast worker takes
  // more of them): the replay goes no further than the run did.
  if (replayable_ && replayLastStep_ > 0) step = std::min(step, replayLastStep_);
  if (step >= 0) {
    QAction* replay = menu->addAction(tr("Replay to here (step %1)").arg(step));
    replay->setEnabled(replayable_);
    if (replayable_) {
      replay->setToolTip(tr("Replays the run from its record to the server after step %1: the "
                            "update applied there, its worker and staleness, the test loss "
                            "before and after, and the pushes in flight")
                             .arg(step));
      connect(replay, &QAction::triggered, this, [this, step] { emit replayRequested(step); });
    } else {
      replay->setToolTip(notReplayable_);
    }
    menu->setToolTipsVisible(true);
  }
  connect(menu->addAction(tr("Show the whole run")), &QAction::triggered, this,
          [this] { resetView(); });
  return menu;
}

void RunDashboard::contextMenuEvent(QContextMenuEvent* event) {
  contextMenuAt(event->pos())->popup(event->globalPos());
}

void RunDashboard::leaveEvent(QEvent* event) {
  hideCrosshair();
  QCustomPlot::leaveEvent(event);
}

}  // namespace dtlab::ui
