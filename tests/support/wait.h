#pragma once
// Waiting in a test for what another thread or process does: always with a deadline, so that
// a failure is a failed check saying what was awaited, never a hang until ctest's timeout.
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace dtlab::test {

// Polls `condition` until it holds (true) or `timeout` has passed (false).
inline bool waitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds poll = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
  return true;
}

// Whether thread `tid` of this process is asleep in the kernel (state S: on a futex, a socket,
// a timer), as /proc says; false when it runs or is gone.
inline bool threadAsleep(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'S';
}

}  // namespace dtlab::test
