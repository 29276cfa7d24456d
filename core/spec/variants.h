#pragma once
// The spec's "variants" list, read and written through the strategies' descriptors (internal
// to core/spec: experiment_spec.cc and experiment_spec_write.cc call these).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/experiment_spec.h"

namespace dtlab::core::spec_detail {

// Reads `list` (null: one variant of the default strategy). `spec` holds every section parsed
// before the variants (dataset, training, cluster), which the strategies' own checks read.
std::vector<VariantConfig> parseVariants(const nlohmann::json* list, const std::string& path,
                                         const ExperimentSpec& spec);
nlohmann::json variantsJson(const std::vector<VariantConfig>& variants);

}  // namespace dtlab::core::spec_detail
