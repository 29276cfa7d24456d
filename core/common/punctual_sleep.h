#pragma once
// Sleeps that end on time on average. A thread's sleep ends late by its wake-up (timer slack,
// a core busy with another thread): an emulation that sleeps to a modelled moment would hold
// everything after it back by that much each time. PunctualSleep starts each sleep early by the
// lateness its earlier sleeps ended with (an exponential average, at most 1 ms), so that the
// next one ends, on average, at its target; a given sleep may end before it, by at most that
// and at most half its length.
#include <algorithm>
#include <chrono>

namespace dtlab::core {

class PunctualSleep {
 public:
  using Clock = std::chrono::steady_clock;

  // Sleeps until about `target` through `sleepUntil(Clock::time_point)`, which returns false
  // when interrupted (an abort); then so does this. A target already past returns at once.
  template <typename SleepUntil>
  bool until(Clock::time_point target, const SleepUntil& sleepUntil) {
    const Clock::time_point now = Clock::now();
    if (now >= target) return true;
    // Early by the learnt lateness, but by at most half the sleep: a sleep shorter than the
    // lateness still happens (and teaches), where skipping it would leave an estimate that a
    // stray slow wake-up raised stuck above every later sleep, and the emulation off.
    const Clock::duration early =
        std::min(std::chrono::duration_cast<Clock::duration>(late_), (target - now) / 2);
    const Clock::time_point wakeAt = target - early;
    if (!sleepUntil(wakeAt)) return false;
    const Seconds late = std::clamp(Seconds(Clock::now() - wakeAt), Seconds(0), kMostLate);
    late_ += kLearning * (late - late_);
    return true;
  }

 private:
  using Seconds = std::chrono::duration<double>;
  static constexpr double kLearning = 0.1;  // the weight of the latest sleep
  static constexpr Seconds kMostLate{1e-3};
  Seconds late_{0};
};

}  // namespace dtlab::core
