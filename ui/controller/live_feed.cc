#include "ui/controller/live_feed.h"

namespace dtlab::ui {

void LiveFeed::push(const LivePoint& point) {
  push(std::span<const LivePoint>(&point, 1));
}

void LiveFeed::push(std::span<const LivePoint> points) {
  if (points.empty()) return;
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    first = points_.empty();
    points_.insert(points_.end(), points.begin(), points.end());
  }
  if (first)
    QMetaObject::invokeMethod(
        this, [this] { emit available(); }, Qt::QueuedConnection);
}

std::vector<LivePoint> LiveFeed::take() {
  std::lock_guard lock(mutex_);
  std::vector<LivePoint> out;
  out.swap(points_);
  return out;
}

}  // namespace dtlab::ui
