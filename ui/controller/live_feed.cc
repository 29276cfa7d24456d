#include "ui/controller/live_feed.h"

namespace dtlab::ui {

void LiveFeed::push(const LivePoint& point) {
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    first = points_.empty();
    points_.push_back(point);
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
