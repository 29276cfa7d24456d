#include "remote/node/rendezvous_table.h"

#include <algorithm>

#include "remote/common/protocol.h"

namespace dtlab::remote {

namespace {

std::string quoted(const std::string& key) {
  constexpr std::size_t kShown = 200;
  return "'" + (key.size() > kShown ? key.substr(0, kShown) + "..." : key) + "'";
}

void runAll(std::vector<RendezvousTable::Completion>& completions, const grpc::Status& status) {
  for (auto& completion : completions) completion(status, std::string());
}

}  // namespace

RendezvousTable::RendezvousTable() : timer_([this] { timerLoop(); }) {}

RendezvousTable::~RendezvousTable() {
  shutdown();
}

grpc::Status RendezvousTable::set(const std::string& key, std::string value) {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = values_.find(key);
    const std::size_t oldBytes = it == values_.end() ? 0 : key.size() + it->second.size();
    const std::size_t newBytes = key.size() + value.size();
    if (bytes_ - oldBytes + newBytes > kMaxTotalBytes)
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              "rendezvous table full: " + std::to_string(bytes_) + " bytes stored, limit " +
                  std::to_string(kMaxTotalBytes) + " (key " + quoted(key) + ")"};
    bytes_ = bytes_ - oldBytes + newBytes;
    values_[key] = std::move(value);
    for (auto w = waiters_.begin(); w != waiters_.end();) {
      if (allPresentLocked(w->second.keys)) {
        ready.push_back({std::move(w->second.completion), grpc::Status::OK,
                         w->second.keys.empty() ? std::string() : values_[w->second.keys[0]]});
        w = waiters_.erase(w);
      } else {
        ++w;
      }
    }
  }
  for (auto& r : ready) r.completion(r.status, r.value);
  return grpc::Status::OK;
}

RendezvousTable::WaiterId RendezvousTable::newWaiterId() {
  std::lock_guard<std::mutex> lock(mutex_);
  return nextId_++;
}

void RendezvousTable::waitFor(WaiterId id, std::vector<std::string> keys,
                              Clock::time_point deadline, Completion completion) {
  grpc::Status status;
  std::string value;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      status = {grpc::StatusCode::UNAVAILABLE, "the node is shutting down"};
    } else if (allPresentLocked(keys)) {
      if (!keys.empty()) value = values_.at(keys[0]);
    } else if (Clock::now() >= deadline) {
      status = {grpc::StatusCode::DEADLINE_EXCEEDED,
                "rendezvous: " + missingKeysLocked(keys) + " not set (no wait requested)",
                std::string(kRendezvousKeysMissing)};
    } else {
      const bool earliest =
          waiters_.empty() || std::all_of(waiters_.begin(), waiters_.end(), [&](const auto& w) {
            return deadline < w.second.deadline;
          });
      waiters_.emplace(id, Waiter{std::move(keys), deadline, std::move(completion)});
      if (earliest) timerWake_.notify_one();
      return;
    }
  }
  completion(status, value);
}

void RendezvousTable::cancel(WaiterId id) {
  Completion completion;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = waiters_.find(id);
    if (it == waiters_.end()) return;
    completion = std::move(it->second.completion);
    waiters_.erase(it);
  }
  completion({grpc::StatusCode::CANCELLED, "rendezvous wait cancelled by the client"}, {});
}

void RendezvousTable::clearExceptPrefix(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = values_.begin(); it != values_.end();) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) {
      bytes_ -= it->first.size() + it->second.size();
      it = values_.erase(it);
    } else {
      ++it;
    }
  }
}

void RendezvousTable::shutdown() {
  std::vector<Completion> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (auto& [id, waiter] : waiters_) pending.push_back(std::move(waiter.completion));
    waiters_.clear();
  }
  timerWake_.notify_all();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
  runAll(pending, {grpc::StatusCode::UNAVAILABLE, "the node is shutting down"});
}

std::size_t RendezvousTable::keyCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return values_.size();
}

std::size_t RendezvousTable::pendingWaiters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiters_.size();
}

bool RendezvousTable::allPresentLocked(const std::vector<std::string>& keys) const {
  for (const auto& key : keys)
    if (values_.count(key) == 0) return false;
  return true;
}

std::string RendezvousTable::missingKeysLocked(const std::vector<std::string>& keys) const {
  constexpr int kNamed = 4;
  std::string out;
  int named = 0, missing = 0;
  for (const auto& key : keys) {
    if (values_.count(key) != 0) continue;
    ++missing;
    if (named < kNamed) {
      out += (named == 0 ? "" : ", ") + quoted(key);
      ++named;
    }
  }
  if (missing > named) out += " and " + std::to_string(missing - named) + " more";
  return (missing == 1 ? "key " : "keys ") + out;
}

void RendezvousTable::timerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const auto now = Clock::now();
    std::vector<Ready> expired;
    auto next = Clock::time_point::max();
    for (auto w = waiters_.begin(); w != waiters_.end();) {
      if (w->second.deadline <= now) {
        expired.push_back({std::move(w->second.completion),
                           {grpc::StatusCode::DEADLINE_EXCEEDED,
                            "rendezvous: " + missingKeysLocked(w->second.keys) +
                                " did not appear before the timeout (has every rank started?)",
                            std::string(kRendezvousKeysMissing)},
                           {}});
        w = waiters_.erase(w);
      } else {
        next = std::min(next, w->second.deadline);
        ++w;
      }
    }
    if (!expired.empty()) {
      lock.unlock();
      for (auto& e : expired) e.completion(e.status, e.value);
      lock.lock();
      continue;  // waiters may have changed meanwhile
    }
    if (next == Clock::time_point::max())
      timerWake_.wait(lock);
    else
      timerWake_.wait_until(lock, next);
  }
}

}  // namespace dtlab::remote
