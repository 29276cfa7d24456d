#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace dtlab::core {

// A one-shot "give up now" shared by whoever runs a job and the communication it waits
// on. Cancelling a run politely (a vote at the next step boundary) cannot end a collective
// that is blocked on a stopped or vanished peer; abort() can: every registered handler runs
// once (a communicator closes its connections, so its pending collective fails at once with
// CommError kAborted), and every sleep through sleepFor() wakes.
//
// Thread safety: every method may be called from any thread. Handlers run on the thread
// that calls abort(), under the signal's lock: they must be quick and must not call back
// into the signal. A handler registered after the abort runs at once.
class AbortSignal {
 public:
  AbortSignal() = default;
  AbortSignal(const AbortSignal&) = delete;
  AbortSignal& operator=(const AbortSignal&) = delete;

  // Idempotent: only the first reason is kept and handlers run once.
  void abort(const std::string& reason);
  bool aborted() const;
  // The first abort's reason ("" before any).
  std::string reason() const;

  // Sleeps up to `duration`; returns false when the signal aborted before it had passed.
  bool sleepFor(std::chrono::nanoseconds duration) const;

  // RAII registration of a handler. Destroying it waits for a running handler to finish,
  // so the owner of the handler's state may be destroyed right after it.
  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    ~Registration();
    void reset();

   private:
    friend class AbortSignal;
    Registration(const AbortSignal* signal, uint64_t id) : signal_(signal), id_(id) {}
    const AbortSignal* signal_ = nullptr;
    uint64_t id_ = 0;
  };
  [[nodiscard]] Registration onAbort(std::function<void(const std::string&)> handler) const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool aborted_ = false;
  std::string reason_;
  mutable uint64_t nextId_ = 1;
  mutable std::map<uint64_t, std::function<void(const std::string&)>> handlers_;
};

}  // namespace dtlab::core
