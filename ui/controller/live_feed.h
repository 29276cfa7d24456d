#pragma once

#include <QtCore/QObject>

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/metrics/metrics.h"

namespace dtlab::ui {

// One live metric point of a run being executed from this window: one value of one row of
// core::kMetricTable, of one worker (worker-scope rows), one node (node-scope rows) or the
// run (run-scope rows: test loss and accuracy); or, when `event` is set, an event of the run
// (a rebalance, a switch, a node lost...), which the charts mark where it happened.
struct LivePoint {
  qint64 runId = 0;
  int metric = 0;   // index of the row in core::kMetricTable
  int worker = -1;  // the worker of a worker-scope metric, else -1
  int node = -1;    // the node of a node-scope metric, else -1
  qint64 step = 0;
  double wallMs = 0.0;  // since the run started
  double value = 0.0;
  std::shared_ptr<const core::RunEvent> event;  // set: an event, not a metric point
};

// Points on their way from the training threads to the charts. Producers append under the
// feed's lock; the first point after the GUI emptied the feed emits available() (queued to the
// GUI thread), and the GUI takes everything in one go when its ~40 ms coalescing timer fires.
// So a fast run costs one signal per replot, not one per point.
class LiveFeed final : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;

  void push(const LivePoint& point);  // any thread
  // Every metric of one record at once: one lock, not one per value.
  void push(std::span<const LivePoint> points);  // any thread
  std::vector<LivePoint> take();                 // GUI thread

 signals:
  void available();

 private:
  std::mutex mutex_;
  std::vector<LivePoint> points_;
};

}  // namespace dtlab::ui
