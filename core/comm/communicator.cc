#include "core/comm/communicator.h"

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
