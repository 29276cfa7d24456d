#pragma once

#include <cstdint>

#include "core/comm/communicator.h"

namespace dtlab::core {

// One all-reduce size, measured as nccl-tests does: warm-up untimed, timed back-to-back
// calls, algbw = bytes / time per call, busbw = algbw * 2(n-1)/n (what each rank's link
// carries, comparable across world sizes), results checked against the closed form.
struct AllReduceBenchResult {
  int64_t bytes = 0;  // rounded down to whole floats
  int iterations = 0;
  int callsPerIteration = 0;
  // Per call. The median is the headline figure: on a shared machine a few calls stall for
  // a scheduler time slice (milliseconds), which the mean (nccl-tests' figure) absorbs.
  double medianSeconds = 0.0;
  double meanSeconds = 0.0;
  double minSeconds = 0.0;
  double algbwGBps = 0.0;  // 1e9 bytes/s, from the median
  double busbwGBps = 0.0;
  // Elements that differed from the expected sums, over all iterations (warm-up included).
  int64_t wrong = 0;
};

// Collective: every rank calls it with the same arguments. Each iteration fills
// data[i] = rank + i % 7 (untimed), aligns the ranks with a barrier (untimed), then runs
// callsPerIteration back-to-back allReduceSum calls on the buffer, each timed: a pipeline of
// calls, like gradient buckets. After c calls the buffer holds
// n^(c-1) * (n(n-1)/2 + n * (i % 7)); c is the largest (at most 8) that keeps this exact in
// float, and every element is checked after each iteration.
AllReduceBenchResult benchAllReduce(Communicator& comm, int64_t bytes, int warmup, int iters);

}  // namespace dtlab::core
