#pragma once
// Ranks as threads in one process, for the collective tests: their failures, gathered for the
// main thread (QTest macros are not thread-safe), and RANK_CHECK, which records one and leaves
// the rank's body (it needs `rank` and `failures` in scope).
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/common/check.h"

namespace dtlab::core::test {

// Failures inside rank threads, reported by the main thread (QTest macros are not
// thread-safe).
class Failures {
 public:
  void add(const std::string& message) {
    std::lock_guard lock(mutex_);
    if (messages_.size() < 20) messages_.push_back(message);
  }
  bool empty() const { return messages_.empty(); }
  std::string text() const {
    std::string all;
    for (const auto& m : messages_) all += m + "\n";
    return all;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> messages_;
};

// `body(rank)` on a thread per rank; what a rank throws is its failure.
inline void runRanks(int size, Failures& failures, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        failures.add("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
}

#define RANK_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      failures.add(dtlab::detail::concat("rank ", rank, ": ", #cond, " ", __VA_ARGS__)); \
      return;                                                                            \
    }                                                                                    \
  } while (0)

}  // namespace dtlab::core::test
