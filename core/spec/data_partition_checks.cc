#include "core/spec/data_partition_checks.h"

#include <nlohmann/json.hpp>

#include "core/data/dataset_kinds.h"

namespace dtlab::core {

void checkDataPartition(const DataPartitionConfig& partition, const DatasetConfig& dataset,
                        const std::string& path) {
  if (partition.kind == DataPartitionKind::kDirichlet &&
      datasetKindOf(dataset).task == TaskKind::kRegression)
    throw SpecError(path,
                    "\"dirichlet\" skews the labels each worker sees, so it needs a "
                    "classification dataset; dataset.kind \"" +
                        dataset.kind + "\" is a regression (use \"iid\" or \"shared\")");
}

nlohmann::json dataPartitionJson(const DataPartitionConfig& partition) {
  nlohmann::json out = {{"kind", toString(partition.kind)}};
  if (partition.kind == DataPartitionKind::kDirichlet) out["alpha"] = partition.alpha;
  return out;
}

}  // namespace dtlab::core
