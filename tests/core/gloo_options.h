#pragma once
// The options the in-process Gloo group tests build their groups with.
#include <chrono>
#include <string>

#include "core/comm/gloo_communicator.h"

namespace dtlab::core::test {

// A group under `prefix` on a shared store (prefixes keep groups apart), with timeouts long
// enough for a loaded machine and short enough that a hang fails the test.
inline GlooOptions glooOptions(const std::string& prefix,
                               AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto,
                               std::chrono::milliseconds opTimeout = std::chrono::seconds(20)) {
  GlooOptions options;
  options.keyPrefix = prefix;
  options.allReduceAlgorithm = algorithm;
  options.connectTimeout = std::chrono::seconds(20);
  options.opTimeout = opTimeout;
  return options;
}

}  // namespace dtlab::core::test
