#pragma once
// training.data_partition beyond reading its two fields (experiment_spec.cc reads them): the
// combinations with the dataset and the variants that cannot work, and how it is written.
// Kept apart so that experiment_spec.cc, long already, grows by the reading only.

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// Throws SpecError at `path` ("training.data_partition") when the partition cannot split
// this dataset: a Dirichlet label skew needs classes, so a regression dataset is refused.
void checkDataPartition(const DataPartitionConfig& partition, const DatasetConfig& dataset,
                        const std::string& path);

// {"kind": ...}, plus "alpha" for dirichlet (the only kind that reads it; the parser refuses it
// elsewhere, so what is written reads back as the same config).
nlohmann::json dataPartitionJson(const DataPartitionConfig& partition);

}  // namespace dtlab::core
