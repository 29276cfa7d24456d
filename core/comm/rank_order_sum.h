#pragma once
// The own all-reduce's reduction (gloo_communicator.cc): plain arithmetic, kept apart from
// the transport code around it.
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace dtlab::core {

// Sum of n sources element by element, in rank order, into out (which may be one of the
// sources at the same offset). Rank order makes the result independent of which rank
// reduces which chunk.
inline void sumInRankOrder(float* out, const float* const* sources, int n, int64_t count) {
  if (n == 2) {
    const float* a = sources[0];
    const float* b = sources[1];
    for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
    return;
  }
  constexpr int64_t kBlock = 1024;
  alignas(64) float acc[kBlock];
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t m = std::min(kBlock, count - begin);
    const float* a = sources[0] + begin;
    const float* b = sources[1] + begin;
    for (int64_t i = 0; i < m; ++i) acc[i] = a[i] + b[i];
    for (int r = 2; r < n; ++r) {
      const float* s = sources[r] + begin;
      for (int64_t i = 0; i < m; ++i) acc[i] += s[i];
    }
    std::memcpy(out + begin, acc, static_cast<size_t>(m) * sizeof(float));
  }
}

}  // namespace dtlab::core
