#pragma once
// A run's hold on all of its nodes at once (gang reservation), taken before any job starts and
// kept until the run ends, restarts after a lost node included.
//
// Each node keeps a queue of reservations (proto ReserveRequest): the one with the smallest
// ticket holds the node once no job runs there. A run holds all of its nodes or commits none:
// it waits until every node holds for it, then commits them; a node it held but another run
// with an earlier ticket asked for meanwhile is given up (the other run may be holding one of
// this run's nodes while waiting for this one), so two runs that want the same nodes in
// opposite orders never wait for each other forever, and the earliest waiting run always gets
// its nodes once their jobs end. Every call renews the run's lease on the node; a client that
// dies stops renewing, and its place is dropped when the lease runs out.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "remote/coordinator/dispatch.h"

namespace dtlab::remote {

// How long a node keeps a reservation that nobody renews: a dead client's place goes within it.
inline constexpr std::chrono::milliseconds kReservationLease{6000};

class GangReservation {
 public:
  struct Waiting {
    std::chrono::milliseconds limit{0};  // how long the run may wait; 0: not at all
    const std::atomic<bool>* cancel = nullptr;
    // What the run waits for, each time that changes ("waiting for node0 (busy with bob@lab's
    // run 'exp/sync', position 1 of 2)"), and "" once it holds its nodes after waiting.
    std::function<void(const std::string&)> onWaiting;
  };

  // `nodes`: indices into `links`, the run's nodes. `run`: "experiment/variant".
  GangReservation(const NodeLinks& links, std::vector<std::size_t> nodes, std::string run);
  ~GangReservation();  // leaves every node (and its queue)
  GangReservation(const GangReservation&) = delete;
  GangReservation& operator=(const GangReservation&) = delete;

  // Waits until every node holds for this run, committed, and keeps renewing the lease from
  // then on. false: cancelled while waiting (the queues are left). Throws dtlab::Error naming
  // the node and what holds it when the limit is 0 or has passed, or naming a node that does not
  // answer.
  bool acquire(const Waiting& waiting);

  const std::string& id() const { return claim_.id; }
  // For the run's reservation event: "node0, node1 at once" or "node0, node1 after waiting
  // 12.3 s behind bob@lab's run 'exp/sync'".
  std::string account() const;

 private:
  // Every node's answer to `action`, in order.
  std::vector<ReserveAnswer> ask(ReserveAction action) const;
  // `action` on every node at once, errors ignored (renewals, the release).
  void callEveryNode(ReserveAction action, std::chrono::milliseconds deadline) const;
  // Renews the lease every quarter of it until the destructor stops it.
  void keep();

  const NodeLinks& links_;
  const std::vector<std::size_t> nodes_;
  ReserveClaim claim_;
  double waitedS_ = 0.0;
  std::vector<std::string> behind_;  // whose work held the nodes while the run waited

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread keeper_;
};

}  // namespace dtlab::remote
