#pragma once
// The spec's JSON names of its enums, shared by the parser (spec_json.cc), the writer
// (spec_json_write.cc) and toString (spec_names.cc); internal to core/spec.
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/spec/number_format.h"

namespace dtlab::core::spec_detail {

template <typename E>
struct NamedValue {
  E value;
  const char* name;
};

inline constexpr NamedValue<Activation> kActivationNames[] = {
    {Activation::kReLU, "relu"}, {Activation::kGELU, "gelu"}, {Activation::kTanh, "tanh"}};
inline constexpr NamedValue<InitScheme> kInitNames[] = {{InitScheme::kHe, "he"},
                                                        {InitScheme::kXavier, "xavier"}};
inline constexpr NamedValue<LossKind> kLossNames[] = {{LossKind::kCrossEntropy, "cross_entropy"},
                                                      {LossKind::kMse, "mse"}};
inline constexpr NamedValue<OptimizerKind> kOptimizerNames[] = {
    {OptimizerKind::kSgd, "sgd"},
    {OptimizerKind::kAdam, "adam"},
    {OptimizerKind::kAdamW, "adamw"},
    {OptimizerKind::kAdadelta, "adadelta"}};
inline constexpr NamedValue<ScheduleKind> kScheduleNames[] = {{ScheduleKind::kConstant, "constant"},
                                                              {ScheduleKind::kStep, "step"},
                                                              {ScheduleKind::kCosine, "cosine"}};

inline constexpr NamedValue<Precision> kPrecisionNames[] = {
    {Precision::kFp32, "fp32"}, {Precision::kTf32, "tf32"}, {Precision::kBf16, "bf16"}};
inline constexpr NamedValue<DataPartitionKind> kDataPartitionNames[] = {
    {DataPartitionKind::kShared, "shared"},
    {DataPartitionKind::kIid, "iid"},
    {DataPartitionKind::kDirichlet, "dirichlet"}};
template <typename E, size_t N>
const char* nameOf(const NamedValue<E> (&names)[N], E value) {
  for (const auto& named : names)
    if (named.value == value) return named.name;
  // Only reachable with a value cast from an out-of-range integer.
  return "invalid";
}

template <typename E, size_t N>
std::vector<std::string> namesOf(const NamedValue<E> (&names)[N]) {
  std::vector<std::string> out;
  for (const auto& named : names) out.emplace_back(named.name);
  return out;
}

}  // namespace dtlab::core::spec_detail
