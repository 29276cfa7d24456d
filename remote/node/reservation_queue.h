#pragma once
// Who may run on a node next: the reservations of runs (proto ReserveRequest), one holding the
// node, the others waiting in ticket order. Not thread-safe: NodeService calls it under its
// mutex, with the time and whether a job runs on the node, so that tests can drive it with a
// clock of their own.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtlab::remote {

class ReservationQueue {
 public:
  using Clock = std::chrono::steady_clock;

  struct Claim {
    std::string id;
    uint64_t ticket = 0;  // smaller first; ties by id
    std::string owner;
    std::string run;
    std::chrono::milliseconds lease{6000};
  };
  enum class State { kWaiting, kHeld, kCommitted, kReleased };
  // Where a reservation stands after a call.
  struct Standing {
    State state = State::kWaiting;
    int position = 0;  // while waiting: 1 + the reservations ahead of it
    int waiting = 0;   // reservations waiting, itself included
    // While waiting: the reservation that holds the node, if one does.
    std::optional<Claim> holder;
    bool holderCommitted = false;
  };
  // What GetInfo lists: the holder first, then the waiting ones in order.
  struct Entry {
    Claim claim;
    bool holds = false;
    double seconds = 0.0;  // since it first asked
  };

  // Enters `claim` in the queue or renews its lease. `busy`: a job runs on the node, so no
  // reservation comes to hold it until the job ends.
  Standing wait(const Claim& claim, bool busy, Clock::time_point now);
  // A held reservation keeps the node (committed); any other stands as wait() leaves it.
  Standing commit(const Claim& claim, bool busy, Clock::time_point now);
  // Committed back to held: the run could not commit its other nodes.
  Standing uncommit(const Claim& claim, bool busy, Clock::time_point now);
  // Leaves the node or its queue; an unknown id is not an error.
  void release(const std::string& id, bool busy, Clock::time_point now);

  // Whether reservation `id` holds the node committed (its jobs may start).
  bool committed(const std::string& id, Clock::time_point now);
  // Whether some reservation holds the node or waits for it.
  bool taken(Clock::time_point now);
  std::vector<Entry> entries(Clock::time_point now);

 private:
  struct Slot {
    Claim claim;
    Clock::time_point since;
    Clock::time_point expires;
  };
  static bool before(const Claim& a, const Claim& b);
  // Drops the reservations whose lease ran out.
  void expire(Clock::time_point now);
  // expire(), then lets the first waiting reservation hold the node when it is free, or take it
  // from a holder that has not committed and comes after it.
  void settle(bool busy, Clock::time_point now);
  // Renews the lease of `claim`, or enters it in the queue.
  void renew(const Claim& claim, Clock::time_point now);
  Standing standing(const std::string& id) const;

  std::optional<Slot> holder_;
  bool committed_ = false;
  std::vector<Slot> waiting_;  // in order: before()
};

}  // namespace dtlab::remote
