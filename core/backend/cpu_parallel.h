#pragma once
// How the CPU backend's own loops share the OpenMP pool with oneDNN.
#include <omp.h>

#include <cstdint>

namespace dtlab::core {

// Below this many elements a kernel runs on the calling thread: waking the pool
// costs more than the loop (small models are overhead-bound, see bench core).
inline constexpr int64_t kParallelThreshold = 1 << 15;

// Runs body(begin, end) over [0, count): in static blocks on `threads` threads, or on the
// calling thread when work (elements touched) is below kParallelThreshold. Small work never
// enters an OpenMP region: even one with an `if` clause that keeps it on one thread costs
// libgomp a team and, with a pool from an earlier region about, futex calls (measured here:
// about a third of a 30 us step of a 2-64x2-2 model went to them).
template <typename Body>
void forRange(int64_t count, int64_t work, int threads, Body&& body) {
  if (threads <= 1 || work < kParallelThreshold) {
    body(int64_t{0}, count);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t parts = omp_get_num_threads();
    const int64_t t = omp_get_thread_num();
    body(count * t / parts, count * (t + 1) / parts);
  }
}

}  // namespace dtlab::core
