#include "core/comm/gloo_options.h"

#include <array>
#include <utility>

#include "core/common/check.h"
#include "core/common/enum_names.h"

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
  return enumName(kAlgorithmNames, algorithm, std::string_view("unknown"));
}

AllReduceAlgorithm parseAllReduceAlgorithm(std::string_view name) {
  if (const auto algorithm = enumValue(kAlgorithmNames, name)) return *algorithm;
  throw Error(detail::concat("unknown all-reduce algorithm '", name,
                             "' (valid: ", enumNameList(kAlgorithmNames), ")"));
}

}  // namespace dtlab::core
