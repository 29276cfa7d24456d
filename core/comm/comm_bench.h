#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/comm/communicator.h"

namespace gloo::rendezvous {
class Store;
}

namespace dtlab::core {

// `dtlab-cli bench allreduce`: DTLab's all-reduce (any Communicator) against Gloo's own
// algorithms used the way a Gloo user would use them, side by side in the same processes,
// measured the way nccl-tests measures (doc/PERFORMANCE.md there).
struct AllReduceBenchConfig {
  int64_t bytes = 16 << 20;  // rounded down to whole floats; at least one float
  int warmup = 2;            // untimed repetitions of every side
  int repetitions = 10;      // timed repetitions of every side
  // The Gloo side builds its own context on the caller's store under this key prefix (not
  // the communicator's), binding this address.
  std::string keyPrefix = "bench-gloo";
  std::string interfaceAddress = "127.0.0.1";
  std::chrono::milliseconds timeout{120000};
  // Name printed for the communicator's side, e.g. "dtlab (own)".
  std::string dtlabName = "dtlab";
};

// Bus bandwidth in GB/s of an all-reduce of `bytes` over `ranks` that took `seconds`: the
// algorithm bandwidth (bytes / seconds) times 2(n-1)/n, what each rank's link carries; 0 for a
// single rank or no time.
inline double busBandwidthGBps(int64_t bytes, double seconds, int ranks) {
  if (seconds <= 0.0) return 0.0;
  return static_cast<double>(bytes) / seconds / 1e9 * 2.0 * (ranks - 1) / ranks;
}

// One side: DTLab's communicator, or one of Gloo's algorithms.
struct AllReduceSideResult {
  std::string name;
  // Per all-reduce call: the repetition's wall clock divided by its calls. The median over
  // repetitions is the headline figure (on a shared machine a few repetitions stall for a
  // scheduler time slice, which the mean would absorb).
  double medianSeconds = 0.0;
  double minSeconds = 0.0;
  double algbwGBps = 0.0;  // bytes / median, 1e9 bytes/s
  double busbwGBps = 0.0;  // algbw * 2(n-1)/n: what each rank's link carries
  // Elements on this rank that differed from the closed-form sums, over every repetition
  // (warm-up included). Anything but 0 is a bug.
  int64_t wrong = 0;
};

struct AllReduceBenchResult {
  int64_t bytes = 0;
  int ranks = 0;
  int repetitions = 0;
  int callsPerRepetition = 0;
  // sides[0] is the communicator's; then Gloo's AllreduceRing, AllreduceRingChunked,
  // AllreduceHalvingDoubling and gloo::allreduce (ring), in that order. A single rank has
  // only sides[0].
  std::vector<AllReduceSideResult> sides;
};

// Collective: every rank of `dtlab` calls it with the same config and a store that all of
// them see (the one the communicator was built on will do).
//
// Both sides reduce in place on one buffer owned by the benchmark. Gloo's side runs in a
// Gloo context of its own, its classic algorithms constructed once on that buffer (as a
// Gloo user sets them up) and gloo::allreduce's options built once; nothing is copied in or
// out on either side. Each repetition of a side fills the buffer with rank + i % 7
// (untimed), then takes the wall clock between two barriers on the Gloo side's context
// around callsPerRepetition back-to-back all-reduces, so the closing barrier, and
// everything a call leaves to finish, is inside the time. The sides' repetitions are
// interleaved (the order rotates each round), so a burst of load elsewhere on the machine
// hits all of them alike. After c calls every element must equal
// n^(c-1) * (n(n-1)/2 + n * (i % 7)); c is the largest (at most 64, and so that a
// repetition moves about 64 MiB or less) that keeps this exact in float, and every element
// is checked after every repetition.
AllReduceBenchResult benchAllReduce(Communicator& dtlab, gloo::rendezvous::Store& store,
                                    const AllReduceBenchConfig& config);

}  // namespace dtlab::core
