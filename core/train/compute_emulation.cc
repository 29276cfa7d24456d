#include "core/train/compute_emulation.h"

#include <thread>

#include "core/common/random.h"

namespace dtlab::core {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

void ComputeEmulation::beginStep(int64_t step) {
  stretch_ = 1.0 / node_.speedAt(step) - 1.0;
  if (node_.straggler.probability > 0.0) {
    Rng rng(deriveSeed(seed_, 0x57a6, static_cast<uint64_t>(rank_), static_cast<uint64_t>(step)));
    if (rng.uniform() < node_.straggler.probability)
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(node_.straggler.pauseMs));
  }
  last_ = Clock::now();
}

void ComputeEmulation::onGradientsReady(int64_t begin, int64_t end) {
  if (stretch_ > 0.0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(
        stretch_ * std::chrono::duration<double, std::milli>(Clock::now() - last_).count()));
    last_ = Clock::now();
  }
  if (next_) next_(begin, end);
}

}  // namespace dtlab::core
