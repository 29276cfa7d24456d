#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace dtlab::core {

// The measured straggler ratio of a step: the slowest worker's compute time over the median
// worker's (1 with fewer than two workers or no time measured). Compute time, not step time:
// in synchronous training every step takes as long as the slowest, so only the compute part
// shows who the straggler is.
double stragglerRatio(std::vector<double> computeMs);

// Folds a compute time into a worker's exponential moving average (weight 0.3 for the new
// time; NaN: no time yet), the smoothing both sides of hybrid's adaptive policy use.
inline void smoothInto(double& average, double sample) {
  average = std::isfinite(average) ? 0.7 * average + 0.3 * sample : sample;
}

// hybrid's adaptive policy: switch to asynchronous training when the straggler ratio stays
// above `above` for `window` consecutive measurements, and back to synchronous when it stays
// below `backBelow()` = 1 + (above - 1) / 2 for as long. The gap between the two thresholds
// (hysteresis) and the window keep one noisy step from flapping the run between modes.
class SwitchPolicy {
 public:
  SwitchPolicy(double above, int64_t window) : above_(above), window_(window) {}

  double above() const { return above_; }
  double backBelow() const { return 1.0 + (above_ - 1.0) / 2.0; }
  int64_t window() const { return window_; }
  // Feeds one measurement taken in the given mode; true when it completes a window that
  // calls for the other mode (the count then starts again).
  bool switchFromSync(double ratio) { return count(ratio > above_); }
  bool switchFromAsync(double ratio) { return count(ratio < backBelow()); }
  void reset() { run_ = 0; }

 private:
  bool count(bool outside) {
    run_ = outside ? run_ + 1 : 0;
    if (run_ < window_) return false;
    run_ = 0;
    return true;
  }
  double above_;
  int64_t window_;
  int64_t run_ = 0;
};

}  // namespace dtlab::core
