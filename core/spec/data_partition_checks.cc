#include "core/spec/data_partition_checks.h"

#include <nlohmann/json.hpp>

namespace dtlab::core {

void checkDataPartition(const DataPartitionConfig& partition, const DatasetConfig& dataset,
                        const std::string& path) {
  // linear_regression is the one kind without classes (experiment_spec.cc's kind traits).
  if (partition.kind == DataPartitionKind::kDirichlet &&
      dataset.kind == DatasetKind::kLinearRegression)
    throw SpecError(path,
                    "\"dirichlet\" skews the labels each worker sees, so it needs a classification "
                    "dataset; dataset.kind is \"linear_regression\" (use \"iid\" or \"shared\")");
}

nlohmann::json dataPartitionJson(const DataPartitionConfig& partition) {
  nlohmann::json out = {{"kind", toString(partition.kind)}};
  if (partition.kind == DataPartitionKind::kDirichlet) out["alpha"] = partition.alpha;
  return out;
}

}  // namespace dtlab::core
