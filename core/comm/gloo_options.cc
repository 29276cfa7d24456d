#include "core/comm/gloo_options.h"

#include <array>
#include <utility>

#include "core/common/check.h"

namespace dtlab::core {
namespace {

constexpr std::array<std::pair<AllReduceAlgorithm, std::string_view>, 7> kAlgorithmNames = {{
    {AllReduceAlgorithm::kAuto, "auto"},
    {AllReduceAlgorithm::kOwn, "own"},
    {AllReduceAlgorithm::kRing, "ring"},
    {AllReduceAlgorithm::kRingChunked, "ring_chunked"},
    {AllReduceAlgorithm::kHalvingDoubling, "halving_doubling"},
    {AllReduceAlgorithm::kGlooAllreduce, "gloo_allreduce"},
    {AllReduceAlgorithm::kSharedMemory, "shm"},
}};

}  // namespace

std::string_view allReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  for (const auto& [value, name] : kAlgorithmNames) {
    if (value == algorithm) return name;
  }
  return "unknown";
}

AllReduceAlgorithm parseAllReduceAlgorithm(std::string_view name) {
  std::string valid;
  for (const auto& [value, known] : kAlgorithmNames) {
    if (known == name) return value;
    valid += valid.empty() ? "" : ", ";
    valid += known;
  }
  throw Error(detail::concat("unknown all-reduce algorithm '", name, "' (valid: ", valid, ")"));
}

}  // namespace dtlab::core
