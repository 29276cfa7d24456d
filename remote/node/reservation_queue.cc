#include "remote/node/reservation_queue.h"

#include <algorithm>
#include <tuple>

namespace dtlab::remote {

bool ReservationQueue::before(const Claim& a, const Claim& b) {
  return std::tie(a.ticket, a.id) < std::tie(b.ticket, b.id);
}

void ReservationQueue::renew(const Claim& claim, Clock::time_point now) {
  const Clock::time_point expires = now + claim.lease;
  if (holder_ && holder_->claim.id == claim.id) {
    holder_->expires = expires;
    return;
  }
  const auto same = std::find_if(waiting_.begin(), waiting_.end(),
                                 [&](const Slot& s) { return s.claim.id == claim.id; });
  if (same != waiting_.end()) {
    same->expires = expires;
    return;
  }
  const auto at = std::find_if(waiting_.begin(), waiting_.end(),
                               [&](const Slot& s) { return before(claim, s.claim); });
  waiting_.insert(at, Slot{claim, now, expires});
}

void ReservationQueue::expire(Clock::time_point now) {
  if (holder_ && holder_->expires < now) {
    holder_.reset();
    committed_ = false;
  }
  std::erase_if(waiting_, [&](const Slot& s) { return s.expires < now; });
}

void ReservationQueue::settle(bool busy, Clock::time_point now) {
  expire(now);
  if (waiting_.empty()) return;
  if (holder_ && !committed_ && before(waiting_.front().claim, holder_->claim)) {
    // The holder waits for its other nodes; the one before it may be waiting for this node
    // while holding one the holder wants. It steps back in line.
    Slot yielded = std::move(*holder_);
    holder_ = std::move(waiting_.front());
    waiting_.erase(waiting_.begin());
    const auto at = std::find_if(waiting_.begin(), waiting_.end(),
                                 [&](const Slot& s) { return before(yielded.claim, s.claim); });
    waiting_.insert(at, std::move(yielded));
    return;
  }
  if (!holder_ && !busy) {
    holder_ = std::move(waiting_.front());
    committed_ = false;
    waiting_.erase(waiting_.begin());
  }
}

ReservationQueue::Standing ReservationQueue::standing(const std::string& id) const {
  Standing out;
  if (holder_ && holder_->claim.id == id) {
    out.state = committed_ ? State::kCommitted : State::kHeld;
    return out;
  }
  out.waiting = static_cast<int>(waiting_.size());
  for (std::size_t i = 0; i < waiting_.size(); ++i)
    if (waiting_[i].claim.id == id) out.position = static_cast<int>(i) + 1;
  if (holder_) {
    out.holder = holder_->claim;
    out.holderCommitted = committed_;
  }
  return out;
}

ReservationQueue::Standing ReservationQueue::wait(const Claim& claim, bool busy,
                                                  Clock::time_point now) {
  renew(claim, now);
  settle(busy, now);
  return standing(claim.id);
}

ReservationQueue::Standing ReservationQueue::commit(const Claim& claim, bool busy,
                                                    Clock::time_point now) {
  renew(claim, now);
  settle(busy, now);
  if (holder_ && holder_->claim.id == claim.id) committed_ = true;
  return standing(claim.id);
}

ReservationQueue::Standing ReservationQueue::uncommit(const Claim& claim, bool busy,
                                                      Clock::time_point now) {
  renew(claim, now);
  if (holder_ && holder_->claim.id == claim.id) committed_ = false;
  settle(busy, now);
  return standing(claim.id);
}

void ReservationQueue::release(const std::string& id, bool busy, Clock::time_point now) {
  if (holder_ && holder_->claim.id == id) {
    holder_.reset();
    committed_ = false;
  }
  std::erase_if(waiting_, [&](const Slot& s) { return s.claim.id == id; });
  settle(busy, now);
}

bool ReservationQueue::committed(const std::string& id, Clock::time_point now) {
  expire(now);
  return holder_ && committed_ && holder_->claim.id == id;
}

bool ReservationQueue::taken(Clock::time_point now) {
  expire(now);
  return holder_ || !waiting_.empty();
}

std::vector<ReservationQueue::Entry> ReservationQueue::entries(Clock::time_point now) {
  expire(now);
  const auto seconds = [&](const Slot& s) {
    return std::chrono::duration<double>(now - s.since).count();
  };
  std::vector<Entry> out;
  if (holder_) out.push_back({holder_->claim, true, seconds(*holder_)});
  for (const Slot& s : waiting_) out.push_back({s.claim, false, seconds(s)});
  return out;
}

}  // namespace dtlab::remote
