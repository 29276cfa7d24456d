#include "core/comm/communicator.h"

#include <cstring>
#include <vector>

#include "core/common/check.h"

namespace dtlab::core {

std::string_view toString(CommFailure failure) {
  switch (failure) {
    case CommFailure::kTimeout:
      return "timeout";
    case CommFailure::kPeerClosed:
      return "peer_closed";
    case CommFailure::kAborted:
      return "aborted";
  }
  return "unknown";
}

void Communicator::allReduceSum16(uint16_t* data, int64_t count, HalfFormat format) {
  DTLAB_ENFORCE(count >= 0, "negative element count: ", count);
  const int n = size();
  if (n == 1 || count == 0) return;
  // The halves travel packed two to a float (all-gather copies bytes, it adds nothing).
  const int64_t packed = (count + 1) / 2;
  std::vector<float> mine(static_cast<std::size_t>(packed), 0.0f);
  std::memcpy(mine.data(), data, static_cast<std::size_t>(count) * sizeof(uint16_t));
  std::vector<float> all(static_cast<std::size_t>(packed * n));
  allGather(mine.data(), packed, all.data());
  // Rank order, each addition rounded back to 16 bits as a ring's would be.
  const auto* halves = reinterpret_cast<const uint16_t*>(all.data());
  std::memcpy(data, halves, static_cast<std::size_t>(count) * sizeof(uint16_t));
  for (int r = 1; r < n; ++r) addHalves(format, data, halves + 2 * packed * r, data, count);
}

void Communicator::allReduceAverage(float* data, int64_t count) {
  allReduceSum(data, count);
  const int n = size();
  if (n == 1) return;
  // Divide rather than multiply by 1/n: the quotient is correctly rounded, so an average of
  // identical replicas (or any exactly representable mean) comes back bit-exact, which keeps
  // replicas' checksums equal to single-process runs more often.
  const float divisor = static_cast<float>(n);
  for (int64_t i = 0; i < count; ++i) data[i] /= divisor;
}

}  // namespace dtlab::core
