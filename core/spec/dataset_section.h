#pragma once
// The spec's "dataset" object, read and written through the dataset kinds' descriptors
// (core/data/dataset_kinds.h); internal to core/spec.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_reader.h"

namespace dtlab::core::spec_detail {

// Every key a dataset object may hold: the fields every kind has, then each registered kind's
// parameters (the first declaration of a shared key). The views point into the registry, which
// lives as long as the process.
std::vector<std::string_view> datasetFields();
// Reads a dataset object whose reader was made with `fields` (datasetFields()); `specSeed` is
// the seed of a dataset that gives none.
DatasetConfig parseDataset(ObjectReader& r, std::span<const std::string_view> fields,
                           uint64_t specSeed);
nlohmann::json datasetJson(const DatasetConfig& dataset);

}  // namespace dtlab::core::spec_detail
