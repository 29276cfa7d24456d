// RunDashboard's event markers: a line per event on every chart, in its kind's style, and
// the event's short name beside it on the loss and schedule charts. Part of run_dashboard.cc's
// class, kept apart for size.
#include <algorithm>
#include <map>
#include <string>

#include "core/metrics/event_facts.h"
#include "ui/charts/run_dashboard.h"

namespace dtlab::ui {
namespace {

// Each kind of event has its own line, so that a rebalance and a strategy switch read apart
// without their names: a switch (a few per run, each changes how the run trains) solid and
// wider; a rebalance (many) thin and dashed.
QPen eventPen(const std::string& kind) {
  if (kind == "node_lost") return QPen(QColor(200, 0, 0, 200), 1.5, Qt::SolidLine);
  if (kind == "recovery") return QPen(QColor(0, 140, 60, 200), 1.5, Qt::SolidLine);
  if (kind == "cancel") return QPen(QColor(0, 0, 0, 170), 1.5, Qt::SolidLine);
  if (kind == "strategy_switch") return QPen(QColor(150, 60, 170, 220), 2.0, Qt::SolidLine);
  if (kind == "rebalance") return QPen(QColor(0, 130, 130, 150), 1.0, Qt::DashLine);
  return QPen(QColor(120, 120, 120, 150), 1.0, Qt::DashLine);
}

}  // namespace

QString RunDashboard::eventLabel(const core::RunEvent& event) {
  if (event.kind != core::kSwitchEvent) return QString::fromStdString(event.kind);
  // The mode the run switched to, from the event's facts.
  std::optional<core::PhaseFacts> phase;
  try {
    phase = core::phaseFactsOf(event);
  } catch (const std::exception&) {  // facts that are not the codec's: the label says less
  }
  if (!phase) return tr("switch");
  return QStringLiteral("\u2192 ") +
         (phase->asynchronous ? QStringLiteral("async") : QStringLiteral("sync"));
}

void RunDashboard::drawMarkers() {
  for (Panel& p : panels_) {
    for (QCPAbstractItem* item : p.markers) removeItem(item);
    p.markers.clear();
  }
  std::vector<const core::RunEvent*> shown;
  for (const core::RunEvent& e : events_)
    if (!core::describesRun(e.kind)) shown.push_back(&e);
  // A line on every chart; named on the loss chart and on the schedule chart (where the shares
  // a rebalance moves and the staleness a switch starts are drawn) while they are few enough
  // to read. Switches are few and change how the run trains: always named.
  const bool fewEnough = shown.size() <= 20;
  // Dozens of lines of one kind (a rebalance every few steps) would hide the curves: fainter.
  std::map<std::string, int> perKind;
  for (const core::RunEvent* e : shown) ++perKind[e->kind];
  const auto keyOf = [&](const core::RunEvent& e) {
    return xMode_ == RunXAxis::kStep      ? static_cast<double>(e.step)
           : xMode_ == RunXAxis::kSeconds ? e.wallMs / 1000.0
                                          : startS_ + e.wallMs / 1000.0;
  };
  // The run's extent on the x axis, from its first event to its last ("finish" included).
  double first = 0.0, last = 0.0;
  for (const core::RunEvent& e : events_) {
    first = std::min(first, keyOf(e));
    last = std::max(last, keyOf(e));
  }
  for (int c = 0; c < kChartCount; ++c) {
    Panel& p = panels_[static_cast<std::size_t>(c)];
    QCPAxis* x = p.rect->axis(QCPAxis::atBottom);
    QCPAxis* y = p.rect->axis(QCPAxis::atLeft);
    // Events at one step share one name ("node_lost, rebalance") instead of names drawn over
    // each other; so does a recovery and the loss it recovered from when they are within 1%
    // of the run's extent (a group that went on a step or a fraction of a second later).
    const double recoveryNear = 0.01 * (last - first);
    std::map<double, QCPItemText*> labelAt;
    for (const core::RunEvent* e : shown) {
      const double key = keyOf(*e);
      QPen pen = eventPen(e->kind);
      if (perKind[e->kind] > 40) {
        QColor faint = pen.color();
        faint.setAlpha(45);
        pen.setColor(faint);
      }
      auto* line = new QCPItemStraightLine(this);
      line->setClipAxisRect(p.rect);
      line->point1->setAxes(x, y);
      line->point2->setAxes(x, y);
      line->point1->setCoords(key, 0);
      line->point2->setCoords(key, 1);
      line->setPen(pen);
      line->setProperty("event", QString::fromStdString(e->kind));
      p.markers.push_back(line);
      const bool named = fewEnough || e->kind == "strategy_switch";
      if ((c != kLossChart && c != kScheduleChart) || !named) continue;
      const double near = e->kind == "recovery" ? recoveryNear : 0.0;
      if (const auto at = labelAt.lower_bound(key - near);
          at != labelAt.end() && at->first <= key + near) {
        at->second->setText(at->second->text() + ", " + eventLabel(*e));
        continue;
      }
      // Upright along the line, from the top of the chart down, where curves that start high
      // and fall (loss) have left room by the time events happen.
      auto* label = new QCPItemText(this);
      label->setClipAxisRect(p.rect);
      label->position->setAxes(x, y);
      label->position->setAxisRect(p.rect);
      label->position->setTypeX(QCPItemPosition::ptPlotCoords);
      label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
      label->position->setCoords(key, 0.02);
      label->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
      label->setRotation(-90);
      QColor colour = pen.color();
      colour.setAlpha(255);
      label->setColor(colour.darker(130));
      label->setText(eventLabel(*e));
      label->setProperty("event", QString::fromStdString(e->kind));
      p.markers.push_back(label);
      labelAt[key] = label;
    }
  }
}

QStringList RunDashboard::eventLabels(Chart chart) const {
  QStringList out;
  for (const QCPAbstractItem* item : panels_[chart].markers)
    if (const auto* label = qobject_cast<const QCPItemText*>(item)) out << label->text();
  return out;
}

int RunDashboard::eventMarkerCount(Chart chart) const {
  int n = 0;
  for (const QCPAbstractItem* item : panels_[chart].markers)
    if (qobject_cast<const QCPItemStraightLine*>(item) != nullptr) ++n;
  return n;
}

}  // namespace dtlab::ui
