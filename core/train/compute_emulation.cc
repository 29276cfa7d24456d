#include "core/train/compute_emulation.h"

#include <chrono>
#include <ctime>
#include <thread>

#include "core/common/random.h"

namespace dtlab::core {

void ComputeEmulation::beginStep(int64_t step, bool warm) {
  slowdown_ = warm ? 1.0 / node_.speedAt(step) : 1.0;
  if (node_.straggler.probability > 0.0) {
    Rng rng(deriveSeed(seed_, 0x57a6, static_cast<uint64_t>(rank_), static_cast<uint64_t>(step)));
    if (rng.uniform() < node_.straggler.probability)
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(node_.straggler.pauseMs));
  }
  startClock();
}

void ComputeEmulation::beginProbe() {
  slowdown_ = 1.0 / node_.speedAt(1);
  startClock();
}

void ComputeEmulation::startClock() {
  stepStart_ = Clock::now();
  lastWork_ = workClockMs();
  workMs_ = 0.0;
}

double ComputeEmulation::workClockMs() const {
  if (threadCpuTime_) {
    timespec t{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0)
      return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

void ComputeEmulation::onGradientsReady(int64_t begin, int64_t end) {
  if (slowdown_ > 1.0) {
    workMs_ += workClockMs() - lastWork_;
    // The work so far, done at the node's speed, ends here: wait for that moment unless the
    // real compute (with whatever delayed it) already took longer. On time: a late hand-off
    // gives the gradients to the communication thread after their time.
    sleep_.until(stepStart_ + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double, std::milli>(workMs_ * slowdown_)),
                 [](Clock::time_point wakeAt) {
                   std::this_thread::sleep_until(wakeAt);
                   return true;
                 });
    lastWork_ = workClockMs();  // on the wall clock, the wait is not work
  }
  if (next_) next_(begin, end);
}

}  // namespace dtlab::core
