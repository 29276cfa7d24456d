#include "core/comm/comm_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/common/check.h"

namespace dtlab::core {

AllReduceBenchResult benchAllReduce(Communicator& comm, int64_t bytes, int warmup, int iters) {
  DTLAB_ENFORCE(bytes >= 0 && warmup >= 0 && iters >= 1, "bytes ", bytes, ", warmup ", warmup,
                ", iterations ", iters);
  const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
  const int n = comm.size();
  const float rank = static_cast<float>(comm.rank());

  // Largest batch whose final values n^(c-1) * S stay integers below 2^24 (exact in float,
  // and so is every partial sum on the way).
  constexpr double kExactLimit = 16777216.0;
  const double largestSum = n * (n - 1) / 2.0 + 6.0 * n;
  int calls = 1;
  double growth = 1.0;
  while (calls < 8 && growth * n * largestSum < kExactLimit && n > 1) {
    growth *= n;
    ++calls;
  }
  if (n == 1) calls = 8;  // a single rank's values never change

  std::vector<float> data(static_cast<size_t>(count));
  std::vector<double> seconds;
  seconds.reserve(static_cast<size_t>(iters) * static_cast<size_t>(calls));
  AllReduceBenchResult result;
  result.bytes = count * static_cast<int64_t>(sizeof(float));
  result.iterations = iters;
  result.callsPerIteration = calls;
  const float scale = static_cast<float>(growth);
  const float base = static_cast<float>(n * (n - 1) / 2);
  for (int it = 0; it < warmup + iters; ++it) {
    for (int64_t i = 0, k = 0; i < count; ++i, k = k == 6 ? 0 : k + 1) {
      data[i] = rank + static_cast<float>(k);
    }
    comm.barrier();
    for (int c = 0; c < calls; ++c) {
      const auto start = std::chrono::steady_clock::now();
      comm.allReduceSum(data.data(), count);
      const auto end = std::chrono::steady_clock::now();
      if (it >= warmup) seconds.push_back(std::chrono::duration<double>(end - start).count());
    }
    for (int64_t i = 0, k = 0; i < count; ++i, k = k == 6 ? 0 : k + 1) {
      const float sum = base + static_cast<float>(n) * static_cast<float>(k);
      if (data[i] != scale * sum) ++result.wrong;
    }
  }
  std::sort(seconds.begin(), seconds.end());
  const size_t m = seconds.size();
  result.medianSeconds = m % 2 == 1 ? seconds[m / 2] : 0.5 * (seconds[m / 2 - 1] + seconds[m / 2]);
  result.minSeconds = seconds.front();
  double total = 0.0;
  for (double t : seconds) total += t;
  result.meanSeconds = total / static_cast<double>(m);
  if (result.medianSeconds > 0.0) {
    result.algbwGBps = static_cast<double>(result.bytes) / result.medianSeconds / 1e9;
    result.busbwGBps = result.algbwGBps * 2.0 * (n - 1) / n;  // 0 for a single rank
  }
  return result;
}

}  // namespace dtlab::core
