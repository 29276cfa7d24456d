#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/support/status.h>

namespace dtlab::remote {

// The key-value table behind the Rendezvous service: set, and wait until keys exist.
//
// Waiting must not block gRPC's callback threads, so a Get/Wait that cannot be answered at
// once registers a Waiter and returns. The waiter is completed exactly once, by whichever
// comes first:
//   a. set() of the last missing key      -> OK (with the value for a Get),
//   b. its deadline, seen by the table's timer thread -> DEADLINE_EXCEEDED naming the
//      missing keys,
//   c. cancel(id), when the client goes away -> CANCELLED,
//   d. shutdown()                          -> UNAVAILABLE.
// Completions run without the table's lock held, so they may call back into gRPC freely.
//
// Memory is bounded: at most kMaxTotalBytes of keys and values; a set() beyond it fails with
// RESOURCE_EXHAUSTED. clearExceptPrefix() drops the keys of earlier jobs.
class RendezvousTable {
 public:
  using Clock = std::chrono::steady_clock;
  // Status, and the value of the first key on success (empty otherwise).
  using Completion = std::function<void(const grpc::Status&, const std::string& value)>;
  using WaiterId = uint64_t;

  static constexpr std::size_t kMaxTotalBytes = std::size_t{256} << 20;

  RendezvousTable();
  ~RendezvousTable();
  RendezvousTable(const RendezvousTable&) = delete;
  RendezvousTable& operator=(const RendezvousTable&) = delete;

  grpc::Status set(const std::string& key, std::string value);

  // A fresh id for waitFor(); taken first so a client cancel that races with the
  // registration can name the waiter.
  WaiterId newWaiterId();
  // Completes at once (inline) when every key exists or keys is empty, else registers.
  void waitFor(WaiterId id, std::vector<std::string> keys, Clock::time_point deadline,
               Completion completion);
  // Completes the waiter with CANCELLED if it is still pending; no-op otherwise.
  void cancel(WaiterId id);

  // Drops every key that does not start with `prefix` (pending waiters stay).
  void clearExceptPrefix(const std::string& prefix);
  // Completes every pending waiter with UNAVAILABLE and stops the timer; later waits
  // complete with UNAVAILABLE at once.
  void shutdown();

  std::size_t keyCount() const;
  std::size_t pendingWaiters() const;

 private:
  struct Waiter {
    std::vector<std::string> keys;
    Clock::time_point deadline;
    Completion completion;
  };
  struct Ready {
    Completion completion;
    grpc::Status status;
    std::string value;
  };

  bool allPresentLocked(const std::vector<std::string>& keys) const;
  std::string missingKeysLocked(const std::vector<std::string>& keys) const;
  void timerLoop();

  mutable std::mutex mutex_;
  std::condition_variable timerWake_;
  std::map<std::string, std::string> values_;
  std::size_t bytes_ = 0;
  std::map<WaiterId, Waiter> waiters_;
  WaiterId nextId_ = 1;
  bool stopping_ = false;
  std::thread timer_;
};

}  // namespace dtlab::remote
